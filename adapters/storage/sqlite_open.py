"""Opening a SQLite store that other processes may be opening, or making, at once.

The busy timeout does not cover everything a first open does: several hosts started
together on one new file failed with "database is locked" (issue 26). Here: the switch
to WAL and the schema's creation, retried while another process does the same, and
sqlite3's exceptions typed as eventsourcing's.
"""

from __future__ import annotations

import contextlib
import random
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

from eventsourcing.persistence import IntegrityError, OperationalError, PersistenceError
from eventsourcing.sqlite import SQLiteDatastore

DEFAULT_LOCK_TIMEOUT = 5  # seconds; eventsourcing's default, `?timeout=` changes it
T = TypeVar("T")


@contextlib.contextmanager
def typed_errors() -> Iterator[None]:
    """sqlite3's exceptions as eventsourcing's, as its transaction wrapper raises them
    (callers above tell a conflict, IntegrityError, from other storage failures)."""
    try:
        yield
    except sqlite3.Error as exc:
        raise typed(exc) from exc


def typed(exc: sqlite3.Error) -> PersistenceError:
    """The eventsourcing exception that `typed_errors` raises for `exc`."""
    if isinstance(exc, sqlite3.IntegrityError):
        return IntegrityError(exc)
    if isinstance(exc, sqlite3.OperationalError):
        return OperationalError(exc)
    return PersistenceError(exc)


def _locked(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def retry_locked(action: Callable[[], T], timeout: float) -> T:
    """`action`, retried while SQLite answers "database is locked" without waiting.

    The busy timeout does not cover everything a first open does: switching a new
    file to WAL needs an exclusive lock that SQLite refuses at once (no busy handler)
    when another process is converting or creating the same file, and a deferred
    transaction that read the schema cannot upgrade to a write after another process
    wrote it. Several hosts starting on one new file hit both; a retry then finds the
    work done by the winner."""
    deadline = time.monotonic() + timeout
    delay = 0.005
    while True:
        try:
            return action()
        except sqlite3.OperationalError as exc:
            if not _locked(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(delay * (0.5 + random.random()))
        delay = min(delay * 2, 0.1)


def use_wal(conn: sqlite3.Connection, timeout: float) -> str:
    """Put the file in WAL mode (it stays so: only the first open of a file changes
    it); returns the journal mode in force (``memory`` for in-memory databases)."""
    def switch() -> str:
        mode = str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower()
        if mode in ("wal", "memory"):
            return mode
        return str(conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]).lower()

    return retry_locked(switch, timeout)


def create_schema(datastore: SQLiteDatastore, statements: Sequence[str]) -> None:
    """`statements` (CREATE ... IF NOT EXISTS) in one transaction. A schema already
    there needs no write lock, so the first try is a plain (deferred) transaction: an
    open is not held up by another process's write. When that try finds the file
    locked (another process is making the schema: eventsourcing's deferred BEGIN
    then failed with "database is locked"), the retries take the write lock before
    reading anything (BEGIN IMMEDIATE, which waits for the lock): several hosts
    opening one new file at once all succeed."""
    pool = datastore.pool
    attempts = 0

    def create() -> None:
        nonlocal attempts
        attempts += 1
        connection = pool.get_connection(is_writer=True)
        conn = connection._sqlite_conn
        try:
            conn.execute("BEGIN" if attempts == 1 else "BEGIN IMMEDIATE")
            try:
                for statement in statements:
                    conn.execute(statement)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        finally:
            pool.put_connection(connection)

    with typed_errors():
        retry_locked(create, pool.lock_timeout or DEFAULT_LOCK_TIMEOUT)
