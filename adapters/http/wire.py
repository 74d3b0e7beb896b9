"""What each client operation sends and how its answer decodes, once for both clients.

`convlog.Client` (blocking) and `convlog.AsyncClient` (asyncio) differ only in how
they send a request; every operation is described here as a `Req`: method, path,
body, query, headers and the type its answer decodes into. Problem answers become
the library's typed errors (InvalidInput with its `field`, UnknownConversation,
ConcurrencyError, StorageError), anything else a `RemoteError`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import msgspec

import convlog
from convlog.domain.errors import (
    ArchivedConversation,
    ConversationForgotten,
    ConvlogError,
    InvalidInput,
    UnknownConversation,
    UnknownUser,
)
from convlog.domain.events import MessageAppended
from convlog.domain.memory import MemoryCooling
from convlog.domain.retention import RetentionPolicy
from convlog.http.schema import (
    CompactOut,
    EventOut,
    ForkOut,
    Injection,
    MemoryState,
    Problem,
    RewindOut,
    SqlOut,
    StateChange,
    TimelineOut,
)
from convlog.projections.context import Budget
from convlog.projections.transcript import TranscriptLine
from convlog.services.retention import RetentionInForce, RetentionRun
from convlog.services.summary import ConversationSummary

T = TypeVar("T")


class RemoteError(ConvlogError):
    """A problem answer with no closer library error (401, 403, 413, ...)."""

    def __init__(self, problem: Problem):
        self.problem = problem
        self.status = problem.status
        self.field = problem.field
        where = f" (field {problem.field!r})" if problem.field else ""
        super().__init__(f"{problem.status} {problem.title}: {problem.detail}{where}")


@dataclass(frozen=True)
class Req(Generic[T]):
    method: str
    path: str
    kind: type[T]
    json: Any = None
    params: Any = None
    headers: dict[str, str] | None = None

    @property
    def content(self) -> bytes | None:
        return None if self.json is None else msgspec.json.encode(self.json)

    @property
    def all_headers(self) -> dict[str, str]:
        return {"Content-Type": "application/json", **(self.headers or {})}

    def answer(self, status: int, reason: str, content: bytes) -> T:
        if status >= 400:
            raise problem_error(status, reason, content)
        return msgspec.json.decode(content, type=self.kind)


def problem_error(status: int, reason: str, content: bytes) -> ConvlogError:
    try:
        problem = msgspec.json.decode(content, type=Problem)
    except msgspec.MsgspecError:
        return RemoteError(Problem(type="about:blank", title=reason, status=status,
                                   detail=content[:500].decode("utf-8", "replace")))
    kind = problem.type.rsplit(":", 1)[-1]
    if kind == "invalid-input":
        return InvalidInput(problem.detail, field=problem.field)
    if kind == "memory-cooling":  # the ids: `memory_cooldown()`
        return MemoryCooling(problem.detail, field=problem.field)
    if kind == "conversation-archived":
        archived = _archived(problem.detail)
        if archived is not None:
            return archived
    if kind == "unknown-conversation":
        return UnknownConversation(problem.detail.removeprefix("unknown conversation ")
                                   .strip("'\""))
    if kind == "conversation-forgotten":
        forgotten = _forgotten(problem.detail)
        if forgotten is not None:
            return forgotten
    if kind == "unknown-user":
        return UnknownUser(None, None, message=problem.detail)  # the server's own words
    if kind == "key-rotated":  # the server's master key was rotated by another process
        return convlog.WrongKey(problem.detail)
    if kind == "write-conflict":
        return convlog.ConcurrencyError(problem.detail)
    if kind == "compacted-meanwhile":
        return convlog.CompactedMeanwhile("", problem.detail)
    if kind == "storage-unavailable":
        return convlog.StorageError(problem.detail)
    return RemoteError(problem)


_ARCHIVED = re.compile(r"conversation (.+) is archived: .*")


def _archived(detail: str) -> ArchivedConversation | None:
    """The server's ArchivedConversation again, its key read back from the detail."""
    found = _ARCHIVED.fullmatch(detail)
    if found is None:
        return None
    try:
        key = ast.literal_eval(found.group(1))
    except (ValueError, SyntaxError):
        return None
    return ArchivedConversation(key) if isinstance(key, str) else None


_FORGOTTEN = re.compile(r"conversation (.+) belongs to forgotten user (.+): it records "
                        r"nothing more")


def _forgotten(detail: str) -> ConversationForgotten | None:
    """The server's ConversationForgotten again, key and user read back from the
    detail (each written with repr(), so read with literal_eval, which runs nothing)."""
    found = _FORGOTTEN.fullmatch(detail)
    if found is None:
        return None
    try:
        key, user = (ast.literal_eval(found.group(i)) for i in (1, 2))
    except (ValueError, SyntaxError):
        return None
    return ConversationForgotten(key, user) if isinstance(key, str) \
        and isinstance(user, str) else None


def message_body(message: convlog.Message) -> dict[str, Any]:
    """A Message as the wire's `message` line (what `convlog record` reads)."""
    body = msgspec.to_builtins(message)
    body.pop("token_counter", None)
    if message.cost_usd is not None:
        body["cost_usd"] = str(message.cost_usd)
    return {"type": "message", **{k: v for k, v in body.items() if v is not None and v != []}}


def conversation_path(key: str) -> str:
    return "/v1/conversations/" + quote(key, safe=":@!$&'()*+,;=-._~")


def _since(by: str, since: date | datetime | None) -> dict[str, str]:
    return {"by": by, **({"since": since.isoformat()} if since else {})}


def _budget(budget: Budget | None) -> dict[str, int]:
    b = budget or Budget()
    return {"tokens": b.tokens, "messages": b.messages, "chars": b.chars}


# ------------------------------------------------------------------ the log


def start(key: str, attrs: dict[str, Any]) -> Req[convlog.ConversationInfo]:
    return Req("POST", "/v1/conversations", convlog.ConversationInfo, {"key": key, **attrs})


def sessions(user: str | None, agent: str | None, include_archived: bool,
             limit: int | None) -> Req[list[convlog.CatalogRow]]:
    params = {k: v for k, v in {"user": user, "agent": agent, "limit": limit,
                                "include_archived": "true" if include_archived else None
                                }.items() if v is not None}
    return Req("GET", "/v1/conversations", list[convlog.CatalogRow], params=params)


def costs(by: str, since: date | datetime | None) -> Req[list[convlog.CostRow]]:
    return Req("GET", "/v1/costs", list[convlog.CostRow], params=_since(by, since))


def telemetry(by: str, since: date | datetime | None) -> Req[list[convlog.TelemetryRow]]:
    return Req("GET", "/v1/telemetry", list[convlog.TelemetryRow], params=_since(by, since))


def sql(query: str, params: Sequence[object]) -> Req[SqlOut]:
    return Req("POST", "/v1/sql", SqlOut, {"query": query, "params": list(params)})


# ------------------------------------------------------------ a conversation


def append_turn(path: str, messages: Iterable[convlog.Message],
                idempotency_key: str | None) -> Req[convlog.AppendResult]:
    headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
    return Req("POST", path + "/turns", convlog.AppendResult,
               {"messages": [message_body(m) for m in messages]}, headers=headers)


def record(path: str, lines: Sequence[dict[str, Any]]) -> Req[convlog.AppendResult]:
    return Req("POST", path + "/events", convlog.AppendResult, {"events": list(lines)})


def bind(path: str, native_session_id: str, agent: str | None) -> Req[convlog.AppendResult]:
    return Req("POST", path + "/native-session", convlog.AppendResult,
               {"native_session_id": native_session_id, "agent": agent})


def change(path: str, what: str, reason: str | None = None) -> Req[StateChange]:
    return Req("POST", f"{path}/{what}", StateChange,
               None if what == "reactivate" else {"reason": reason})


def info(path: str) -> Req[convlog.ConversationInfo]:
    return Req("GET", path, convlog.ConversationInfo)


def summary(path: str, paused_after: float) -> Req[ConversationSummary]:
    return Req("GET", path + "/summary", ConversationSummary,
               params={"paused_after": paused_after})


def messages(path: str, last: int | None) -> Req[list[MessageAppended]]:
    return Req("GET", path + "/messages", list[MessageAppended],
               params={"last": last} if last is not None else None)


def transcript(path: str) -> Req[list[TranscriptLine]]:
    return Req("GET", path + "/transcript", list[TranscriptLine])


def timeline(path: str, until: int | datetime | str | None) -> Req[list[TimelineOut]]:
    value = until.isoformat() if isinstance(until, datetime) else until
    return Req("GET", path + "/timeline", list[TimelineOut],
               params={"until": value} if value is not None else None)


def context(path: str, budget: Budget | None, format: str, exclude: Iterable[str],
            model: str | None) -> Req[convlog.Context]:
    params: dict[str, Any] = {**_budget(budget), "format": format, "exclude": list(exclude)}
    if model:
        params["model"] = model
    return Req("GET", path + "/context", convlog.Context, params=params)


def inject_memory(path: str, text: str, memory_ids: Sequence[str], block_id: str | None,
                  native_session_id: str | None) -> Req[convlog.MemoryBlock]:
    if isinstance(memory_ids, str):
        raise InvalidInput("must be a list of memory ids, not one string", field="memory_ids")
    body: dict[str, Any] = {"text": text, "memory_ids": list(memory_ids)}
    body.update((k, v) for k, v in (("block_id", block_id),
                                    ("native_session_id", native_session_id)) if v is not None)
    return Req("POST", path + "/memory", convlog.MemoryBlock, body)


def memory(path: str, at: int | None = None) -> Req[MemoryState]:
    return Req("GET", path + "/memory", MemoryState,
               params={"at": at} if at is not None else None)


def compaction_plan(path: str, keep_last: int) -> Req[convlog.CompactionPlan]:
    return Req("GET", path + "/compaction", convlog.CompactionPlan,
               params={"keep_last": keep_last})


def compact(path: str, summary: str, keep_last: int, through: str | None,
            reason: str | None, summarizer: str | None) -> Req[CompactOut]:
    body: dict[str, Any] = {"summary": summary, "keep_last": keep_last}
    body.update((k, v) for k, v in (("through_message_id", through), ("reason", reason),
                                    ("summarizer", summarizer)) if v is not None)
    return Req("POST", path + "/compaction", CompactOut, body)


def rewind(path: str, to: str, reason: str | None) -> Req[RewindOut]:
    body: dict[str, Any] = {"to": to}
    if reason is not None:
        body["reason"] = reason
    return Req("POST", path + "/rewind", RewindOut, body)


def fork(path: str, at: str, key: str, user: str | None, agent: str | None,
         channel: str | None, title: str | None, metadata: dict[str, Any] | None
         ) -> Req[ForkOut]:
    body: dict[str, Any] = {"at": at, "key": key}
    for name, value in (("user", user), ("agent", agent), ("channel", channel),
                        ("title", title), ("metadata", metadata)):
        if value is not None:
            body[name] = value
    return Req("POST", path + "/fork", ForkOut, body)


def memory_policy(path: str, cap: int, depth: int) -> Req[MemoryState]:
    return Req("PUT", path + "/memory/policy", MemoryState,
               {"max_injected_blocks_in_history": cap, "context_window_depth": depth})


def _policy(policy: RetentionPolicy) -> dict[str, Any]:
    return msgspec.to_builtins(policy)  # type: ignore[no-any-return]


def store_retention() -> Req[RetentionInForce]:
    return Req("GET", "/v1/retention", RetentionInForce)


def set_store_retention(policy: RetentionPolicy) -> Req[RetentionInForce]:
    return Req("PUT", "/v1/retention", RetentionInForce, _policy(policy))


def retention(path: str) -> Req[RetentionInForce]:
    return Req("GET", path + "/retention", RetentionInForce)


def set_retention(path: str, policy: RetentionPolicy) -> Req[RetentionInForce]:
    return Req("PUT", path + "/retention", RetentionInForce, _policy(policy))


def run_retention(dry_run: bool) -> Req[RetentionRun]:
    return Req("POST", "/v1/retention/run", RetentionRun,
               params={"dry_run": "true" if dry_run else "false"})


def user_context(user: str | None, workspace: str | None, conversations: int,
                 budget: Budget | None, format: str, model: str | None
                 ) -> Req[convlog.ResumptionContext]:
    params: dict[str, Any] = {**_budget(budget), "conversations": conversations,
                              "format": format}
    params.update((k, v) for k, v in (("user", user), ("workspace", workspace),
                                      ("model", model)) if v is not None)
    return Req("GET", "/v1/context", convlog.ResumptionContext, params=params)


def resume_attempt(path: str, strategy: str, native_session_id: str | None
                   ) -> Req[convlog.AppendResult]:
    return Req("POST", path + "/resume/attempts", convlog.AppendResult,
               {"strategy": strategy, "native_session_id": native_session_id})


def resume_outcome(path: str, body: dict[str, Any]) -> Req[convlog.AppendResult]:
    return Req("POST", path + "/resume/outcomes", convlog.AppendResult,
               {k: v for k, v in body.items() if v is not None})


def injection(path: str, native_session_id: str | None, budget: Budget | None, format: str,
              exclude: Iterable[str], model: str | None) -> Req[Injection]:
    return Req("POST", path + "/resume/injection", Injection, {
        "native_session_id": native_session_id, "format": format, "budget": _budget(budget),
        "exclude": list(exclude), "model": model})


class EventStream:
    """Server-sent events, line by line: `feed` returns an event when one is complete."""

    def __init__(self) -> None:
        self.data: list[str] = []

    def feed(self, line: str) -> EventOut | None:
        if line.startswith("data:"):
            self.data.append(line[5:].lstrip())
        elif not line and self.data:
            event = msgspec.json.decode("\n".join(self.data), type=EventOut)
            self.data = []
            return event
        return None
