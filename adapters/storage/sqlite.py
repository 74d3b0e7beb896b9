"""SQLite storage: eventsourcing's SQLite persistence, tuned, plus a message-id index.

Selected with ``PERSISTENCE_MODULE=convlog.storage.sqlite`` (done by `convlog.storage.urls` for
``sqlite:///...`` URLs). What it adds to the stock module:

* every connection sets ``PRAGMA synchronous`` (default NORMAL: in WAL mode a commit
  survives a killed process, and can only be lost to a power cut or an OS crash;
  ``?synchronous=full`` makes every commit survive those too, at a quarter to a
  third of the single-append rate on this machine: one fsync per commit; see
  `make bench`),
* one dedicated connection for writes (see `insert_events`),
* WAL checkpoints on a thread of their own (see `convlog.storage.sqlite_wal`),
* reads of one statement on a pooled connection, without a transaction wrapper
  (see `_rows`), and
* a ``convlog_stream_message_ids`` table, written in the SAME transaction as the
  events, whose primary key makes a message id unique per conversation. Retried turns
  are no-ops, and the check costs one indexed lookup however long the conversation is.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar
from uuid import UUID

from eventsourcing.persistence import (
    InterfaceError,
    StoredEvent,
)
from eventsourcing.sqlite import (
    SQLiteAggregateRecorder,
    SQLiteApplicationRecorder,
    SQLiteConnection,
    SQLiteConnectionPool,
    SQLiteFactory,
)

from convlog.storage.errors import WriteLockBusy
from convlog.storage.requests import SQLITE_DDL as SQLITE_REQUESTS_DDL
from convlog.storage.requests import SQLiteRequestTable
from convlog.storage.sqlite_keys import KEYS_DDL, SQLiteKeyTable
from convlog.storage.sqlite_open import (
    DEFAULT_LOCK_TIMEOUT,
    create_schema,
    typed_errors,
    use_wal,
)
from convlog.storage.sqlite_open import typed as _typed
from convlog.storage.sqlite_readers import Readers
from convlog.storage.sqlite_wal import WAL_HARD_LIMIT_PAGES, Checkpointer
from convlog.storage.token_counts import SQLITE_DDL as TOKEN_COUNTS_DDL
from convlog.storage.token_counts import SQLiteTokenCounts

SYNCHRONOUS_MODES = ("off", "normal", "full", "extra")
_IN_CHUNK = 500  # stay far below SQLite's bound-parameter limit
_CHUNK = 256  # rows a whole-stream read decodes at a time (select_decoded): a chunk of
# ~200 KB stays in the CPU cache while it is decoded; 1,000 rows were 3-5% slower at
# 10k-100k items, 4,000 rows 10% (interleaved in one process, issue 30)
_ROWS = 200  # rows an insert of many takes at once (4 values a row: far below the limit)
T = TypeVar("T")
_STREAM_CACHE = 65_536  # stream numbers remembered by a writer (~10 MiB at most)
_TABLE_EXISTS = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
STORE_DDL = ("CREATE TABLE IF NOT EXISTS convlog_store (name TEXT PRIMARY KEY, "
             "value TEXT NOT NULL)")
"""Facts about the store itself; its ``id`` row is the store's identity (the views
record it, with their position, and are rebuilt for any other store)."""
STORE_ID_SELECT = "SELECT value FROM convlog_store WHERE name = 'id'"
STORE_ID_INSERT = ("INSERT OR IGNORE INTO convlog_store VALUES "
                   "('id', lower(hex(randomblob(16))))")


_NOT_WAITING = threading.local()
"""`.on` in a thread inside `not_waiting`: its write transactions do not wait for
another process's write lock."""


def _begin(execute: Callable[[str], Any], busy_ms: int) -> None:
    """BEGIN IMMEDIATE: take SQLite's write lock, waiting for another process's up to
    the connection's busy timeout; inside `not_waiting`, not at all (WriteLockBusy)."""
    if not getattr(_NOT_WAITING, "on", False):
        execute("BEGIN IMMEDIATE")
        return
    execute("PRAGMA busy_timeout = 0")
    try:
        execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if exc.sqlite_errorcode & 0xFF not in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            raise
        raise WriteLockBusy("another process holds the write lock") from None
    finally:
        execute(f"PRAGMA busy_timeout = {busy_ms}")


@contextlib.contextmanager
def _immediate(conn: sqlite3.Connection, busy_ms: int) -> Iterator[None]:
    """One write transaction: the write lock taken before anything is read, committed
    on success, rolled back on any failure."""
    _begin(conn.execute, busy_ms)
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        # SQLite may have rolled back already (a full disk does): a second ROLLBACK
        # would fail and hide the real error.
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


class SQLiteSnapshotRecorder(SQLiteAggregateRecorder):
    """eventsourcing's snapshot table, created like the events' (`create_schema`)."""

    def create_table(self) -> None:
        create_schema(self.datastore, self.create_table_statements)


class _TunedPool(SQLiteConnectionPool):
    synchronous = "normal"

    def _create_connection(self) -> SQLiteConnection:
        """eventsourcing's connection (autocommit, busy timeout, WAL, sqlite3.Row),
        with the switch to WAL retried while another process makes the same new file
        (see `_retry_locked`)."""
        timeout = self.lock_timeout or DEFAULT_LOCK_TIMEOUT
        try:
            raw = sqlite3.connect(database=self.db_name, uri=True, check_same_thread=False,
                                  isolation_level=None, cached_statements=True,
                                  timeout=timeout)
        except (sqlite3.Error, TypeError) as exc:
            raise InterfaceError(exc) from exc
        if not self.is_sqlite_memory_mode and not self.is_journal_mode_wal:
            with typed_errors():
                use_wal(raw, timeout)
            self.is_journal_mode_wal = True
        raw.row_factory = sqlite3.Row
        connection = SQLiteConnection(sqlite_conn=raw, max_age=self.max_age)
        raw.execute(f"PRAGMA synchronous={self.synchronous}")
        raw.execute("PRAGMA foreign_keys=ON")
        raw.execute("PRAGMA secure_delete=ON")  # snapshots are written here
        raw.execute(f"PRAGMA wal_autocheckpoint={WAL_HARD_LIMIT_PAGES}")
        return connection


class SQLiteConvlogRecorder(SQLiteApplicationRecorder, SQLiteKeyTable, SQLiteRequestTable,
                            SQLiteTokenCounts):
    """Stored events plus the message-id index, in one transaction per save; the key
    table of encrypted stores (convlog.storage.sqlite_keys); the token counts made on
    read (convlog.storage.token_counts).

    Storage format (a contract with every existing file): the index is keyed by
    (stream, message id), where a stream is numbered by the rowid of its first event
    (version 1, never deleted). Keying it by the 32-hex stream id, as the first
    format (``convlog_message_ids``) did, made every index entry ~30 bytes longer and
    an append in turns ~3 us a message slower; `create_table` migrates that format.
    """

    index_table = "convlog_stream_message_ids"
    old_index_table = "convlog_message_ids"

    def __init__(self, datastore: Any, events_table_name: str = "stored_events"):
        super().__init__(datastore, events_table_name)
        self._writer: sqlite3.Connection | None = None
        self._cursor: sqlite3.Cursor | None = None
        """The writer's one cursor for appends: `Connection.execute` makes a cursor per
        statement, four per append (issue 30)."""
        self._writer_lock = threading.Lock()
        self._checkpointer: Checkpointer | None = None
        # its first row: version 1, or a fork's first (convlog.storage.lineage)
        self._stream_number = (f"SELECT rowid FROM {self.events_table_name} "
                               "WHERE originator_id = ? ORDER BY originator_version LIMIT 1")
        # Committed stream numbers: a committed row's rowid never changes and convlog
        # deletes no event, so a number, once committed, is good for the process's
        # life. Saves an indexed lookup (~5 us) per append. Bounded; cleared when full.
        self._streams: dict[UUID, int] = {}
        self._insert_message_id = f"INSERT INTO {self.index_table} VALUES (?, ?)"
        self._events_head = (f"INSERT INTO {self.events_table_name} (originator_id, "
                             "originator_version, topic, state) VALUES ")
        self._identity: str | None = None
        self._readers: Readers | None = None

    def construct_create_table_statements(self) -> list[str]:
        return [
            *super().construct_create_table_statements(),
            f"CREATE TABLE IF NOT EXISTS {self.index_table} ("
            "stream INTEGER NOT NULL, message_id TEXT NOT NULL, "
            "PRIMARY KEY (stream, message_id)) WITHOUT ROWID",
            *KEYS_DDL,
            *SQLITE_REQUESTS_DDL,
            TOKEN_COUNTS_DDL,
            STORE_DDL,
        ]

    def store_identity(self) -> str:
        """The id this store was created with (stored in it: a copy keeps it, a new
        file at the same path gets another). Read once per process."""
        if self._identity is None:
            (row,) = self._rows(STORE_ID_SELECT, [])
            self._identity = str(row[0])
        return self._identity

    def create_table(self) -> None:
        """The schema (see `create_schema`: race-free when several hosts open one new
        file at once), then the store's identity, made once with the store."""
        create_schema(self.datastore, self.create_table_statements)
        if not self._rows(STORE_ID_SELECT, []):
            create_schema(self.datastore, [STORE_ID_INSERT])
        if self._has_table(self.old_index_table):
            self._migrate_old_index()

    def _has_table(self, name: str) -> bool:
        return bool(self._rows(_TABLE_EXISTS, [name]))

    def _migrate_old_index(self) -> None:
        """Move the first format's index into the current one, in one transaction
        (a crash leaves the old format whole, and the next open migrates it again);
        another process may have migrated it meanwhile, hence the second look."""
        with self._writer_lock:
            conn = self._writer or self._connect_writer()
            with _immediate(conn, self._busy_ms):
                if conn.execute(_TABLE_EXISTS, [self.old_index_table]).fetchone():
                    conn.execute(
                        f"INSERT OR IGNORE INTO {self.index_table} (stream, message_id) "
                        f"SELECT e.rowid, m.message_id FROM {self.old_index_table} m "
                        f"JOIN {self.events_table_name} e ON e.originator_id = m.conversation_id"
                        " AND e.originator_version = 1")
                    conn.execute(f"DROP TABLE {self.old_index_table}")

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        """`insert_rows` of stored events (eventsourcing's interface; convlog's own
        writes call `insert_rows`), and their notification ids, as eventsourcing's
        recorders return them: read back by primary key (one lookup an event), since
        `insert_rows` reads nothing back on the write path."""
        rows = [(s.originator_id.hex if isinstance(s.originator_id, UUID)
                 else s.originator_id, s.originator_version, s.topic, s.state)
                for s in stored_events]
        self.insert_rows(rows, kwargs.get("message_ids"))
        select = (f"SELECT rowid FROM {self.events_table_name} "
                  "WHERE originator_id = ? AND originator_version = ?")
        return [self._rows(select, [stream, version])[0][0] for stream, version, _, _ in rows]

    def insert_rows(self, rows: Sequence[tuple[str, int, str, bytes]],
                    message_ids: tuple[UUID, Sequence[str]] | None = None) -> None:
        """(stream id hex, version, topic, state) rows, and `message_ids` (the stream
        and the message ids to index), in one write transaction on a dedicated
        connection. eventsourcing's pooled transaction costs several context managers
        and locks per call; convlog's writes are already serialised per process and
        SQLite has a single writer anyway, so one connection held for writing is both
        simpler and measurably faster. Plain rows: a StoredEvent per event, built by
        the writer and taken apart here, was ~1.5 us an event (issue 30)."""
        with self._writer_lock:
            conn = self._writer or self._connect_writer()
            cursor = self._cursor or conn.cursor()
            # `typed_errors` and `_immediate`, written out: two generator context
            # managers cost ~2 us of an append's ~60 (issue 30).
            try:
                _begin(cursor.execute, self._busy_ms)
                try:
                    stream = self._write(cursor, rows, message_ids)
                    cursor.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:  # see `_immediate`
                        conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise _typed(exc) from exc
            if stream is not None:  # only once committed: a rolled-back rowid may be reused
                if len(self._streams) >= _STREAM_CACHE:
                    self._streams.clear()
                self._streams[stream[0]] = stream[1]
            if self._checkpointer is not None:
                self._checkpointer.committed()

    def insert_runs(self, runs: Sequence[tuple[Sequence[tuple[str, int, str, bytes]],
                                               tuple[UUID, Sequence[str]] | None]]) -> None:
        """Several conversations' runs of rows and their index entries (in order) in ONE
        write transaction: `convlog copy`'s batch, all or nothing."""
        with self._write_tx() as conn:
            cursor = conn.cursor()
            try:
                for rows, message_ids in runs:
                    self._write(cursor, rows, message_ids)
            finally:
                cursor.close()

    @contextlib.contextmanager
    def _write_tx(self, begin: bool = True) -> Iterator[sqlite3.Connection]:
        with self._writer_lock:
            conn = self._writer or self._connect_writer()
            if not begin:
                with typed_errors():
                    yield conn
                return
            with typed_errors(), _immediate(conn, self._busy_ms):
                yield conn

    @property
    def lock_wait_seconds(self) -> float:
        """How long a write waits for another process's lock before it fails: the URL's
        ``?timeout=``, else the default (named in the error that reports the lock)."""
        return float(self.datastore.pool.lock_timeout or DEFAULT_LOCK_TIMEOUT)

    @contextlib.contextmanager
    def not_waiting(self) -> Iterator[None]:
        """Write transactions of this thread, inside, fail at once with WriteLockBusy
        rather than wait for another process's write lock (`convlog serve` writes on
        its event loop only what needs no waiting)."""
        _NOT_WAITING.on = True
        try:
            yield
        finally:
            _NOT_WAITING.on = False

    @property
    def _busy_ms(self) -> int:
        """The writer connection's busy timeout (`_connect_writer`), in ms."""
        return int(1000 * (self.datastore.pool.lock_timeout or 5))

    def _connect_writer(self) -> sqlite3.Connection:
        pool = self.datastore.pool
        conn = sqlite3.connect(pool.db_name, uri=True, check_same_thread=False,
                               isolation_level=None, cached_statements=64,
                               timeout=pool.lock_timeout or 5)
        mode = use_wal(conn, pool.lock_timeout or DEFAULT_LOCK_TIMEOUT)
        conn.execute("PRAGMA secure_delete=ON")  # erased bytes are zeroed (sqlite_keys)
        # convlog's Factory always installs a _TunedPool; a datastore built by hand (as
        # eventsourcing's own recorder test cases build one) has the library's pool
        sync = pool.synchronous if isinstance(pool, _TunedPool) else "normal"
        conn.execute(f"PRAGMA synchronous={sync}")
        conn.execute(f"PRAGMA wal_autocheckpoint={WAL_HARD_LIMIT_PAGES}")
        if mode == "wal":  # checkpoints exist only in WAL mode
            self._checkpointer = Checkpointer(pool.db_name, pool.lock_timeout or 5)
        self._writer = conn
        self._cursor = conn.cursor()
        return conn

    def _write(self, conn: sqlite3.Cursor, rows: Sequence[tuple[str, int, str, bytes]],
               message_ids: tuple[UUID, Sequence[str]] | None) -> tuple[UUID, int] | None:
        """Insert the events and index their message ids; returns (stream id, stream
        number) when it indexed any."""
        if len(rows) == 1:  # one message appended: no parameter list
            conn.execute(self.insert_events_statement, rows[0])
        elif rows:
            values: list[Any] = []
            for row in rows:
                values += row
            self._insert_many(conn, self._events_head, 4, values)
        if not message_ids:
            return None
        conversation, new_ids = message_ids
        number = self._streams.get(conversation)
        if number is None:
            first = conn.execute(self._stream_number, [conversation.hex]).fetchone()
            if first is None:  # the file lost the stream's first event: not a conflict
                raise sqlite3.DatabaseError(
                    f"stream {conversation.hex} has no first event")
            number = first[0]
        if len(new_ids) == 1:
            conn.execute(self._insert_message_id, (number, new_ids[0]))
        else:
            values = []
            for message_id in new_ids:
                values += (number, message_id)
            self._insert_many(conn, f"INSERT INTO {self.index_table} VALUES ", 2, values)
        return conversation, number

    @staticmethod
    def _insert_many(conn: sqlite3.Cursor, head: str, width: int, values: list[Any]) -> None:
        """Rows of `width` values each, `_ROWS` to a statement (``VALUES (?,?),(?,?)``):
        one step per statement rather than one per row as `executemany` takes; 500
        events and their index rows were inserted in 4.6 ms that way, 2.0 ms this way
        (issue 30). The statements of the usual sizes stay in the connection's cache."""
        step = _ROWS * width
        row = "(" + ",".join("?" * width) + ")"
        for at in range(0, len(values), step):
            chunk = values[at:at + step]
            conn.execute(head + ",".join([row] * (len(chunk) // width)), chunk)

    def wait_for_changes(self, timeout: float) -> None:
        """SQLite notifies no one of a commit: readers poll, every `timeout`."""
        time.sleep(timeout)

    def close_connections(self) -> None:
        """The writer's connection, the readers' and the checkpointer (`close_writer`)."""
        self.close_writer()

    def close_writer(self) -> None:
        with self._writer_lock:
            if self._readers is not None:
                self._readers.close()  # kept, closed: later reads take the pool's way
            if self._checkpointer is not None:
                self._checkpointer.close()
                self._checkpointer = None
            if self._cursor is not None:
                self._cursor.close()
                self._cursor = None
            if self._writer is not None:
                self._writer.close()
                self._writer = None
            self._streams.clear()  # they belong to the file this connection had open

    def known_message_ids(self, conversation: UUID, message_ids: Sequence[str]) -> set[str]:
        known: set[str] = set()
        with self.datastore.transaction(commit=False) as c:
            for i in range(0, len(message_ids), _IN_CHUNK):
                chunk = list(message_ids[i : i + _IN_CHUNK])
                c.execute(
                    f"SELECT message_id FROM {self.index_table} "
                    f"WHERE stream = ({self._stream_number}) "
                    f"AND message_id IN ({','.join('?' * len(chunk))})",
                    [conversation.hex, *chunk],
                )
                known.update(row[0] for row in c.fetchall())
        return known

    def index_entries(self, conversation: UUID) -> list[str]:
        """Every entry of the conversation's message-id index (its messages' ids and
        the marks of keyed requests): what `convlog copy` carries to another store."""
        return [str(row[0]) for row in self._rows(
            f"SELECT message_id FROM {self.index_table} WHERE stream = "
            f"({self._stream_number}) ORDER BY message_id", [conversation.hex])]

    def select_events(
        self,
        originator_id: UUID | str,
        *,
        gt: int | None = None,
        lte: int | None = None,
        desc: bool = False,
        limit: int | None = None,
    ) -> Sequence[StoredEvent]:
        """eventsourcing's query, minus its per-row costs: every row belongs to the
        stream asked for, so its id is converted once rather than parsed into a UUID
        per row, and rows come back as plain tuples. Reading a conversation's last
        page (``messages(last=20)``) is most of a host's reads."""
        stream = (originator_id if isinstance(originator_id, UUID)
                  else self.convert_originator_id(originator_id))
        return [StoredEvent(originator_id=stream, originator_version=version, topic=topic,
                            state=state)
                for version, topic, state in self.select_rows(stream, gt=gt, lte=lte,
                                                              desc=desc, limit=limit)]

    def select_rows(self, stream: UUID | str, *, gt: int | None = None,
                    lte: int | None = None, desc: bool = False, limit: int | None = None
                    ) -> list[tuple[int, str, bytes]]:
        """`select_events` as plain (version, topic, state) tuples: an SDK session's
        `get_items()` reads every row of a conversation, and one StoredEvent per row
        was a tenth of it (issue 30)."""
        statement = (f"SELECT originator_version, topic, state FROM {self.events_table_name}"
                     " WHERE originator_id = ?")
        params: list[Any] = [stream.hex if isinstance(stream, UUID) else stream]
        if gt is not None:
            statement += " AND originator_version > ?"
            params.append(gt)
        if lte is not None:
            statement += " AND originator_version <= ?"
            params.append(lte)
        statement += " ORDER BY originator_version " + ("DESC" if desc else "ASC")
        if limit is not None:
            statement += " LIMIT ?"
            params.append(limit)
        return self._rows(statement, params)

    def select_decoded(self, stream: UUID, decode: Callable[[list[Any]], list[T]], *,
                       gt: int | None = None, common: str | None = None) -> list[T]:
        """`select_rows` of a whole stream (ascending, after `gt`), handed to `decode`
        `_CHUNK` rows at a time: reading a 100k-item session, its stored bytes are
        never all in memory at once beside what they decode to (issue 30). One
        statement, so one consistent snapshot, as in `_rows`. `common`: a topic the
        rows give as None (``NULLIF``): the topic of almost every row, which then is
        not made into a Python string per row (a tenth of reading the rows)."""
        topic = "NULLIF(topic, ?)" if common is not None else "topic"
        statement = (f"SELECT originator_version, {topic}, state FROM "
                     f"{self.events_table_name} WHERE originator_id = ?")
        params: list[Any] = [stream.hex]
        if common is not None:
            params.insert(0, common)
        if gt is not None:
            statement += " AND originator_version > ?"
            params.append(gt)
        statement += " ORDER BY originator_version ASC"
        out: list[T] = []
        readers = self._live_readers()
        pool = self.datastore.pool
        connection = (readers.take() if readers is not None
                      else pool.get_connection(is_writer=False))
        try:
            with typed_errors(), contextlib.closing(connection._sqlite_conn.cursor()) as cursor:
                cursor.row_factory = None
                cursor.execute(statement, params)
                while rows := cursor.fetchmany(_CHUNK):
                    out.extend(decode(rows))
            return out
        finally:
            if readers is not None:
                readers.put(connection)
            else:
                pool.put_connection(connection)

    def select_tail(self, originator_id: UUID, topics: Sequence[str], limit: int
                    ) -> list[tuple[int, str, bytes]]:
        """(version, topic, state) of a stream's newest `limit` events stored under
        one of `topics`, newest first: one backwards walk of the stream's index, and
        nothing read that the caller would skip (``messages(last=20)``)."""
        return self._rows(
            f"SELECT originator_version, topic, state FROM {self.events_table_name} "
            f"WHERE originator_id = ? AND topic IN ({','.join('?' * len(topics))}) "
            "ORDER BY originator_version DESC LIMIT ?", [originator_id.hex, *topics, limit])

    def select_raw(self, after: int, limit: int) -> list[tuple[int, str, int, str, str]]:
        """(position, stream id hex, version, topic, state) of the next `limit` events:
        the view catch-up's read, without eventsourcing's per-row UUID and Notification
        objects (a third of the catch-up's time when measured)."""
        return self._rows(f"SELECT rowid, originator_id, originator_version, topic, "
                          f"CAST(state AS TEXT) FROM {self.events_table_name} "
                          f"WHERE rowid > ? ORDER BY rowid LIMIT ?", [after, limit])

    def _rows(self, statement: str, params: Sequence[Any]) -> list[Any]:
        """ONE statement on a read connection, rows as plain tuples (no per-row
        sqlite3.Row). The connections are in autocommit mode, so a lone SELECT is its
        own read transaction (one consistent snapshot): eventsourcing's transaction
        wrapper would add a BEGIN and a COMMIT round and three context managers, ~40-45%
        of a `messages(last=20)` call when the caches are cold (`make bench`). A file
        database's reads take their connection from `Readers` (no pool locks)."""
        readers = self._live_readers()
        if readers is None:
            return self._pooled_rows(statement, params)
        connection = readers.take()
        try:
            rows: list[Any] = connection._sqlite_conn.execute(statement, params).fetchall()
        except sqlite3.Error as exc:
            readers.put(connection)
            raise _typed(exc) from exc
        readers.put(connection)
        return rows

    def _live_readers(self) -> Readers | None:
        """The read connections to take one from (None: read through the pool, for an
        in-memory database or once the writer was closed)."""
        readers = self._readers or self._open_readers()
        return None if readers is None or readers.closed else readers

    def _open_readers(self) -> Readers | None:
        """The read connections of a file database (None: in memory, use the pool)."""
        pool = self.datastore.pool
        if pool.is_sqlite_memory_mode or pool.closed:
            return None
        with self._writer_lock:
            if self._readers is None:
                self._readers = Readers(pool)
            return self._readers

    def _pooled_rows(self, statement: str, params: Sequence[Any]) -> list[Any]:
        pool = self.datastore.pool
        connection = pool.get_connection(is_writer=False)
        try:
            with typed_errors(), contextlib.closing(connection._sqlite_conn.cursor()) as cursor:
                cursor.row_factory = None
                rows: list[Any] = cursor.execute(statement, params).fetchall()
                return rows
        finally:
            pool.put_connection(connection)


class Factory(SQLiteFactory):
    """eventsourcing's SQLite factory with convlog's pool and recorder."""

    CONVLOG_SQLITE_SYNCHRONOUS = "CONVLOG_SQLITE_SYNCHRONOUS"

    def __init__(self, env: Any):
        super().__init__(env)
        mode = (self.env.get(self.CONVLOG_SQLITE_SYNCHRONOUS) or "normal").lower()
        if mode not in SYNCHRONOUS_MODES:
            msg = f"synchronous must be one of {', '.join(SYNCHRONOUS_MODES)}, not {mode!r}"
            raise ValueError(msg)
        old = self.datastore.pool
        pool = _TunedPool(db_name=old.db_name, lock_timeout=old.lock_timeout)
        pool.synchronous = mode
        old.close()
        self.datastore.pool = pool

    application_recorder_class = SQLiteConvlogRecorder
    aggregate_recorder_class = SQLiteSnapshotRecorder
