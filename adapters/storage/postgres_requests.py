"""The PostgreSQL side of `convlog.storage.requests` (the table is made with the
others, under the schema-creation lock)."""

from __future__ import annotations

from typing import Any

from psycopg.sql import SQL, Composed, Identifier

from convlog.storage.requests import KEEP_SECONDS, REQUESTS_TABLE


def requests_ddl(schema: Identifier) -> list[Composed]:
    table = Identifier(REQUESTS_TABLE)
    return [
        SQL("CREATE TABLE IF NOT EXISTS {s}.{t} (scope text PRIMARY KEY, "
            "fingerprint text NOT NULL, created_at double precision NOT NULL)"
            ).format(s=schema, t=table),
        SQL("CREATE INDEX IF NOT EXISTS convlog_request_keys_created ON {s}.{t} (created_at)"
            ).format(s=schema, t=table),
    ]


class PostgresRequestTable:
    """Mixed into the PostgreSQL recorder (which provides `datastore`)."""

    datastore: Any

    def claim_request(self, scope: str, fingerprint: str, now: float) -> str:
        """Record `fingerprint` for `scope` unless one is there; the one on record."""
        schema, table = Identifier(self.datastore.schema), Identifier(REQUESTS_TABLE)
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(SQL("DELETE FROM {s}.{t} WHERE created_at < %s").format(
                s=schema, t=table), (now - KEEP_SECONDS,))
            curs.execute(SQL("INSERT INTO {s}.{t} VALUES (%s, %s, %s) ON CONFLICT DO NOTHING"
                             ).format(s=schema, t=table), (scope, fingerprint, now))
            curs.execute(SQL("SELECT fingerprint FROM {s}.{t} WHERE scope = %s").format(
                s=schema, t=table), (scope,))
            row = curs.fetchone()
        return str(row["fingerprint"])
