"""`convlog.Client`: a typed Python client of `convlog serve`, mirroring the handle API.

    client = convlog.Client("http://127.0.0.1:8765", token="...")
    conv = client.conversation("discord:thread:42", user="u1", agent="copilot")
    conv.append_turn([convlog.user("hi"), convlog.assistant("hello", model="gpt-4o")])
    text = conv.context(budget=convlog.Budget(tokens=10_000)).text

Answers are decoded with msgspec into the library's own types (AppendResult,
SessionInfo, Context, MessageAppended, CatalogRow...), and errors come back as the
library's typed errors (InvalidInput with its `field`, UnknownConversation,
ConcurrencyError, StorageError); any other problem is a `RemoteError` carrying the
RFC 9457 document. Built on httpx (the `http` extra).
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Sequence
from datetime import date, datetime
from typing import Any, TypeVar
from urllib.parse import quote

import msgspec

import convlog
from convlog.domain.errors import ConvlogError, InvalidInput, UnknownConversation
from convlog.domain.events import MessageAppended
from convlog.http.schema import EventOut, Injection, Problem, SqlOut, StateChange, TimelineOut
from convlog.projections.context import Budget
from convlog.projections.transcript import TranscriptLine

try:
    import httpx
except ImportError as exc:  # pragma: no cover - the extra is in `dev`
    raise ImportError("convlog.Client needs the http extra: pip install 'convlog[http]'"
                      ) from exc

T = TypeVar("T")


class RemoteError(ConvlogError):
    """A problem answer with no closer library error (401, 403, 413, ...)."""

    def __init__(self, problem: Problem):
        self.problem = problem
        self.status = problem.status
        self.field = problem.field
        where = f" (field {problem.field!r})" if problem.field else ""
        super().__init__(f"{problem.status} {problem.title}: {problem.detail}{where}")


def _raise(response: httpx.Response) -> None:
    try:
        problem = msgspec.json.decode(response.content, type=Problem)
    except msgspec.MsgspecError:
        raise RemoteError(Problem(type="about:blank", title=response.reason_phrase,
                                  status=response.status_code,
                                  detail=response.text[:500])) from None
    kind = problem.type.rsplit(":", 1)[-1]
    if kind == "invalid-input":
        raise InvalidInput(problem.detail, field=problem.field)
    if kind == "unknown-conversation":
        key = problem.detail.removeprefix("unknown conversation ").strip("'\"")
        raise UnknownConversation(key)
    if kind == "write-conflict":
        raise convlog.ConcurrencyError(problem.detail)
    if kind == "storage-unavailable":
        raise convlog.StorageError(problem.detail)
    raise RemoteError(problem)


def message_body(message: convlog.Message) -> dict[str, Any]:
    """A Message as the wire's `message` line (what `convlog record` reads)."""
    body = msgspec.to_builtins(message)
    body.pop("token_counter", None)
    if message.cost_usd is not None:
        body["cost_usd"] = str(message.cost_usd)
    return {k: v for k, v in body.items() if v is not None and v != []}


def _when(value: date | datetime | None) -> str | None:
    return None if value is None else value.isoformat()


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

    def request(self, method: str, path: str, kind: type[T], *, json: Any = None,
                params: Any = None, headers: dict[str, str] | None = None) -> T:
        content = None if json is None else msgspec.json.encode(json)
        response = self.http.request(method, path, content=content, params=params,
                                     headers={"Content-Type": "application/json",
                                              **(headers or {})})
        if response.status_code >= 400:
            _raise(response)
        return msgspec.json.decode(response.content, type=kind)

    # ------------------------------------------------------------- conversations

    def conversation(self, key: str, *, user: str | None = None, agent: str | None = None,
                     channel: str | None = None, title: str | None = None,
                     workspace: str | None = None, metadata: dict[str, Any] | None = None
                     ) -> RemoteConversation:
        """The conversation under `key`, started if it is new (as `log.conversation`)."""
        body = {"key": key, "user": user, "agent": agent, "channel": channel,
                "title": title, "workspace": workspace, "metadata": metadata or {}}
        self.request("POST", "/v1/conversations", convlog.SessionInfo, json=body)
        return RemoteConversation(self, key)

    def get(self, key: str) -> RemoteConversation:
        """The existing conversation under `key`; UnknownConversation if there is none."""
        conversation = RemoteConversation(self, key)
        conversation.info()
        return conversation

    def sessions(self, *, user: str | None = None, agent: str | None = None,
                 include_archived: bool = False, limit: int | None = None
                 ) -> list[convlog.CatalogRow]:
        params = {k: v for k, v in {"user": user, "agent": agent, "limit": limit,
                                    "include_archived": "true" if include_archived else None
                                    }.items() if v is not None}
        return self.request("GET", "/v1/conversations", list[convlog.CatalogRow],
                            params=params)

    def costs(self, *, by: str = "model", since: date | datetime | None = None
              ) -> list[convlog.CostRow]:
        params = {"by": by, **({"since": _when(since)} if since else {})}
        return self.request("GET", "/v1/costs", list[convlog.CostRow], params=params)

    def telemetry(self, *, by: str = "strategy", since: date | datetime | None = None
                  ) -> list[convlog.TelemetryRow]:
        params = {"by": by, **({"since": _when(since)} if since else {})}
        return self.request("GET", "/v1/telemetry", list[convlog.TelemetryRow], params=params)

    def sql(self, query: str, params: Sequence[object] = ()) -> tuple[list[str], list[Any]]:
        """(column names, rows) of one SELECT over the views (admin token)."""
        out = self.request("POST", "/v1/sql", SqlOut,
                           json={"query": query, "params": list(params)})
        return out.columns, [tuple(r) for r in out.rows]


class RemoteConversation:
    """One conversation of a server, addressed by its key: `ConversationHandle`'s API."""

    def __init__(self, client: Client, key: str):
        self.client = client
        self.key = key
        self.path = "/v1/conversations/" + quote(key, safe=":@!$&'()*+,;=-._~")

    def __repr__(self) -> str:
        return f"<RemoteConversation {self.key!r}>"

    def _post(self, suffix: str, kind: type[T], body: Any = None,
              headers: dict[str, str] | None = None) -> T:
        return self.client.request("POST", self.path + suffix, kind, json=body,
                                   headers=headers)

    def _get(self, suffix: str, kind: type[T], params: Any = None) -> T:
        return self.client.request("GET", self.path + suffix, kind, params=params)

    def append_turn(self, messages: Iterable[convlog.Message], *,
                    idempotency_key: str | None = None) -> convlog.AppendResult:
        """One turn, atomically; known message ids are skipped, so a retry is safe."""
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self._post("/turns", convlog.AppendResult,
                          {"messages": [message_body(m) for m in messages]}, headers)

    def append(self, message: convlog.Message) -> convlog.AppendResult:
        return self.append_turn([message])

    def record(self, lines: Sequence[dict[str, Any]]) -> convlog.AppendResult:
        """Lines of `convlog record` (dicts with a `type`), as one atomic batch."""
        return self._post("/events", convlog.AppendResult, {"events": list(lines)})

    def bind_native_session(self, native_session_id: str, agent: str | None = None
                            ) -> convlog.AppendResult:
        return self._post("/native-session", convlog.AppendResult,
                          {"native_session_id": native_session_id, "agent": agent})

    def archive(self, reason: str | None = None) -> StateChange:
        return self._post("/archive", StateChange, {"reason": reason})

    def reactivate(self) -> StateChange:
        return self._post("/reactivate", StateChange)

    def clear(self, reason: str | None = None) -> StateChange:
        return self._post("/clear", StateChange, {"reason": reason})

    def info(self) -> convlog.SessionInfo:
        return self._get("", convlog.SessionInfo)

    def messages(self, *, last: int | None = None) -> list[MessageAppended]:
        return self._get("/messages", list[MessageAppended],
                         {"last": last} if last is not None else None)

    def transcript(self) -> list[TranscriptLine]:
        return self._get("/transcript", list[TranscriptLine])

    def timeline(self, *, until: int | datetime | None = None) -> list[TimelineOut]:
        value = until.isoformat() if isinstance(until, datetime) else until
        return self._get("/timeline", list[TimelineOut],
                         {"until": value} if value is not None else None)

    def context(self, *, budget: Budget | None = None, format: str = "xml",
                exclude: Iterable[str] = (), model: str | None = None) -> convlog.Context:
        b = budget or Budget()
        params: dict[str, Any] = {"tokens": b.tokens, "messages": b.messages, "chars": b.chars,
                                  "format": format, "exclude": list(exclude)}
        if model:
            params["model"] = model
        return self._get("/context", convlog.Context, params)

    # ------------------------------------------------------------ tiered resume

    def resume_attempt(self, strategy: str, native_session_id: str | None = None
                       ) -> convlog.AppendResult:
        return self._post("/resume/attempts", convlog.AppendResult,
                          {"strategy": strategy, "native_session_id": native_session_id})

    def resume_outcome(self, strategy: str, *, ok: bool, reason: str | None = None,
                       error: str | None = None, native_session_id: str | None = None,
                       latency_ms: float | None = None, fresh: bool | None = None
                       ) -> convlog.AppendResult:
        body = {"strategy": strategy, "ok": ok, "reason": reason, "error": error,
                "native_session_id": native_session_id, "latency_ms": latency_ms,
                "fresh": fresh}
        return self._post("/resume/outcomes", convlog.AppendResult,
                          {k: v for k, v in body.items() if v is not None})

    def injection(self, *, native_session_id: str | None = None,
                  budget: Budget | None = None, format: str = "xml",
                  exclude: Iterable[str] = (), model: str | None = None) -> Injection:
        """The history for a fresh agent session, recorded; None context when this
        native session already got it or there is nothing to remember."""
        b = budget or Budget()
        return self._post("/resume/injection", Injection, {
            "native_session_id": native_session_id, "format": format,
            "budget": {"tokens": b.tokens, "messages": b.messages, "chars": b.chars},
            "exclude": list(exclude), "model": model})

    # ------------------------------------------------------------------- stream

    def follow(self, *, after: int = 0, timeout: float | None = None
               ) -> Generator[EventOut, None, None]:
        """The conversation's events after position `after`, then new ones as they
        are recorded (server-sent events); stop iterating to close the stream."""
        with self.client.http.stream("GET", self.path + "/stream", params={"after": after},
                                     timeout=timeout) as response:
            if response.status_code >= 400:
                response.read()
                _raise(response)
            data: list[str] = []
            for line in response.iter_lines():
                if line.startswith("data:"):
                    data.append(line[5:].lstrip())
                elif not line and data:
                    yield msgspec.json.decode("\n".join(data), type=EventOut)
                    data = []
