"""The DuckDB view store: read models fed from the event log, exactly once.

Every batch of events becomes rows in the views AND the new tracking position, in
ONE DuckDB transaction: a catch-up killed mid-batch leaves the store at the previous
batch, and the next catch-up re-applies exactly the missing events. It is
eventsourcing's TrackingRecorder contract (and passes the library's test case).

The store is a cache of the log: delete the file, or `convlog views rebuild`, and it
is rebuilt. Its schema is generated from the views' table declarations; a store
written by another schema version is rebuilt rather than migrated. A file at its path
that is not a usable views file (empty, as a full disk leaves it; not DuckDB's; a
DuckDB database of someone else's; unreadable to this DuckDB; corrupt) is never
written into and never blocks the views: it is renamed aside
(``convlog.duckdb.set-aside-<time>``), with a notice on stderr, and the views are
rebuilt in a new file (see `_set_aside`).

Locking: DuckDB allows one read-write process per file, and a host process may be
running. So the file is opened only for the duration of one catch-up or query, and a
conflicting lock is waited for (up to `lock_timeout`) instead of failing at once.
A process keeps the file open across back-to-back uses for at most `HOLD_AT_MOST`
seconds, then lets go for a moment, so a host that queries without pause cannot
starve another process of it.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import fcntl
import hashlib
import json
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Protocol
from urllib.parse import parse_qsl, urlsplit

import duckdb
from eventsourcing.persistence import IntegrityError, Tracking, TrackingRecorder

from convlog.domain.errors import InvalidInput
from convlog.projections.views import Table, View
from convlog.storage.errors import CorruptEvent, StorageError

APPLICATION = "convlog"
VIEWS_FORMAT = 8  # bump when rows change meaning without a table change: forces a rebuild
HOLD_AT_MOST = 2.0
"""Seconds a process keeps the views file open across back-to-back uses (see connect)."""
HANDOVER_GAP = 0.1
WAIT_POLL = 0.02
"""A waiter for the file's lock retries this often at most: within a holder's gap."""
BATCH = 100_000  # bigger batches measured 1.4-1.7x faster than 20k; ~30 MB staged
PROGRESS_THRESHOLD = 50_000
STAGE = "convlog_stage"  # the scratch in-memory database batches are staged in
BATCH_TOKENS = "batch_tokens"
"""(position, tokens) of the batch's messages stored without a count, filled by a
`before_batch` hook (convlog.views.token_counts): the batch's ``tokens`` column."""


class Staged(NamedTuple):
    """A batch staged by the reader: its table, how many events, the last position."""

    table: str
    events: int
    last: int
    mark: str  # fingerprint of the last event: which store the views were built from


class RawReader(Protocol):
    def select_raw(self, after: int, limit: int) -> list[tuple[int, str, int, str, str]]: ...

    def max_notification_id(self) -> int | None: ...

    def store_identity(self) -> str: ...


class _Unusable(Exception):
    """The file at the views path is not a usable views file (the reason is the text)."""


DUCKDB_MAGIC = b"DUCK"  # at offset 8 of every DuckDB database file
_LOCKED = ("could not set lock", "conflicting lock")  # not "lock": "block at location"
_NOT_THE_FILE = (*_LOCKED, "permission denied", "no space left", "too many open files",
                 "read-only file system", "quota", "out of memory")
"""Errors about the machine, not the file: such a file is not set aside."""
_CORRUPT = ("corrupt", "checksum", "could not read enough bytes", "not a valid duckdb")


class ViewsOfAnotherStore(StorageError):
    """The views were built from another store (or from this one before it went
    backwards), and ``$CONVLOG_VIEWS_MISMATCH=refuse`` asked for an error rather than
    a rebuild."""


MISMATCH_ENV = "CONVLOG_VIEWS_MISMATCH"
MISMATCH_MODES = ("rebuild", "refuse")


class ViewStore(TrackingRecorder):
    def __init__(self, path: Path | None, views: Sequence[View], *,
                 sql_views: dict[str, str] | None = None, lock_timeout: float = 10.0,
                 keep_open: float = 1.0):
        self.path = path
        self.views = list(views)
        self.sql_views = dict(sql_views or {})
        self.tables: list[Table] = [t for v in self.views for t in v.tables]
        self.fields_schema = json.dumps(union_fields(self.views))
        # The merge relies on one staged row per key: a view's SELECT must group by it.
        self.lock_timeout = lock_timeout
        self.schema_version = hashlib.sha1(
            f"{VIEWS_FORMAT}{self.tables!r}{self.views!r}{self.sql_views!r}".encode()
        ).hexdigest()[:12]
        self._memory: duckdb.DuckDBPyConnection | None = None
        self._open: duckdb.DuckDBPyConnection | None = None
        self._idle: duckdb.DuckDBPyConnection | None = None
        self._closer: threading.Timer | None = None
        self._suspect: str | None = None  # corruption met in use: set aside once closed
        self.keep_open = keep_open
        self._held_since = 0.0  # when the file was opened by this process (monotonic)
        # A connection kept open for reuse must not outlive the interpreter unclosed.
        atexit.register(_close_at_exit, weakref.ref(self))
        self._lock = threading.RLock()  # one user of the file per process at a time
        self.on_mismatch = os.environ.get(MISMATCH_ENV) or "rebuild"
        """What views built from another store do: be rebuilt (with a notice on
        stderr), or raise ViewsOfAnotherStore."""
        if self.on_mismatch not in MISMATCH_MODES:
            raise InvalidInput(f"must be one of {', '.join(MISMATCH_MODES)}, not "
                               f"{self.on_mismatch!r}", field=MISMATCH_ENV)

    # --------------------------------------------------------------- connection

    @contextlib.contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection for one catch-up or query. Nested uses share it (a catch-up
        then a query open the file once), and it stays open for `keep_open` seconds
        after the last use, so a host's burst of queries pays the ~20-30 ms open once;
        then the file is closed and another process (the CLI) can take the lock."""
        with self._lock:
            if self.path is None:
                if self._memory is None:
                    self._memory = duckdb.connect()
                    self._ensure_schema(self._memory)
                yield self._memory
                return
            if self._open is not None:
                yield self._open
                return
            if self._closer is not None:
                self._closer.cancel()
                self._closer = None
            con = self._idle
            self._idle = None
            if con is not None and time.monotonic() - self._held_since > HOLD_AT_MOST:
                # A host using the views without pause would otherwise keep the file
                # for ever and another process (the CLI) would wait in vain: let go,
                # and leave a gap longer than a waiter's poll before taking it again.
                con.close()
                con = None
                time.sleep(HANDOVER_GAP)
            if con is None:
                con = self._open_usable()
                self._held_since = time.monotonic()
            healthy = False
            try:
                self._ensure_schema(con)
                self._open = con
                yield con
                healthy = True
            except duckdb.Error as exc:
                self.raise_if_corrupt(exc)
                raise
            finally:
                self._open = None
                if healthy and self.keep_open > 0:
                    self._idle = con
                    self._closer = threading.Timer(self.keep_open, self._close_idle)
                    self._closer.daemon = True
                    self._closer.start()
                else:
                    con.close()
                    if self._suspect is not None:  # corrupt: closed, it can be moved
                        self._set_aside(self._suspect, None)

    @property
    def in_use(self) -> bool:
        """Whether a use of the file is under way in this process (`connect` nested):
        an error raised now would not let the file go."""
        return self._open is not None

    def _close_idle(self) -> None:
        with self._lock:
            if self._idle is not None:
                self._idle.close()
                self._idle = None

    def _open_usable(self) -> duckdb.DuckDBPyConnection:
        """The views file, opened, with convlog's schema; a file that is not a usable
        views file is set aside first (once: a second failure is an error)."""
        assert self.path is not None
        for attempt in (1, 2):
            try:
                con = self._open_file()
            except _Unusable as exc:
                if attempt == 2:
                    raise StorageError(f"cannot open the views database {self.path}: {exc}"
                                       ) from None
                self._set_aside(str(exc), _identity(self.path))
                continue
            try:
                self._check_ours(con)
                self._ensure_schema(con)
                return con
            except (_Unusable, duckdb.Error) as exc:
                con.close()
                if attempt == 2 or not (isinstance(exc, _Unusable) or _is_corrupt(exc)):
                    raise
                self._set_aside(str(exc) if isinstance(exc, _Unusable) else _first_line(exc),
                                _identity(self.path))
        raise AssertionError("unreachable")

    def raise_if_corrupt(self, exc: BaseException) -> None:
        """A StorageError naming the file if `exc` says it is corrupt (met in the middle
        of a use: this use fails, the next one sets the file aside)."""
        if self.path is not None and _is_corrupt(exc):
            self._suspect = _first_line(exc)
            raise StorageError(f"the views file {self.path} is corrupt ({self._suspect}): "
                               "it is set aside, and the next use rebuilds the views"
                               ) from None

    def _set_aside(self, reason: str, seen: tuple[int, int] | None) -> None:
        """Rename the unusable file at the views path (and DuckDB's .wal beside it) to
        ``<path>.set-aside-<UTC time>``, with a notice, so that the views are rebuilt
        in a new file and nothing is deleted. `seen` is the (device, inode) of the file
        found unusable: a file another process has put there since is left alone."""
        assert self.path is not None
        self._suspect = None
        if seen is not None and _identity(self.path) != seen:
            return  # another process set it aside already, and made a new one
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        aside = self.path.with_name(f"{self.path.name}.set-aside-{stamp}")
        try:
            os.replace(self.path, aside)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise StorageError(f"the views file {self.path} is not usable ({reason}) and "
                               f"cannot be set aside: {exc.strerror}") from None
        wal = self.path.with_name(self.path.name + ".wal")
        with contextlib.suppress(OSError):
            os.replace(wal, aside.with_name(aside.name + ".wal"))
        print(f"convlog: the views file {self.path} is not usable ({reason}); set aside as "
              f"{aside.name}, and the views are rebuilt from the log", file=sys.stderr,
              flush=True)

    @staticmethod
    def _check_ours(con: duckdb.DuckDBPyConnection) -> None:
        """A DuckDB database with tables or views but no convlog_meta is someone else's:
        convlog neither writes into it nor drops what it holds."""
        names = {n for (n,) in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE NOT internal AND NOT temporary "
            "UNION ALL SELECT view_name FROM duckdb_views() WHERE NOT internal "
            "AND NOT temporary").fetchall()}
        if names and "convlog_meta" not in names:
            shown = ", ".join(sorted(names)[:3]) + (", ..." if len(names) > 3 else "")
            raise _Unusable(f"a DuckDB database that is not convlog's (tables {shown})")

    def _open_file(self) -> duckdb.DuckDBPyConnection:
        assert self.path is not None
        deadline = time.monotonic() + self.lock_timeout
        delay = 0.01
        while True:
            new = not self.path.exists()
            try:
                with _creation(self.path):  # a process writing a new file's header
                    new = not self.path.exists()
                    if new:  # created under the lock: no one reads a half-written header
                        return duckdb.connect(str(self.path))
                    _check_header(self.path)
                return duckdb.connect(str(self.path))
            except duckdb.IOException as exc:
                if not new and _is_file_problem(exc):
                    raise _Unusable(_first_line(exc)) from None
                if not any(sign in str(exc).lower() for sign in _LOCKED):
                    raise StorageError(f"cannot open the views database {self.path}: {exc}"
                                       ) from None
                if time.monotonic() >= deadline:
                    raise StorageError(
                        f"the views database {self.path} stayed locked by another process "
                        f"for {self.lock_timeout:g}s: {exc}") from None
                time.sleep(delay)
                delay = min(delay * 2, WAIT_POLL)
            except duckdb.Error as exc:
                if not new and _is_file_problem(exc):
                    raise _Unusable(_first_line(exc)) from None
                raise StorageError(f"cannot open the views database {self.path}: {exc}"
                                   ) from None
            finally:
                if new:  # even when DuckDB failed half-way: a full disk left it empty
                    _make_private(self.path)

    def _ensure_schema(self, con: duckdb.DuckDBPyConnection) -> None:
        con.execute("CREATE TABLE IF NOT EXISTS convlog_meta (name VARCHAR PRIMARY KEY, "
                    "value VARCHAR)")
        row = con.execute("SELECT value FROM convlog_meta WHERE name = 'schema'").fetchone()
        if row is not None and row[0] == self.schema_version:
            return
        con.begin()
        for (name,) in con.execute("SELECT view_name FROM duckdb_views() "
                                   "WHERE NOT internal AND NOT temporary").fetchall():
            con.execute(f'DROP VIEW IF EXISTS "{name}"')
        for table in self.tables:
            con.execute(f'DROP TABLE IF EXISTS "{table.name}"')
        con.execute("DROP TABLE IF EXISTS convlog_tracking")
        con.execute("CREATE TABLE convlog_tracking (application_name VARCHAR PRIMARY KEY, "
                    "notification_id BIGINT NOT NULL)")
        for table in self.tables:
            cols = ", ".join(f'"{c.name}" {c.type}' for c in table.columns)
            key = f', PRIMARY KEY ({", ".join(table.key)})' if table.key else ""
            con.execute(f'CREATE TABLE "{table.name}" ({cols}{key})')
        for name, sql in self.sql_views.items():
            con.execute(f'CREATE VIEW "{name}" AS {sql}')
        con.execute("DELETE FROM convlog_meta")
        con.execute("INSERT INTO convlog_meta VALUES ('schema', ?)", [self.schema_version])
        con.commit()

    # ------------------------------------------------- TrackingRecorder contract

    def insert_tracking(self, tracking: Tracking) -> None:
        with self.connect() as con:
            con.begin()
            try:
                self._track(con, tracking)
                con.commit()
            except BaseException:
                con.rollback()
                raise

    def max_tracking_id(self, application_name: str) -> int | None:
        with self.connect() as con:
            return self._max(con, application_name)

    @staticmethod
    def _max(con: duckdb.DuckDBPyConnection, application_name: str) -> int | None:
        row = con.execute("SELECT notification_id FROM convlog_tracking "
                          "WHERE application_name = ?", [application_name]).fetchone()
        return None if row is None else int(row[0])

    def _track(self, con: duckdb.DuckDBPyConnection, tracking: Tracking) -> None:
        current = self._max(con, tracking.application_name)
        if current is not None and tracking.notification_id <= current:
            raise IntegrityError(
                f"{tracking.application_name} notification {tracking.notification_id} is "
                f"not after the tracked position {current}")
        con.execute("INSERT OR REPLACE INTO convlog_tracking VALUES (?, ?)",
                    [tracking.application_name, tracking.notification_id])

    # ---------------------------------------------------------------- catch-up

    def catch_up(
        self,
        recorder: RawReader,
        *,
        before_batch: Callable[[duckdb.DuckDBPyConnection], None] | None = None,
        batch: int | None = None,
        progress: bool | None = None,
        stop_after: int | None = None,
    ) -> int:
        """Apply every event not yet in the views, batch by batch; returns how many.
        `before_batch(con)` runs inside each batch's transaction once ``batch`` is
        staged (to fill reference tables such as prices). `stop_after` (tests,
        benchmarks) ends after that many batches."""
        applied = 0
        batch = batch or BATCH  # read at call time, so tests can shrink it
        with self.connect() as con:
            position = self._max(con, APPLICATION) or 0
            if not self._same_store(con, recorder, position):
                position = 0
            total = (recorder.max_notification_id() or 0) - position
            if total <= 0:  # the common case of a query's catch-up: nothing new to stage
                return 0
            show = sys.stderr.isatty() if progress is None else progress
            show = show and total >= PROGRESS_THRESHOLD
            batches = 0
            # A pipeline on two threads: while this one writes batch N into the views,
            # the reader reads batch N+1 from the event store and stages it (appender,
            # JSON parsing) in a scratch in-memory database, on its own cursor. SQLite
            # and DuckDB release the GIL, so on two cores staging costs (nearly)
            # nothing; two staging slots alternate, so neither waits for the other's.
            con.execute(f"ATTACH IF NOT EXISTS ':memory:' AS {STAGE}")
            stager = con.cursor()
            try:
                with concurrent.futures.ThreadPoolExecutor(1, "convlog-views-read") as reader:
                    # A small first batch: the pipeline fills after ~1/10 of a batch's
                    # read instead of a whole one (~0.6 s of a 100k-event batch).
                    ahead = reader.submit(self._read, stager, recorder, position,
                                          max(1, batch // 10), 0)
                    while stop_after is None or batches < stop_after:
                        staged = ahead.result()
                        if staged is None:
                            break
                        ahead = reader.submit(self._read, stager, recorder, staged.last,
                                              batch, (batches + 1) % 2)
                        self._apply(con, staged, before_batch)
                        applied += staged.events
                        batches += 1
                        if show:
                            print(f"\rconvlog: updating views {applied:,}/{total:,} events "
                                  f"({100 * applied // max(total, 1)}%)", end="",
                                  file=sys.stderr, flush=True)
            finally:
                stager.close()
                con.execute(f"DETACH DATABASE IF EXISTS {STAGE}")  # frees the scratch
            if show:
                print(file=sys.stderr)
        return applied

    def _same_store(self, con: duckdb.DuckDBPyConnection, recorder: RawReader,
                    position: int) -> bool:
        """Are these views built from this very store? They record the store's
        identity (made with the store, stored in it) and the fingerprint of the event
        at their position. Another store (another identity: a deleted-and-recreated
        file, another store at the same views path), a store that went backwards
        (restored from an older backup: the position is past its end) or one whose
        event there differs (restored, then written to) fails this: the views are
        rebuilt with a notice, or refused, and never answer from another store's
        data. True when they may be used as they are."""
        identity = recorder.store_identity()
        meta = dict(con.execute("SELECT name, value FROM convlog_meta WHERE name IN "
                                "('store_id', 'store_mark')").fetchall())
        problem = None
        if meta.get("store_id") not in (None, identity):
            problem = f"were built from another store ({meta['store_id']}, this one is " \
                      f"{identity}: recreated or replaced)"
        elif position:
            at = recorder.select_raw(position - 1, 1)
            if not at or at[0][0] != position:
                last = recorder.max_notification_id() or 0
                problem = (f"had read {position} events, and the store ends at {last}: it "
                           "went backwards (restored from an older backup?)"
                           if last < position else
                           f"read an event at position {position} the store does not have")
            elif store_mark(at[0]) != meta.get("store_mark"):
                problem = (f"read another event at position {position} than the store "
                           "holds (restored from an older backup and written to since, "
                           "or another store)")
        if problem is None:
            if meta.get("store_id") != identity:  # new views, or built before ids existed
                con.execute("INSERT OR REPLACE INTO convlog_meta VALUES ('store_id', ?)",
                            [identity])
            return True
        where = self.path or "(in memory)"
        if self.on_mismatch == "refuse":
            raise ViewsOfAnotherStore(
                f"the views {where} {problem}; they are not used "
                f"({MISMATCH_ENV}=refuse): run `convlog views rebuild` or delete the file")
        print(f"convlog: the views {where} {problem}; rebuilding them", file=sys.stderr,
              flush=True)
        con.execute("DELETE FROM convlog_meta")
        self._ensure_schema(con)
        con.execute("INSERT OR REPLACE INTO convlog_meta VALUES ('store_id', ?)", [identity])
        return False

    def _read(self, cur: duckdb.DuckDBPyConnection, recorder: RawReader, after: int,
              limit: int, slot: int) -> Staged | None:
        """Read the next batch from the event store and stage it (reader thread)."""
        rows = recorder.select_raw(after, limit)
        if not rows:
            return None
        table = f"{STAGE}.batch_{slot}"
        self._stage(cur, rows, table)
        return Staged(table, len(rows), rows[-1][0], store_mark(rows[-1]))

    def _apply(self, con: duckdb.DuckDBPyConnection, staged: Staged,
               before_batch: Callable[[duckdb.DuckDBPyConnection], None] | None) -> None:
        con.begin()
        try:
            # `tokens`: a message's count as stored, else as a hook counted it (issue 45)
            con.execute(f"CREATE OR REPLACE TEMP TABLE {BATCH_TOKENS} (position BIGINT, "
                        "tokens BIGINT)")
            con.execute(f"CREATE OR REPLACE TEMP VIEW batch AS SELECT b.*, "
                        f"COALESCE(b.e.tokens, t.tokens) AS tokens FROM {staged.table} b "
                        f"LEFT JOIN {BATCH_TOKENS} t ON t.position = b.position")
            if before_batch is not None:
                before_batch(con)
            for table in self.tables:
                if table.select and not table.derived:
                    self._write(con, table)
            for table in (t for t in self.tables if t.derived):
                self._rederive(con, table)
            self._track(con, Tracking(APPLICATION, staged.last))
            con.execute("INSERT OR REPLACE INTO convlog_meta VALUES ('store_mark', ?)",
                        [staged.mark])
            con.commit()
        except BaseException:
            con.rollback()
            raise

    def _stage(self, cur: duckdb.DuckDBPyConnection,
               rows: list[tuple[int, str, int, str, str]], table: str) -> None:
        """The batch as `table`, read by the views as ``batch`` (see
        convlog.projections.views): each event's JSON parsed ONCE into the struct ``e``
        of every field a view reads."""
        cur.execute(f"CREATE OR REPLACE TABLE {STAGE}.raw_batch (position BIGINT, "
                    "conversation_id VARCHAR, version BIGINT, topic VARCHAR, state VARCHAR)")
        appender = cur.appender(f"{STAGE}.raw_batch")
        appender.append_rows(rows)
        appender.flush()
        try:
            cur.execute(f"""
                CREATE OR REPLACE TABLE {table} AS
                SELECT position, conversation_id, version,
                       split_part(topic, '@', 1) AS topic,
                       COALESCE(TRY_CAST(NULLIF(split_part(topic, '@', 2), '') AS INTEGER),
                                1) AS v,
                       CAST(e."at" AS TIMESTAMP) AS "at", e
                FROM (SELECT *, json_transform(state, '{self.fields_schema}') AS e
                      FROM {STAGE}.raw_batch)""")
        except duckdb.Error as exc:
            self._raise_corrupt(cur, exc)

    @staticmethod
    def _raise_corrupt(con: duckdb.DuckDBPyConnection, exc: duckdb.Error) -> None:
        bad = con.execute(f"SELECT conversation_id, version, topic FROM {STAGE}.raw_batch "
                          "WHERE NOT json_valid(state) ORDER BY position LIMIT 1").fetchone()
        if bad is not None:
            raise CorruptEvent(bad[0], bad[1], bad[2], "state is not valid JSON") from None
        raise StorageError(f"cannot read a batch of stored events: {exc}") from None

    def _rederive(self, con: duckdb.DuckDBPyConnection, table: Table) -> None:
        """Recompute a derived table's rows for the conversations this batch touched
        with events that matter to it."""
        topics = ", ".join(f"'{t}'" for t in table.touched_by)
        where = f"WHERE topic IN ({topics})" if topics else ""
        con.execute("CREATE OR REPLACE TEMP TABLE touched AS "
                    f"SELECT DISTINCT conversation_id FROM batch {where}")
        if not con.execute("SELECT count(*) FROM touched").fetchone()[0]:  # type: ignore[index]
            return
        con.execute(f'DELETE FROM "{table.name}" WHERE conversation_id IN '
                    "(SELECT conversation_id FROM touched)")
        con.execute(f'INSERT INTO "{table.name}" {table.select}')

    def _write(self, con: duckdb.DuckDBPyConnection, table: Table) -> None:
        if not table.key:
            con.execute(f'INSERT INTO "{table.name}" {table.select}')
            return
        # A keyed table: merge the batch's rows with the stored ones, then replace
        # those rows whole (delete + append). DuckDB's ON CONFLICT DO UPDATE rewrites
        # every column in place and measured ~2x slower on a 100k-row catalog.
        con.execute(f"CREATE OR REPLACE TEMP TABLE merged AS {merge_select(table)}")
        on = " AND ".join(f't."{k}" = m."{k}"' for k in table.key)
        con.execute(f'DELETE FROM "{table.name}" AS t USING merged AS m WHERE {on}')
        con.execute(f'INSERT INTO "{table.name}" SELECT * FROM merged')

    # ------------------------------------------------------------------ queries

    def rebuild(self) -> None:
        """Forget every view; the next catch-up starts from the first event."""
        with self.connect() as con:
            con.execute("DELETE FROM convlog_meta")
            self._ensure_schema(con)

    def query(self, sql: str, params: Sequence[object] = ()) -> tuple[list[str], list[Any]]:
        with self.connect() as con:
            try:
                cursor = con.execute(sql, list(params))
            except duckdb.Error as exc:
                self.raise_if_corrupt(exc)
                raise StorageError(f"query failed: {exc}") from None
            names = [d[0] for d in cursor.description or []]
            return names, cursor.fetchall()

    def close(self) -> None:
        if self._closer is not None:
            self._closer.cancel()
            self._closer = None
        self._close_idle()
        if self._memory is not None:
            self._memory.close()
            self._memory = None


def _make_private(path: Path) -> None:
    """A new views file made 0600 whatever the umask, as soon as DuckDB created it
    (DuckDB refuses a file made beforehand, even an empty one): it holds the catalog
    of every user's conversations. Done before anything is written to it."""
    with contextlib.suppress(OSError):
        os.chmod(path, 0o600)


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        found = path.stat()
    except OSError:
        return None
    return found.st_dev, found.st_ino


@contextlib.contextmanager
def _creation(path: Path) -> Iterator[None]:
    """Held by a process while it creates the views file (DuckDB writes the header in
    its connect), and for a moment by one that opens an existing file: so a header
    being written is waited for, never read as "not a DuckDB database file" and the
    new file set aside. An advisory lock on the file's folder: no lock file is left
    beside the views; where the folder cannot be locked, nothing is waited for."""
    try:
        folder = os.open(path.parent, os.O_RDONLY)
    except OSError:
        yield
        return
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        yield
    finally:
        os.close(folder)  # lets go of the lock


def _check_header(path: Path) -> None:
    """An existing file that is not a DuckDB database is refused before DuckDB reads
    it (given a SQLite file, DuckDB would try to download its SQLite extension)."""
    try:
        with open(path, "rb") as f:
            head = f.read(12)
    except IsADirectoryError:
        return  # DuckDB's own error says it
    except OSError:
        return
    if not head:
        raise _Unusable("an empty file (as a full disk leaves a new one)")
    if head[8:12] != DUCKDB_MAGIC:
        raise _Unusable("not a DuckDB database file")


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]


def _is_file_problem(exc: BaseException) -> bool:
    """An error opening an existing file that is about the file (unreadable to this
    DuckDB, truncated, corrupt), not about the machine (locks, rights, space)."""
    text = str(exc).lower()
    return not any(sign in text for sign in _NOT_THE_FILE)


def _is_corrupt(exc: BaseException) -> bool:
    text = str(exc).lower()
    return any(sign in text for sign in _CORRUPT) and not any(
        sign in text for sign in _NOT_THE_FILE)


def _close_at_exit(ref: weakref.ReferenceType[ViewStore]) -> None:
    store = ref()
    if store is not None:
        store.close()


def union_fields(views: Sequence[View]) -> dict[str, Any]:
    """Every stored field any view reads, once, with one type (conflicts are bugs)."""
    fields: dict[str, Any] = {"at": "VARCHAR", "tokens": "BIGINT"}
    for view in views:
        for name, kind in view.fields.items():
            if fields.setdefault(name, kind) != kind:
                msg = f"view {view.name!r} reads {name!r} as {kind}, another as {fields[name]}"
                raise ValueError(msg)
    return fields


_MERGE_RULES = {
    "key": 'b."{c}"',
    "first": 'COALESCE(t."{c}", b."{c}")',
    "last": 'COALESCE(b."{c}", t."{c}")',
    "sum": 'COALESCE(t."{c}", 0) + COALESCE(b."{c}", 0)',
    "nullsum": 'CASE WHEN t."{c}" IS NULL THEN b."{c}" WHEN b."{c}" IS NULL THEN t."{c}" '
               'ELSE t."{c}" + b."{c}" END',
    "max": 'GREATEST(t."{c}", b."{c}")',
    "any": 'COALESCE(t."{c}", FALSE) OR COALESCE(b."{c}", FALSE)',
}


def merge_select(table: Table) -> str:
    """The batch's rows of a keyed table (`b`) merged with the stored ones (`t`),
    column by column with each column's merge rule: one row per key."""
    names = ", ".join(f'"{c.name}"' for c in table.columns)
    merged = ", ".join(_MERGE_RULES[c.merge].format(c=c.name) for c in table.columns)
    on = " AND ".join(f't."{k}" = b."{k}"' for k in table.key)
    return (f"SELECT {merged} FROM (SELECT * FROM ({table.select}) AS rows({names})) AS b "
            f'LEFT JOIN "{table.name}" AS t ON {on}')


def store_mark(row: tuple[int, str, int, str, str]) -> str:
    """A fingerprint of one stored event (position, conversation, version, topic, state):
    the identity of the store at that position."""
    return hashlib.sha256(json.dumps(list(row), default=str).encode()).hexdigest()


def default_path(event_store_path: Path | None, backend: str = "sqlite",
                 url: str = "") -> Path | None:
    """``$CONVLOG_VIEWS``, else next to a SQLite event store (``convlog.db`` ->
    ``convlog.duckdb``), in memory for memory://, and for PostgreSQL
    ``pg-<id>.duckdb`` in `views_home()` (one file per host, port, database and
    schema: two stores never share a default; never the current directory, which
    depends on where a command happens to run)."""
    override = os.environ.get("CONVLOG_VIEWS")
    if override:
        return Path(override)
    if backend == "postgresql":
        parts = urlsplit(url)
        query = dict(parse_qsl(parts.query))
        where = f"{parts.hostname}:{parts.port}{parts.path}?schema={query.get('schema', '')}"
        return views_home() / f"pg-{hashlib.sha256(where.encode()).hexdigest()[:12]}.duckdb"
    if event_store_path is None:
        return None
    return event_store_path.with_suffix(".duckdb")


def views_home() -> Path:
    """The per-user directory of the views of server stores, made 0700 when missing
    (the views hold the catalog of every user's conversations): ``views`` in the
    user data directory, ``$XDG_DATA_HOME/convlog`` (``~/.local/share/convlog``) on
    Linux, ``~/Library/Application Support/convlog`` on macOS, ``%LOCALAPPDATA%\\
    convlog`` on Windows (platformdirs)."""
    import platformdirs

    home = platformdirs.user_data_path("convlog", appauthor=False) / "views"
    try:
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"cannot make the views directory {home}: {exc.strerror} "
                           "(set CONVLOG_VIEWS, or ?views= in the URL)") from None
    return home
