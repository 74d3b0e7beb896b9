"""The PostgreSQL side of `convlog.storage.token_counts` (the table is made with the
others, under the schema-creation lock)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from psycopg.sql import SQL, Composed, Identifier

from convlog.storage.token_counts import MESSAGE_TOPIC, TOKEN_COUNTS_TABLE, Count


def token_counts_ddl(schema: Identifier) -> list[Composed]:
    return [SQL("CREATE TABLE IF NOT EXISTS {s}.{t} (position bigint PRIMARY KEY, "
                "tokens bigint NOT NULL, encoding text NOT NULL)").format(
                    s=schema, t=Identifier(TOKEN_COUNTS_TABLE))]


class PostgresTokenCounts:
    """Mixed into the PostgreSQL recorder (which provides `datastore`)."""

    datastore: Any
    events_table_name: str

    def _tq(self, text: str) -> Composed:
        return SQL(text).format(s=Identifier(self.datastore.schema),
                                t=Identifier(TOKEN_COUNTS_TABLE),
                                e=Identifier(self.events_table_name))

    def token_counts(self, first: int, last: int) -> dict[int, tuple[int, str]]:
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(self._tq("SELECT position, tokens, encoding FROM {s}.{t} "
                                  "WHERE position BETWEEN %s AND %s"), (first, last))
            return {r["position"]: (r["tokens"], r["encoding"]) for r in curs.fetchall()}

    def save_token_counts(self, counts: Sequence[Count]) -> None:
        with self.datastore.transaction(commit=True) as curs:
            curs.executemany(self._tq(
                "INSERT INTO {s}.{t} VALUES (%s, %s, %s) ON CONFLICT (position) DO UPDATE "
                "SET tokens = excluded.tokens, encoding = excluded.encoding"), counts)

    def message_rows(self, stream: UUID) -> list[tuple[int, int, str, bytes]]:
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(self._tq(
                "SELECT notification_id, originator_version, topic, state FROM {s}.{e} "
                "WHERE originator_id = %s AND split_part(topic, '@', 1) = %s "
                "ORDER BY originator_version"), (stream, MESSAGE_TOPIC))
            return [(r["notification_id"], r["originator_version"], r["topic"],
                     bytes(r["state"])) for r in curs.fetchall()]
