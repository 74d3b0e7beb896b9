"""The seam between `ConversationStore` and a backend: `ConvlogRecorder`, typed.

Each backend (convlog.storage.sqlite, .postgres, .memory) has an eventsourcing
application recorder subclassed with convlog's own tables and queries. The store asks
of it exactly what `ConvlogRecorder` lists and nothing else: no attribute is probed
for (``getattr(recorder, "...", None)``), and the store checks the recorder against
the protocol when it opens (a PERSISTENCE_MODULE that does not provide one is a
StorageError, not an AttributeError on the first write). mypy holds each backend's
recorder to it (tests/unit/test_recorders.py), and eventsourcing's own recorder test
cases run against each (tests/integration/test_recorders.py).

`PortableRows` gives a backend without faster ways of its own the row-level methods,
built on eventsourcing's `select_events` / `insert_events`: PostgreSQL and memory use
it; SQLite has its own (plain tuples, no StoredEvent per row: issue 30).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar, runtime_checkable
from uuid import UUID

from eventsourcing.persistence import StoredEvent

from convlog.crypto.keyring import KeyTable
from convlog.storage.requests import Answer

T = TypeVar("T")
Row = tuple[int, str, bytes]
"""(version, topic, state) of one stored event of a known stream."""
NewRow = tuple[str, int, str, bytes]
"""(stream id hex, version, topic, state) of an event to insert."""
MessageIds = tuple[UUID, Sequence[str]]
"""A stream and the message ids to index with its events, in the same transaction."""
Run = tuple[Sequence[NewRow], MessageIds | None]
"""One conversation's consecutive rows and their index entries: `insert_runs` writes
several, in order, in ONE transaction (`convlog copy`'s batch)."""


@runtime_checkable
class ConvlogRecorder(KeyTable, Protocol):
    """Everything `ConversationStore` asks of its application recorder."""

    # eventsourcing's ApplicationRecorder, as convlog calls it
    def select_events(self, originator_id: UUID, *, gt: int | None = None,
                      lte: int | None = None, desc: bool = False, limit: int | None = None
                      ) -> Sequence[StoredEvent]: ...

    def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any
                      ) -> Sequence[int] | None: ...

    def max_notification_id(self) -> int | None: ...

    # rows: the events of one stream, and new ones with their message ids
    def select_rows(self, stream: UUID, *, gt: int | None = None, lte: int | None = None,
                    desc: bool = False, limit: int | None = None) -> list[Row]: ...

    def select_decoded(self, stream: UUID, decode: Callable[[list[Any]], list[T]], *,
                       gt: int | None = None, common: str | None = None) -> list[T]: ...

    def select_tail(self, originator_id: UUID, topics: Sequence[str], limit: int
                    ) -> list[Row]: ...

    def insert_rows(self, rows: Sequence[NewRow], message_ids: MessageIds | None = None
                    ) -> None: ...

    def insert_runs(self, runs: Sequence[Run]) -> None: ...

    def known_message_ids(self, conversation: UUID, message_ids: Sequence[str]) -> set[str]: ...

    def index_entries(self, conversation: UUID) -> list[str]: ...

    # the views' catch-up and the store's identity
    def select_raw(self, after: int, limit: int) -> list[tuple[int, str, int, str, str]]: ...

    def store_identity(self) -> str: ...

    # kept answers of keyed requests (convlog.storage.requests)
    def find_answer(self, scope: str, now: float) -> Answer | None: ...

    def keep_answer(self, scope: str, found: Answer, now: float) -> Answer: ...

    def drop_answers(self) -> None: ...

    def answer_rows(self) -> list[tuple[str, Answer, float]]: ...

    # token counts made on read (convlog.storage.token_counts)
    def token_counts(self, first: int, last: int) -> dict[int, tuple[int, str]]: ...

    def save_token_counts(self, counts: Sequence[tuple[int, int, str]]) -> None: ...

    def message_rows(self, stream: UUID) -> list[tuple[int, int, str, bytes]]: ...

    # privacy admin of an encrypted store (convlog.services.privacy), beside KeyTable
    def streams_of_user(self, user: str) -> list[UUID]: ...

    def all_streams(self) -> list[UUID]: ...

    def rewrite_states(self, stream: UUID, states: Sequence[tuple[int, bytes]],
                       snapshot_table: str | None) -> None: ...

    def erase(self, vacuum: bool = False) -> None: ...

    # the connection: waiting for changes, writes that must not wait, closing
    def wait_for_changes(self, timeout: float) -> None: ...

    def not_waiting(self) -> AbstractContextManager[None]: ...

    @property
    def lock_wait_seconds(self) -> float | None: ...

    def close_connections(self) -> None: ...


@runtime_checkable
class TableRecorder(Protocol):
    """A snapshot recorder that keeps its rows in a table of the store's database
    (SQLite, PostgreSQL; not memory): privacy rewrites the snapshots there too."""

    events_table_name: str


class _Events(Protocol):
    """eventsourcing's half of a recorder, which `PortableRows` is mixed into."""

    def select_events(self, originator_id: UUID, *, gt: int | None = None,
                      lte: int | None = None, desc: bool = False, limit: int | None = None
                      ) -> Sequence[StoredEvent]: ...

    def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any
                      ) -> Sequence[int] | None: ...


class PortableRows:
    """`ConvlogRecorder`'s row methods on eventsourcing's own, and the defaults of a
    backend that cannot be waited on: no notifications (polled), no lock wait of its
    own to name, no connections of its own to close. Mixed in after eventsourcing's
    recorder class."""

    def select_rows(self: _Events, stream: UUID, *, gt: int | None = None, lte: int | None = None,
                    desc: bool = False, limit: int | None = None) -> list[Row]:
        return [(s.originator_version, s.topic, s.state) for s in
                self.select_events(stream, gt=gt, lte=lte, desc=desc, limit=limit)]

    def select_decoded(self: _Events, stream: UUID, decode: Callable[[list[Any]], list[T]],
                       *, gt: int | None = None, common: str | None = None) -> list[T]:
        """`decode` of every row after `gt` (each with its topic: `common` is only
        SQLite's way of not making the usual topic a string per row)."""
        return decode(PortableRows.select_rows(self, stream, gt=gt))

    def insert_rows(self: _Events, rows: Sequence[NewRow],
                    message_ids: MessageIds | None = None) -> None:
        streams: dict[str, UUID] = {}
        self.insert_events([StoredEvent(
            originator_id=streams.setdefault(hex_id, UUID(hex_id)), originator_version=v,
            topic=topic, state=state) for hex_id, v, topic, state in rows],
            message_ids=message_ids)

    def insert_runs(self: _Events, runs: Sequence[Run]) -> None:
        """One `insert_rows` a run: atomic per run only (the memory store, which no
        copy survives anyway)."""
        for rows, message_ids in runs:
            PortableRows.insert_rows(self, rows, message_ids)

    def wait_for_changes(self, timeout: float) -> None:
        time.sleep(timeout)

    def not_waiting(self) -> AbstractContextManager[None]:
        return contextlib.nullcontext()

    @property
    def lock_wait_seconds(self) -> float | None:
        return None

    def close_connections(self) -> None:
        """Nothing beyond eventsourcing's pool, which the application closes."""

