"""Request fingerprints of the HTTP service's `Idempotency-Key`, kept in the store.

A key's first request is recorded as (scope digest, body fingerprint, time) the first
time it is seen, by whichever server process sees it: the same key sent again with
another body is then refused by every server on the database, and after a restart,
not only by the one that saw it first. The claim is one atomic statement on the
store's primary key, before the request runs: of two servers racing with one key
and two bodies, exactly one wins. Only digests are kept (no user, key or text), and
only for `KEEP_SECONDS` (the IETF idempotency-key draft lets keys expire).
"""

from __future__ import annotations

from typing import Any

REQUESTS_TABLE = "convlog_request_keys"
KEEP_SECONDS = 24 * 3600.0

SQLITE_DDL = [
    f"CREATE TABLE IF NOT EXISTS {REQUESTS_TABLE} (scope TEXT PRIMARY KEY, "
    "fingerprint TEXT NOT NULL, created_at REAL NOT NULL) WITHOUT ROWID",
    f"CREATE INDEX IF NOT EXISTS {REQUESTS_TABLE}_created ON {REQUESTS_TABLE} (created_at)",
]


class SQLiteRequestTable:
    """Mixed into the SQLite recorder (which provides `_write_tx`)."""

    def _write_tx(self, begin: bool = True) -> Any:
        raise NotImplementedError

    def claim_request(self, scope: str, fingerprint: str, now: float) -> str:
        """Record `fingerprint` for `scope` unless one is there; the one on record."""
        with self._write_tx() as conn:
            for statement in SQLITE_DDL:  # a file made before this table existed
                conn.execute(statement)
            conn.execute(f"DELETE FROM {REQUESTS_TABLE} WHERE created_at < ?",
                         [now - KEEP_SECONDS])
            conn.execute(f"INSERT OR IGNORE INTO {REQUESTS_TABLE} VALUES (?, ?, ?)",
                         [scope, fingerprint, now])
            row = conn.execute(f"SELECT fingerprint FROM {REQUESTS_TABLE} WHERE scope = ?",
                               [scope]).fetchone()
        return str(row[0])
