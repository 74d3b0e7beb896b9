"""The live window of memory blocks, and the re-injection cooldown: projections.

Blocks stay in the log forever; which of them an agent still sees is computed here
from the log, so changing the cap changes every context at once and nothing is ever
rewritten or deleted. The rule (`max_injected_blocks_in_history`, N):

- N >= 1: the N newest blocks of the current epoch are live; a new block evicts the
  oldest beyond N, whoever's turn brought it (a shared channel has one window);
- N = 0: ephemeral: a block lives for its own turn, i.e. until the next user message
  is recorded after it;
- a clear (new epoch) evicts every block.

Two walks give the same answer: `TailLiveness` reads the log newest first (what a
context does, stopping early), `lifetimes` reads it oldest first (what a replay
does, saying when each block was evicted).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from convlog.domain.errors import InvalidInput
from convlog.domain.events import (
    ConversationCleared,
    MemoryInjected,
    MemoryPolicySet,
    MessageAppended,
    Recorded,
)
from convlog.domain.memory import DEFAULT_CAP, DEFAULT_DEPTH, cooling

__all__ = [
    "DEFAULT_CAP",
    "DEFAULT_DEPTH",
    "MAX_CAP",
    "TailLiveness",
    "check_cap",
    "lifetimes",
    "live_blocks",
    "memory_cooldown",
    "policy_cap",
]
MAX_CAP = 1_000


def check_cap(cap: object, field: str = "max_injected_blocks_in_history") -> int:
    if not isinstance(cap, int) or isinstance(cap, bool) or not 0 <= cap <= MAX_CAP:
        raise InvalidInput(f"must be a whole number from 0 to {MAX_CAP}, not {cap!r}",
                           field=field)
    return cap


class TailLiveness:
    """Feed it the events of one epoch newest first; it says which blocks are live."""

    def __init__(self, cap: int):
        self.cap = cap
        self.blocks_seen = 0
        self.user_seen = False

    def live(self, event: MemoryInjected) -> bool:
        """Call for each block, in the walk's order: is this block live?"""
        self.blocks_seen += 1
        if self.cap == 0:
            return not self.user_seen
        return self.blocks_seen <= self.cap

    def saw(self, event: MessageAppended) -> None:
        """Call for each message the walk passes (even the ones it leaves out)."""
        if event.role == "user":
            self.user_seen = True


def lifetimes(recorded: Iterable[Recorded], cap: int) -> dict[int, int | None]:
    """{version of each block: version of the event that evicted it, or None while
    it is live}, reading the log oldest first. A replay at version v shows block b
    to the agent iff ``b <= v`` and (``evicted is None or v < evicted``).
    `cap` is the policy at the start; a recorded MemoryPolicySet changes it from its
    position on (a smaller cap evicts the oldest blocks there)."""
    out: dict[int, int | None] = {}
    live: deque[int] = deque()
    since_user: set[int] = set()  # blocks injected after the latest user message
    for r in recorded:
        event = r.event
        if isinstance(event, MessageAppended) and event.role == "user":
            since_user.clear()
        if isinstance(event, MemoryPolicySet):
            cap = event.max_injected_blocks_in_history
            while cap and len(live) > cap:
                out[live.popleft()] = r.version
            if cap == 0:
                for v in [v for v in live if v not in since_user]:
                    live.remove(v)
                    out[v] = r.version
        elif isinstance(event, MemoryInjected):
            since_user.add(r.version)
            out[r.version] = None
            live.append(r.version)
            while cap and len(live) > cap:
                out[live.popleft()] = r.version
        elif isinstance(event, ConversationCleared) or (
                cap == 0 and isinstance(event, MessageAppended) and event.role == "user"):
            while live:
                out[live.popleft()] = r.version
    return out


def policy_cap(recorded: Iterable[Recorded], cap: int = DEFAULT_CAP) -> int:
    """The `max_injected_blocks_in_history` in force after `recorded` (`cap` when
    none of them sets a policy)."""
    for r in recorded:
        if isinstance(r.event, MemoryPolicySet):
            cap = r.event.max_injected_blocks_in_history
    return cap


def live_blocks(recorded: Iterable[Recorded], cap: int, *, at: int | None = None
                ) -> list[tuple[int, MemoryInjected]]:
    """The blocks live at version `at` (default: the end), oldest first, with their
    versions: what the agent had in its context at that point of a replay."""
    rows = [r for r in recorded if at is None or r.version <= at]
    ends = lifetimes(rows, cap)
    return [(r.version, r.event) for r in rows if isinstance(r.event, MemoryInjected)
            and ends.get(r.version) is None]


def memory_cooldown(recent: dict[str, int], turns: int, depth: int) -> dict[str, int]:
    """{memory id: turns left} of the ids a host must not inject now (see
    convlog.domain.memory.cooling; `recent` and `turns` come from the state)."""
    return dict(sorted(cooling(recent, turns, depth).items()))
