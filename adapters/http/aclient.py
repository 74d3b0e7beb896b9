"""`convlog.AsyncClient`: `convlog.Client` for asyncio hosts, every call a coroutine.

    async with convlog.AsyncClient("http://127.0.0.1:8765", token="...") as client:
        conv = await client.conversation("discord:thread:42", user="u1")
        await conv.append_turn([convlog.user("hi"), convlog.assistant("hello")])
        async for item in conv.follow():
            ...

The requests and the decoding of answers are the blocking client's
(`convlog.http.wire`); only the sending is httpx's async client.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Iterable, Sequence
from datetime import date, datetime
from typing import Any, TypeVar

import convlog
from convlog.domain.events import MessageAppended
from convlog.domain.renamed import old_method
from convlog.domain.retention import RetentionPolicy
from convlog.http import wire
from convlog.http.schema import EventOut, Injection, StateChange, TimelineOut
from convlog.projections.context import Budget
from convlog.projections.transcript import TranscriptLine
from convlog.services.context import AsyncSummarizer, Summarizer
from convlog.services.retention import RetentionInForce, RetentionRun
from convlog.services.summary import PAUSED_AFTER, ConversationSummary

try:
    import httpx
except ImportError as exc:
    raise ImportError("convlog.AsyncClient needs the http extra: pip install "
                      "'convlog[http]'") from exc

T = TypeVar("T")


class AsyncClient:
    def __init__(self, base_url: str = "http://127.0.0.1:8765", *, token: str | None = None,
                 timeout: float = 30.0, transport: httpx.AsyncBaseTransport | None = None):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.AsyncClient(base_url=base_url.rstrip("/"), headers=headers,
                                      timeout=timeout, transport=transport)

    async def close(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def send(self, req: wire.Req[T]) -> T:
        response = await self.http.request(req.method, req.path, content=req.content,
                                           params=req.params, headers=req.all_headers)
        return req.answer(response.status_code, response.reason_phrase, response.content)

    async def conversation(self, key: str, *, user: str | None = None,
                           agent: str | None = None, channel: str | None = None,
                           title: str | None = None, workspace: str | None = None,
                           metadata: dict[str, Any] | None = None) -> AsyncRemoteConversation:
        await self.send(wire.start(key, {"user": user, "agent": agent, "channel": channel,
                                         "title": title, "workspace": workspace,
                                         "metadata": metadata or {}}))
        return AsyncRemoteConversation(self, key)

    async def get(self, key: str) -> AsyncRemoteConversation:
        conversation = AsyncRemoteConversation(self, key)
        await conversation.info()
        return conversation

    async def conversations(self, *, user: str | None = None, agent: str | None = None,
                            include_archived: bool = False, limit: int | None = None
                            ) -> list[convlog.CatalogRow]:
        return await self.send(wire.sessions(user, agent, include_archived, limit))

    sessions = old_method(conversations, "sessions", "AsyncClient")

    async def resumption_context(self, *, user: str | None = None,
                           workspace: str | None = None, conversations: int = 3,
                           budget: Budget | None = None, format: str = "xml",
                           model: str | None = None) -> convlog.ResumptionContext:
        """One budgeted context across a user's recent conversations (a user token:
        its own), as `ConversationLog.resumption_context`."""
        return await self.send(wire.user_context(user, workspace, conversations, budget, format,
                                          model))

    async def costs(self, *, by: str = "model", since: date | datetime | None = None
                    ) -> list[convlog.CostRow]:
        return await self.send(wire.costs(by, since))

    async def telemetry(self, *, by: str = "strategy", since: date | datetime | None = None
                        ) -> list[convlog.TelemetryRow]:
        return await self.send(wire.telemetry(by, since))

    async def store_retention_policy(self) -> RetentionInForce:
        """The store's retention policy (admin token)."""
        return await self.send(wire.store_retention())

    async def set_store_retention_policy(self, policy: RetentionPolicy) -> bool:
        """Set the store's retention policy on purpose (admin token); whether the
        policy in force is now `policy`."""
        found = await self.send(wire.set_store_retention(policy))
        return found.policy == policy

    async def enforce_retention(self, *, dry_run: bool = False) -> RetentionRun:
        """Carry out the retention policy now (admin token); `dry_run` lists it."""
        return await self.send(wire.run_retention(dry_run))

    async def sql(self, query: str, params: Sequence[object] = ()
                  ) -> tuple[list[str], list[Any]]:
        out = await self.send(wire.sql(query, params))
        return out.columns, [tuple(r) for r in out.rows]


class AsyncRemoteConversation:
    def __init__(self, client: AsyncClient, key: str):
        self.client = client
        self.key = key
        self.path = wire.conversation_path(key)

    def __repr__(self) -> str:
        return f"<AsyncRemoteConversation {self.key!r}>"

    async def append_turn(self, messages: Iterable[convlog.Message], *,
                          idempotency_key: str | None = None) -> convlog.AppendResult:
        return await self.client.send(wire.append_turn(self.path, messages, idempotency_key))

    async def append(self, message: convlog.Message) -> convlog.AppendResult:
        return await self.append_turn([message])

    async def record(self, lines: Sequence[dict[str, Any]]) -> convlog.AppendResult:
        return await self.client.send(wire.record(self.path, lines))

    async def bind_native_session(self, native_session_id: str, agent: str | None = None
                                  ) -> convlog.AppendResult:
        return await self.client.send(wire.bind(self.path, native_session_id, agent))

    async def archive(self, reason: str | None = None) -> StateChange:
        return await self.client.send(wire.change(self.path, "archive", reason))

    async def reactivate(self) -> StateChange:
        return await self.client.send(wire.change(self.path, "reactivate"))

    async def clear(self, reason: str | None = None) -> StateChange:
        return await self.client.send(wire.change(self.path, "clear", reason))

    async def info(self) -> convlog.ConversationInfo:
        return await self.client.send(wire.info(self.path))

    async def summary(self, *, paused_after: float = PAUSED_AFTER) -> ConversationSummary:
        """The conversation at a glance (status, dates, counts, tokens, cost, agents,
        latest summary), as `ConversationHandle.summary`."""
        return await self.client.send(wire.summary(self.path, paused_after))

    async def messages(self, *, last: int | None = None) -> list[MessageAppended]:
        return await self.client.send(wire.messages(self.path, last))

    async def transcript(self) -> list[TranscriptLine]:
        return await self.client.send(wire.transcript(self.path))

    async def timeline(self, *, until: int | datetime | str | None = None
                       ) -> list[TimelineOut]:
        return await self.client.send(wire.timeline(self.path, until))

    async def context(self, *, budget: Budget | None = None, format: str = "xml",
                      exclude: Iterable[str] = (), model: str | None = None
                      ) -> convlog.Context:
        return await self.client.send(wire.context(self.path, budget, format, exclude, model))

    async def rewind(self, to: str, *, reason: str | None = None) -> convlog.Rewound | None:
        """Back to message `to`, for the model (`ConversationHandle.rewind`)."""
        return (await self.client.send(wire.rewind(self.path, to, reason))).rewound

    async def fork(self, *, at: str, key: str, user: str | None = None,
                   agent: str | None = None, channel: str | None = None,
                   title: str | None = None, metadata: dict[str, Any] | None = None
                   ) -> convlog.Forked:
        """A new conversation `key` continuing this one's history after message `at`,
        by reference (`ConversationHandle.fork`)."""
        return (await self.client.send(wire.fork(self.path, at, key, user, agent, channel,
                                                title, metadata))).forked

    async def compaction_plan(self, *, keep_last: int = 10) -> convlog.CompactionPlan:
        """What `compact` would replace now (`ConversationLog.compaction_plan`)."""
        return await self.client.send(wire.compaction_plan(self.path, keep_last))

    async def compact(self, summarizer: Summarizer | AsyncSummarizer | str, *,
                      keep_last: int = 10, reason: str | None = None,
                      summarizer_name: str | None = None) -> convlog.Compaction | None:
        """`ConversationHandle.compact` over HTTP: the plan is read, `summarizer`
        (previous summary, messages) -> str runs here (awaited when it returns an
        awaitable), or is the summary itself; the summary is recorded if the range
        has not moved since (else `CompactedMeanwhile`; nothing recorded)."""
        plan = await self.compaction_plan(keep_last=keep_last)
        if plan.through_message_id is None:
            return None
        text = summarizer if isinstance(summarizer, str) else summarizer(
            plan.previous_summary, plan.messages)
        if inspect.isawaitable(text):
            text = await text
        if summarizer_name is None and not isinstance(summarizer, str):
            summarizer_name = getattr(summarizer, "__qualname__", None)
        done = await self.client.send(wire.compact(
            self.path, str(text), keep_last, plan.through_message_id, reason, summarizer_name))
        return done.compaction

    async def inject_memory(self, text: str, memory_ids: Sequence[str] = (), *,
                      block_id: str | None = None, native_session_id: str | None = None
                      ) -> convlog.MemoryBlock:
        """A memory block before a turn, as the agent must get it (`MemoryCooling`
        when a memory id is cooling down: nothing recorded)."""
        return await self.client.send(wire.inject_memory(self.path, text, memory_ids, block_id,
                                                  native_session_id))

    async def memory_cooldown(self) -> dict[str, int]:
        """{memory id: turns left} for the ids that must not be injected now."""
        return (await self.client.send(wire.memory(self.path))).cooldown

    async def set_memory_policy(self, *, max_injected_blocks_in_history: int,
                                context_window_depth: int) -> tuple[int, int]:
        state = await self.client.send(wire.memory_policy(
            self.path, max_injected_blocks_in_history, context_window_depth))
        return state.max_injected_blocks_in_history, state.context_window_depth

    async def retention_policy(self) -> RetentionInForce:
        """The retention policy in force for this conversation, and whose it is."""
        return await self.client.send(wire.retention(self.path))

    async def set_retention_policy(self, policy: RetentionPolicy) -> bool:
        """This conversation's own retention policy from now on; whether it is the
        policy in force now."""
        found = await self.client.send(wire.set_retention(self.path, policy))
        return found.policy == policy

    async def live_memory(self, *, at: int | None = None) -> list[convlog.MemoryBlock]:
        """The live memory blocks, oldest first (now, or at log version `at`)."""
        return (await self.client.send(wire.memory(self.path, at))).live

    async def resume_attempt(self, strategy: str, native_session_id: str | None = None
                             ) -> convlog.AppendResult:
        return await self.client.send(wire.resume_attempt(self.path, strategy,
                                                          native_session_id))

    async def resume_outcome(self, strategy: str, *, ok: bool, reason: str | None = None,
                             error: str | None = None, native_session_id: str | None = None,
                             latency_ms: float | None = None, fresh: bool | None = None
                             ) -> convlog.AppendResult:
        return await self.client.send(wire.resume_outcome(self.path, {
            "strategy": strategy, "ok": ok, "reason": reason, "error": error,
            "native_session_id": native_session_id, "latency_ms": latency_ms,
            "fresh": fresh}))

    async def injection(self, *, native_session_id: str | None = None,
                        budget: Budget | None = None, format: str = "xml",
                        exclude: Iterable[str] = (), model: str | None = None) -> Injection:
        return await self.client.send(wire.injection(self.path, native_session_id, budget,
                                                     format, exclude, model))

    async def follow(self, *, after: int = 0, timeout: float | None = None
                     ) -> AsyncGenerator[EventOut, None]:
        async with self.client.http.stream("GET", self.path + "/stream",
                                           params={"after": after},
                                           timeout=timeout) as response:
            if response.status_code >= 400:
                raise wire.problem_error(response.status_code, response.reason_phrase,
                                         await response.aread())
            events = wire.EventStream()
            async for line in response.aiter_lines():
                event = events.feed(line)
                if event is not None:
                    yield event
