"""WAL checkpoints for convlog's SQLite writer, on a thread of their own.

In WAL mode a commit appends pages to the ``-wal`` file; a checkpoint copies them
back into the database file. Left to SQLite, that copy is made by whichever commit
takes the WAL past 1,000 pages, so one append in a few hundred pays for all of them.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading

WAL_HARD_LIMIT_PAGES = 4000
"""A commit that finds the WAL this long checkpoints it in line (SQLite's own
autocheckpoint, raised from its default of 1,000 pages): the safety net for when the
background checkpointer cannot keep up. 4,000 pages are 16 MiB with 4 KiB pages."""
CHECKPOINT_EVERY_COMMITS = 100
"""The writer wakes the background checkpointer after this many commits."""


class Checkpointer:
    """Copies the WAL back into the database file on a daemon thread of its own.

    Left to SQLite, the commit that takes the WAL past 1,000 pages does that copy
    itself (4 MiB of page writes and two fsyncs): every 100 to 300 turns, one append
    pays for all of them, about a fifth of the append path's time when measured
    (`make bench`). Here the writer only counts its commits and wakes this thread,
    whose PASSIVE checkpoint runs on its own connection, outside the GIL, and never
    blocks a writer or a reader. Durability is unchanged: a checkpoint only moves
    pages that are already committed to the WAL. If this thread falls behind (a
    reader pinning an old snapshot, a loaded host), the in-line autocheckpoint at
    `WAL_HARD_LIMIT_PAGES` still bounds the WAL.
    """

    def __init__(self, db_name: str, timeout: float) -> None:
        self._db_name = db_name
        self._timeout = timeout
        self._wake = threading.Event()
        self._closed = False
        self._commits = 0
        self._thread: threading.Thread | None = None

    def committed(self) -> None:
        """Called by the writer after each commit (under its lock)."""
        self._commits += 1
        if self._commits < CHECKPOINT_EVERY_COMMITS:
            return
        self._commits = 0
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, daemon=True,
                                            name="convlog-sqlite-checkpoint")
            self._thread.start()
        self._wake.set()

    def _run(self) -> None:
        try:
            conn = sqlite3.connect(self._db_name, uri=True, check_same_thread=False,
                                   isolation_level=None, timeout=self._timeout)
        except sqlite3.Error:
            return  # the in-line autocheckpoint still bounds the WAL
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._closed:
                    return
                # Best effort: a busy or failing checkpoint is retried on the next
                # wake-up, and the writer's autocheckpoint is the safety net.
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        finally:
            conn.close()

    def close(self) -> None:
        self._closed = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
