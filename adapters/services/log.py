"""The synchronous host API: a `ConversationLog` and its `Conversation` handles.

A thin API over ONE `Application` (convlog.services.application, built by its
`bootstrap`): every write goes through the application's writer, every read through
its read API, its catalog or its context builder. What is here is what a host calls;
what entry points need besides (the commands API, request claims, the import driver,
the views' upkeep) is on the application, which they receive as a typed dependency or,
given a host's log, through `application(log)`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec

from convlog.accounting.prices import ModelPrice
from convlog.domain.clock import SYSTEM_CLOCK, Clock
from convlog.domain.conversation import (
    AppendMessages,
    Archive,
    BindNativeSession,
    Clear,
    Conversation,
    Reactivate,
    SetMemoryPolicy,
    StartConversation,
    check_key,
)
from convlog.domain.errors import InvalidInput
from convlog.domain.events import MessageAppended, Recorded
from convlog.domain.memory import InjectMemory, check_depth
from convlog.domain.messages import Message
from convlog.domain.renamed import warn_renamed
from convlog.domain.retention import RetentionPolicy
from convlog.projections.context import Budget
from convlog.projections.memory import DEFAULT_CAP, DEFAULT_DEPTH, check_cap
from convlog.projections.moment import last_version, parse_moment
from convlog.projections.replay_views import ConversationView
from convlog.projections.replay_views import view as _view
from convlog.projections.timeline import TimelineRow, timeline
from convlog.projections.transcript import TranscriptLine, transcript
from convlog.projections.view_diff import ViewDiff, diff
from convlog.services import items, retention
from convlog.services.application import Application, bootstrap
from convlog.services.catalog import CatalogQueries
from convlog.services.compaction import Compaction, CompactionPlan, compact, public_plan
from convlog.services.context import Context, Summarizer
from convlog.services.fork import Forked, fork
from convlog.services.handle import ConversationHandle
from convlog.services.import_run import ImportSummary, ProgressCallback
from convlog.services.importing import Importer
from convlog.services.items import Kept, Summarized
from convlog.services.memory import MemoryBlock, cooldown, inject, live_at, live_now
from convlog.services.options import LogOptions
from convlog.services.privacy import ForgetResult
from convlog.services.redacting import Redactor
from convlog.services.results import AppendResult, ConversationInfo, conversation_info
from convlog.services.resume.resumption import ResumptionContext
from convlog.services.resume.resumption import build as build_resumption
from convlog.services.resume.run import ResumeOutcome, ResumeRun, Tier
from convlog.services.resume.tiers import resume
from convlog.services.retention import RetentionInForce, RetentionRun
from convlog.services.rewind import Rewound, rewind
from convlog.services.shown_counts import shown_tokens
from convlog.services.summary import PAUSED_AFTER, ConversationSummary, summarize
from convlog.storage.mapper import RawEntry, RawItem, RawJson
from convlog.views.analytics import CatalogRow

__all__ = ["ConversationLog", "application", "host_api"]


def application(log: ConversationLog) -> Application:
    """The application behind a host's `log`: the one documented way for a surface
    that is handed a log (the SDK session stores, `AgentSessions`, an exporter) to
    reach what the host API does not offer (the commands API, the import driver...).
    Never `log._app`, and never the log's deprecated `store` / `writer`."""
    return log._app


def host_api(app: Application) -> ConversationLog:
    """The host API over `app` (no second store is opened): what an entry point that
    was handed the application gives the code written against `ConversationLog`."""
    log = ConversationLog.__new__(ConversationLog)
    log._adopt(app)
    return log


def _moved(name: str, where: str) -> Any:
    """A member that left the host API (issue 46): served one more release as the
    application's, with a deprecation warning naming where it is now."""

    def get(self: ConversationLog) -> Any:
        warn_renamed(f"ConversationLog.{name}", f"convlog.services.log.application(log)"
                     f".{where}", "the application's, not the host API's (issue 46)")
        value: Any = self._app
        for part in where.split("."):
            value = getattr(value, part)
        return value

    return property(get, doc=f"Deprecated: `application(log).{where}`.")


class ConversationLog(CatalogQueries):
    """An open event store of conversations. Use `convlog.open(url)` to get one."""

    _app: Application

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
        self._adopt(bootstrap(url, LogOptions(
            create=create, prices=prices, views=views, preload_tokenizer=preload_tokenizer,
            max_injected_blocks_in_history=max_injected_blocks_in_history,
            context_window_depth=context_window_depth, redact=redact),
            master_key=master_key))

    @classmethod
    def with_options(cls, url: str | None, options: LogOptions, *,
                     master_key: bytes | str | None = "env",
                     clock: Clock = SYSTEM_CLOCK) -> ConversationLog:
        """The log at `url`, opened with `options` (what every opener calls). `clock`:
        what stamps every event, ages conversations (`expire`, a summary's status) and
        kept request answers, and times resume tiers (convlog.domain.clock); the
        machine's by default, one the test moves in tests."""
        log = cls.__new__(cls)
        log._adopt(bootstrap(url, options, master_key=master_key, clock=clock))
        return log

    def _adopt(self, app: Application) -> None:
        self._app = app
        self.options = app.options
        self.max_injected_blocks_in_history = app.options.max_injected_blocks_in_history
        """How many memory blocks stay live in every context (0: ephemeral)."""
        self.context_window_depth = app.options.context_window_depth
        """Turns before a memory id may be injected again (0: no cooldown)."""

    # ----------------------------------------------------------------- lifecycle

    def close(self) -> None:
        self._app.close()

    def __enter__(self) -> ConversationLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # left the host API in issue 46: the application's (`application(log)`) now
    store = _moved("store", "store")
    writer = _moved("writer", "writer")
    write_lock = _moved("write_lock", "write_lock")
    config = _moved("config", "config")
    analytics = _moved("analytics", "analytics")
    execute = _moved("execute", "execute")
    builder = _moved("builder", "builder")
    request_answer = _moved("request_answer", "requests.answer")
    keep_request_answer = _moved("keep_request_answer", "requests.keep")
    import_conversations = _moved("import_conversations", "imports.record")
    refresh_views = _moved("refresh_views", "catalog.refresh")
    rebuild_views = _moved("rebuild_views", "catalog.rebuild")
    follow_views = _moved("follow_views", "catalog.follow")

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
        self._app.execute(key, [StartConversation(
            user=user, agent=agent, channel=channel, title=title, workspace=workspace,
            metadata=dict(metadata or {}))])
        return ConversationHandle(self, key)

    def get(self, key: str) -> ConversationHandle:
        """The existing conversation under `key`; UnknownConversation if there is none."""
        self._app.reads.state(key)
        return ConversationHandle(self, key)

    def append_turn(self, key: str, messages: Iterable[Message]) -> AppendResult:
        """Append every message of one agent run in one transaction. Message ids already
        recorded in this conversation are skipped, so retrying a turn is safe."""
        return self._app.writer.execute(key, [AppendMessages(messages=list(messages))])

    def append(self, key: str, message: Message) -> AppendResult:
        # Straight to the writer: the hottest call of a host.
        return self._app.writer.execute(key, [AppendMessages(messages=[message])])

    def bind_native_session(self, key: str, native_session_id: str,
                            agent: str | None = None) -> AppendResult:
        return self._app.execute(key, [BindNativeSession(
            native_session_id=native_session_id, agent=agent)])

    def archive(self, key: str, reason: str | None = None) -> AppendResult:
        return self._app.execute(key, [Archive(reason=reason)])

    def reactivate(self, key: str) -> AppendResult:
        return self._app.execute(key, [Reactivate()])

    def clear(self, key: str, reason: str | None = None) -> AppendResult:
        """Start a new epoch: later context starts empty; history stays in the log."""
        return self._app.execute(key, [Clear(reason=reason)])

    def retract_last(self, key: str, reason: str | None = None) -> MessageAppended | None:
        """Withdraw the newest live message of the current epoch (a compensating
        MessageRetracted: the message stays in the log for replay; contexts and
        `live_messages` skip it) and return it; None when nothing is live."""
        return items.retract_last(self._app.writer, check_key(key), reason)

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
        return compact(self._app.builder(model), check_key(key), summarizer, keep_last,
                       reason, summarizer_name, through)

    def rewind(self, key: str, to: str, *, reason: str | None = None) -> Rewound | None:
        """Rewind to message `to`: for the model, every message after it is abandoned
        (`history_rewound`), and later appends continue from it. Nothing is deleted:
        the user's view shows the abandoned messages struck, `replay --at` before the
        rewind shows them as they were. None when nothing comes after `to`. A rewind
        never goes back past a clear or a compaction (InvalidInput naming `to`)."""
        return rewind(self._app.writer, check_key(key), to, reason)

    def fork(self, key: str, *, at: str, new_key: str, user: str | None = None,
             agent: str | None = None, channel: str | None = None,
             title: str | None = None, metadata: dict[str, Any] | None = None
             ) -> Forked:
        """Fork `key` at its message `at` into the new conversation `new_key`, and
        return it: its history is `key`'s up to and including `at`, by reference (its
        first event, `conversation_forked`, names the parent and the position; every
        read assembles the parent's prefix, then the fork's own events), and appends
        continue after it. The parent is unaffected. Same user, agent, channel and
        title as the parent unless given; the fork's owner is the parent's user
        unless the host passes `user=`. Refused: an unknown `at` (InvalidInput naming
        `at`), an archived parent (naming `key`), a forgotten one
        (ConversationForgotten), a `new_key` already taken (naming `key`).
        `log.get(forked.key)` is the new conversation."""
        return fork(self._app.writer, key, at, new_key, user=user, agent=agent,
                    channel=channel, title=title, metadata=metadata,
                    owner_given=user is not None)

    def compaction_plan(self, key: str, *, keep_last: int = 10) -> CompactionPlan:
        """What `compact(key, ..., keep_last=...)` would replace now: the messages to
        summarize (as a summarizer gets them), the previous summary to fold in, the
        last message of the range (None: nothing to compact). Nothing is recorded."""
        return public_plan(self._app.builder(), check_key(key), keep_last)

    def forget(self, *, user: str, requested_by: str | None = None) -> ForgetResult:
        """Erase `user` (GDPR): their data key is destroyed, so no content of their
        conversations can be read again; `user_forgotten` is recorded in each (who and
        when, not what). Counts, tokens and costs stay. Needs an encrypted store."""
        return self._app.keys.forget(user, requested_by)

    def enable_encryption(self, master_key: bytes,
                          progress: Callable[[str, int], None] | None = None) -> int:
        """Encrypt this store, opened without a key (`convlog keys enable`): events
        already stored are re-encrypted conversation by conversation, then the views
        (which may hold plaintext) are deleted. Returns how many events this run
        re-encrypted; run it again to finish a run that was cut short."""
        return self._app.keys.enable(master_key, progress)

    def known_message_ids(self, key: str, ids: Sequence[str]) -> set[str]:
        """Which of `ids` the conversation already holds (indexed queries; an unknown
        conversation holds none)."""
        return self._app.known_message_ids(key, ids)

    def import_(self, format: str | Importer, paths: Sequence[str | Path], *,
                keep_going: bool = False, progress: ProgressCallback | None = None,
                max_line_bytes: int | None = None) -> ImportSummary:
        """Import other tools' history (``"claude-code"``, ``"openai"``, ``"codex"``, or
        an `Importer`) from files or directory trees: each conversation is one atomic
        batch; record ids are message ids, so importing again adds only what is new.
        The first unreadable conversation raises ImportFailed (``file:line: what``),
        unless `keep_going`: then every failure is in the summary."""
        return self._app.imports.run(format, paths, keep_going=keep_going,
                                     progress=progress, max_line_bytes=max_line_bytes)

    def record_injection(self, key: str, context: Context,
                         native_session_id: str | None = None) -> bool:
        """Record that `context` was handed to a fresh agent session (HistoryInjected),
        at most once per native session even across processes: False, and nothing
        recorded, when `native_session_id` already got an injection. For hosts that run
        the tiers themselves (the HTTP service does); `resume()` does this for you."""
        return self._app.record_injection(key, context, native_session_id)

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
        return inject(self._app.writer, check_key(key), command)

    def set_memory_policy(self, key: str, *, max_injected_blocks_in_history: int,
                          context_window_depth: int) -> tuple[int, int]:
        """Set the memory policy of ONE conversation from here on (recorded, pinned:
        the options of the processes that write to it no longer change it; another
        call does). Returns the policy in force."""
        check_cap(max_injected_blocks_in_history)
        check_depth(context_window_depth)
        self.state(key)  # an unknown conversation is an error, not a silent no-op
        self._app.execute(key, [SetMemoryPolicy(
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
            return live_now(self._app.store, state, state.policy()[0])
        return live_at(self.events(key, upto=at), DEFAULT_CAP, at)

    # ------------------------------------------------------------------- reading

    def state(self, key: str) -> Conversation:
        """The conversation's current decision state (a copy)."""
        return self._app.reads.state(key)

    def info(self, key: str) -> ConversationInfo:
        return conversation_info(self.state(key))

    def summary(self, key: str, *, paused_after: float = PAUSED_AFTER) -> ConversationSummary:
        """The conversation at a glance, without building a context: status (active,
        paused after `paused_after` seconds without activity, archived), dates,
        message count, tokens, cost, agents and the latest summary's text."""
        return summarize(self._app.store, self._app.analytics, self.state(key), paused_after)

    def exists(self, key: str) -> bool:
        return self._app.reads.exists(key)

    def events(self, key: str, *, after: int = 0, upto: int | None = None,
               desc: bool = False, limit: int | None = None) -> list[Recorded]:
        """Recorded events of a conversation, by position; one indexed query."""
        return self._app.reads.events(key, after=after, upto=upto, desc=desc, limit=limit)

    def messages(self, key: str, *, last: int | None = None) -> list[MessageAppended]:
        """The messages of the current epoch, in order: after a `clear`, the ones
        before it are not handed back (a restarted host must not reload what its user
        cleared; the log keeps them: `transcript`, `timeline`, `view`). Records an SDK
        store keeps are no messages (convlog.domain.records). `last=N` returns the
        newest N: about N rows are read, walking the conversation's index backwards,
        never replaying the conversation."""
        return self._app.reads.messages(key, last=last)

    def live_messages(self, key: str, *, last: int | None = None) -> list[MessageAppended]:
        """The messages of the current epoch that were not retracted, oldest first
        (`last=N`: the newest N, reading about N rows). What an SDK session returns."""
        return self._app.reads.live_messages(key, last=last)

    def live_items(self, key: str, *, last: int | None = None, raw_only: bool = False,
                   summarized: Summarized | None = None, kept: Kept | None = None
                   ) -> list[MessageAppended | RawItem | RawEntry]:
        """`live_messages` for SDK session stores: a message that keeps an SDK item
        comes back as a `RawItem` (id + item + what pairing reads), or with
        `raw_only` as a `RawEntry` (id + item), without decoding the rest (issue 30).
        `summarized(event)`: the store's own item for a compaction's summary, which
        then replaces the compacted range (with the range's items `kept` keeps)."""
        return self._app.reads.live_items(key, last=last, raw_only=raw_only,
                                          summarized=summarized, kept=kept)

    def live_json(self, key: str, *, summarized: Summarized | None = None,
                  kept: Kept | None = None) -> list[MessageAppended | RawJson]:
        """`live_items` with each SDK item's JSON left undecoded (`RawJson`), for a
        store that decodes the items one at a time (Google ADK's `get_session`,
        issue 30); `summarized`, `kept` as for `live_items`."""
        return self._app.reads.live_json(key, summarized=summarized, kept=kept)

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
        return self._app.builder(model).build(
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
        run = ResumeRun(self._app.builder(model), check_key(key),
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
        return build_resumption(self._app.builder(model), self._app.analytics, user=user,
                                workspace=workspace, conversations=conversations,
                                budget=budget, fmt=format)

    def retention_policy(self, key: str) -> RetentionInForce:
        """The retention policy in force for conversation `key`: its own, else the
        store's (docs/settings.md#retention), and whose it is."""
        return retention.in_force(self._app.writer, key)

    def set_retention_policy(self, key: str, policy: RetentionPolicy) -> bool:
        """Conversation `key`'s own retention policy from now on (it must exist;
        pinned: a process's options never change it). Returns whether anything was
        recorded (nothing when the same policy is in force)."""
        return retention.set_policy(self._app.writer, policy, key)

    def store_retention_policy(self) -> RetentionInForce:
        """The store's retention policy: what holds for every conversation without
        one of its own (source ``none``: keep everything)."""
        return retention.in_force(self._app.writer)

    def set_store_retention_policy(self, policy: RetentionPolicy, *,
                                   pinned: bool = True) -> bool:
        """The store's retention policy from now on. `pinned=False` is a process's
        options (`--erase-after-days`..., $CONVLOG_ERASE_AFTER_DAYS...): it leaves a
        policy set on purpose alone. Returns whether anything was recorded."""
        return retention.set_policy(self._app.writer, policy, pinned=pinned)

    def enforce_retention(self, *, dry_run: bool = False) -> RetentionRun:
        """Archive and erase what the retention policy in force asks now, each action
        recorded as an event; `dry_run` lists exactly that and writes nothing. After
        an erasure the views' file is deleted (it held the erased titles): it is
        rebuilt from the log on next use."""
        done = retention.run(self._app.writer, dry_run=dry_run)
        if done.rows_erased:
            self._app.catalog.discard()
        return done

    def expire(self, *, idle_days: float, dry_run: bool = False) -> list[CatalogRow]:
        """Archive active conversations idle for `idle_days` or more (nothing is
        deleted); returns them. `dry_run` only lists them."""
        if not idle_days > 0:
            raise InvalidInput("must be a positive number of days", field="idle_days")
        cutoff = self._app.clock.now() - timedelta(days=idle_days)
        idle = self._app.analytics.sessions(idle_before=cutoff)
        if not dry_run:
            for row in idle:
                self.archive(row.key, reason=f"idle for {idle_days:g} days")
        return idle
