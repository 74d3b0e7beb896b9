"""The composition root: `bootstrap` builds ONE `Application` per open log, and every
surface is a thin API over it.

In the manner of cosmicpython's `bootstrap.py`: the storage is opened, and the parts
an open log is made of are built and wired together here, once:

    the store's read API       `reads`     (convlog.services.reads)
    the writer                 `writer`    every write of the process (services.writer)
    the catalog                `catalog`   the DuckDB read models and their upkeep
    request claims             `requests`  kept answers of keyed HTTP requests
    the injection record       `record_injection`
    the import driver          `imports`   (services.import_run)
    the context builder        `builder(model)`
    keys and erasure           `keys`      (services.privacy)

Who holds it: `ConversationLog` and its handles (the host API, services.log), its
asyncio twin (services.aio), and the entry points, which receive it as a typed
dependency: `convlog serve` (http/), the ACP proxy (acp/), the CLI (cli/) and the SDK
session stores (integrations/), which take a host's log and reach its application
with `application(log)` (services.log), the one documented accessor.

The entry points use the operations of this object (`execute`, `decide`,
`execute_at_once`, `requests`, `imports`, ...), never its `store` or `writer`:
tests/unit/test_dependency_direction.py forbids them there. Services below (context,
resume, memory, items, privacy) are handed the writer or the store by this object.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from convlog.accounting.prices import PriceTable
from convlog.crypto.keys import load_key
from convlog.domain.clock import SYSTEM_CLOCK, Clock
from convlog.domain.conversation import Command, Conversation
from convlog.domain.errors import ConvlogError, InvalidInput
from convlog.domain.events import MessageAppended, Recorded
from convlog.services import items, privacy
from convlog.services.context import Context, ContextBuilder
from convlog.services.import_run import (
    ImportSummary,
    ProgressCallback,
    record_conversations,
    run_import,
)
from convlog.services.importing import (
    ImportedConversation,
    Importer,
    ImportFailure,
    find_importer,
)
from convlog.services.options import LogOptions
from convlog.services.reads import Reads
from convlog.services.results import AppendResult
from convlog.services.resume.run import record_injection
from convlog.services.writer import Decide, Writer
from convlog.storage.application import ConversationStore
from convlog.storage.errors import StorageError, StorageUnavailable
from convlog.storage.mapper import RawItem
from convlog.storage.requests import Answer
from convlog.storage.urls import StorageConfig, parse_url
from convlog.views.analytics import Analytics

_log = logging.getLogger("convlog")

__all__ = ["Application", "Catalog", "Imports", "Keys", "RequestClaims", "bootstrap"]


def bootstrap(url: str | None, options: LogOptions, *,
              master_key: bytes | str | None = "env",
              clock: Clock = SYSTEM_CLOCK) -> Application:
    """Open the store at `url` with `options` and build the application over it.

    `master_key`: the store's key, by default from CONVLOG_KEY / CONVLOG_KEY_FILE
    (maintenance opens stores without a key, or with a new one); ``"public"`` opens an
    encrypted store without its key (counts, tokens, costs, telemetry; content reads
    as placeholders, writes raise MissingKey). `clock`: what stamps every event, ages
    conversations and kept request answers, and times resume tiers."""
    options = options.checked()
    config = parse_url(url)
    if not options.create:
        config.check_exists()
    config.check_reachable(create=options.create)
    config.create_private()
    # a bad key fails here, before anything is opened
    public_only = master_key == "public"  # no key: counts and costs, no content
    master = load_key() if master_key == "env" else None if public_only else master_key
    assert master is None or isinstance(master, bytes)
    try:
        store = ConversationStore(env=config.env(), master_key=master, where=config.display,
                                  public_only=public_only, clock=clock)
    except ConvlogError:
        raise  # key errors say what to do; wrapped, they would say less
    except Exception as exc:  # OSError, bad settings, sqlite3/psycopg errors wrapped in
        raise StorageError(f"cannot open {config.url!r}: {exc}") from None  # several types
    writer = Writer(store, redact=options.redact,
                    context_window_depth=options.context_window_depth,
                    max_injected_blocks_in_history=options.max_injected_blocks_in_history)
    if options.preload_tokenizer:  # the host will build contexts: load the vocabulary
        from convlog.accounting.tokens import warm_up_in_background  # off the hot path

        warm_up_in_background()
    return Application(options, config, store, writer)


class Catalog:
    """The DuckDB read models (opened on first use, next to the event store) and
    their upkeep; they read the event stream, never write to it."""

    def __init__(self, store: ConversationStore, config: StorageConfig,
                 options: LogOptions):
        self._store, self._config = store, config
        self._prices = options.prices  # the table is built with the views (it costs ~4 MiB)
        self._path = Path(options.views) if options.views is not None else None
        self._analytics: Analytics | None = None

    @property
    def analytics(self) -> Analytics:
        if self._analytics is None:
            option = self._config.options.get("views")
            from convlog.views.duckdb import ViewStore, default_path  # DuckDB loads on first use

            path = self._path or (Path(option) if option else None) or default_path(
                self._config.path, self._config.backend, self._config.url)
            store = ViewStore(path, Analytics.VIEWS, sql_views=Analytics.SQL_VIEWS)
            self._analytics = Analytics(self._store, store, PriceTable(self._prices))
        return self._analytics

    def refresh(self, *, progress: bool | None = None) -> int:
        """Catch the views up with the log; returns how many events were applied."""
        return self.analytics.refresh(progress=progress)

    def rebuild(self, *, progress: bool | None = None) -> int:
        """Drop every view and rebuild it from the whole log."""
        self.analytics.views.rebuild()
        return self.analytics.refresh(progress=progress)

    def follow(self, stop: threading.Event, *, interval: float = 0.5,
               on_batch: Callable[[int], None] | None = None) -> int:
        """Keep the views current until `stop` is set: catch up, then wait for new
        events (PostgreSQL LISTEN/NOTIFY; SQLite polls every `interval` seconds).
        Every batch is atomic, so stopping anywhere resumes exactly where it was.
        A PostgreSQL outage is waited out (retried every `interval`), not an exit."""
        if not interval > 0:
            raise InvalidInput("must be a positive number of seconds", field="interval")
        total = 0
        self.analytics.views.keep_open = 0  # a follower must not sit on the file's lock
        while not stop.is_set():
            try:
                applied = self.refresh(progress=False)
            except StorageUnavailable as exc:  # the database is away: keep following
                _log.warning("views follow: %s; retrying", exc)
                stop.wait(interval)
                continue
            total += applied
            if applied and on_batch is not None:
                on_batch(applied)
            if not stop.is_set():
                self._store.wait_for_changes(interval)
        return total

    def discard(self) -> None:
        """Delete the views' file (a cache: it may hold plaintext, or what was erased);
        the next use opens it anew and rebuilds it from the log."""
        views = self.analytics.views
        views.close()
        self._analytics = None
        if views.path is not None:
            for path in (views.path, Path(f"{views.path}.wal")):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()

    def close(self) -> None:
        if self._analytics is not None:
            self._analytics.views.close()


class RequestClaims:
    """The first answer to each keyed request (an HTTP `Idempotency-Key`'s digest:
    convlog.storage.requests), kept in the store, so every process on it answers a
    retry the same."""

    def __init__(self, store: ConversationStore):
        self._store = store

    def answer(self, scope: str) -> Answer | None:
        """The answer kept for `scope`; None when there is none (or it expired)."""
        return self._store.find_answer(scope, self._store.clock.now().timestamp())

    def keep(self, scope: str, answer: Answer, user: str | None) -> Answer:
        """Keep the first answer to `scope` (sealed under `user`'s key in an encrypted
        store); the one kept, another process's if it was first."""
        return self._store.keep_answer(scope, answer, self._store.clock.now().timestamp(),
                                       user)


class Imports:
    """The import driver: other tools' history, one atomic batch per conversation."""

    def __init__(self, writer: Writer, options: LogOptions):
        self._writer, self._prices = writer, options.prices

    def run(self, format: str | Importer, paths: Sequence[str | Path], *,
            keep_going: bool = False, progress: ProgressCallback | None = None,
            max_line_bytes: int | None = None) -> ImportSummary:
        """See `ConversationLog.import_`."""
        importer = find_importer(format, max_line_bytes=max_line_bytes)
        return run_import(self._writer, importer, paths, prices=PriceTable(self._prices),
                          keep_going=keep_going, progress=progress)

    def record(self, format: str,
               conversations: Iterable[ImportedConversation | ImportFailure]
               ) -> ImportSummary:
        """Record conversations an importer read (`convlog watch` reads a file's new
        lines with `Follower.follow`), as `run` records them: one batch each, known
        message ids skipped, failures listed in the summary."""
        return record_conversations(self._writer, format, conversations,
                                    prices=PriceTable(self._prices))


class Keys:
    """Encryption at rest and erasure on the open store (services.privacy)."""

    def __init__(self, writer: Writer, catalog: Catalog):
        self._writer, self._catalog = writer, catalog

    def status(self) -> privacy.KeyStatus:
        return privacy.status(self._writer)

    def rotate(self, new_master: bytes) -> int:
        return privacy.rotate(self._writer, new_master)

    def forget(self, user: str, requested_by: str | None = None) -> privacy.ForgetResult:
        return privacy.forget(self._writer, user, requested_by)

    def enable(self, master_key: bytes,
               progress: Callable[[str, int], None] | None = None) -> int:
        """Encrypt the store (see `ConversationLog.enable_encryption`), then delete the
        views, which may hold plaintext."""
        total = privacy.enable(self._writer, master_key, progress)
        self._catalog.discard()
        return total


class Application:
    """One open log: its parts, built once by `bootstrap` and shared by every surface."""

    def __init__(self, options: LogOptions, config: StorageConfig,
                 store: ConversationStore, writer: Writer):
        self.options = options
        self.config = config
        """Where the log is (URL, backend, display form)."""
        self.store = store
        """The event store (services only: entry points never touch it)."""
        self.writer = writer
        """The unit of work (services only: entry points write with `execute`...)."""
        self.reads = Reads(store)
        self.catalog = Catalog(store, config, options)
        self.requests = RequestClaims(store)
        self.imports = Imports(writer, options)
        self.keys = Keys(writer, self.catalog)

    @property
    def clock(self) -> Clock:
        return self.store.clock

    @property
    def analytics(self) -> Analytics:
        """The catalog's read models (opened on first use)."""
        return self.catalog.analytics

    @property
    def write_lock(self) -> threading.RLock:
        """Held by every write of this process (maintenance takes it too)."""
        return self.writer.lock

    def close(self) -> None:
        self.catalog.close()
        self.store.close()

    def __enter__(self) -> Application:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------- writing

    def execute(self, key: str, commands: Sequence[Command],
                origins: Sequence[str] | None = None) -> AppendResult:
        """Decide and record a batch of commands atomically (all or nothing)."""
        return self.writer.execute(key, commands, origins)

    def execute_at_once(self, key: str, commands: Sequence[Command],
                        origins: Sequence[str] | None = None) -> AppendResult | None:
        """`execute` if it needs no waiting, else None and nothing written
        (`Writer.execute_at_once`)."""
        return self.writer.execute_at_once(key, commands, origins)

    def decide(self, key: str, decide: Decide, origins: Sequence[str] | None = None
               ) -> tuple[Conversation, list[Recorded]]:
        """Record what `decide` chooses against the state being written to."""
        return self.writer.decide(key, decide, origins)

    def known_message_ids(self, key: str, ids: Sequence[str]) -> set[str]:
        """Which of `ids` the conversation already holds (an unknown one holds none)."""
        return self.writer.known_message_ids(key, ids)

    def record_injection(self, key: str, context: Context,
                         native_session_id: str | None = None) -> bool:
        """Record that `context` was handed to a fresh agent session, at most once per
        native session even across processes (False: nothing recorded)."""
        return record_injection(self.writer, key, context, native_session_id)

    def builder(self, model: str | None = None) -> ContextBuilder:
        """A context builder with this log's memory-block cap."""
        return ContextBuilder(self.writer, model, self.options.max_injected_blocks_in_history)

    # ----------------------------------------------------------------- reading

    def retracted_since(self, key: str, since: str) -> list[MessageAppended | RawItem]:
        """The messages retracted since message `since` (why an SDK output is lost)."""
        return items.retracted_since(self.store, key, since)
