"""Where the user's view and the agent's view part: the "why did the agent forget" tool.

Compared at one point of the log (the two views cut at the same place):
- `missing`: messages the user saw that are NOT in the agent's context there, each
  with the reason (before a clear, left out of an injection, lost when a fresh
  session started with nothing injected, replaced by a summary);
- `extra`: text the agent received that the user never saw (injected history,
  summaries, memory blocks, tool results convlog synthesized for lost ones), with
  whether it is still in context;
- `alerts`: the agent view's flagged markers, e.g. a fresh session whose resume
  injected nothing although earlier messages existed.

A message counts as in context when the agent received it in its current session,
or when a live injection or summary covers its position (its text stood for it).
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from convlog.domain.events import ConversationCleared, Recorded
from convlog.projections.memory import DEFAULT_CAP
from convlog.projections.moment import Moment, cut
from convlog.projections.replay_views import ConversationView, ViewEntry, agent_view, user_view
from convlog.projections.rewind import abandoned


class MissingMessage(msgspec.Struct, frozen=True, kw_only=True):
    version: int
    role: str | None
    text: str
    message_id: str | None
    reason: str


class ViewDiff(msgspec.Struct, frozen=True, kw_only=True):
    key: str
    version: int
    session: str | None
    """The agent session current at that point."""
    user_messages: int
    in_context: int
    """User-view messages the agent received directly in its current session."""
    covered: int
    """User-view messages it has only through a live injection or summary."""
    missing: list[MissingMessage]
    extra: list[ViewEntry]
    alerts: list[ViewEntry]

    @property
    def parted(self) -> bool:
        """True when the views differ at all."""
        return bool(self.missing or self.extra or self.alerts)


def diff(key: str, recorded: Iterable[Recorded], at: Moment | None = None, *,
         memory_cap: int = DEFAULT_CAP) -> ViewDiff:
    events = cut(recorded, at)
    return compare(user_view(key, events), agent_view(key, events, memory_cap=memory_cap),
                   _last_clear(events), abandoned(events))


def _last_clear(events: list[Recorded]) -> int:
    cleared = [r.version for r in events if isinstance(r.event, ConversationCleared)]
    return cleared[-1] if cleared else 0


def compare(user: ConversationView, agent: ConversationView, cleared_at: int = 0,
            rewound: dict[int, int] | None = None) -> ViewDiff:
    """Compare two views of the same conversation cut at the same point."""
    live = [e for e in agent.entries if e.live]
    direct = {e.version for e in live if e.kind == "message"}
    ranges = [(e, e.covers) for e in live if e.covers is not None]
    received = {e.version: e for e in agent.entries if e.kind == "message"}
    injections = [e for e in live if e.kind == "injection"]
    missing: list[MissingMessage] = []
    in_context = covered = 0
    messages = [e for e in user.entries if e.kind == "message"]
    for m in messages:
        if m.version in direct:
            in_context += 1
            continue
        if any(low <= m.version <= high for _, (low, high) in ranges):
            covered += 1
            continue
        reason = f"abandoned by the rewind at #{rewound[m.version]}" if rewound and \
            m.version in rewound else _reason(m, received, injections, cleared_at, agent.since)
        missing.append(MissingMessage(version=m.version, role=m.role, text=m.text,
                                      message_id=m.message_id, reason=reason))
    return ViewDiff(
        key=user.key, version=max(user.version, agent.version), session=agent.session,
        user_messages=len(messages), in_context=in_context, covered=covered, missing=missing,
        extra=[e for e in agent.entries if e.kind not in ("message", "marker")],
        alerts=[e for e in agent.entries if e.alert])


def _reason(m: ViewEntry, received: dict[int, ViewEntry], injections: list[ViewEntry],
            cleared_at: int, since: int) -> str:
    if m.version < cleared_at:
        return f"before the clear at #{cleared_at}"
    got = received.get(m.version)
    if got is not None and got.gone and (got.gone.startswith(("replaced", "compacted"))
                                         or got.repairs):
        return got.gone  # a summary replaced it, or pairing left it out of the input
    if injections:
        latest = injections[-1]
        low, high = latest.covers or (0, 0)
        return (f"left out of the history injected at #{latest.version} "
                f"(it covered #{low}..#{high})")
    if since > cleared_at and m.version < since:
        return f"the agent's session started empty at #{since} and got no history injected"
    if got is not None and got.gone:
        return got.gone
    return "the agent never received it"
