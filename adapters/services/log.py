"""The synchronous public API: a `ConversationLog` and its `Conversation` handles.

Every write is one transaction: a turn, a `record` batch, an archive. Every write of
the process, whichever use case makes it, goes through the log's `Writer`
(convlog.services.writer): one lock, and the same steps (redaction, token counts,
memory cooldown, known message ids). The log itself only delegates: to the writer,
to the use cases, to the projections.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec

from convlog.accounting.prices import ModelPrice, PriceTable
from convlog.crypto.keys import load_key
from convlog.domain.clock import SYSTEM_CLOCK, Clock
from convlog.domain.conversation import (
    AppendMessages,
    Archive,
    BindNativeSession,
    Clear,
    Command,
    Conversation,
    Reactivate,
    SetMemoryPolicy,
    StartConversation,
    check_key,
    conversation_id,
)
from convlog.domain.errors import ConvlogError, InvalidInput, UnknownConversation
from convlog.domain.events import MessageAppended, Recorded
from convlog.domain.memory import InjectMemory, check_depth
from convlog.domain.messages import Message
from convlog.domain.records import is_record
from convlog.domain.retention import RetentionPolicy
from convlog.projections.context import Budget
from convlog.projections.memory import DEFAULT_CAP, DEFAULT_DEPTH, check_cap
from convlog.projections.moment import last_version, parse_moment
from convlog.projections.replay_views import ConversationView
from convlog.projections.replay_views import view as _view
from convlog.projections.timeline import TimelineRow, timeline
from convlog.projections.transcript import TranscriptLine, transcript
from convlog.projections.view_diff import ViewDiff, diff
from convlog.services import items, privacy, retention
from convlog.services.catalog import CatalogQueries
from convlog.services.compaction import Compaction, CompactionPlan, compact, public_plan
from convlog.services.context import Context, ContextBuilder, Summarizer
from convlog.services.handle import ConversationHandle
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
from convlog.services.items import Kept, Summarized
from convlog.services.memory import MemoryBlock, cooldown, inject, live_at, live_now
from convlog.services.options import LogOptions
from convlog.services.privacy import ForgetResult
from convlog.services.redacting import Redactor
from convlog.services.results import AppendResult, ConversationInfo, conversation_info
from convlog.services.resume.resumption import ResumptionContext
from convlog.services.resume.resumption import build as build_resumption
from convlog.services.resume.run import ResumeOutcome, ResumeRun, Tier, record_injection
from convlog.services.resume.tiers import resume
from convlog.services.retention import RetentionInForce, RetentionRun
from convlog.services.shown_counts import shown_tokens
from convlog.services.summary import PAUSED_AFTER, ConversationSummary, summarize
from convlog.services.writer import Writer
from convlog.storage.application import MESSAGE_TOPICS, ConversationStore
from convlog.storage.errors import StorageError
from convlog.storage.mapper import RawEntry, RawItem, RawJson
from convlog.storage.requests import Answer
from convlog.storage.urls import StorageConfig, parse_url
from convlog.views.analytics import Analytics, CatalogRow


class ConversationLog(CatalogQueries):
    """An open event store of conversations. Use `convlog.open(url)` to get one."""

    def __init__(self, url: str | None = None, *, create: bool = True,
                 prices: dict[str, ModelPrice] | None = None,
                 views: str | Path | None = None, preload_tokenizer: bool = False,
                 max_injected_blocks_in_history: int = DEFAULT_CAP,
                 context_window_depth: int = DEFAULT_DEPTH,
                 redact: Redactor | None = None, master_key: bytes | str | None = "env"):
        """`convlog.open`'s options (see `LogOptions`), and `master_key`: the store's
        key, by default from CONVLOG_KEY / CONVLOG_KEY_FILE (maintenance opens stores
        without a key, or with a new one); ``"public"`` opens an encrypted store
        without its key for counts, tokens, costs, telemetry and SQL over the views
        (content reads as placeholders, writes raise MissingKey)."""
        self._open(url, LogOptions(
            create=create, prices=prices, views=views, preload_tokenizer=preload_tokenizer,
            max_injected_blocks_in_history=max_injected_blocks_in_history,
            context_window_depth=context_window_depth, redact=redact), master_key)

    @classmethod
    def with_options(cls, url: str | None, options: LogOptions, *,
                     master_key: bytes | str | None = "env",
                     clock: Clock = SYSTEM_CLOCK) -> ConversationLog:
        """The log at `url`, opened with `options` (what every opener calls). `clock`:
        what stamps every event, ages conversations (`expire`, a summary's status) and
        kept request answers, and times resume tiers (convlog.domain.clock); the
        machine's by default, one the test moves in tests."""
        log = cls.__new__(cls)
        log._open(url, options, master_key, clock)
        return log

    def _open(self, url: str | None, options: LogOptions,
              master_key: bytes | str | None, clock: Clock = SYSTEM_CLOCK) -> None:
        self.options = options.checked()
        self.max_injected_blocks_in_history = options.max_injected_blocks_in_history
        """How many memory blocks stay live in every context (0: ephemeral)."""
        self.context_window_depth = options.context_window_depth
        """Turns before a memory id may be injected again (0: no cooldown)."""
        self.config: StorageConfig = parse_url(url)
        self._prices = options.prices
        self._views_path = Path(options.views) if options.views is not None else None
        self._analytics: Analytics | None = None
        if not options.create:
            self.config.check_exists()
        self.config.check_reachable(create=options.create)
        self.config.create_private()
        # a bad key fails here, before anything is opened
        public_only = master_key == "public"  # no key: counts and costs, no content
        master = load_key() if master_key == "env" else None if public_only else master_key
        assert master is None or isinstance(master, bytes)
        try:
            self._store = ConversationStore(env=self.config.env(), master_key=master,
                                            where=self.config.display,
                                            public_only=public_only, clock=clock)
        except ConvlogError:
            raise  # key errors say what to do; wrapped, they would say less
        except Exception as exc:  # OSError, bad settings, sqlite3/psycopg errors wrapped in
            raise StorageError(f"cannot open {self.config.url!r}: {exc}") from None  # several types
        self._writer = Writer(
            self._store, redact=options.redact, context_window_depth=self.context_window_depth,
            max_injected_blocks_in_history=self.max_injected_blocks_in_history)
        if options.preload_tokenizer:  # the host will build contexts: load the vocabulary
            from convlog.accounting.tokens import warm_up_in_background  # off the hot path

            warm_up_in_background()

    # ----------------------------------------------------------------- lifecycle

    def close(self) -> None:
        if self._analytics is not None:
            self._analytics.views.close()
        self._store.close()

    def __enter__(self) -> ConversationLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def write_lock(self) -> threading.RLock:
        """Held by every write of this process (maintenance takes it too)."""
        return self._writer.lock

    @property
    def writer(self) -> Writer:
        """The unit of work every write of this log goes through."""
        return self._writer

    @property
    def store(self) -> ConversationStore:
        """The underlying eventsourcing application (for advanced use and tests)."""
        return self._store

    # ------------------------------------------------------------------- writing

    def conversation(
        self,
        key: str,
        *,
        user: str | None = None,
        agent: str | None = None,
        channel: str | None = None,
        title: str | None = None,
        workspace: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> ConversationHandle:
        """The conversation under `key`, started (ConversationStarted) if it is new.
        Calling it again for an existing key records nothing."""
        self.execute(key, [StartConversation(
            user=user, agent=agent, channel=channel, title=title, workspace=workspace,
            metadata=dict(metadata or {}))])
        return ConversationHandle(self, key)

    def get(self, key: str) -> ConversationHandle:
        """The existing conversation under `key`; UnknownConversation if there is none."""
        self.state(key)
        return ConversationHandle(self, key)

    def append_turn(self, key: str, messages: Iterable[Message]) -> AppendResult:
        """Append every message of one agent run in one transaction. Message ids already
        recorded in this conversation are skipped, so retrying a turn is safe."""
        return self._writer.execute(key, [AppendMessages(messages=list(messages))])

    def append(self, key: str, message: Message) -> AppendResult:
        # Straight to the writer, as `execute` does: the hottest call of a host.
        return self._writer.execute(key, [AppendMessages(messages=[message])])

    def bind_native_session(self, key: str, native_session_id: str,
                            agent: str | None = None) -> AppendResult:
        return self.execute(key, [BindNativeSession(native_session_id=native_session_id,
                                                    agent=agent)])

    def archive(self, key: str, reason: str | None = None) -> AppendResult:
        return self.execute(key, [Archive(reason=reason)])

    def reactivate(self, key: str) -> AppendResult:
        return self.execute(key, [Reactivate()])

    def clear(self, key: str, reason: str | None = None) -> AppendResult:
        """Start a new epoch: later context starts empty; history stays in the log."""
        return self.execute(key, [Clear(reason=reason)])

    def retract_last(self, key: str, reason: str | None = None) -> MessageAppended | None:
        """Withdraw the newest live message of the current epoch (a compensating
        MessageRetracted: the message stays in the log for replay; contexts and
        `live_messages` skip it) and return it; None when nothing is live."""
        return items.retract_last(self._writer, check_key(key), reason)

    def compact(self, key: str, summarizer: Summarizer | str, *, keep_last: int = 10,
                reason: str | None = None, summarizer_name: str | None = None,
                model: str | None = None, through: str | None = None
                ) -> Compaction | None:
        """Compact the history for the model: the live messages of the epoch, but the
        newest `keep_last` (more when the newest would split a tool call from its
        result), are replaced by `summarizer(previous_summary, messages) -> str` in
        every model-facing read (contexts, SDK stores, ACP injection). Nothing is
        deleted: `history_compacted` records the summary, the range it covers, tokens
        before and after and who made it (`summarizer_name`, else the function's
        name); the user's view, transcripts and replays keep every message. None
        when there is nothing to compact. `model`: whose tokenizer counts.
        `summarizer` may be the summary itself, written from `compaction_plan`, with
        that plan's `through_message_id` as `through`: refused (CompactedMeanwhile)
        when the range has moved since."""
        return compact(self.builder(model), check_key(key), summarizer, keep_last, reason,
                       summarizer_name, through)

    def compaction_plan(self, key: str, *, keep_last: int = 10) -> CompactionPlan:
        """What `compact(key, ..., keep_last=...)` would replace now: the messages to
        summarize (as a summarizer gets them), the previous summary to fold in, the
        last message of the range (None: nothing to compact). Nothing is recorded."""
        return public_plan(self.builder(), check_key(key), keep_last)

    def execute(
        self, key: str, commands: Sequence[Command], origins: Sequence[str] | None = None
    ) -> AppendResult:
        """Decide and record a batch of commands atomically (all or nothing)."""
        return self._writer.execute(key, commands, origins)

    def forget(self, *, user: str, requested_by: str | None = None) -> ForgetResult:
        """Erase `user` (GDPR): their data key is destroyed, so no content of their
        conversations can be read again; `user_forgotten` is recorded in each (who and
        when, not what). Counts, tokens and costs stay. Needs an encrypted store."""
        return privacy.forget(self._writer, user, requested_by)

    def enable_encryption(self, master_key: bytes,
                          progress: Callable[[str, int], None] | None = None) -> int:
        """Encrypt this store, opened without a key (`convlog keys enable`): events
        already stored are re-encrypted conversation by conversation, then the views
        (which may hold plaintext) are deleted. Returns how many events this run
        re-encrypted; run it again to finish a run that was cut short."""
        total = privacy.enable(self._writer, master_key, progress)
        self._discard_views()
        return total

    def _discard_views(self) -> None:
        """Delete the views' file: a cache, rebuilt on next use."""
        views = self.analytics.views
        views.close()
        if views.path is not None:
            for path in (views.path, Path(f"{views.path}.wal")):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()

    def request_answer(self, scope: str) -> Answer | None:
        """The first answer to the keyed request `scope` (an HTTP `Idempotency-Key`'s
        digest: convlog.storage.requests), kept in the store, so every process on it
        answers a retry the same; None when there is none (or it expired)."""
        return self._store.find_answer(scope, self._store.clock.now().timestamp())

    def keep_request_answer(self, scope: str, answer: Answer, user: str | None) -> Answer:
        """Keep the first answer to the keyed request `scope` (sealed under `user`'s key
        in an encrypted store); the one kept, another process's if it was first."""
        return self._store.keep_answer(scope, answer, self._store.clock.now().timestamp(),
                                       user)

    def known_message_ids(self, key: str, ids: Sequence[str]) -> set[str]:
        """Which of `ids` the conversation already holds (indexed queries; an unknown
        conversation holds none)."""
        return self._writer.known_message_ids(key, ids)

    def import_(self, format: str | Importer, paths: Sequence[str | Path], *,
                keep_going: bool = False, progress: ProgressCallback | None = None,
                max_line_bytes: int | None = None) -> ImportSummary:
        """Import other tools' history (``"claude-code"``, ``"openai"``, ``"codex"``, or
        an `Importer`) from files or directory trees: each conversation is one atomic
        batch; record ids are message ids, so importing again adds only what is new.
        The first unreadable conversation raises ImportFailed (``file:line: what``),
        unless `keep_going`: then every failure is in the summary."""
        importer = find_importer(format, max_line_bytes=max_line_bytes)
        return run_import(self._writer, importer, paths, prices=PriceTable(self._prices),
                          keep_going=keep_going, progress=progress)

    def import_conversations(self, format: str,
                             conversations: Iterable[ImportedConversation | ImportFailure]
                             ) -> ImportSummary:
        """Record conversations an importer read (`convlog watch` reads a file's new
        lines with `Follower.follow`), as `import_` records them: one batch each,
        known message ids skipped, failures listed in the summary."""
        return record_conversations(self._writer, format, conversations,
                                    prices=PriceTable(self._prices))

    def record_injection(self, key: str, context: Context,
                         native_session_id: str | None = None) -> bool:
        """Record that `context` was handed to a fresh agent session (HistoryInjected),
        at most once per native session even across processes: False, and nothing
        recorded, when `native_session_id` already got an injection. For hosts that run
        the tiers themselves (the HTTP service does); `resume()` does this for you."""
        return record_injection(self._writer, key, context, native_session_id)

    def inject_memory(self, key: str, text: str, memory_ids: Sequence[str] = (), *,
                      block_id: str | None = None, native_session_id: str | None = None
                      ) -> MemoryBlock:
        """Record a block of retrieved memories placed before a turn; returns it as the
        host must send it (``block.text`` starts with ``[Context from memory]``).
        Raises `MemoryCooling` (a subclass of InvalidInput; nothing recorded) when one
        of `memory_ids` was injected within `context_window_depth` turns: filter your
        retrieval with `memory_cooldown()` first."""
        if isinstance(memory_ids, str):
            raise InvalidInput("must be a list of memory ids, not one string",
                               field="memory_ids")
        command = InjectMemory(text=text, memory_ids=list(memory_ids),
                               native_session_id=native_session_id)
        if block_id is not None:
            command = msgspec.structs.replace(command, block_id=block_id)
        return inject(self._writer, check_key(key), command)

    def set_memory_policy(self, key: str, *, max_injected_blocks_in_history: int,
                          context_window_depth: int) -> tuple[int, int]:
        """Set the memory policy of ONE conversation from here on (recorded, pinned:
        the options of the processes that write to it no longer change it; another
        call does). Returns the policy in force."""
        check_cap(max_injected_blocks_in_history)
        check_depth(context_window_depth)
        self.state(key)  # an unknown conversation is an error, not a silent no-op
        self._writer.execute(key, [SetMemoryPolicy(
            max_injected_blocks_in_history=max_injected_blocks_in_history,
            context_window_depth=context_window_depth, pinned=True)])
        return self.state(key).policy()

    def memory_cooldown(self, key: str) -> dict[str, int]:
        """{memory id: turns left} for the memory ids that must not be injected now,
        by the policy in force (the conversation's pinned one, else this log's)."""
        state = self.state(key)
        return cooldown(state, state.cooldown_depth(self.context_window_depth))

    def live_memory(self, key: str, *, at: int | None = None) -> list[MemoryBlock]:
        """The memory blocks live in the agent's context, oldest first: now, or at log
        version `at` of a replay (what the agent view of a replay shows)."""
        if at is None:
            state = self.state(key)
            return live_now(self._store, state, state.policy()[0])
        return live_at(self.events(key, upto=at), DEFAULT_CAP, at)

    def builder(self, model: str | None = None) -> ContextBuilder:
        """A context builder with this log's memory-block cap."""
        return ContextBuilder(self._writer, model, self.max_injected_blocks_in_history)

    # ------------------------------------------------------------------- reading

    def state(self, key: str) -> Conversation:
        """The conversation's current decision state (a copy)."""
        state = self._store.load(conversation_id(key), check_key(key))
        if not state.started:
            raise UnknownConversation(key)
        return msgspec.structs.replace(state)

    def info(self, key: str) -> ConversationInfo:
        return conversation_info(self.state(key))

    def summary(self, key: str, *, paused_after: float = PAUSED_AFTER) -> ConversationSummary:
        """The conversation at a glance, without building a context: status (active,
        paused after `paused_after` seconds without activity, archived), dates,
        message count, tokens, cost, agents and the latest summary's text."""
        return summarize(self._store, self.analytics, self.state(key), paused_after)

    def exists(self, key: str) -> bool:
        return self._store.load(conversation_id(key), check_key(key)).started

    def events(self, key: str, *, after: int = 0, upto: int | None = None,
               desc: bool = False, limit: int | None = None) -> list[Recorded]:
        """Recorded events of a conversation, by position; one indexed query."""
        if limit is not None and limit <= 0:
            raise InvalidInput("limit must be positive", field="limit")
        recorded = self._store.recorded(conversation_id(key), after=after or None, upto=upto,
                                        desc=desc, limit=limit)
        if not recorded and after == 0 and not self.exists(key):
            raise UnknownConversation(key)
        return recorded

    def messages(self, key: str, *, last: int | None = None) -> list[MessageAppended]:
        """The messages of the current epoch, in order: after a `clear`, the ones
        before it are not handed back (a restarted host must not reload what its user
        cleared; the log keeps them: `transcript`, `timeline`, `view`). Records an SDK
        store keeps are no messages (convlog.domain.records). `last=N` returns the
        newest N: about N rows are read, walking the conversation's index backwards,
        never replaying the conversation."""
        if last is not None and last <= 0:
            raise InvalidInput("last must be positive", field="last")
        start = self.state(key).epoch_start_version  # UnknownConversation, or the epoch
        if last is None:
            return [r.event for r in self.events(key, after=start)
                    if isinstance(r.event, MessageAppended) and not is_record(r.event)]
        cid, rows = conversation_id(key), last
        while True:  # select_tail stops at `rows`, newest first: read past any records
            found = self._store.last_of(cid, MESSAGE_TOPICS, rows)
            said = [r.event for r in found if r.version > start
                    and isinstance(r.event, MessageAppended) and not is_record(r.event)]
            if len(said) >= last or len(found) < rows or found[-1].version <= start:
                break
            rows = 2 * rows + last - len(said)
        return said[last - 1::-1]

    def live_messages(self, key: str, *, last: int | None = None) -> list[MessageAppended]:
        """The messages of the current epoch that were not retracted, oldest first
        (`last=N`: the newest N, reading about N rows). What an SDK session returns."""
        if last is not None and last < 0:
            raise InvalidInput("last cannot be negative", field="last")
        return items.live_messages(self._store, self.state(key), last)

    def live_items(self, key: str, *, last: int | None = None, raw_only: bool = False,
                   summarized: Summarized | None = None, kept: Kept | None = None
                   ) -> list[MessageAppended | RawItem | RawEntry]:
        """`live_messages` for SDK session stores: a message that keeps an SDK item
        comes back as a `RawItem` (id + item + what pairing reads), or with
        `raw_only` as a `RawEntry` (id + item), without decoding the rest (issue 30).
        `summarized(event)`: the store's own item for a compaction's summary, which
        then replaces the compacted range (with the range's items `kept` keeps)."""
        if last is not None and last < 0:
            raise InvalidInput("last cannot be negative", field="last")
        return items.live_items(  # type: ignore[return-value]  # no RawJson asked for
            self._store, check_key(key), last, RawEntry if raw_only else RawItem,
            summarized, kept)

    def live_json(self, key: str) -> list[MessageAppended | RawJson]:
        """`live_items` with each SDK item's JSON left undecoded (`RawJson`), for a
        store that decodes the items one at a time (Google ADK's `get_session`,
        issue 30)."""
        return items.live_items(  # type: ignore[return-value]  # only RawJson asked for
            self._store, check_key(key), None, RawJson)

    def transcript(self, key: str) -> list[TranscriptLine]:
        return transcript(self.events(key))

    def timeline(self, key: str, *, until: int | datetime | str | None = None
                 ) -> list[TimelineRow]:
        """Every event, one line each, up to `until`: a version, or a time (a naive
        time is UTC); None = now."""
        moment = parse_moment(until, "until")
        return timeline(self.events(key, upto=last_version(moment)), until=moment,
                        tokens=shown_tokens)

    def view(self, key: str, view: str = "user", *, at: int | datetime | str | None = None
             ) -> ConversationView:
        """What the user saw (``"user"``) or what the agent received (``"agent"``), as
        of `at`: a version, or a time (a naive time is UTC); None = now."""
        moment = parse_moment(at)
        return _view(key, view, self.events(key, upto=last_version(moment)), moment,
                     memory_cap=DEFAULT_CAP)

    def diff(self, key: str, *, at: int | datetime | str | None = None) -> ViewDiff:
        """Where the two views part at `at`: messages missing from the agent's context
        (with the reason), text only the agent saw, and flagged resumes."""
        moment = parse_moment(at)
        return diff(key, self.events(key, upto=last_version(moment)), moment,
                    memory_cap=DEFAULT_CAP)

    def context(
        self,
        key: str,
        *,
        budget: Budget | None = None,
        format: str = "xml",
        exclude: Iterable[str] = (),
        summarizer: Summarizer | None = None,
        summarizer_name: str | None = None,
        model: str | None = None,
    ) -> Context:
        """The history to inject into a fresh agent session, cut to `budget`.

        `exclude`: ids of messages not to include (the one the user is sending now).
        `summarizer(previous_summary, messages) -> str`: called when older history does
        not fit; its summary is recorded once and reused. `model`: whose tokenizer
        counts the budget (default o200k_base)."""
        return self.builder(model).build(
            key, budget or Budget(), format, frozenset(exclude), summarizer, summarizer_name)

    def resume(
        self,
        key: str,
        tiers: Sequence[Tier],
        *,
        budget: Budget | None = None,
        format: str = "xml",
        exclude: Iterable[str] = (),
        summarizer: Summarizer | None = None,
        summarizer_name: str | None = None,
        model: str | None = None,
    ) -> ResumeOutcome:
        """Try `tiers` in order, recording every attempt; inject history only when a
        fresh tier (a new, empty agent session) is the one that worked."""
        run = ResumeRun(self.builder(model), check_key(key),
                        budget or Budget(), format, frozenset(exclude))
        return resume(run, tiers, summarizer, summarizer_name)

    def resumption_context(
        self, *, user: str | None = None, workspace: str | None = None,
        conversations: int = 3, budget: Budget | None = None, format: str = "xml",
        model: str | None = None,
    ) -> ResumptionContext:
        """One context spanning the user's (and/or workspace's) most recent active
        conversations, newest first, under ONE token budget (the newest conversation
        claims it first): each with its title, dates, counts, tokens and cost, its
        latest summary, then its newest messages. Formats: ``xml``, ``markdown``. The
        metadata (counts, tokens, agents, costs) is the session catalog's."""
        return build_resumption(self.builder(model), self.analytics, user=user,
                                workspace=workspace, conversations=conversations,
                                budget=budget, fmt=format)

    def retention_policy(self, key: str) -> RetentionInForce:
        """The retention policy in force for conversation `key`: its own, else the
        store's (docs/settings.md#retention), and whose it is."""
        return retention.in_force(self._writer, key)

    def set_retention_policy(self, key: str, policy: RetentionPolicy) -> bool:
        """Conversation `key`'s own retention policy from now on (it must exist;
        pinned: a process's options never change it). Returns whether anything was
        recorded (nothing when the same policy is in force)."""
        return retention.set_policy(self._writer, policy, key)

    def store_retention_policy(self) -> RetentionInForce:
        """The store's retention policy: what holds for every conversation without
        one of its own (source ``none``: keep everything)."""
        return retention.in_force(self._writer)

    def set_store_retention_policy(self, policy: RetentionPolicy, *,
                                   pinned: bool = True) -> bool:
        """The store's retention policy from now on. `pinned=False` is a process's
        options (`--erase-after-days`..., $CONVLOG_ERASE_AFTER_DAYS...): it leaves a
        policy set on purpose alone. Returns whether anything was recorded."""
        return retention.set_policy(self._writer, policy, pinned=pinned)

    def enforce_retention(self, *, dry_run: bool = False) -> RetentionRun:
        """Archive and erase what the retention policy in force asks now, each action
        recorded as an event; `dry_run` lists exactly that and writes nothing. After
        an erasure the views' file is deleted (it held the erased titles): it is
        rebuilt from the log on next use."""
        done = retention.run(self._writer, dry_run=dry_run)
        if done.rows_erased:
            self._discard_views()
            self._analytics = None
        return done

    def expire(self, *, idle_days: float, dry_run: bool = False) -> list[CatalogRow]:
        """Archive active conversations idle for `idle_days` or more (nothing is
        deleted); returns them. `dry_run` only lists them."""
        if not idle_days > 0:
            raise InvalidInput("must be a positive number of days", field="idle_days")
        cutoff = self._store.clock.now() - timedelta(days=idle_days)
        idle = self.analytics.sessions(idle_before=cutoff)
        if not dry_run:
            for row in idle:
                self.archive(row.key, reason=f"idle for {idle_days:g} days")
        return idle
