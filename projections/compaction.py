"""Where a compaction may end: the pairing rule applied to a cut of the history.

A compaction replaces the messages before a point with a summary, for the model. A
point between a tool call and its result would leave the result in the history
without its call (every later model request fails, HTTP 400) or summarize the call
while its result stays: so a point is never inside an exchange. `keep_last` asks
for the newest N messages to stay as they are; when the point it gives falls inside
an exchange, the point moves earlier (more is kept), never later (nothing the host
wanted kept is summarized).

Pure: the caller describes each live message once (`pairing.Tools`), as every
other reader of pairs does.
"""

from __future__ import annotations

from collections.abc import Sequence

from convlog.projections.pairing import Tools, scope

__all__ = ["compaction_point"]


def compaction_point(items: Sequence[Tools], keep_last: int) -> int:
    """How many of the oldest `items` (live messages, oldest first) a compaction
    keeping at least the newest `keep_last` may replace: the largest cut
    `c <= len(items) - keep_last` such that no call in `items[:c]` has its result in
    `items[c:]`. 0: nothing can be compacted."""
    target = len(items) - max(0, keep_last)
    if target <= 0:
        return 0
    keyed = scope(items).items
    call_at: dict[str, int] = {}
    inside = [0] * (len(items) + 1)  # a difference array of the cuts inside exchanges
    for i, item in enumerate(keyed):
        for key in item.results:
            start = call_at.get(key)
            if start is not None and start < i:  # cuts start+1..i split this pair
                inside[start + 1] += 1
                inside[i + 1] -= 1
        for key, _ in item.calls:
            call_at[key] = i
    depth = 0
    ok = [True] * (len(items) + 1)
    for c in range(len(items) + 1):
        depth += inside[c]
        ok[c] = depth == 0
    for c in range(target, 0, -1):
        if ok[c]:
            return c
    return 0
