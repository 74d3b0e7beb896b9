"""Token counts for the views, made when a catch-up first needs them (issue 45).

No append counts tokens. A message stored without a count gets one here, inside the
catch-up batch's transaction (its `before_batch` hook, like the price table's): the
counts kept in the store (convlog.storage.token_counts) are read for the batch's
positions, and the messages still without one are decoded, counted as an append
counted them before (its text a model re-reads, in its model's family:
convlog.accounting.tokens.message_tokens), and kept there for every later reader.
The batch's ``tokens`` column then holds them (convlog.projections.views).

A message whose text this process cannot read (a forgotten user's, or any sealed
one in a store opened without its key) is not counted: its count is the one kept,
if a process with the key made it (an erasure makes them first:
convlog.services.privacy), else NULL.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING
from uuid import UUID

from eventsourcing.persistence import PersistenceError

from convlog.domain.events import MessageAppended
from convlog.storage.errors import StorageError
from convlog.storage.token_counts import Count

if TYPE_CHECKING:  # DuckDB is imported when the views are first used
    import duckdb

    from convlog.storage.application import ConversationStore

_UNCOUNTED = """
    SELECT position FROM batch
    WHERE topic = 'message_appended' AND e.tokens IS NULL ORDER BY position"""


class CounterNeeded(Exception):
    """A catch-up needs a vocabulary not loaded yet: raised (the batch rolled back, the
    views' file let go) so that the caller loads it without holding the file's lock,
    which other processes wait for, then catches up again (convlog.views.analytics)."""

    def __init__(self, models: set[str | None]) -> None:
        super().__init__(f"token counters to load for {sorted(map(str, models))}")
        self.models = models


def fill_token_counts(store: ConversationStore, *, defer: bool = False
                      ) -> Callable[[duckdb.DuckDBPyConnection], None]:
    """The catch-up hook that fills the batch's ``tokens`` (see the module doc).
    `defer`: raise CounterNeeded rather than load a vocabulary inside the batch."""
    def fill(con: duckdb.DuckDBPyConnection) -> None:
        positions = [row[0] for row in con.execute(_UNCOUNTED).fetchall()]
        if not positions:
            return
        counts = kept_counts(store, positions, defer=defer)
        if not counts:
            return
        con.execute("INSERT INTO batch_tokens SELECT unnest(?::BIGINT[]), "
                    "unnest(?::BIGINT[])", [list(counts), list(counts.values())])
    return fill


def kept_counts(store: ConversationStore, positions: Sequence[int], *, defer: bool = False
                ) -> dict[int, int]:
    """position -> tokens of the messages at `positions` (ascending): the counts the
    store keeps, and the rest counted now and kept (`defer`: see fill_token_counts)."""
    first, last = positions[0], positions[-1]
    kept = store.index.token_counts(first, last)
    found = {p: kept[p][0] for p in positions if p in kept}
    missing = [p for p in positions if p not in kept]
    if missing:
        wanted = set(missing)
        rows = store.index.select_raw(missing[0] - 1, missing[-1] - missing[0] + 1)
        made = count_messages(store, [(p, UUID(hex=s), v, t, state.encode())
                                      for p, s, v, t, state in rows if p in wanted],
                              defer=defer)
        found.update((p, tokens) for p, tokens, _ in made)
    return found


def count_messages(store: ConversationStore,
                   rows: Iterable[tuple[int, UUID, int, str, bytes]], *,
                   defer: bool = False) -> list[Count]:
    """Count the messages of (position, stream, version, topic, state) rows that
    have no count stored on them and whose text this process can read, and keep
    the counts in the store; returns them."""
    from convlog.accounting.tokens import (  # a counting process
        counter_for,
        counter_ready,
        message_tokens,
    )

    codec = store.codec
    events: list[tuple[int, MessageAppended]] = []
    for position, stream, version, topic, state in rows:
        if not codec.content_readable(state):
            continue
        event = codec.decode_row(stream, version, topic, state)
        if isinstance(event, MessageAppended) and event.tokens is None:
            events.append((position, event))  # a count stored on the event stays there
    if defer:
        unready = {e.model for _, e in events if not counter_ready(e.model)}
        if unready:
            raise CounterNeeded(unready)
    made: list[Count] = [(p, message_tokens(e.content, e.tool_calls, e.model)[0],
                          counter_for(e.model)[0]) for p, e in events]
    if made:  # a read-only file keeps none: counted again next time, to the same numbers
        with contextlib.suppress(StorageError, PersistenceError):
            store.index.save_token_counts(made)
    return made


def keep_stream_counts(store: ConversationStore, stream: UUID) -> int:
    """Count the messages of one conversation not counted yet and keep the counts:
    what an erasure does before it destroys the keys the texts need (the counts
    survive it). Returns how many it counted."""
    rows = store.index.message_rows(stream)
    if not rows:
        return 0
    kept = store.index.token_counts(rows[0][0], max(r[0] for r in rows))
    return len(count_messages(store, ((p, stream, v, t, state) for p, v, t, state in rows
                                      if p not in kept)))
