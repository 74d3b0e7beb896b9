"""Token counts made on read, kept in the store beside the events (issue 45).

An append counts nothing: a message's token count is derived data, made when first
needed. The views' token columns need one per message, and so does an erasure (a
forgotten user's counts must survive the content they were made from). So a count,
once made, is kept here, keyed by the event's position in the log (the views'
catch-up reads the log by position, one range query a batch): any process, a
rebuild of the views, or one opened without the key (counts are public, like the
counts stored on older events) then reads it rather than counting again.

A read model, not part of the log: rows are only ever added or replaced (a count
made with another vocabulary is made again), never needed for the log's truth, and
a store whose table is missing or unwritable (a read-only file) still works: the
counts are then made again where needed.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any
from uuid import UUID

TOKEN_COUNTS_TABLE = "convlog_token_counts"
MESSAGE_TOPIC = "message_appended"
"""The stored name of the events counted (every class version of it: ``name@N``)."""

Count = tuple[int, int, str]
"""(position, tokens, encoding) of one message's count."""

SQLITE_DDL = (f"CREATE TABLE IF NOT EXISTS {TOKEN_COUNTS_TABLE} (position INTEGER PRIMARY "
              "KEY, tokens INTEGER NOT NULL, encoding TEXT NOT NULL)")


class SQLiteTokenCounts:
    """Mixed into the SQLite recorder (which provides `_write_tx` and `_rows`)."""

    events_table_name: str

    def _write_tx(self, begin: bool = True) -> contextlib.AbstractContextManager[Any]:
        raise NotImplementedError

    def _rows(self, statement: str, params: Sequence[Any]) -> list[Any]:
        raise NotImplementedError

    def token_counts(self, first: int, last: int) -> dict[int, tuple[int, str]]:
        """position -> (tokens, encoding) of the counts kept for positions first..last."""
        with _missing_table():
            return {p: (t, e) for p, t, e in self._rows(
                f"SELECT position, tokens, encoding FROM {TOKEN_COUNTS_TABLE} "
                "WHERE position BETWEEN ? AND ?", [first, last])}
        return {}

    def save_token_counts(self, counts: Sequence[Count]) -> None:
        with self._write_tx() as conn:
            conn.execute(SQLITE_DDL)  # a file made before the table existed
            conn.executemany(f"INSERT OR REPLACE INTO {TOKEN_COUNTS_TABLE} VALUES (?, ?, ?)",
                             counts)

    def message_rows(self, stream: UUID) -> list[tuple[int, int, str, bytes]]:
        """(position, version, topic, state) of the stream's messages."""
        return self._rows(
            f"SELECT rowid, originator_version, topic, state FROM {self.events_table_name} "
            "WHERE originator_id = ? AND (topic = ? OR topic LIKE ?) "
            "ORDER BY originator_version", [stream.hex, MESSAGE_TOPIC, f"{MESSAGE_TOPIC}@%"])


@contextlib.contextmanager
def _missing_table() -> Iterator[None]:
    """A store made before the table existed, opened without writing: no counts."""
    from convlog.storage.errors import StorageError

    try:
        yield
    except (StorageError, sqlite3.OperationalError) as exc:
        if "no such table" not in str(exc):
            raise


class MemoryTokenCounts:
    """Mixed into the in-memory recorder."""

    def __init__(self) -> None:
        self._token_counts: dict[int, tuple[int, str]] = {}

    def token_counts(self, first: int, last: int) -> dict[int, tuple[int, str]]:
        return {p: c for p, c in self._token_counts.items() if first <= p <= last}

    def save_token_counts(self, counts: Sequence[Count]) -> None:
        self._token_counts.update((p, (t, e)) for p, t, e in counts)

    def message_rows(self, stream: UUID) -> list[tuple[int, int, str, bytes]]:
        rows = self.select_notifications(1, 1 << 62)  # type: ignore[attr-defined]
        return [(n.id, n.originator_version, n.topic, n.state) for n in rows
                if n.originator_id == stream and n.topic.partition("@")[0] == MESSAGE_TOPIC]
