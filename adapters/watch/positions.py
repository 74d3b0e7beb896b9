"""Where each followed file was read to: a small SQLite file beside the log.

A row is written after the lines it covers were recorded (each conversation in its
own batch), so a watcher killed in between reads those lines again on restart, and
the log skips their messages by id: nothing is recorded twice, and a position is
never ahead of the log, so nothing is lost. A row names the file's identity (device,
inode) and a digest of its first bytes and of those just before its position, so a
file replaced or rewritten under the same name is read again from its start instead
of from a position that no longer means anything (its known messages are skipped by
id there too).

Each write is one transaction (WAL). The store holds one row per file, read one at a
time: thousands of followed files cost rows on disk, not memory.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import msgspec

from convlog.services import sidecar
from convlog.services.importing import Position

HEAD_BYTES, TAIL_BYTES = 1024, 256
"""A file is recognised by a digest of its first bytes and of those before its
position (`tail` in a row)."""


class Saved(msgspec.Struct, frozen=True, kw_only=True):
    """A file's saved reading position and what identifies the file."""

    device: int
    inode: int
    position: Position
    tail: bytes = b""


class Positions:
    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self._db = sidecar.connect(path)
        self._db.execute("PRAGMA synchronous=NORMAL")  # a killed process loses nothing
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS convlog_watch_positions ("
            " format TEXT NOT NULL, path TEXT NOT NULL, device INTEGER NOT NULL,"
            " inode INTEGER NOT NULL, offset INTEGER NOT NULL, line INTEGER NOT NULL,"
            " state BLOB NOT NULL, tail BLOB NOT NULL, PRIMARY KEY (format, path))")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def get(self, format: str, path: str) -> Saved | None:
        with self._lock:
            row = self._db.execute(
                "SELECT device, inode, offset, line, state, tail FROM "
                "convlog_watch_positions WHERE format = ? AND path = ?",
                (format, path)).fetchone()
        if row is None:
            return None
        return Saved(device=row[0], inode=row[1], position=Position(
            offset=row[2], line=row[3], state=bytes(row[4])), tail=bytes(row[5]))

    def put(self, format: str, path: str, saved: Saved) -> None:
        p = saved.position
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO convlog_watch_positions VALUES (?,?,?,?,?,?,?,?)",
                (format, path, saved.device, saved.inode, p.offset, p.line, p.state,
                 saved.tail))

    def move(self, format: str, source: str, dest: str) -> bool:
        """The position of a file renamed from `source` to `dest` (True if known)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute("DELETE FROM convlog_watch_positions WHERE format = ? "
                                 "AND path = ?", (format, dest))
                moved = self._db.execute(
                    "UPDATE convlog_watch_positions SET path = ? WHERE format = ? AND "
                    "path = ?", (dest, format, source)).rowcount
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return moved > 0

    def drop(self, format: str, path: str) -> bool:
        """Forget a file that is gone (what was read from it stays in the log)."""
        with self._lock:
            return self._db.execute("DELETE FROM convlog_watch_positions WHERE format = ? "
                                    "AND path = ?", (format, path)).rowcount > 0

    def count(self, format: str) -> int:
        with self._lock:
            row = self._db.execute("SELECT count(*) FROM convlog_watch_positions "
                                   "WHERE format = ?", (format,)).fetchone()
        return int(row[0])

    def paths(self, format: str, batch: int = 1000) -> Iterator[str]:
        """Every path with a position, a page at a time (never all in memory)."""
        after = ""
        while True:
            with self._lock:
                rows = self._db.execute(
                    "SELECT path FROM convlog_watch_positions WHERE format = ? AND path > ? "
                    "ORDER BY path LIMIT ?", (format, after, batch)).fetchall()
            if not rows:
                return
            yield from (r[0] for r in rows)
            after = rows[-1][0]
