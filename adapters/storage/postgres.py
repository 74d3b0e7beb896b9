"""PostgreSQL storage: eventsourcing's PostgreSQL persistence plus the message-id index.

Selected with ``PERSISTENCE_MODULE=convlog.storage.postgres:Factory`` (done by
`convlog.storage.urls` for ``postgresql://`` URLs). Same shape as convlog.storage.sqlite: a
``convlog_message_ids`` table written in the SAME transaction as the events, so a
retried turn is a no-op however many hosts write; and `select_raw` for the views.

Writers: a batch is one call of the server-side function ``convlog_append_v1``
(autocommit): the message ids, then an EXCLUSIVE lock on the events table (so that
notification ids become visible in order: a views catch-up reading ``> position``
never skips a late commit), the NOTIFY and the events. The lock is therefore held for
the server's own work only, never across a round trip to the client. A unique
violation (a stale version, a known message id) is always an IntegrityError, a
conflict the store answers at once by reloading the tail. Connection errors are
retried (10 attempts, 0.2 s apart); a retry first reads back whether the failed
attempt committed (its acknowledgement lost), so the write reports what it stored
(`appended`), and a host that retries the same turn never writes it twice.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from typing import Any
from uuid import UUID

import psycopg
from eventsourcing.persistence import (
    ApplicationRecorder,
    IntegrityError,
    InterfaceError,
    OperationalError,
    StoredEvent,
)
from eventsourcing.postgres import (
    PostgresAggregateRecorder,
    PostgresApplicationRecorder,
    PostgresFactory,
)
from psycopg.sql import SQL, Identifier

from convlog.storage.errors import StorageError, StorageUnavailable
from convlog.storage.postgres_keys import PostgresKeyTable, keys_ddl
from convlog.storage.postgres_pool import DatabaseUnavailable, bound_outages
from convlog.storage.postgres_requests import PostgresRequestTable, requests_ddl
from convlog.storage.postgres_token_counts import PostgresTokenCounts, token_counts_ddl
from convlog.storage.recorder import PortableRows

APPEND_FUNCTION = "convlog_append_v1"
"""The server-side insert of a batch (`PostgresConvlogRecorder._append_function`);
a new version gets a new name, so hosts of both versions can share a database."""
INSERT_ATTEMPTS = 10
RETRY_WAIT = 0.2
"""A write's attempts on connection errors, and the pause between them."""
_DDL_LOCK = 0x636F6E766C6F67  # "convlog": one advisory lock key for schema creation


def _create_serialized(recorder: Any, create: Any) -> None:
    """Hosts start together: concurrent CREATE TABLE/TYPE/FUNCTION IF NOT EXISTS in
    PostgreSQL can fail ("tuple concurrently updated"), so creation takes a
    database-wide advisory lock first."""
    with recorder.datastore.get_connection() as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (_DDL_LOCK,))
        try:
            create()
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_DDL_LOCK,))


class PostgresSnapshotRecorder(PostgresAggregateRecorder):
    def create_table(self) -> None:
        _create_serialized(self, super().create_table)


class PostgresConvlogRecorder(PostgresApplicationRecorder, PostgresKeyTable,
                              PostgresRequestTable, PostgresTokenCounts, PortableRows):
    """The events, the message-id index, the key table of encrypted stores
    (convlog.storage.postgres_keys) and the token counts made on read
    (convlog.storage.token_counts)."""

    index_table = "convlog_message_ids"

    def create_table(self) -> None:
        _create_serialized(self, super().create_table)

    def __init__(self, datastore: Any, *, events_table_name: str = "stored_events"):
        super().__init__(datastore, events_table_name=events_table_name)
        self._listener: psycopg.Connection[Any] | None = None
        schema = Identifier(self.datastore.schema)
        index = Identifier(self.index_table)
        self.sql_create_statements.append(SQL(
            "CREATE TABLE IF NOT EXISTS {schema}.{index} (conversation_id uuid NOT NULL, "
            "message_id text NOT NULL, PRIMARY KEY (conversation_id, message_id))"
        ).format(schema=schema, index=index))
        self.sql_create_statements.extend(keys_ddl(schema))
        self.sql_create_statements.extend(requests_ddl(schema))
        self.sql_create_statements.extend(token_counts_ddl(schema))
        self.sql_create_statements.append(self._append_function(schema, index))
        self._lock_wait = f"{self.datastore.lock_timeout}s"
        """This host's lock timeout, as PostgreSQL's lock_timeout ('0s': no limit)."""
        self._append = SQL("SELECT {schema}.{function}(%s, %s, %s, %s)").format(
            schema=schema, function=Identifier(APPEND_FUNCTION))
        store = Identifier("convlog_store")
        self.sql_create_statements.extend([
            SQL("CREATE TABLE IF NOT EXISTS {schema}.{store} (name text PRIMARY KEY, "
                "value text NOT NULL)").format(schema=schema, store=store),
            # the store's identity, made with it (see convlog.storage.sqlite.STORE_DDL)
            SQL("INSERT INTO {schema}.{store} VALUES "
                "('id', replace(gen_random_uuid()::text, '-', '')) ON CONFLICT DO NOTHING"
                ).format(schema=schema, store=store)])
        self._select_identity = SQL("SELECT value FROM {schema}.{store} WHERE name = 'id'"
                                    ).format(schema=schema, store=store)
        self._identity: str | None = None
        self._insert_ids = SQL("INSERT INTO {schema}.{index} VALUES (%s, %s)").format(
            schema=schema, index=index)
        self._select_ids = SQL(
            "SELECT message_id FROM {schema}.{index} WHERE conversation_id = %s "
            "AND message_id = ANY(%s)").format(schema=schema, index=index)
        self._select_raw = SQL(
            "SELECT notification_id, originator_id, originator_version, topic, state "
            "FROM {schema}.{table} WHERE notification_id > %s "
            "ORDER BY notification_id LIMIT %s").format(
                schema=schema, table=Identifier(self.events_table_name))
        self._select_state = SQL(
            "SELECT state FROM {schema}.{table} "
            "WHERE originator_id = %s AND originator_version = %s").format(
                schema=schema, table=Identifier(self.events_table_name))
        self._select_tail = SQL(
            "SELECT originator_version, topic, state FROM {schema}.{table} "
            "WHERE originator_id = %s AND topic = ANY(%s) "
            "ORDER BY originator_version DESC LIMIT %s").format(
                schema=schema, table=Identifier(self.events_table_name))

    def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any
                      ) -> Sequence[int] | None:
        """Insert a batch of events (and its message ids) in ONE statement, committed
        by the server on its own: `convlog_append_v1` (see `_append_function`).

        eventsourcing's pipelined insert held the events-table lock across round
        trips (LOCK..INSERT, sync, then COMMIT): a transaction idle while its client
        waited for CPU blocked every other writer (issue 33). A unique violation (a
        stale version, a known message id) is an IntegrityError: the caller reloads
        the tail and retries at once, never a connection-error retry.

        A connection error is retried (`INSERT_ATTEMPTS`, `RETRY_WAIT` apart). The
        failed attempt may have committed with only its acknowledgement lost: each
        retry first reads the batch's first event back (same stream, version and
        stored bytes: this call's own) and, when it is there, returns as stored.
        Without that, the retry conflicted on its own rows and the turn was reported
        as already recorded (`appended=[]`) although this very call stored it."""
        if not stored_events:
            return None
        for attempt in range(1, INSERT_ATTEMPTS + 1):
            try:
                if attempt > 1 and self._stored(stored_events[0]):
                    return None  # committed by the attempt whose answer was lost
                self._insert_once(stored_events, kwargs.get("message_ids"))
                return None
            except (InterfaceError, OperationalError):
                if attempt == INSERT_ATTEMPTS:
                    raise
                time.sleep(RETRY_WAIT)
        return None

    def _insert_once(self, stored_events: Sequence[StoredEvent],
                     message_ids: tuple[UUID, Sequence[str]] | None) -> None:
        conversation, new_ids = message_ids if message_ids else (None, None)
        events = [self.construct_pg_stored_event(e.originator_id, e.originator_version,
                                                 e.topic, e.state) for e in stored_events]
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            try:
                curs.execute(self._append, (events, conversation,
                                            list(new_ids) if new_ids else None,
                                            self._lock_wait), prepare=True)
            except psycopg.IntegrityError as exc:
                raise IntegrityError(str(exc)) from exc

    def insert_runs(self, runs: Sequence[tuple[Sequence[tuple[str, int, str, bytes]],
                                               tuple[UUID, Sequence[str]] | None]]) -> None:
        """Several conversations' runs of rows and their index entries (in order) in ONE
        transaction, each through the append function: `convlog copy`'s batch, all or
        nothing. Not retried: a lost acknowledgement is found by the copy's re-run."""
        with self.datastore.transaction(commit=True) as curs:
            for rows, message_ids in runs:
                conversation, new_ids = message_ids if message_ids else (None, None)
                events = [self.construct_pg_stored_event(UUID(hex_id), version, topic, state)
                          for hex_id, version, topic, state in rows]
                try:
                    curs.execute(self._append, (events, conversation,
                                                list(new_ids) if new_ids else None,
                                                self._lock_wait))
                except psycopg.IntegrityError as exc:
                    raise IntegrityError(str(exc)) from exc

    def _stored(self, event: StoredEvent) -> bool:
        """Whether `event` itself (not merely one at its version) is stored."""
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            curs.execute(self._select_state, (event.originator_id, event.originator_version))
            row = curs.fetchone()
        return row is not None and bytes(row["state"]) == bytes(event.state)

    def _append_function(self, schema: Identifier, index: Identifier) -> Any:
        """The server-side insert. Its message ids first (a known id conflicts before
        any lock is taken), then the EXCLUSIVE lock on the events table, the NOTIFY
        and the events: run as one autocommit statement, the lock is taken and
        released inside the server's own work. The lock stays because the views'
        catch-up reads ``notification_id > position``: ids must become visible in
        order (commits in id order); without it, a reader could pass over an id whose
        transaction commits later.

        Every host of the database shares the function, so nothing of one host's
        configuration is written into it: the lock timeout (`?lock_timeout=`) is an
        argument of each call (see `_lock_wait`)."""
        return SQL(
            "CREATE OR REPLACE FUNCTION {schema}.{function}("
            "events {schema}.{event}[], conversation uuid, message_ids text[], "
            "lock_wait text) "
            "RETURNS void LANGUAGE plpgsql AS $BODY$ BEGIN "
            "PERFORM set_config('lock_timeout', lock_wait, true); "
            "IF message_ids IS NOT NULL THEN "
            "INSERT INTO {schema}.{index} SELECT conversation, unnest(message_ids); "
            "END IF; "
            "LOCK TABLE {schema}.{table} IN EXCLUSIVE MODE; "
            "NOTIFY {channel}; "
            "INSERT INTO {schema}.{table} (originator_id, originator_version, topic, state) "
            "SELECT originator_id, originator_version, topic, state FROM unnest(events); "
            "END; $BODY$").format(
                schema=schema, function=Identifier(APPEND_FUNCTION), index=index,
                event=Identifier(self.stored_event_type_name),
                table=Identifier(self.events_table_name),
                channel=Identifier(self.channel_name))

    def known_message_ids(self, conversation: UUID, message_ids: Sequence[str]) -> set[str]:
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(self._select_ids, (conversation, list(message_ids)))
            return {row["message_id"] for row in curs.fetchall()}

    def index_entries(self, conversation: UUID) -> list[str]:
        """See convlog.storage.sqlite.SQLiteConvlogRecorder.index_entries."""
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(SQL("SELECT message_id FROM {schema}.{index} WHERE "
                             "conversation_id = %s ORDER BY message_id").format(
                schema=Identifier(self.datastore.schema),
                index=Identifier(self.index_table)), (conversation,))
            return [row["message_id"] for row in curs.fetchall()]

    def select_raw(self, after: int, limit: int) -> list[tuple[int, str, int, str, str]]:
        """See convlog.storage.sqlite.SQLiteConvlogRecorder.select_raw. The database
        being away is StorageUnavailable (the views' follower waits it out)."""
        try:
            with self.datastore.transaction(commit=False) as curs:
                curs.execute(self._select_raw, (after, limit))
                rows = curs.fetchall()
        except (InterfaceError, OperationalError, DatabaseUnavailable,
                psycopg.OperationalError) as exc:
            raise StorageUnavailable(f"PostgreSQL: {' '.join(str(exc).split())}") from None
        return [(row["notification_id"], _hex(row["originator_id"]),
                 row["originator_version"], row["topic"],
                 bytes(row["state"]).decode("utf-8", "replace"))
                for row in rows]

    def store_identity(self) -> str:
        """See convlog.storage.sqlite.SQLiteConvlogRecorder.store_identity."""
        if self._identity is None:
            with self.datastore.transaction(commit=False) as curs:
                curs.execute(self._select_identity)
                row = curs.fetchone()
                if row is None:  # made by create_table: only a schema made elsewhere lacks it
                    raise StorageError("the store has no identity (convlog_store.id)")
                self._identity = str(row["value"])
        return self._identity

    def select_tail(self, originator_id: UUID, topics: Sequence[str], limit: int
                    ) -> list[tuple[int, str, bytes]]:
        """See convlog.storage.sqlite.SQLiteConvlogRecorder.select_tail."""
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(self._select_tail, (originator_id, list(topics), limit))
            return [(row["originator_version"], row["topic"], bytes(row["state"]))
                    for row in curs.fetchall()]

    def wait_for_changes(self, timeout: float) -> None:
        """Block until a writer commits (LISTEN on the channel eventsourcing NOTIFYs on
        every insert) or `timeout` passes. The listening connection is kept; when the
        database is away, it is dropped and `timeout` slept (the caller retries)."""
        try:
            if self._listener is None or self._listener.closed:
                pool: Any = self.datastore.pool
                kwargs = {k: v for k, v in (pool.kwargs or {}).items() if k != "autocommit"}
                self._listener = psycopg.connect(str(pool.conninfo), autocommit=True,
                                                 **kwargs)
                self._listener.execute(SQL("LISTEN {0}").format(
                    Identifier(self.channel_name)))
            for _ in self._listener.notifies(timeout=timeout, stop_after=1):
                break
        except psycopg.OperationalError:
            self.close_listener()
            time.sleep(timeout)

    def close_connections(self) -> None:
        """The LISTEN connection (`wait_for_changes`); the pool is eventsourcing's."""
        self.close_listener()

    def close_listener(self) -> None:
        if self._listener is not None:
            with contextlib.suppress(psycopg.Error):
                self._listener.close()
            self._listener = None


def _hex(value: UUID | str) -> str:
    return value.hex if isinstance(value, UUID) else UUID(str(value)).hex


class Factory(PostgresFactory):
    application_recorder_class = PostgresConvlogRecorder
    aggregate_recorder_class = PostgresSnapshotRecorder

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        bound_outages(self.datastore)  # 503 at once in an outage, resume at once after

    def application_recorder(self) -> ApplicationRecorder:
        recorder = PostgresConvlogRecorder(self.datastore)
        if self.env_create_table():
            recorder.create_table()
        return recorder
