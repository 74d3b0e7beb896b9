"""`convlog.Client`: a typed Python client of `convlog serve`, mirroring the handle API.

    client = convlog.Client("http://127.0.0.1:8765", token="...")
    conv = client.conversation("discord:thread:42", user="u1", agent="copilot")
    conv.append_turn([convlog.user("hi"), convlog.assistant("hello", model="gpt-4o")])
    text = conv.context(budget=convlog.Budget(tokens=10_000)).text

Answers are decoded with msgspec into the library's own types (AppendResult,
ConversationInfo, Context, MessageAppended, CatalogRow...), and errors come back as the
library's typed errors (see `convlog.http.wire`). Built on httpx (the `http` extra);
`convlog.AsyncClient` is the same API as coroutines.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Sequence
from datetime import date, datetime
from typing import Any, TypeVar

import convlog
from convlog.domain.events import MessageAppended
from convlog.domain.renamed import old_method
from convlog.domain.retention import RetentionPolicy
from convlog.http import wire
from convlog.http.schema import EventOut, Injection, StateChange, TimelineOut
from convlog.http.wire import RemoteError
from convlog.projections.context import Budget
from convlog.projections.transcript import TranscriptLine
from convlog.services.context import Summarizer
from convlog.services.retention import RetentionInForce, RetentionRun
from convlog.services.summary import PAUSED_AFTER, ConversationSummary

try:
    import httpx
except ImportError as exc:
    raise ImportError("convlog.Client needs the http extra: pip install 'convlog[http]'"
                      ) from exc

T = TypeVar("T")
__all__ = ["Client", "RemoteConversation", "RemoteError"]


class Client:
    """A connection (pool) to one `convlog serve`. Thread-safe, like httpx.Client."""

    def __init__(self, base_url: str = "http://127.0.0.1:8765", *, token: str | None = None,
                 timeout: float = 30.0, transport: httpx.BaseTransport | None = None):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=base_url.rstrip("/"), headers=headers,
                                 timeout=timeout, transport=transport)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, req: wire.Req[T]) -> T:
        response = self.http.request(req.method, req.path, content=req.content,
                                     params=req.params, headers=req.all_headers)
        return req.answer(response.status_code, response.reason_phrase, response.content)

    def conversation(self, key: str, *, user: str | None = None, agent: str | None = None,
                     channel: str | None = None, title: str | None = None,
                     workspace: str | None = None, metadata: dict[str, Any] | None = None
                     ) -> RemoteConversation:
        """The conversation under `key`, started if it is new (as `log.conversation`)."""
        self.send(wire.start(key, {"user": user, "agent": agent, "channel": channel,
                                   "title": title, "workspace": workspace,
                                   "metadata": metadata or {}}))
        return RemoteConversation(self, key)

    def get(self, key: str) -> RemoteConversation:
        """The existing conversation under `key`; UnknownConversation if there is none."""
        conversation = RemoteConversation(self, key)
        conversation.info()
        return conversation

    def conversations(self, *, user: str | None = None, agent: str | None = None,
                      include_archived: bool = False, limit: int | None = None
                      ) -> list[convlog.CatalogRow]:
        return self.send(wire.sessions(user, agent, include_archived, limit))

    sessions = old_method(conversations, "sessions", "Client")

    def resumption_context(self, *, user: str | None = None,
                           workspace: str | None = None, conversations: int = 3,
                           budget: Budget | None = None, format: str = "xml",
                           model: str | None = None) -> convlog.ResumptionContext:
        """One budgeted context across a user's recent conversations (a user token:
        its own), as `ConversationLog.resumption_context`."""
        return self.send(wire.user_context(user, workspace, conversations, budget, format,
                                          model))

    def costs(self, *, by: str = "model", since: date | datetime | None = None
              ) -> list[convlog.CostRow]:
        return self.send(wire.costs(by, since))

    def telemetry(self, *, by: str = "strategy", since: date | datetime | None = None
                  ) -> list[convlog.TelemetryRow]:
        return self.send(wire.telemetry(by, since))

    def store_retention_policy(self) -> RetentionInForce:
        """The store's retention policy (admin token)."""
        return self.send(wire.store_retention())

    def set_store_retention_policy(self, policy: RetentionPolicy) -> bool:
        """Set the store's retention policy on purpose (admin token); whether the
        policy in force is now `policy`."""
        found = self.send(wire.set_store_retention(policy))
        return found.policy == policy

    def enforce_retention(self, *, dry_run: bool = False) -> RetentionRun:
        """Carry out the retention policy now (admin token); `dry_run` lists it."""
        return self.send(wire.run_retention(dry_run))

    def sql(self, query: str, params: Sequence[object] = ()) -> tuple[list[str], list[Any]]:
        """(column names, rows) of one SELECT over the views (admin token)."""
        out = self.send(wire.sql(query, params))
        return out.columns, [tuple(r) for r in out.rows]


class RemoteConversation:
    """One conversation of a server, addressed by its key: `ConversationHandle`'s API."""

    def __init__(self, client: Client, key: str):
        self.client = client
        self.key = key
        self.path = wire.conversation_path(key)

    def __repr__(self) -> str:
        return f"<RemoteConversation {self.key!r}>"

    def append_turn(self, messages: Iterable[convlog.Message], *,
                    idempotency_key: str | None = None) -> convlog.AppendResult:
        """One turn, atomically; known message ids are skipped, so a retry is safe."""
        return self.client.send(wire.append_turn(self.path, messages, idempotency_key))

    def append(self, message: convlog.Message) -> convlog.AppendResult:
        return self.append_turn([message])

    def record(self, lines: Sequence[dict[str, Any]]) -> convlog.AppendResult:
        """Lines of `convlog record` (dicts with a `type`), as one atomic batch."""
        return self.client.send(wire.record(self.path, lines))

    def bind_native_session(self, native_session_id: str, agent: str | None = None
                            ) -> convlog.AppendResult:
        return self.client.send(wire.bind(self.path, native_session_id, agent))

    def archive(self, reason: str | None = None) -> StateChange:
        return self.client.send(wire.change(self.path, "archive", reason))

    def reactivate(self) -> StateChange:
        return self.client.send(wire.change(self.path, "reactivate"))

    def clear(self, reason: str | None = None) -> StateChange:
        return self.client.send(wire.change(self.path, "clear", reason))

    def info(self) -> convlog.ConversationInfo:
        return self.client.send(wire.info(self.path))

    def summary(self, *, paused_after: float = PAUSED_AFTER) -> ConversationSummary:
        """The conversation at a glance (status, dates, counts, tokens, cost, agents,
        latest summary), as `ConversationHandle.summary`."""
        return self.client.send(wire.summary(self.path, paused_after))

    def messages(self, *, last: int | None = None) -> list[MessageAppended]:
        return self.client.send(wire.messages(self.path, last))

    def transcript(self) -> list[TranscriptLine]:
        return self.client.send(wire.transcript(self.path))

    def timeline(self, *, until: int | datetime | str | None = None) -> list[TimelineOut]:
        return self.client.send(wire.timeline(self.path, until))

    def context(self, *, budget: Budget | None = None, format: str = "xml",
                exclude: Iterable[str] = (), model: str | None = None) -> convlog.Context:
        return self.client.send(wire.context(self.path, budget, format, exclude, model))

    def rewind(self, to: str, *, reason: str | None = None) -> convlog.Rewound | None:
        """Back to message `to`, for the model (`ConversationHandle.rewind`)."""
        return (self.client.send(wire.rewind(self.path, to, reason))).rewound

    def fork(self, *, at: str, key: str, user: str | None = None,
             agent: str | None = None, channel: str | None = None,
             title: str | None = None, metadata: dict[str, Any] | None = None
             ) -> convlog.Forked:
        """A new conversation `key` continuing this one's history after message `at`,
        by reference (`ConversationHandle.fork`)."""
        return (self.client.send(wire.fork(self.path, at, key, user, agent, channel,
                                                title, metadata))).forked

    def compaction_plan(self, *, keep_last: int = 10) -> convlog.CompactionPlan:
        """What `compact` would replace now (`ConversationLog.compaction_plan`)."""
        return self.client.send(wire.compaction_plan(self.path, keep_last))

    def compact(self, summarizer: Summarizer | str, *,
                keep_last: int = 10, reason: str | None = None,
                summarizer_name: str | None = None) -> convlog.Compaction | None:
        """`ConversationHandle.compact` over HTTP: the plan is read, `summarizer`
        (previous summary, messages) -> str runs here
        (or is the summary itself), and the summary is recorded if the range has
        not moved since (else `CompactedMeanwhile`; nothing recorded)."""
        plan = self.compaction_plan(keep_last=keep_last)
        if plan.through_message_id is None:
            return None
        text = summarizer if isinstance(summarizer, str) else summarizer(
            plan.previous_summary, plan.messages)
        if summarizer_name is None and not isinstance(summarizer, str):
            summarizer_name = getattr(summarizer, "__qualname__", None)
        done = self.client.send(wire.compact(
            self.path, str(text), keep_last, plan.through_message_id, reason, summarizer_name))
        return done.compaction

    def inject_memory(self, text: str, memory_ids: Sequence[str] = (), *,
                      block_id: str | None = None, native_session_id: str | None = None
                      ) -> convlog.MemoryBlock:
        """A memory block before a turn, as the agent must get it (`MemoryCooling`
        when a memory id is cooling down: nothing recorded)."""
        return self.client.send(wire.inject_memory(self.path, text, memory_ids, block_id,
                                                  native_session_id))

    def memory_cooldown(self) -> dict[str, int]:
        """{memory id: turns left} for the ids that must not be injected now."""
        return (self.client.send(wire.memory(self.path))).cooldown

    def set_memory_policy(self, *, max_injected_blocks_in_history: int,
                          context_window_depth: int) -> tuple[int, int]:
        """This conversation's memory policy from here on (recorded, pinned); the
        policy in force, as `ConversationHandle.set_memory_policy`."""
        state = self.client.send(wire.memory_policy(
            self.path, max_injected_blocks_in_history, context_window_depth))
        return state.max_injected_blocks_in_history, state.context_window_depth

    def retention_policy(self) -> RetentionInForce:
        """The retention policy in force for this conversation, and whose it is."""
        return self.client.send(wire.retention(self.path))

    def set_retention_policy(self, policy: RetentionPolicy) -> bool:
        """This conversation's own retention policy from now on; whether it is the
        policy in force now."""
        found = self.client.send(wire.set_retention(self.path, policy))
        return found.policy == policy

    def live_memory(self, *, at: int | None = None) -> list[convlog.MemoryBlock]:
        """The live memory blocks, oldest first (now, or at log version `at`)."""
        return (self.client.send(wire.memory(self.path, at))).live

    def resume_attempt(self, strategy: str, native_session_id: str | None = None
                       ) -> convlog.AppendResult:
        return self.client.send(wire.resume_attempt(self.path, strategy, native_session_id))

    def resume_outcome(self, strategy: str, *, ok: bool, reason: str | None = None,
                       error: str | None = None, native_session_id: str | None = None,
                       latency_ms: float | None = None, fresh: bool | None = None
                       ) -> convlog.AppendResult:
        return self.client.send(wire.resume_outcome(self.path, {
            "strategy": strategy, "ok": ok, "reason": reason, "error": error,
            "native_session_id": native_session_id, "latency_ms": latency_ms,
            "fresh": fresh}))

    def injection(self, *, native_session_id: str | None = None,
                  budget: Budget | None = None, format: str = "xml",
                  exclude: Iterable[str] = (), model: str | None = None) -> Injection:
        """The history for a fresh agent session, recorded; None context when this
        native session already got it or there is nothing to remember."""
        return self.client.send(wire.injection(self.path, native_session_id, budget, format,
                                               exclude, model))

    def follow(self, *, after: int = 0, timeout: float | None = None
               ) -> Generator[EventOut, None, None]:
        """The conversation's events after position `after`, then new ones as they
        are recorded (server-sent events); stop iterating to close the stream."""
        with self.client.http.stream("GET", self.path + "/stream", params={"after": after},
                                     timeout=timeout) as response:
            if response.status_code >= 400:
                raise wire.problem_error(response.status_code, response.reason_phrase,
                                         response.read())
            events = wire.EventStream()
            for line in response.iter_lines():
                event = events.feed(line)
                if event is not None:
                    yield event
