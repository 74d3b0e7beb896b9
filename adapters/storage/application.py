"""The eventsourcing Application that stores conversations.

It owns the infrastructure (recorder, event store, snapshot store, aggregate cache)
and the write cycle: load state -> decide -> save, retried when another writer won
the race for the same conversation. Decisions themselves are pure domain code.

Why appends stay constant-time: the state is small, the repository caches it and
fast-forwards it with one indexed query for events newer than the cached version,
and a snapshot every `SNAPSHOT_INTERVAL` events bounds a cold start's replay.
"""

from __future__ import annotations

import contextlib
import functools
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, TypeVar
from uuid import UUID

import msgspec
from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import (
    ApplicationRecorder,
    IntegrityError,
    InterfaceError,
    Mapper,
    OperationalError,
    PersistenceError,
)

from convlog.crypto import cipher
from convlog.crypto.keyring import Keyring
from convlog.domain.clock import SYSTEM_CLOCK, Clock
from convlog.domain.conversation import Command, Conversation, decide_and_evolve, evolve
from convlog.domain.events import ConversationStarted, Event, MessageAppended, Recorded
from convlog.storage.errors import (
    ConcurrencyError,
    StorageError,
    StorageUnavailable,
    WriteLockBusy,
)
from convlog.storage.lineage import Lineage
from convlog.storage.mapper import Envelope, Lean, MsgspecMapper, RawItem, all_topics, topic_of
from convlog.storage.recorder import ConvlogRecorder, TableRecorder
from convlog.storage.requests import Answer
from convlog.storage.sealed import Sealer

SNAPSHOT_INTERVAL = 500
F = TypeVar("F", bound=Callable[..., Any])
CONFLICT_TIMEOUT = 30.0
"""How long a write keeps retrying while other writers win the same conversation."""
MESSAGE_TOPICS = all_topics(MessageAppended)
CURRENT_MESSAGE_TOPIC = topic_of(MessageAppended)
QUIET_READS = 8
"""A conversation seen written by another process is read fresh before each write
until this many reads in a row found nothing new (`ConversationStore.execute`)."""


def project(state: Conversation | None, envelopes: Iterable[Envelope]) -> Conversation | None:
    """eventsourcing projector: fold envelopes (a snapshot first, maybe) into state."""
    for envelope in envelopes:
        payload = envelope.event
        if isinstance(payload, Conversation):
            state = msgspec.structs.replace(payload)
            continue
        if state is None:
            if not isinstance(payload, ConversationStarted):
                raise StorageError(
                    f"stream {envelope.originator_id} does not begin with session_started")
            state = Conversation(key=payload.key)
        evolve(state, payload)
        if state.version != envelope.originator_version:
            raise StorageError(
                f"stream {envelope.originator_id}: expected position {state.version}, "
                f"found {envelope.originator_version}")
    return state


def storage_errors(method: F) -> F:
    """Storage failures (a database restarting, a full disk, a lock held too long) leave
    the store as typed StorageErrors, never as a driver's own exception types."""

    @functools.wraps(method)
    def wrapper(store: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(store, *args, **kwargs)
        except IntegrityError:
            raise
        except PersistenceError as exc:
            if _unavailable(exc):
                raise StorageUnavailable(_explain(exc)) from None
            raise StorageError(_explain(exc, _lock_wait(store))) from None
        except Exception as exc:
            if type(exc).__module__.split(".")[0] in ("psycopg", "psycopg_pool", "sqlite3"):
                if _unavailable(exc):
                    raise StorageUnavailable(_explain(exc)) from None
                raise StorageError(_explain(exc, _lock_wait(store))) from None
            raise

    return wrapper  # type: ignore[return-value]


_NOT_WAITING = threading.local()  # `.on`: inside ConversationStore.not_waiting


class ConversationStore(Application[UUID]):
    """Conversations on eventsourcing's infrastructure, with an optimistic write path.

    Writes decide against the state this process last saw (cached) and insert at the
    next version: when another process wrote in between, the insert conflicts on the
    (stream, version) key, and only then is the state fast-forwarded, the known
    message ids looked up, and the decision retried. The common case is therefore
    ONE transaction per turn and no reads. Reads always fast-forward first (one
    indexed query for newer events), so they see other processes' writes.
    """

    name = "convlog"
    is_snapshotting_enabled = True
    CACHE_SIZE = 1000

    def __init__(self, env: dict[str, str] | None = None, *, master_key: bytes | None = None,
                 where: str = "the event store", public_only: bool = False,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        """`master_key`: the store's master key (convlog.crypto.keys), needed when the
        store is encrypted, and making a new store encrypted; `where` names the
        store in key errors. A key problem raises before anything is written.
        `clock`: what stamps every event saved here (convlog.domain.clock)."""
        super().__init__(env)
        self.where = where
        self.clock = clock
        # Both keyed by the stream id's integer: a UUID hashes in Python (`UUID.__hash__`),
        # and an append looked these up six times (issue 30).
        self._cache: OrderedDict[int, Conversation] = OrderedDict()
        self._shared: OrderedDict[int, int] = OrderedDict()
        """Conversations other processes write too (seen conflicting): -> how many
        reads in a row found nothing new (`_note_shared`)."""
        self._cache_lock = threading.Lock()
        self.lineage = Lineage(self._first_event, self._cached)
        """Which streams are forks: reads by position splice in their parents'."""
        try:
            self.keyring = Keyring.open(self.keys, master_key, where, public_only, self.clock)
        except BaseException:
            self.close()
            raise
        if self.keyring.enabled:
            self._seal()

    def _seal(self) -> None:
        self.codec.sealer = Sealer(self.keyring, msgspec.json.Encoder(decimal_format="number"))

    def enable_encryption(self, master_key: bytes) -> None:
        """Make this unencrypted store encrypted: a key ring under `master_key`, and
        every event stored from now on sealed (re-encrypting the events already stored
        is `convlog.services.privacy.enable`'s work). Nothing to do when encrypted."""
        if not self.keyring.enabled:
            self.keyring = Keyring.enable(self.keys, master_key, self.where, self.clock)
            self._seal()

    def construct_recorder(self) -> ApplicationRecorder:
        """eventsourcing's recorder for the store's PERSISTENCE_MODULE, which must be a
        `ConvlogRecorder` (convlog.storage.recorder): kept typed as `index`."""
        recorder = super().construct_recorder()
        if not isinstance(recorder, ConvlogRecorder):
            raise StorageError(f"{type(recorder).__qualname__} is not a convlog recorder: "
                               "open stores with a convlog.storage persistence module")
        self.index: ConvlogRecorder = recorder
        return recorder

    @property
    def keys(self) -> ConvlogRecorder:
        """The recorder, as the key table and privacy admin of its database
        (convlog.crypto.keyring.KeyTable, plus `streams_of_user`, `rewrite_states`...)."""
        return self.index

    @property
    def snapshot_table(self) -> str | None:
        """The table of snapshots, when they are kept in the store's database."""
        recorder = None if self.snapshots is None else self.snapshots.recorder
        return recorder.events_table_name if isinstance(recorder, TableRecorder) else None

    def construct_mapper(self) -> Mapper[UUID]:
        return MsgspecMapper()

    def close(self) -> None:
        self.index.close_connections()
        super().close()

    @contextlib.contextmanager
    def not_waiting(self) -> Iterator[None]:
        """Writes of this thread, inside, fail with WriteLockBusy (nothing written)
        rather than wait: for another process's write lock (SQLite's), or to back off
        from a race with another writer of the same conversation. `convlog serve`
        makes on its event loop only the writes that need no waiting."""
        _NOT_WAITING.on = True
        try:
            with self.index.not_waiting():
                yield
        finally:
            _NOT_WAITING.on = False

    def wait_for_changes(self, timeout: float) -> None:
        """Return when new events may exist: at once on a PostgreSQL NOTIFY, else
        after `timeout` (SQLite and memory have no notifications: they are polled)."""
        self.index.wait_for_changes(timeout)

    @property
    def codec(self) -> MsgspecMapper:
        mapper = self.mapper
        assert isinstance(mapper, MsgspecMapper)
        return mapper

    # ------------------------------------------------------------------- state

    def _cached(self, conversation: UUID) -> Conversation | None:
        key = conversation.int
        with self._cache_lock:
            state = self._cache.get(key)
            if state is not None:
                self._cache.move_to_end(key)
            return state

    def _remember(self, conversation: UUID, state: Conversation) -> None:
        key = conversation.int
        with self._cache_lock:
            current = self._cache.pop(key, None)  # re-inserted last: most recently used
            self._cache[key] = (state if current is None or current.version <= state.version
                                else current)
            while len(self._cache) > self.CACHE_SIZE:
                self._cache.popitem(last=False)

    def _is_shared(self, conversation: UUID) -> bool:
        if not self._shared:  # the common case, without the lock
            return False
        with self._cache_lock:
            return conversation.int in self._shared

    def _note_shared(self, conversation: UUID, *, conflicted: bool = False,
                     changed: bool = False) -> None:
        """A conflict marks a conversation shared; a fresh read before a write that
        found nothing new counts towards unmarking it (`QUIET_READS` in a row)."""
        key = conversation.int
        with self._cache_lock:
            if conflicted or changed:
                self._shared[key] = 0
                self._shared.move_to_end(key)
                while len(self._shared) > self.CACHE_SIZE:
                    self._shared.popitem(last=False)
            elif key in self._shared:
                self._shared[key] += 1
                if self._shared[key] >= QUIET_READS:
                    del self._shared[key]

    def epoch_floor(self, conversation: UUID) -> int:
        """Where the conversation's current epoch started as far as this process
        knows (0: not known), without a query. Epochs only move forward, so reads of
        the live history may start there and find any newer clear in the rows."""
        cached = self._cached(conversation)
        return cached.epoch_start_version if cached is not None else 0

    @storage_errors
    def load(self, conversation: UUID, key: str, *, fresh: bool = True) -> Conversation:
        """The state of a conversation (an unstarted one when nothing is recorded).

        `fresh=False` may return what this process last saw, without any query.
        Cached states are never mutated: treat the result as read-only."""
        return self._state(conversation, key, fresh)

    def _state(self, conversation: UUID, key: str, fresh: bool) -> Conversation:
        """`load` for `execute` (already inside `storage_errors`: one wrapper a call)."""
        cached = self._cached(conversation)
        if cached is not None and not fresh:
            return cached
        if cached is None:
            try:
                state: Any = self.repository.get(
                    conversation, projector_func=project)  # type: ignore[type-var]
            except AggregateNotFoundError:
                return Conversation(key=key)
        else:
            newer: list[Any] = list(self.events.get(conversation, gt=cached.version))
            state = project(msgspec.structs.replace(cached), newer) if newer else cached
        assert isinstance(state, Conversation)
        self._remember(conversation, state)
        return state

    @storage_errors
    def find_answer(self, scope: str, now: float) -> Answer | None:
        """The answer kept for a keyed request (convlog.storage.requests), opened; None
        when there is none, or when its user's key was destroyed since."""
        found = self.index.find_answer(scope, now)
        if found is None or not self.keyring.enabled:
            return found
        aead = self.keyring.cipher_of(cipher.key_id_of(found.answer))
        if aead is None:
            return None
        return found._replace(answer=cipher.unseal(aead, found.answer, scope.encode()))

    @storage_errors
    def drop_answers(self) -> None:
        """Delete every kept answer (`forget`: an answer may hold the user's text)."""
        self.index.drop_answers()

    @storage_errors
    def keep_answer(self, scope: str, found: Answer, now: float, user: str | None
                    ) -> Answer:
        """Keep a keyed request's first answer; the one kept (another server's, when
        it kept one first). Sealed under `user`'s data key in an encrypted store."""
        plain = found.answer
        if self.keyring.enabled:
            key_id, aead = self.keyring.key_for(user)
            found = found._replace(answer=cipher.seal(aead, key_id, plain, scope.encode()))
        kept = self.index.keep_answer(scope, found, now)
        return kept._replace(answer=plain) if kept == found else (
            self.find_answer(scope, now) or kept)

    @storage_errors
    def recorded(
        self,
        conversation: UUID,
        *,
        after: int | None = None,
        upto: int | None = None,
        desc: bool = False,
        limit: int | None = None,
    ) -> list[Recorded]:
        return self.lineage.splice(conversation, after, upto, desc, limit, self._recorded)

    def _recorded(self, conversation: UUID, after: int | None, upto: int | None,
                  desc: bool, limit: int | None) -> list[Recorded]:
        """`recorded` of this stream alone (a fork's own events)."""
        envelopes = self.events.get(conversation, gt=after, lte=upto, desc=desc, limit=limit)
        return [Recorded(e.originator_version, e.event) for e in envelopes]  # type: ignore[attr-defined]

    @storage_errors
    def item_rows(self, conversation: UUID, *, after: int | None = None,
                  upto: int | None = None, desc: bool = False, limit: int | None = None,
                  shape: Lean = RawItem) -> list[tuple[int, Any]]:
        """(version, event) like `recorded`, for SDK session stores: messages that
        carry an SDK item come back as `RawItem`s (see `MsgspecMapper.decode_item`),
        everything else as its event. The rows are read straight from the recorder:
        no envelope per row. `shape`: `RawEntry`s (id and item only) or `RawJson`s
        (id and the item's JSON) instead."""
        return self.lineage.splice(
            conversation, after, upto, desc, limit,
            lambda c, a, u, d, n: self.codec.decode_items(
                c, self._rows(c, after=a, upto=u, desc=d, limit=n), shape))

    @storage_errors
    def item_page(self, conversation: UUID, *, after: int | None = None,
                  upto: int | None = None, limit: int, shape: Lean = RawItem
                  ) -> tuple[list[Any], int]:
        """`item_rows` newest first, as (the events, the version of the last one; 0
        when none): a backwards walk needs only where its page ended, and a
        (version, event) pair per row was a tenth of an SDK session's
        `get_items(limit=20)` (issue 30)."""
        if self.lineage.fork_of(conversation) is not None:
            pairs = self.item_rows(conversation, after=after, upto=upto, desc=True,
                                   limit=limit, shape=shape)
            return [e for _, e in pairs], pairs[-1][0] if pairs else 0
        rows = self._rows(conversation, after=after, upto=upto, desc=True, limit=limit)
        return (self.codec.decode_events(conversation, rows, shape),
                rows[-1][0] if rows else 0)

    @storage_errors
    def item_events(self, conversation: UUID, *, after: int | None = None,
                    shape: Lean = RawItem) -> list[Any]:
        """The events of `item_rows` for the whole stream after `after`, oldest first
        and without their versions (a whole session's `get_items()`, issue 30). On
        SQLite they are decoded as they are read, 256 rows at a time."""
        if self.lineage.fork_of(conversation) is not None:
            return [e for _, e in self.item_rows(conversation, after=after, shape=shape)]
        return self.index.select_decoded(
            conversation, functools.partial(self.codec.decode_events, conversation,
                                            shape=shape), gt=after,
            common=CURRENT_MESSAGE_TOPIC)  # SQLite gives that topic as None

    def _rows(self, conversation: UUID, *, after: int | None = None,
              upto: int | None = None, desc: bool = False, limit: int | None = None
              ) -> list[tuple[int, str, bytes]]:
        """(version, topic, state) rows as plain tuples: SQLite's own query (no
        StoredEvent per row) where there is one, eventsourcing's elsewhere."""
        return self.index.select_rows(conversation, gt=after, lte=upto, desc=desc,
                                      limit=limit)

    @storage_errors
    def last_messages(self, conversation: UUID, count: int) -> list[MessageAppended]:
        """The conversation's newest `count` messages, newest first: only message
        rows are read, and each is decoded straight to its event."""
        if self.lineage.fork_of(conversation) is not None:
            return [r.event for r in self.last_of(conversation, MESSAGE_TOPICS, count)
                    if isinstance(r.event, MessageAppended)]
        rows = self.index.select_tail(conversation, MESSAGE_TOPICS, count)
        decode = self.codec.decode_row
        return [decode(conversation, version, topic, state) for version, topic, state in rows]

    @storage_errors
    def last_of(self, conversation: UUID, topics: Sequence[str], count: int
                ) -> list[Recorded]:
        """The conversation's newest `count` events stored under `topics`, newest
        first: one backwards walk of its index reading only those rows."""
        if self.lineage.fork_of(conversation) is not None:
            return self.lineage.tail(conversation, topics, count, None, self._tail,
                                     self._tail_below)
        return self._tail(conversation, topics, count)

    def _tail(self, conversation: UUID, topics: Sequence[str], count: int
              ) -> list[Recorded]:
        rows = self.index.select_tail(conversation, topics, count)
        decode = self.codec.decode_row
        return [Recorded(version, decode(conversation, version, topic, state))
                for version, topic, state in rows]

    def _tail_below(self, conversation: UUID, topics: Sequence[str], count: int,
                    upto: int) -> list[Recorded]:
        """`_tail` at or below position `upto` (a parent's part of a fork's tail):
        a backwards walk by pages, keeping the rows of `topics`."""
        wanted, decode = set(topics), self.codec.decode_row
        out: list[Recorded] = []
        while len(out) < count and upto > 0:
            rows = self._rows(conversation, upto=upto, desc=True, limit=256)
            for version, topic, state in rows:
                topic = topic or CURRENT_MESSAGE_TOPIC
                if topic in wanted and len(out) < count:
                    out.append(Recorded(version, decode(conversation, version, topic, state)))
            if len(rows) < 256:
                break
            upto = rows[-1][0] - 1
        return out

    @storage_errors
    def first_event(self, conversation: UUID) -> Any | None:
        """A stream's own first event (`session_started`, or a fork's
        `conversation_forked`); None: nothing recorded."""
        return self._first_event(conversation)

    def _first_event(self, conversation: UUID) -> Any | None:
        """`first_event`, for `lineage` (False: its first row cannot be read)."""
        rows = self._rows(conversation, limit=1)
        if not rows:
            return None
        version, topic, state = rows[0]
        try:
            return self.codec.decode_row(conversation, version,
                                         topic or CURRENT_MESSAGE_TOPIC, state)
        except Exception:  # an unreadable first row (erased): not a fork we can follow
            return False

    # ------------------------------------------------------------------ writing

    @storage_errors
    def execute(
        self,
        conversation: UUID,
        key: str,
        commands: Callable[[Conversation, bool], Sequence[Command]],
        origins: Sequence[str] | None = None,
        slot: AbstractContextManager[object] | None = None,
        mark: str | None = None,
    ) -> tuple[Conversation, list[Recorded]]:
        """Decide `commands(state, fresh)` and save the events in ONE transaction.

        `commands` is called again on every attempt; `fresh` tells it the state was
        just read from the store (after a conflict), which is when it should look up
        which message ids are already known. Returns the new state and what was saved.
        `mark`: an entry for the message-id index saved with the events (a keyed
        request's, convlog.services.requests), so the same request conflicts after.

        `slot` (the process's write slot) is held by each attempt (decide and insert),
        never between attempts: after a conflict the tail is reloaded and any back-off
        slept outside it, so one conversation's race never stalls the process's other
        writes (issue 33). A conflict from stale state is retried at once; only a
        conflict on freshly read state (a real race) backs off.
        """
        slot = slot if slot is not None else contextlib.nullcontext()
        fresh = False
        deadline = time.monotonic() + CONFLICT_TIMEOUT
        attempt = 0
        if self._is_shared(conversation):
            # Other processes write it too (no sticky routing): the cached state is
            # likely stale, so read the tail first (one indexed query) rather than
            # pay a failed insert, a reload and an id lookup. Still optimistic about
            # ids: a known one conflicts on the index, and the retry looks ids up.
            cached = self._cached(conversation)
            read = self._state(conversation, key, True)
            self._note_shared(conversation, changed=cached is None
                              or read.version != cached.version)
        while True:
            attempt += 1
            if fresh:  # the reload after a conflict: outside the slot
                self._state(conversation, key, True)
            conflicted = False
            with slot:
                state = self._state(conversation, key, False)
                now = self.clock.now()
                events, after = decide_and_evolve(state, commands(state, fresh), now, origins)
                if events:
                    try:
                        return self._save(conversation, state, events, after, mark)
                    except IntegrityError:
                        conflicted = True
                elif fresh:
                    return state, []
            if not events:
                fresh = True  # "nothing to do" may come from a stale state: check
                continue
            if conflicted and not fresh:
                self._note_shared(conversation, conflicted=True)
            if time.monotonic() > deadline:
                raise ConcurrencyError(
                    f"conversation {key!r}: other writers kept winning for "
                    f"{CONFLICT_TIMEOUT:g}s ({attempt} attempts); nothing was written"
                ) from None
            if fresh:  # a real race: exponential backoff with full jitter, so the
                # writers of one busy conversation spread out instead of colliding
                if getattr(_NOT_WAITING, "on", False):
                    raise WriteLockBusy(f"conversation {key!r}: another writer won the "
                                        "race; retrying would wait")
                time.sleep(random.uniform(0, min(0.1, 0.001 * 2 ** min(attempt, 7))))
            fresh = True

    def _save(
        self, conversation: UUID, state: Conversation, events: list[Event],
        after: Conversation, mark: str | None = None,
    ) -> tuple[Conversation, list[Recorded]]:
        """Record `events` (decided against `state`, which they turn into `after`)."""
        # a fork's first event starts after its parent's position, not at 1
        user, first = after.user, after.version - len(events) + 1
        recorded = [Recorded(version, event)  # type: ignore[arg-type]
                    for version, event in enumerate(events, first)]
        new_ids = [e.message_id for e in events if isinstance(e, MessageAppended)]
        if mark is not None:
            new_ids.append(mark)
        # Straight to the recorder: Application.save would only add per-event protocol
        # checks (~10 us each on Python 3.11) and Recording objects nobody reads.
        # Storage failures become StorageError in `execute` (storage_errors); a conflict
        # (IntegrityError) goes back to its retry loop.
        message_ids = (conversation, new_ids) if new_ids else None
        # plain rows: on SQLite, no StoredEvent each (issue 30)
        self.index.insert_rows(self.codec.rows(conversation, first, events, user),
                               message_ids)
        self._remember(conversation, after)
        self.lineage.note(conversation, after)
        if after.version // SNAPSHOT_INTERVAL > state.version // SNAPSHOT_INTERVAL:
            self._snapshot(conversation, after)
        return after, recorded

    @storage_errors
    def snapshot_now(self, conversation: UUID) -> int:
        """Snapshot the conversation's current state; its version. `convlog copy`
        writes rows, not turns, so it makes the snapshots the turns would have made
        (without one, a cold read of a long conversation replays all of it)."""
        state = self._state(conversation, "", True)
        self._snapshot(conversation, state)
        return state.version

    def _snapshot(self, conversation: UUID, state: Conversation) -> None:
        if self.snapshots is None:
            return
        # The turn is committed: a snapshot is only a speed-up, so no failure here (the
        # same snapshot taken by another process, a lock, a full disk) may fail it.
        with contextlib.suppress(PersistenceError):
            self.snapshots.put([Envelope(conversation, state.version, state)])


def _unavailable(exc: BaseException) -> bool:
    """PostgreSQL out of reach (a connection error, the bounded wait for one expired:
    convlog.storage.postgres_pool), not a locked or full SQLite file."""
    if getattr(exc, "unavailable", False):
        return True
    driver = exc.__cause__ if isinstance(exc, OperationalError | InterfaceError) else exc
    return any(c.__module__.split(".")[0] in ("psycopg", "psycopg_pool")
               and c.__name__ in ("OperationalError", "InterfaceError")
               for c in type(driver).__mro__)  # AdminShutdown, PoolTimeout... included


def _lock_wait(store: ConversationStore) -> float | None:
    """How long this store's writer waits for another process's lock (SQLite's busy
    timeout), when its recorder has one."""
    return store.index.lock_wait_seconds


def _explain(exc: Exception, lock_wait: float | None = None) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    if "locked" in text or "busy" in text:
        # The timeout in effect is named: a user who set ?timeout= sees it was applied,
        # one who did not learns the default (5 s) they are under.
        timeout = "the timeout" if lock_wait is None else f"the {lock_wait:g} s timeout"
        return ("the database is locked by another process and stayed locked past "
                f"{timeout} (set ?timeout=SECONDS in the URL to wait longer): {text}")
    if "full" in text.lower():
        return f"the event store is full (disk space or database size limit): {text}"
    return f"the event store failed: {text}"
