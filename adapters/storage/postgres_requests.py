"""The PostgreSQL side of `convlog.storage.requests` (the table is made with the
others, under the schema-creation lock)."""

from __future__ import annotations

from typing import Any

from psycopg.sql import SQL, Composed, Identifier

from convlog.storage.requests import ANSWERS_TABLE, KEEP_SECONDS, Answer


def requests_ddl(schema: Identifier) -> list[Composed]:
    table = Identifier(ANSWERS_TABLE)
    return [
        SQL("CREATE TABLE IF NOT EXISTS {s}.{t} (scope text PRIMARY KEY, "
            "fingerprint text NOT NULL, status integer NOT NULL, answer bytea NOT NULL, "
            "created_at double precision NOT NULL)").format(s=schema, t=table),
        SQL("CREATE INDEX IF NOT EXISTS convlog_request_answers_created ON {s}.{t} "
            "(created_at)").format(s=schema, t=table),
    ]


class PostgresRequestTable:
    """Mixed into the PostgreSQL recorder (which provides `datastore`)."""

    datastore: Any

    def _names(self) -> dict[str, Identifier]:
        return {"s": Identifier(self.datastore.schema), "t": Identifier(ANSWERS_TABLE)}

    def find_answer(self, scope: str, now: float) -> Answer | None:
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(SQL("SELECT fingerprint, status, answer FROM {s}.{t} WHERE "
                             "scope = %s AND created_at >= %s").format(**self._names()),
                         (scope, now - KEEP_SECONDS))
            row = curs.fetchone()
        return None if row is None else Answer(row["fingerprint"], row["status"],
                                               bytes(row["answer"]))

    def keep_answer(self, scope: str, found: Answer, now: float) -> Answer:
        names = self._names()
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(SQL("DELETE FROM {s}.{t} WHERE created_at < %s").format(**names),
                         (now - KEEP_SECONDS,))
            curs.execute(SQL("INSERT INTO {s}.{t} VALUES (%s, %s, %s, %s, %s) "
                             "ON CONFLICT DO NOTHING").format(**names), (scope, *found, now))
            curs.execute(SQL("SELECT fingerprint, status, answer FROM {s}.{t} "
                             "WHERE scope = %s").format(**names), (scope,))
            row = curs.fetchone()
        return Answer(row["fingerprint"], row["status"], bytes(row["answer"]))

    def answer_rows(self) -> list[tuple[str, Answer, float]]:
        """See convlog.storage.requests.SQLiteRequestTable.answer_rows."""
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(SQL("SELECT scope, fingerprint, status, answer, created_at "
                             "FROM {s}.{t} ORDER BY created_at, scope").format(**self._names()))
            rows = curs.fetchall()
        return [(r["scope"], Answer(r["fingerprint"], r["status"], bytes(r["answer"])),
                 float(r["created_at"])) for r in rows]

    def drop_answers(self) -> None:
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(SQL("DELETE FROM {s}.{t}").format(**self._names()))
