"""Each backend's recorder is a `ConvlogRecorder` (convlog.storage.recorder), checked
by mypy here (the assignment below is typed) and by the store when it opens; the
recorders themselves pass eventsourcing's own recorder test cases in
tests/integration/test_recorders.py."""

from __future__ import annotations

import pytest

from convlog.storage.memory import POPOConvlogRecorder
from convlog.storage.postgres import PostgresConvlogRecorder
from convlog.storage.recorder import ConvlogRecorder
from convlog.storage.sqlite import SQLiteConvlogRecorder

BACKENDS: list[type[ConvlogRecorder]] = [  # mypy checks each against the protocol
    SQLiteConvlogRecorder, PostgresConvlogRecorder, POPOConvlogRecorder]


def test_a_store_refuses_a_recorder_that_is_not_convlogs() -> None:
    """A PERSISTENCE_MODULE without convlog's tables is refused when the store opens,
    naming the recorder, not on the first write with an AttributeError."""
    import convlog
    from convlog.storage.application import ConversationStore

    with pytest.raises(convlog.StorageError, match="POPOApplicationRecorder is not a"):
        ConversationStore(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})


def test_every_backend_recorder_has_every_method() -> None:
    names = [n for n in dir(ConvlogRecorder) if not n.startswith("_")]
    for backend in BACKENDS:
        assert [n for n in names if not hasattr(backend, n)] == [], backend


def test_what_convlog_uses_of_eventsourcing_that_is_not_public() -> None:
    """convlog.storage.sqlite overrides `SQLiteConnectionPool._create_connection`:
    eventsourcing 9.5 has no public hook for setting up each new connection, and
    convlog sets its PRAGMAs there (synchronous, foreign keys, secure delete, the WAL
    checkpoint size) and retries the switch to WAL while another process creates the
    same file. Its readers (storage/sqlite_readers.py, sqlite_open.py) use
    `SQLiteConnection._sqlite_conn`, the raw connection, to read without a
    transaction wrapper. Both are private, so they are pinned: the version range
    pyproject.toml allows (eventsourcing>=9.5.6,<9.6), and their shape; an upgrade
    fails here first and asks for a look."""
    import inspect
    import sqlite3
    from importlib.metadata import version

    from eventsourcing.persistence import ConnectionPool
    from eventsourcing.sqlite import SQLiteConnection, SQLiteConnectionPool

    assert version("eventsourcing").startswith("9.5.")
    assert list(inspect.signature(SQLiteConnectionPool._create_connection).parameters) == [
        "self"]
    assert "self._create_connection()" in inspect.getsource(ConnectionPool._get_connection)
    raw = sqlite3.connect(":memory:")
    assert SQLiteConnection(sqlite_conn=raw, max_age=None)._sqlite_conn is raw
    raw.close()


def test_what_the_memory_recorder_uses_of_eventsourcing_that_is_not_public() -> None:
    """convlog.storage.memory overrides `POPOApplicationRecorder._insert_events` (the
    one place a batch is inserted, under the recorder's lock) to check and index the
    batch's message ids in the same step, and takes `_database_lock` for its own
    tables: eventsourcing 9.5 has no public hook for either. Pinned, like the SQLite
    ones above: an upgrade fails here first."""
    import inspect
    from importlib.metadata import version

    from eventsourcing.popo import POPOApplicationRecorder

    assert version("eventsourcing").startswith("9.5.")
    assert list(inspect.signature(POPOApplicationRecorder._insert_events).parameters) == [
        "self", "stored_events", "kwargs"]
    assert "self._insert_events(" in inspect.getsource(POPOApplicationRecorder.insert_events)
    assert hasattr(POPOApplicationRecorder(), "_database_lock")


def test_what_the_postgresql_store_uses_of_eventsourcing_and_psycopg_pool_that_is_not_public(
        ) -> None:
    """convlog.storage.postgres_pool adopts its subclass of the datastore that
    eventsourcing's factory builds inline (`datastore.__class__ = ...`: 9.5 has no
    hook to choose the class), which is sound only while the subclass adds methods and
    no state; and it sets psycopg_pool's `reconnect_timeout` on a pool already built
    (read by each reconnection attempt). Pinned, like the SQLite ones: an upgrade of
    either fails here first."""
    import inspect
    from importlib.metadata import version

    import psycopg_pool
    from eventsourcing.postgres import PostgresDatastore, PostgresFactory

    from convlog.storage.postgres_pool import OutageAwareDatastore

    assert version("eventsourcing").startswith("9.5.")
    assert version("psycopg-pool").startswith("3.")
    assert "self.datastore = PostgresDatastore(" in inspect.getsource(PostgresFactory.__init__)
    assert OutageAwareDatastore.__mro__[1] is PostgresDatastore
    assert set(OutageAwareDatastore.__dict__) == {"__module__", "__doc__", "get_connection"}
    source = inspect.getsource(psycopg_pool.ConnectionPool)
    assert "AttemptWithBackoff(timeout=self.reconnect_timeout)" in source
