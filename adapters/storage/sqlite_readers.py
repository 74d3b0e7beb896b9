"""Read connections for convlog's SQLite recorder, handed out without locks.

eventsourcing's pool gives each read a connection through a semaphore, a condition,
two locks and its bookkeeping: about 12 us per read on this machine, a fifth of an
SDK session's `get_items(limit=20)` (issue 30), where `SQLiteSession` runs one
statement on a connection of its own. A read here takes a connection from a list and
puts it back (``list.pop``/``list.append``, atomic under the GIL), so a connection
is used by one thread at a time and idle ones are reused, newest first (its page
cache is the warmest). Connections are the pool's own (`_TunedPool`: WAL,
synchronous, busy timeout), made when none is idle; at most `KEEP` idle ones are
kept, the rest closed. A file database only: an in-memory one lives in a single
connection, so its reads keep the pool.
"""

from __future__ import annotations

import threading
from typing import Any

KEEP = 8
"""Idle read connections kept open (more concurrent readers get new ones, closed
after use)."""


class Readers:
    def __init__(self, pool: Any) -> None:
        self._pool = pool
        self._idle: list[Any] = []  # eventsourcing SQLiteConnections
        self._closed = False
        self._lock = threading.Lock()  # only for closing against a late put

    def take(self) -> Any:
        """An idle connection (eventsourcing's `SQLiteConnection`), or a new one."""
        try:
            return self._idle.pop()
        except IndexError:
            connection = self._pool._create_connection()
            connection._sqlite_conn.row_factory = None  # plain tuples: ours alone
            return connection

    def put(self, connection: Any) -> None:
        if len(self._idle) < KEEP and not self._closed:
            self._idle.append(connection)
            if not self._closed:
                return
            with self._lock:  # closed meanwhile: close what is left
                self._close_idle()
            return
        connection.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._close_idle()

    def _close_idle(self) -> None:
        while True:
            try:
                self._idle.pop().close()
            except IndexError:
                return
