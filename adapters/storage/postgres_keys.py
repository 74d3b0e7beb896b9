"""The PostgreSQL side of encryption: the key table, in the events' schema.

Erasing: PostgreSQL keeps an updated row's old version (a dead tuple) in the table's
file until a vacuum reuses the space; ``VACUUM FULL`` rewrites the table into a new
file and drops the old one. The key table is tiny, so every change to it is followed
by one. The server's own write-ahead log and backups are outside convlog's reach
(see the threat model in docs/security.md).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from psycopg.sql import SQL, Composed, Identifier

from convlog.crypto.keyring import KeyRow

KEYS_TABLE = "convlog_keys"
ERASE_TIMEOUT = 10.0
"""How long `erase(vacuum=True)` waits for transactions older than the erasure."""


def keys_ddl(schema: Identifier) -> list[Composed]:
    table = Identifier(KEYS_TABLE)
    return [
        SQL("CREATE TABLE IF NOT EXISTS {s}.{t} (key_id text PRIMARY KEY, kind text NOT NULL, "
            "user_name text NOT NULL, wrapped bytea, created_at text NOT NULL, "
            "destroyed_at text)").format(s=schema, t=table),
        SQL("CREATE UNIQUE INDEX IF NOT EXISTS convlog_keys_live ON {s}.{t} (kind, user_name) "
            "WHERE wrapped IS NOT NULL").format(s=schema, t=table),
    ]


class PostgresKeyTable:
    """Mixed into the PostgreSQL recorder (which provides `datastore`)."""

    datastore: Any
    events_table_name: str

    def _q(self, text: str, **tables: str) -> Composed:
        return SQL(text).format(s=Identifier(self.datastore.schema), k=Identifier(KEYS_TABLE),
                                e=Identifier(self.events_table_name),
                                **{k: Identifier(v) for k, v in tables.items()})

    def key_rows(self) -> list[KeyRow]:
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(self._q("SELECT key_id, kind, user_name, wrapped, created_at, "
                                 "destroyed_at FROM {s}.{k}"))
            return [KeyRow(r["key_id"], r["kind"], r["user_name"],
                           None if r["wrapped"] is None else bytes(r["wrapped"]),
                           r["created_at"], r["destroyed_at"]) for r in curs.fetchall()]

    def add_key(self, row: KeyRow) -> bool:
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(self._q("INSERT INTO {s}.{k} VALUES (%s,%s,%s,%s,%s,%s) "
                                 "ON CONFLICT DO NOTHING"), list(row))
            return bool(curs.rowcount == 1)

    def destroy_keys(self, user: str, at: str) -> list[str]:
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(self._q("UPDATE {s}.{k} SET wrapped = NULL, destroyed_at = %s "
                                 "WHERE kind = 'data' AND user_name = %s "
                                 "AND wrapped IS NOT NULL RETURNING key_id"), (at, user))
            ids = [r["key_id"] for r in curs.fetchall()]
        self.erase()
        return ids

    def replace_wrapped(self, rows: Sequence[tuple[str, bytes]]) -> None:
        with self.datastore.transaction(commit=True) as curs:
            curs.executemany(self._q("UPDATE {s}.{k} SET wrapped = %s WHERE key_id = %s"),
                             [(wrapped, key_id) for key_id, wrapped in rows])
        self.erase()

    def has_events(self) -> bool:
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(self._q("SELECT 1 FROM {s}.{e} LIMIT 1"))
            return curs.fetchone() is not None

    def streams_of_user(self, user: str) -> list[UUID]:
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(self._q(
                "SELECT originator_id FROM {s}.{e} WHERE ((originator_version = 1 "
                "AND topic = 'session_started') OR topic = 'conversation_forked') "
                "AND convert_from(state, 'UTF8')::jsonb ->> 'user' = %s"), (user,))
            return [UUID(str(r["originator_id"])) for r in curs.fetchall()]

    def all_streams(self) -> list[UUID]:
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(self._q("SELECT originator_id FROM {s}.{e} "
                                 "WHERE originator_version = 1 OR topic = "
                                 "'conversation_forked' ORDER BY notification_id"))
            return [UUID(str(r["originator_id"])) for r in curs.fetchall()]

    def rewrite_states(self, stream: UUID, states: Sequence[tuple[int, bytes]],
                       snapshot_table: str | None) -> None:
        """See convlog.storage.sqlite_keys.SQLiteKeyTable.rewrite_states."""
        with self.datastore.transaction(commit=True) as curs:
            curs.executemany(self._q("UPDATE {s}.{e} SET state = %s WHERE originator_id = %s "
                                     "AND originator_version = %s"),
                             [(state, stream, version) for version, state in states])
            if snapshot_table:
                curs.execute(self._q("DELETE FROM {s}.{t} WHERE originator_id = %s",
                                     t=snapshot_table), (stream,))

    def erase(self, vacuum: bool = False) -> None:
        """VACUUM FULL the key table (and, when `vacuum`, every table of the
        store's schema: events, snapshots, kept answers, token counts, the message
        index): the old row versions' bytes leave the table files."""
        with self.datastore.get_connection() as conn:
            conn.execute(self._q("VACUUM FULL {s}.{k}"))
            if vacuum:
                _wait_for_older_snapshots(conn)
                tables = [r["tablename"] for r in conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = %s AND tablename "
                    "<> %s ORDER BY tablename", (self.datastore.schema, KEYS_TABLE)
                ).fetchall()]
                for table in tables:
                    conn.execute(self._q("VACUUM FULL {s}.{t}", t=table))


def _wait_for_older_snapshots(conn: Any) -> None:
    """VACUUM FULL copies a deleted or updated row's old version into the new file
    while a transaction that may still see it is open (anywhere in the database):
    wait up to ERASE_TIMEOUT for every transaction older than this moment to end.
    Past it, the VACUUM runs anyway (what it must keep stays until the next one:
    the documented limit, docs/settings.md#retention)."""
    mark = conn.execute("SELECT txid_current() AS x").fetchone()["x"]
    deadline = time.monotonic() + ERASE_TIMEOUT
    while time.monotonic() < deadline:
        older = conn.execute(
            "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND backend_xmin IS NOT NULL "
            "AND age(backend_xmin) >= age((%s::bigint %% 4294967296)::text::xid)",
            (mark,)).fetchone()["n"]
        if not older:
            return
        time.sleep(0.05)
