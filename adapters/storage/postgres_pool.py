"""How a PostgreSQL store behaves while the database is away (issue 33).

eventsourcing's pool waited `connect_timeout` (30 s) for a connection, and every
recorder method retried a connection error 10 times: a write during an outage hung
for minutes instead of failing. And psycopg_pool reconnects with an exponential
back-off (1, 2, 4, 8, 16 s...): after a 20 s outage, requests waited 12.8 s more for
its next attempt although the database was back.

Here the wait for a connection is bounded (`connect_timeout`, default 2 s, set by
convlog.storage.urls) and its expiry is final (`DatabaseUnavailable`, not retried:
the HTTP layer answers 503 at once), and a failed reconnection gives up after
`RECONNECT_TIMEOUT`, after which the next request that needs a connection starts a
new attempt at once: writes resume within about that long after the database is back.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from eventsourcing.persistence import OperationalError, PersistenceError
from eventsourcing.postgres import PostgresDatastore
from psycopg_pool import PoolTimeout

RECONNECT_TIMEOUT = 0.5
"""Seconds the pool keeps retrying a failed connection in the background before it
leaves the next attempt to the next request."""


class DatabaseUnavailable(PersistenceError):
    """No connection within the bounded wait: final, never retried as a connection
    error (eventsourcing retries OperationalError and InterfaceError only)."""


class OutageAwareDatastore(PostgresDatastore):
    """eventsourcing's datastore whose pool wait ends in `DatabaseUnavailable`."""

    @contextmanager
    def get_connection(self) -> Iterator[Any]:
        try:
            with super().get_connection() as conn:
                yield conn
        except OperationalError as exc:
            if isinstance(exc.__cause__, PoolTimeout):
                raise DatabaseUnavailable(
                    f"PostgreSQL is unavailable: no connection within "
                    f"{self.pool.timeout:g} s") from exc
            raise


def bound_outages(datastore: PostgresDatastore) -> None:
    """Make `datastore` (built by eventsourcing's factory, not yet opened) behave as
    this module says."""
    # eventsourcing builds the datastore inline: adopt our subclass (methods only).
    datastore.__class__ = OutageAwareDatastore
    pool: Any = datastore.pool
    pool.reconnect_timeout = RECONNECT_TIMEOUT
    if isinstance(pool.kwargs, dict):  # libpq's own connect timeout, for a dead host
        pool.kwargs.setdefault("connect_timeout", max(2, int(pool.timeout)))
