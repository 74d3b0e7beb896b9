"""The SQLite side of encryption: the key table, and erasing what was deleted.

Erasing matters here: SQLite keeps a deleted row's bytes in the page it lived on, in
free pages and in the write-ahead log until those are reused. The writer connection
runs with ``secure_delete`` (freed bytes are overwritten with zeros), and after a
key is destroyed or re-wrapped, or an event re-encrypted, the WAL is checkpointed
and truncated, so neither the ``.db`` nor the ``-wal`` file keeps the old bytes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from convlog.crypto.keyring import KeyRow
from convlog.storage.errors import StorageError

KEYS_TABLE = "convlog_keys"
KEYS_DDL = [
    f"CREATE TABLE IF NOT EXISTS {KEYS_TABLE} (key_id TEXT PRIMARY KEY, kind TEXT NOT NULL, "
    "user_name TEXT NOT NULL, wrapped BLOB, created_at TEXT NOT NULL, destroyed_at TEXT)",
    # one live data key per user: two processes making a user's first key agree on one
    f"CREATE UNIQUE INDEX IF NOT EXISTS {KEYS_TABLE}_live ON {KEYS_TABLE} (kind, user_name) "
    "WHERE wrapped IS NOT NULL",
]
ERASE_TIMEOUT = 10.0


class SQLiteKeyTable:
    """Mixed into the SQLite recorder (which provides the writer, `_rows`, `_write_tx`)."""

    events_table_name: str

    def _rows(self, statement: str, params: Sequence[Any]) -> list[Any]:
        raise NotImplementedError

    def _write_tx(self, begin: bool = True) -> Any:
        """A context manager: the writer connection, held, in a write transaction
        (committed on success) unless `begin` is False."""
        raise NotImplementedError

    # ------------------------------------------------------------- KeyTable

    def key_rows(self) -> list[KeyRow]:
        return [KeyRow(*row) for row in self._rows(
            f"SELECT key_id, kind, user_name, wrapped, created_at, destroyed_at "
            f"FROM {KEYS_TABLE}", [])]

    def add_key(self, row: KeyRow) -> bool:
        with self._write_tx() as conn:
            cursor = conn.execute(f"INSERT OR IGNORE INTO {KEYS_TABLE} VALUES (?,?,?,?,?,?)",
                                  list(row))
            return bool(cursor.rowcount == 1)

    def destroy_keys(self, user: str, at: str) -> list[str]:
        with self._write_tx() as conn:
            ids = [r[0] for r in conn.execute(
                f"SELECT key_id FROM {KEYS_TABLE} WHERE kind = 'data' AND user_name = ? "
                "AND wrapped IS NOT NULL", [user]).fetchall()]
            conn.execute(f"UPDATE {KEYS_TABLE} SET wrapped = NULL, destroyed_at = ? "
                         "WHERE kind = 'data' AND user_name = ? AND wrapped IS NOT NULL",
                         [at, user])
        self.erase()
        return ids

    def replace_wrapped(self, rows: Sequence[tuple[str, bytes]]) -> None:
        with self._write_tx() as conn:
            conn.executemany(f"UPDATE {KEYS_TABLE} SET wrapped = ? WHERE key_id = ?",
                             [(wrapped, key_id) for key_id, wrapped in rows])
        self.erase()

    def has_events(self) -> bool:
        return bool(self._rows(f"SELECT 1 FROM {self.events_table_name} LIMIT 1", []))

    # ------------------------------------------------------- privacy admin

    def streams_of_user(self, user: str) -> list[UUID]:
        """Every conversation started for `user` (its first event's public field)."""
        return [UUID(r[0]) for r in self._rows(
            f"SELECT originator_id FROM {self.events_table_name} WHERE ((originator_version = 1 "
            "AND topic = 'session_started') OR topic = 'conversation_forked') "
            "AND json_extract(CAST(state AS TEXT), '$.user') = ?", [user])]

    def all_streams(self) -> list[UUID]:
        return [UUID(r[0]) for r in self._rows(
            f"SELECT originator_id FROM {self.events_table_name} "
            "WHERE originator_version = 1 OR topic = 'conversation_forked' ORDER BY rowid",
            [])]

    def rewrite_states(self, stream: UUID, states: Sequence[tuple[int, bytes]],
                       snapshot_table: str | None) -> None:
        """Replace stored states of one stream in ONE transaction, and drop its
        snapshots (a cache, rebuilt on demand): all of the stream, or nothing."""
        with self._write_tx() as conn:
            conn.executemany(
                f"UPDATE {self.events_table_name} SET state = ? "
                "WHERE originator_id = ? AND originator_version = ?",
                [(state, stream.hex, version) for version, state in states])
            if snapshot_table:
                conn.execute(f"DELETE FROM {snapshot_table} WHERE originator_id = ?",
                             [stream.hex])

    def erase(self, vacuum: bool = False) -> None:
        """Leave no copy of deleted bytes: VACUUM (rebuilds the file without free
        pages) when asked, then checkpoint the WAL into the file and truncate it.
        Waits up to ERASE_TIMEOUT for other connections' read transactions."""
        with self._write_tx(begin=False) as conn:
            if vacuum:
                conn.execute("VACUUM")
            deadline = time.monotonic() + ERASE_TIMEOUT
            while True:
                busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                if busy is None or not busy[0]:
                    return
                if time.monotonic() > deadline:
                    raise StorageError(
                        "the write-ahead log could not be truncated: another connection "
                        f"kept a read transaction open for {ERASE_TIMEOUT:g}s, so erased "
                        "bytes may remain in the -wal file: run the same command again "
                        "when the other processes are idle")
                time.sleep(0.05)
