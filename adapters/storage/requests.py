"""The answers of the HTTP service's keyed requests (`Idempotency-Key`), kept in the
store.

A request's first answer is kept as (scope digest, body fingerprint, status, answer,
time) once it succeeded, by whichever server process answered it: the same key sent
again is answered with it by every server on the database, and after a restart (with
another body: refused). Refused requests keep nothing. The answer is sealed like
content in an encrypted store (`ConversationStore.keep_answer`); only digests stand
for the user, route, path and key; rows are kept `KEEP_SECONDS` (the IETF
idempotency-key draft lets keys expire), and `forget` deletes them all.
"""

from __future__ import annotations

from typing import Any, NamedTuple

ANSWERS_TABLE = "convlog_request_answers"
KEEP_SECONDS = 24 * 3600.0

SQLITE_DDL = [
    f"CREATE TABLE IF NOT EXISTS {ANSWERS_TABLE} (scope TEXT PRIMARY KEY, "
    "fingerprint TEXT NOT NULL, status INTEGER NOT NULL, answer BLOB NOT NULL, "
    "created_at REAL NOT NULL) WITHOUT ROWID",
    f"CREATE INDEX IF NOT EXISTS {ANSWERS_TABLE}_created ON {ANSWERS_TABLE} (created_at)",
]


class Answer(NamedTuple):
    fingerprint: str
    status: int
    answer: bytes


class SQLiteRequestTable:
    """Mixed into the SQLite recorder (which provides `_write_tx` and `_rows`)."""

    def _write_tx(self, begin: bool = True) -> Any:
        raise NotImplementedError

    def find_answer(self, scope: str, now: float) -> Answer | None:
        """The answer kept for `scope`, if one younger than `KEEP_SECONDS` is."""
        with self._write_tx(begin=False) as conn:
            for statement in SQLITE_DDL:  # a file made before this table existed
                conn.execute(statement)
            row = conn.execute(f"SELECT fingerprint, status, answer FROM {ANSWERS_TABLE} "
                               "WHERE scope = ? AND created_at >= ?",
                               [scope, now - KEEP_SECONDS]).fetchone()
        return None if row is None else Answer(str(row[0]), int(row[1]), bytes(row[2]))

    def keep_answer(self, scope: str, found: Answer, now: float) -> Answer:
        """Keep `found` for `scope` unless an answer is kept already; the one kept."""
        with self._write_tx() as conn:
            conn.execute(f"DELETE FROM {ANSWERS_TABLE} WHERE created_at < ?",
                         [now - KEEP_SECONDS])
            conn.execute(f"INSERT OR IGNORE INTO {ANSWERS_TABLE} VALUES (?, ?, ?, ?, ?)",
                         [scope, *found, now])
            row = conn.execute(f"SELECT fingerprint, status, answer FROM {ANSWERS_TABLE} "
                               "WHERE scope = ?", [scope]).fetchone()
        return Answer(str(row[0]), int(row[1]), bytes(row[2]))

    def answer_rows(self) -> list[tuple[str, Answer, float]]:
        """Every kept answer as stored (sealed in an encrypted store), with its time,
        oldest first: what `convlog copy` carries to another store."""
        with self._write_tx(begin=False) as conn:
            for statement in SQLITE_DDL:
                conn.execute(statement)
            rows = conn.execute(f"SELECT scope, fingerprint, status, answer, created_at "
                                f"FROM {ANSWERS_TABLE} ORDER BY created_at, scope").fetchall()
        return [(str(r[0]), Answer(str(r[1]), int(r[2]), bytes(r[3])), float(r[4]))
                for r in rows]

    def drop_answers(self) -> None:
        with self._write_tx() as conn:
            conn.execute(f"DELETE FROM {ANSWERS_TABLE}")
