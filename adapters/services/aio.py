"""The asyncio API: the same operations as coroutines, for asyncio agent hosts.

Storage drivers here are blocking (sqlite3, and psycopg's sync pool later), so each
call runs in a worker thread with `asyncio.to_thread`: the event loop keeps serving
other conversations while a write waits for the disk or for another process's lock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any

from convlog.accounting.prices import ModelPrice
from convlog.domain.conversation import Conversation, check_key
from convlog.domain.events import MessageAppended, Recorded
from convlog.domain.messages import Message
from convlog.domain.renamed import old_method
from convlog.domain.retention import RetentionPolicy
from convlog.projections.context import Budget
from convlog.projections.memory import DEFAULT_CAP, DEFAULT_DEPTH
from convlog.projections.replay_views import ConversationView
from convlog.projections.timeline import TimelineRow
from convlog.projections.transcript import TranscriptLine
from convlog.projections.view_diff import ViewDiff
from convlog.services.compaction import Compaction, CompactionPlan, compact_async
from convlog.services.context import AsyncSummarizer, Context, Summarizer
from convlog.services.fork import Forked
from convlog.services.import_run import ImportSummary, ProgressCallback
from convlog.services.importing import Importer
from convlog.services.items import Kept, RawEntry, RawItem, RawJson, Summarized
from convlog.services.log import ConversationLog, application
from convlog.services.memory import MemoryBlock
from convlog.services.options import LogOptions
from convlog.services.privacy import ForgetResult
from convlog.services.redacting import Redactor
from convlog.services.results import AppendResult, ConversationInfo
from convlog.services.resume.resumption import ResumptionContext
from convlog.services.resume.run import ResumeOutcome, ResumeRun, Tier
from convlog.services.resume.tiers import resume_async
from convlog.services.retention import RetentionInForce, RetentionRun
from convlog.services.rewind import Rewound
from convlog.services.summary import PAUSED_AFTER, ConversationSummary
from convlog.views.analytics import CatalogRow, CostRow
from convlog.views.telemetry import TelemetryRow


class AsyncConversationLog:
    """`await convlog.open_async(url)`; every method mirrors `ConversationLog`."""

    def __init__(self, log: ConversationLog):
        self.sync = log

    @classmethod
    async def open(
        cls, url: str | None = None, *, create: bool = True,
        prices: dict[str, ModelPrice] | None = None, views: str | Path | None = None,
        preload_tokenizer: bool = False,
        max_injected_blocks_in_history: int = DEFAULT_CAP,
        context_window_depth: int = DEFAULT_DEPTH, redact: Redactor | None = None,
    ) -> AsyncConversationLog:
        """`convlog.open` off the event loop (the same options: `LogOptions`)."""
        return await cls.with_options(url, LogOptions(
            create=create, prices=prices, views=views, preload_tokenizer=preload_tokenizer,
            max_injected_blocks_in_history=max_injected_blocks_in_history,
            context_window_depth=context_window_depth, redact=redact))

    @classmethod
    async def with_options(cls, url: str | None, options: LogOptions
                           ) -> AsyncConversationLog:
        """The log at `url` opened with `options`, off the event loop."""
        return cls(await asyncio.to_thread(ConversationLog.with_options, url, options))

    async def close(self) -> None:
        await asyncio.to_thread(self.sync.close)

    async def __aenter__(self) -> AsyncConversationLog:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def conversation(
        self, key: str, *, user: str | None = None, agent: str | None = None,
        channel: str | None = None, title: str | None = None, workspace: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> AsyncConversationHandle:
        await asyncio.to_thread(self.sync.conversation, key, user=user, agent=agent,
                                channel=channel, title=title, workspace=workspace,
                                metadata=metadata)
        return AsyncConversationHandle(self, key)

    async def get(self, key: str) -> AsyncConversationHandle:
        await asyncio.to_thread(self.sync.get, key)
        return AsyncConversationHandle(self, key)

    async def append_turn(self, key: str, messages: Iterable[Message]) -> AppendResult:
        return await asyncio.to_thread(self.sync.append_turn, key, list(messages))

    async def append(self, key: str, message: Message) -> AppendResult:
        return await asyncio.to_thread(self.sync.append, key, message)

    async def bind_native_session(self, key: str, native_session_id: str,
                                  agent: str | None = None) -> AppendResult:
        return await asyncio.to_thread(self.sync.bind_native_session, key,
                                       native_session_id, agent)

    async def archive(self, key: str, reason: str | None = None) -> AppendResult:
        return await asyncio.to_thread(self.sync.archive, key, reason)

    async def reactivate(self, key: str) -> AppendResult:
        return await asyncio.to_thread(self.sync.reactivate, key)

    async def clear(self, key: str, reason: str | None = None) -> AppendResult:
        return await asyncio.to_thread(self.sync.clear, key, reason)

    async def retract_last(self, key: str, reason: str | None = None
                           ) -> MessageAppended | None:
        return await asyncio.to_thread(self.sync.retract_last, key, reason)

    async def compact(self, key: str, summarizer: Summarizer | AsyncSummarizer | str, *,
                      keep_last: int = 10, reason: str | None = None,
                      summarizer_name: str | None = None, model: str | None = None,
                      through: str | None = None) -> Compaction | None:
        """`ConversationLog.compact`; `summarizer` may be a coroutine function."""
        return await compact_async(application(self.sync).builder(model), check_key(key),
                                   summarizer, keep_last, reason, summarizer_name, through)

    async def rewind(self, key: str, to: str, *, reason: str | None = None
                     ) -> Rewound | None:
        return await asyncio.to_thread(self.sync.rewind, key, to, reason=reason)

    async def fork(self, key: str, *, at: str, new_key: str, user: str | None = None,
                   agent: str | None = None, channel: str | None = None,
                   title: str | None = None, metadata: dict[str, Any] | None = None
                   ) -> Forked:
        return await asyncio.to_thread(self.sync.fork, key, at=at, new_key=new_key,
                                       user=user, agent=agent, channel=channel,
                                       title=title, metadata=metadata)

    async def compaction_plan(self, key: str, *, keep_last: int = 10) -> CompactionPlan:
        return await asyncio.to_thread(self.sync.compaction_plan, key, keep_last=keep_last)

    async def live_messages(self, key: str, *, last: int | None = None
                            ) -> list[MessageAppended]:
        return await asyncio.to_thread(self.sync.live_messages, key, last=last)

    async def live_items(self, key: str, *, last: int | None = None, raw_only: bool = False,
                         summarized: Summarized | None = None, kept: Kept | None = None
                         ) -> list[MessageAppended | RawItem | RawEntry]:
        return await asyncio.to_thread(self.sync.live_items, key, last=last,
                                       raw_only=raw_only, summarized=summarized, kept=kept)

    async def live_json(self, key: str, *, summarized: Summarized | None = None,
                        kept: Kept | None = None) -> list[MessageAppended | RawJson]:
        return await asyncio.to_thread(self.sync.live_json, key, summarized=summarized,
                                       kept=kept)

    async def state(self, key: str) -> Conversation:
        return await asyncio.to_thread(self.sync.state, key)

    async def inject_memory(self, key: str, text: str, memory_ids: Sequence[str] = (), *,
                            block_id: str | None = None,
                            native_session_id: str | None = None) -> MemoryBlock:
        return await asyncio.to_thread(self.sync.inject_memory, key, text, memory_ids,
                                       block_id=block_id, native_session_id=native_session_id)

    async def memory_cooldown(self, key: str) -> dict[str, int]:
        return await asyncio.to_thread(self.sync.memory_cooldown, key)

    async def set_memory_policy(self, key: str, *, max_injected_blocks_in_history: int,
                                context_window_depth: int) -> tuple[int, int]:
        return await asyncio.to_thread(
            self.sync.set_memory_policy, key,
            max_injected_blocks_in_history=max_injected_blocks_in_history,
            context_window_depth=context_window_depth)

    async def live_memory(self, key: str, *, at: int | None = None) -> list[MemoryBlock]:
        return await asyncio.to_thread(self.sync.live_memory, key, at=at)

    async def retention_policy(self, key: str) -> RetentionInForce:
        return await asyncio.to_thread(self.sync.retention_policy, key)

    async def set_retention_policy(self, key: str, policy: RetentionPolicy) -> bool:
        return await asyncio.to_thread(self.sync.set_retention_policy, key, policy)

    async def store_retention_policy(self) -> RetentionInForce:
        return await asyncio.to_thread(self.sync.store_retention_policy)

    async def set_store_retention_policy(self, policy: RetentionPolicy, *,
                                         pinned: bool = True) -> bool:
        return await asyncio.to_thread(self.sync.set_store_retention_policy, policy,
                                       pinned=pinned)

    async def enforce_retention(self, *, dry_run: bool = False) -> RetentionRun:
        return await asyncio.to_thread(self.sync.enforce_retention, dry_run=dry_run)

    async def info(self, key: str) -> ConversationInfo:
        return await asyncio.to_thread(self.sync.info, key)

    async def summary(self, key: str, *, paused_after: float = PAUSED_AFTER
                      ) -> ConversationSummary:
        return await asyncio.to_thread(self.sync.summary, key, paused_after=paused_after)

    async def exists(self, key: str) -> bool:
        return await asyncio.to_thread(self.sync.exists, key)

    async def events(self, key: str, *, after: int = 0, upto: int | None = None,
                     desc: bool = False, limit: int | None = None) -> list[Recorded]:
        return await asyncio.to_thread(self.sync.events, key, after=after, upto=upto,
                                       desc=desc, limit=limit)

    async def messages(self, key: str, *, last: int | None = None) -> list[MessageAppended]:
        return await asyncio.to_thread(self.sync.messages, key, last=last)

    async def transcript(self, key: str) -> list[TranscriptLine]:
        return await asyncio.to_thread(self.sync.transcript, key)

    async def timeline(self, key: str, *, until: int | datetime | str | None = None
                       ) -> list[TimelineRow]:
        return await asyncio.to_thread(self.sync.timeline, key, until=until)

    async def view(self, key: str, view: str = "user", *,
                   at: int | datetime | str | None = None) -> ConversationView:
        return await asyncio.to_thread(self.sync.view, key, view, at=at)

    async def diff(self, key: str, *, at: int | datetime | str | None = None) -> ViewDiff:
        return await asyncio.to_thread(self.sync.diff, key, at=at)

    async def conversations(self, *, user: str | None = None, agent: str | None = None,
                            include_archived: bool = False, limit: int | None = None
                            ) -> list[CatalogRow]:
        return await asyncio.to_thread(self.sync.conversations, user=user, agent=agent,
                                       include_archived=include_archived, limit=limit)

    sessions = old_method(conversations, "sessions", "AsyncConversationLog")

    async def costs(self, *, by: str = "model", since: date | datetime | None = None
                    ) -> list[CostRow]:
        return await asyncio.to_thread(self.sync.costs, by=by, since=since)

    async def telemetry(self, *, by: str = "strategy", since: date | datetime | None = None
                        ) -> list[TelemetryRow]:
        return await asyncio.to_thread(self.sync.telemetry, by=by, since=since)

    async def sql(self, query: str, params: Sequence[object] = ()
                  ) -> tuple[list[str], list[Any]]:
        return await asyncio.to_thread(self.sync.sql, query, params)

    async def resumption_context(
        self, *, user: str | None = None, workspace: str | None = None,
        conversations: int = 3, budget: Budget | None = None, format: str = "xml",
        model: str | None = None,
    ) -> ResumptionContext:
        return await asyncio.to_thread(
            self.sync.resumption_context, user=user, workspace=workspace,
            conversations=conversations, budget=budget, format=format, model=model)

    async def can_resume(self, key: str) -> bool:
        return await asyncio.to_thread(self.sync.can_resume, key)

    async def forget(self, *, user: str, requested_by: str | None = None) -> ForgetResult:
        return await asyncio.to_thread(self.sync.forget, user=user, requested_by=requested_by)

    async def export_parquet(self, directory: str | Path) -> list[Path]:
        return await asyncio.to_thread(self.sync.export_parquet, directory)

    async def import_(self, format: str | Importer, paths: Sequence[str | Path], *,
                      keep_going: bool = False, progress: ProgressCallback | None = None,
                      max_line_bytes: int | None = None) -> ImportSummary:
        return await asyncio.to_thread(self.sync.import_, format, paths,
                                       keep_going=keep_going, progress=progress,
                                       max_line_bytes=max_line_bytes)

    async def known_message_ids(self, key: str, ids: Sequence[str]) -> set[str]:
        return await asyncio.to_thread(self.sync.known_message_ids, key, ids)

    async def record_injection(self, key: str, context: Context,
                               native_session_id: str | None = None) -> bool:
        return await asyncio.to_thread(self.sync.record_injection, key, context,
                                       native_session_id)

    async def enable_encryption(self, master_key: bytes,
                                progress: Callable[[str, int], None] | None = None) -> int:
        return await asyncio.to_thread(self.sync.enable_encryption, master_key, progress)

    async def expire(self, *, idle_days: float, dry_run: bool = False) -> list[CatalogRow]:
        return await asyncio.to_thread(self.sync.expire, idle_days=idle_days, dry_run=dry_run)

    async def context(
        self, key: str, *, budget: Budget | None = None, format: str = "xml",
        exclude: Iterable[str] = (), summarizer: Summarizer | AsyncSummarizer | None = None,
        summarizer_name: str | None = None, model: str | None = None,
    ) -> Context:
        """`ConversationLog.context`; `summarizer` may be a coroutine function."""
        return await application(self.sync).builder(model).build_async(
            key, budget or Budget(), format, frozenset(exclude), summarizer, summarizer_name)

    async def resume(
        self, key: str, tiers: Sequence[Tier], *, budget: Budget | None = None,
        format: str = "xml", exclude: Iterable[str] = (),
        summarizer: Summarizer | AsyncSummarizer | None = None,
        summarizer_name: str | None = None, model: str | None = None,
    ) -> ResumeOutcome:
        """`ConversationLog.resume`; tiers may be coroutine functions (awaited with
        their timeout) or plain callables (run in a worker thread)."""
        builder = application(self.sync).builder(model)
        run = await asyncio.to_thread(ResumeRun, builder, check_key(key), budget or Budget(),
                                      format, frozenset(exclude))
        return await resume_async(run, tiers, summarizer, summarizer_name)


class AsyncConversationHandle:
    def __init__(self, log: AsyncConversationLog, key: str):
        self.log = log
        self.key = key

    def __repr__(self) -> str:
        return f"<AsyncConversation {self.key!r}>"

    async def append_turn(self, messages: Iterable[Message]) -> AppendResult:
        return await self.log.append_turn(self.key, list(messages))

    async def append(self, message: Message) -> AppendResult:
        return await self.log.append(self.key, message)

    async def bind_native_session(self, native_session_id: str, agent: str | None = None
                                  ) -> AppendResult:
        return await self.log.bind_native_session(self.key, native_session_id, agent)

    async def archive(self, reason: str | None = None) -> AppendResult:
        return await self.log.archive(self.key, reason)

    async def reactivate(self) -> AppendResult:
        return await self.log.reactivate(self.key)

    async def clear(self, reason: str | None = None) -> AppendResult:
        return await self.log.clear(self.key, reason)

    async def retract_last(self, reason: str | None = None) -> MessageAppended | None:
        return await self.log.retract_last(self.key, reason)

    async def compact(self, summarizer: Summarizer | AsyncSummarizer | str, *,
                      keep_last: int = 10, reason: str | None = None,
                      summarizer_name: str | None = None, model: str | None = None,
                      through: str | None = None) -> Compaction | None:
        return await self.log.compact(self.key, summarizer, keep_last=keep_last,
                                      reason=reason, summarizer_name=summarizer_name,
                                      model=model, through=through)

    async def rewind(self, to: str, *, reason: str | None = None) -> Rewound | None:
        return await self.log.rewind(self.key, to, reason=reason)

    async def fork(self, *, at: str, key: str, user: str | None = None,
                   agent: str | None = None, channel: str | None = None,
                   title: str | None = None, metadata: dict[str, Any] | None = None
                   ) -> Forked:
        """See `ConversationHandle.fork`."""
        return await self.log.fork(self.key, at=at, new_key=key, user=user, agent=agent,
                                   channel=channel, title=title, metadata=metadata)

    async def compaction_plan(self, *, keep_last: int = 10) -> CompactionPlan:
        return await self.log.compaction_plan(self.key, keep_last=keep_last)

    async def live_messages(self, *, last: int | None = None) -> list[MessageAppended]:
        return await self.log.live_messages(self.key, last=last)

    async def state(self) -> Conversation:
        return await self.log.state(self.key)

    async def inject_memory(self, text: str, memory_ids: Sequence[str] = (), *,
                            block_id: str | None = None,
                            native_session_id: str | None = None) -> MemoryBlock:
        return await self.log.inject_memory(self.key, text, memory_ids, block_id=block_id,
                                            native_session_id=native_session_id)

    async def memory_cooldown(self) -> dict[str, int]:
        return await self.log.memory_cooldown(self.key)

    async def set_memory_policy(self, *, max_injected_blocks_in_history: int,
                                context_window_depth: int) -> tuple[int, int]:
        return await self.log.set_memory_policy(
            self.key, max_injected_blocks_in_history=max_injected_blocks_in_history,
            context_window_depth=context_window_depth)

    async def live_memory(self, *, at: int | None = None) -> list[MemoryBlock]:
        return await self.log.live_memory(self.key, at=at)

    async def set_retention_policy(self, policy: RetentionPolicy) -> bool:
        return await self.log.set_retention_policy(self.key, policy)

    async def retention_policy(self) -> RetentionInForce:
        return await self.log.retention_policy(self.key)

    async def info(self) -> ConversationInfo:
        return await self.log.info(self.key)

    async def summary(self, *, paused_after: float = PAUSED_AFTER) -> ConversationSummary:
        return await self.log.summary(self.key, paused_after=paused_after)

    async def events(self, *, after: int = 0, upto: int | None = None, desc: bool = False,
                     limit: int | None = None) -> list[Recorded]:
        return await self.log.events(self.key, after=after, upto=upto, desc=desc,
                                     limit=limit)

    async def messages(self, *, last: int | None = None) -> list[MessageAppended]:
        return await self.log.messages(self.key, last=last)

    async def transcript(self) -> list[TranscriptLine]:
        return await self.log.transcript(self.key)

    async def timeline(self, *, until: int | datetime | str | None = None
                       ) -> list[TimelineRow]:
        return await self.log.timeline(self.key, until=until)

    async def view(self, view: str = "user", *, at: int | datetime | str | None = None
                   ) -> ConversationView:
        return await self.log.view(self.key, view, at=at)

    async def diff(self, *, at: int | datetime | str | None = None) -> ViewDiff:
        return await self.log.diff(self.key, at=at)

    async def context(
        self, *, budget: Budget | None = None, format: str = "xml",
        exclude: Iterable[str] = (), summarizer: Summarizer | AsyncSummarizer | None = None,
        summarizer_name: str | None = None, model: str | None = None,
    ) -> Context:
        return await self.log.context(self.key, budget=budget, format=format,
                                      exclude=exclude, summarizer=summarizer,
                                      summarizer_name=summarizer_name, model=model)

    async def resume(
        self, tiers: Sequence[Tier], *, budget: Budget | None = None,
        format: str = "xml", exclude: Iterable[str] = (),
        summarizer: Summarizer | AsyncSummarizer | None = None,
        summarizer_name: str | None = None, model: str | None = None,
    ) -> ResumeOutcome:
        return await self.log.resume(self.key, tiers, budget=budget, format=format,
                                     exclude=exclude, summarizer=summarizer,
                                     summarizer_name=summarizer_name, model=model)
