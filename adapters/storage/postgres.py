"""PostgreSQL storage: eventsourcing's PostgreSQL persistence plus the message-id index.

Selected with ``PERSISTENCE_MODULE=convlog.storage.postgres:Factory`` (done by
`convlog.storage.urls` for ``postgresql://`` URLs). Same shape as convlog.storage.sqlite: a
``convlog_message_ids`` table written in the SAME transaction as the events (right
after them, inside eventsourcing's pipelined transaction), so a
retried turn is a no-op however many hosts write; and `select_raw` for the views.

Writers: eventsourcing locks the events table per insert (EXCLUSIVE mode) so that
notification ids become visible in order; a views catch-up reading ``> position``
therefore never skips a late commit. A unique violation (a stale version, a known
message id) is always an IntegrityError, a conflict the store answers at once by
reloading the tail (`insert_events`). Connection errors are retried by eventsourcing
(10 attempts, 0.2 s apart); a commit whose acknowledgement was lost is retried as a
conflict, and convlog then finds the turn's message ids already recorded: the turn
is not written twice.
"""

from __future__ import annotations

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
from eventsourcing.utils import retry
from psycopg.sql import SQL, Identifier

from convlog.storage.errors import StorageError
from convlog.storage.postgres_keys import PostgresKeyTable, keys_ddl

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


class PostgresConvlogRecorder(PostgresApplicationRecorder, PostgresKeyTable):
    """The events, the message-id index, and the key table of encrypted stores
    (convlog.storage.postgres_keys)."""

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
        self._select_tail = SQL(
            "SELECT originator_version, topic, state FROM {schema}.{table} "
            "WHERE originator_id = %s AND topic = ANY(%s) "
            "ORDER BY originator_version DESC LIMIT %s").format(
                schema=schema, table=Identifier(self.events_table_name))

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any
                      ) -> Sequence[int] | None:
        """eventsourcing's pipelined insert, with a conflict always reported as one.

        A unique violation (a stale version, a known message id) is seen at the
        pipeline's sync; eventsourcing swallowed it there and raised it after the
        transaction's exit, which then sometimes failed first with PipelineAborted: a
        connection error to eventsourcing, so the same stale insert was retried after
        0.2 s sleeps, up to 10 times (issue 33). Here the conflict rolls the
        transaction back and is raised as IntegrityError whatever the exit reports:
        the caller reloads the tail and retries at once."""
        if not stored_events:
            return None
        conflict: psycopg.IntegrityError | None = None
        try:
            with self.datastore.get_connection() as conn, conn.pipeline() as pipeline, \
                    conn.transaction(), conn.cursor() as curs:
                try:
                    self._insert_stored_events(curs, stored_events, **kwargs)
                    pipeline.sync()
                except psycopg.IntegrityError as exc:
                    conflict = exc
                    raise
        except (IntegrityError, InterfaceError, OperationalError) as exc:
            if conflict is not None:
                raise IntegrityError(str(conflict)) from conflict
            raise exc
        return None

    def _insert_stored_events(self, curs: Any, stored_events: Sequence[StoredEvent],
                              **kwargs: Any) -> None:
        # After the events, inside the block whose pipeline sync reports the FIRST
        # failed statement: a known message id then raises IntegrityError (a retry
        # that convlog resolves). From eventsourcing's earlier `_insert_events` hook,
        # the next command could be sent before the error arrived and fail instead
        # with PipelineAborted, an OperationalError that was retried 10 times and
        # then reported as a storage failure (a flaky test found it).
        super()._insert_stored_events(curs, stored_events, **kwargs)
        message_ids: tuple[UUID, Sequence[str]] | None = kwargs.get("message_ids")
        if message_ids:  # own cursor: `curs` holds the RETURNING ids eventsourcing reads
            conversation, new_ids = message_ids
            with curs.connection.cursor() as ids:
                ids.executemany(self._insert_ids, [(conversation, m) for m in new_ids])

    def known_message_ids(self, conversation: UUID, message_ids: Sequence[str]) -> set[str]:
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(self._select_ids, (conversation, list(message_ids)))
            return {row["message_id"] for row in curs.fetchall()}

    def select_raw(self, after: int, limit: int) -> list[tuple[int, str, int, str, str]]:
        """See convlog.storage.sqlite.SQLiteConvlogRecorder.select_raw."""
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(self._select_raw, (after, limit))
            return [(row["notification_id"], _hex(row["originator_id"]),
                     row["originator_version"], row["topic"],
                     bytes(row["state"]).decode("utf-8", "replace"))
                    for row in curs.fetchall()]

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
        every insert) or `timeout` passes. The listening connection is kept."""
        if self._listener is None or self._listener.closed:
            pool: Any = self.datastore.pool
            kwargs = {k: v for k, v in (pool.kwargs or {}).items() if k != "autocommit"}
            self._listener = psycopg.connect(str(pool.conninfo), autocommit=True, **kwargs)
            self._listener.execute(SQL("LISTEN {0}").format(Identifier(self.channel_name)))
        for _ in self._listener.notifies(timeout=timeout, stop_after=1):
            break

    def close_listener(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None


def _hex(value: UUID | str) -> str:
    return value.hex if isinstance(value, UUID) else UUID(str(value)).hex


class Factory(PostgresFactory):
    application_recorder_class = PostgresConvlogRecorder
    aggregate_recorder_class = PostgresSnapshotRecorder

    def application_recorder(self) -> ApplicationRecorder:
        recorder = PostgresConvlogRecorder(self.datastore)
        if self.env_create_table():
            recorder.create_table()
        return recorder
