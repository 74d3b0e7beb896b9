"""A fork's history, by reference: the parent's events up to the fork, then its own.

A fork's stream begins with `conversation_forked` at the parent's position + 1
(convlog.domain.events.ConversationForked), so the parent's versions 1..`at` and the
fork's own are one numbering with no gap and no overlap. Every read of a stream by
position (`ConversationStore.recorded`, `item_rows`, `item_page`, `item_events`,
`last_messages`, `last_of`) goes through `splice`: the range below the fork point is
read from the parent (itself maybe a fork: recursively), each part decoded under its
own stream's id (an encrypted row opens only under its own), and joined in order.
Nothing is copied: the parent's words exist once.

Whether a stream is a fork is known from its cached state, else from its first row
(one indexed query, once per stream and process: a stream's first event never changes).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar
from uuid import UUID

from convlog.domain.conversation import Conversation, conversation_id
from convlog.domain.events import ConversationForked

__all__ = ["Lineage", "Read"]

T = TypeVar("T")
Read = Callable[[UUID, "int | None", "int | None", bool, "int | None"], list[T]]
"""(stream, after, upto, desc, limit) -> rows of that stream alone."""

Fork = tuple[UUID, int]
"""(the parent's stream, the fork's position in it)."""

KNOWN = 100_000
"""Streams whose lineage a process keeps (~100 bytes each); cleared when full, as
the SQLite recorder's stream numbers are: a stream is then looked up once more."""


class Lineage:
    """Which streams are forks, and the spliced reads over them."""

    def __init__(self, first_row: Callable[[UUID], Any | None],
                 cached: Callable[[UUID], Conversation | None]) -> None:
        self._first_row = first_row
        """A stream's first event, decoded (None: an empty stream)."""
        self._cached = cached
        self._known: dict[int, Fork | None] = {}
        self._lock = threading.Lock()

    def fork_of(self, stream: UUID) -> Fork | None:
        """(parent stream, fork position) when `stream` is a fork, else None."""
        key = stream.int
        with self._lock:
            if key in self._known:
                return self._known[key]
        state = self._cached(stream)
        if state is not None and state.started:
            found: Fork | None = (conversation_id(state.parent), state.fork_version) \
                if state.parent is not None else None
        else:
            first = self._first_row(stream)
            if first is None:
                return None  # not written yet: it may still begin as a fork
            found = (conversation_id(first.parent_key), first.at_version) \
                if isinstance(first, ConversationForked) else None
        self._keep(key, found)
        return found

    def _keep(self, key: int, found: Fork | None) -> None:
        with self._lock:
            if len(self._known) >= KNOWN:
                self._known.clear()
            self._known.setdefault(key, found)

    def note(self, stream: UUID, state: Conversation) -> None:
        """What a write just learned (the first event of a new fork, say)."""
        if not state.started:
            return
        self._keep(stream.int, (conversation_id(state.parent), state.fork_version)
                   if state.parent is not None else None)

    def splice(self, stream: UUID, after: int | None, upto: int | None, desc: bool,
               limit: int | None, read: Read[T]) -> list[T]:
        """`read` over the whole history of `stream`: a fork's range at or below its
        fork point comes from its parent."""
        fork = self.fork_of(stream)
        if fork is None:
            return read(stream, after, upto, desc, limit)
        parent, at = fork
        low = after or 0
        mine = upto is None or upto > at
        theirs = low < at and (upto is None or upto > low)

        def own(n: int | None) -> list[T]:
            return read(stream, max(low, at), upto, desc, n)

        def inherited(n: int | None) -> list[T]:
            return self.splice(parent, after, at if upto is None else min(upto, at), desc,
                               n, read)

        first, second = (own, inherited) if desc else (inherited, own)
        wanted_first, wanted_second = (mine, theirs) if desc else (theirs, mine)
        out = first(limit) if wanted_first else []
        if wanted_second and (limit is None or len(out) < limit):
            out += second(None if limit is None else limit - len(out))
        return out

    def tail(self, stream: UUID, topics: Sequence[str], count: int, upto: int | None,
             newest: Callable[[UUID, Sequence[str], int], list[T]],
             walk: Callable[[UUID, Sequence[str], int, int], list[T]]) -> list[T]:
        """The newest `count` rows of `topics` at or below `upto` (None: all), newest
        first, across the lineage: `newest` is the stream's own indexed tail, `walk`
        the same below a position (a parent's part)."""
        out = newest(stream, topics, count) if upto is None else walk(stream, topics,
                                                                      count, upto)
        fork = self.fork_of(stream)
        if fork is not None and len(out) < count:
            parent, at = fork
            out += self.tail(parent, topics, count - len(out),
                             at if upto is None else min(upto, at), newest, walk)
        return out

