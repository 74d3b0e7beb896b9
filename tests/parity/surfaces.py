"""The surfaces a host reaches convlog through, each behind the same small driver.

A driver performs one host operation its surface's own way (a library call, a
`convlog.Client` call, a raw HTTP request against a real `convlog serve` process, a
`convlog` command, an ACP request through a real `convlog acp` proxy) and reports a
refusal as `Refused(kind, field, reason)`, whatever shape the surface gives it (an
exception class, a problem document, an exit status and a line on stderr, a JSON-RPC
error). So a rule (tests/parity/rules.py) is written once and compares like with like.

A surface with no way to do an operation raises `NotHere(reason)`; the suite checks
every such cell against the declared table in test_parity.py, so a surface cannot
silently skip a rule.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

import httpx

import convlog
from convlog.domain.errors import (
    ArchivedConversation,
    ConversationForgotten,
    ConvlogError,
    InvalidInput,
    UnknownConversation,
)
from convlog.domain.memory import MemoryCooling

T = TypeVar("T")
DEPTH = 1
"""Every surface's process runs with `context_window_depth` 1 (the pinned policies of
the rules differ from it on purpose)."""
NATIVE = "native-1"


class Refused(Exception):
    """The surface refused the operation. `kind`: archived, unknown, cooling,
    forgotten, invalid; `field`: the field named (its last part), when any."""

    def __init__(self, kind: str, field: str | None = None, reason: str = ""):
        self.kind, self.field, self.reason = kind, field, reason
        super().__init__(f"{kind} (field {field!r}): {reason}")


class NotHere(Exception):
    """The surface has no way to do this operation (the reason says why)."""


def leaf(field: str | None) -> str | None:
    """The field's own name, without where it sits (``messages[0].role`` -> role)."""
    if not field:
        return None
    return re.sub(r"\[\d+\]", "", field).rsplit(".", 1)[-1] or None


def _from_error(exc: ConvlogError) -> Refused:
    if isinstance(exc, ArchivedConversation):
        return Refused("archived", "key", str(exc))
    if isinstance(exc, UnknownConversation):
        return Refused("unknown", "key", str(exc))
    if isinstance(exc, MemoryCooling):
        return Refused("cooling", leaf(exc.field), exc.reason)
    if isinstance(exc, ConversationForgotten):
        return Refused("forgotten", "key", str(exc))
    if isinstance(exc, InvalidInput):
        return Refused("invalid", leaf(exc.field), exc.reason)
    raise exc


SLUGS = {"conversation-archived": "archived", "unknown-conversation": "unknown",
         "memory-cooling": "cooling", "conversation-forgotten": "forgotten",
         "invalid-input": "invalid", "malformed-json": "invalid"}


@dataclass
class Summary:
    """What a summary call gave, in plain values every surface can produce."""

    status: str
    message_count: int
    tokens: int
    cost_usd: float | None
    agents: list[str]
    latest_summary: str | None
    created_at: str
    last_active_at: str


class Surface:
    """The operations a rule may ask of a surface; each raises NotHere by default."""

    name = "?"

    def key(self) -> str:
        """A fresh conversation key this surface can address."""
        return f"parity:{uuid.uuid4().hex[:12]}"

    def _no(self, what: str) -> NotHere:
        return NotHere(f"{self.name} has no {what}")

    def start(self, key: str, *, user: str | None = None, agent: str | None = None,
              workspace: str | None = None) -> None:
        raise self._no("start")

    def append(self, key: str, *messages: dict[str, Any]) -> None:
        """Messages as `convlog record` message lines (role, content, ...)."""
        raise self._no("append")

    def archive(self, key: str) -> None:
        raise self._no("archive")

    def clear(self, key: str) -> None:
        raise self._no("clear")

    def resume(self, key: str) -> str | None:
        """Resume with a fresh tier that works: the injected text (None: nothing)."""
        raise self._no("resume")

    def record_injection(self, key: str) -> bool:
        """Record that the history was handed to native session NATIVE."""
        raise self._no("injection record")

    def messages(self, key: str) -> list[str]:
        """The texts of the conversation's messages, as the surface reads them."""
        raise self._no("message read")

    def set_memory_policy(self, key: str, cap: int, depth: int) -> None:
        """Pin this conversation's memory policy."""
        raise self._no("memory policy")

    def send_line(self, key: str, raw: bytes) -> None:
        """One JSON message line, as the host wrote it, through the surface's decoder."""
        raise self._no("JSON input")

    def summary(self, key: str, paused_after: float = 1800.0) -> dict[str, Any]:
        """The conversation's summary, as plain JSON values."""
        raise self._no("summary")

    def markdown_context(self, key: str) -> str:
        """The history to inject, in the markdown format."""
        raise self._no("context")

    def inject_memory(self, key: str, *memory_ids: str) -> None:
        raise self._no("memory injection")

    def memory_cooldown(self, key: str) -> dict[str, int]:
        raise self._no("memory cooldown report")

    def close(self) -> None:
        pass


# ---------------------------------------------------------------- the library


class Library(Surface):
    """`convlog.open()` in this process."""

    name = "python"

    def __init__(self, url: str, views: Path):
        self.log = convlog.open(url, views=views, context_window_depth=DEPTH,
                                preload_tokenizer=False)

    def _do(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        try:
            return fn(*args, **kwargs)
        except ConvlogError as exc:
            raise _from_error(exc) from None

    def start(self, key: str, *, user: str | None = None, agent: str | None = None,
              workspace: str | None = None) -> None:
        self._do(self.log.conversation, key, user=user, agent=agent, workspace=workspace)

    def append(self, key: str, *messages: dict[str, Any]) -> None:
        self._do(self.log.append_turn, key, [message(m) for m in messages])

    def archive(self, key: str) -> None:
        self._do(self.log.archive, key)

    def clear(self, key: str) -> None:
        self._do(self.log.clear, key)

    def resume(self, key: str) -> str | None:
        outcome = self._do(self.log.resume, key,
                           [convlog.Tier("session/new", lambda call: NATIVE)])
        return outcome.injection.text if outcome.injection else None

    def record_injection(self, key: str) -> bool:
        return self._do(lambda: self.log.record_injection(key, self.log.context(key), NATIVE))

    def messages(self, key: str) -> list[str]:
        return [str(m.content) for m in self._do(self.log.messages, key)]

    def set_memory_policy(self, key: str, cap: int, depth: int) -> None:
        self._do(self.log.set_memory_policy, key, max_injected_blocks_in_history=cap,
                 context_window_depth=depth)

    def summary(self, key: str, paused_after: float = 1800.0) -> dict[str, Any]:
        return plain(self._do(self.log.summary, key, paused_after=paused_after))

    def markdown_context(self, key: str) -> str:
        return str(self._do(self.log.context, key, format="markdown").text)

    def inject_memory(self, key: str, *memory_ids: str) -> None:
        self._do(self.log.inject_memory, key, "a memory", list(memory_ids))

    def memory_cooldown(self, key: str) -> dict[str, int]:
        return self._do(self.log.memory_cooldown, key)

    def close(self) -> None:
        self.log.close()


def plain(value: Any) -> dict[str, Any]:
    """A returned Struct as the JSON values an HTTP or CLI host gets."""
    import msgspec

    found: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(value))
    return found


def message(line: dict[str, Any]) -> convlog.Message:
    role, content = line["role"], line["content"]
    extra = {k: v for k, v in line.items() if k not in ("role", "content", "type")}
    if "usage" in extra:
        extra["usage"] = convlog.Usage(**extra["usage"])
    return convlog.Message(role=role, content=content, **extra)


class AsyncLibrary(Library):
    """`await convlog.open_async()`: each operation a coroutine on an event loop of
    its own (the same rules must hold through `asyncio.to_thread`)."""

    name = "python-async"

    def __init__(self, url: str, views: Path):
        self.loop = asyncio.new_event_loop()
        self.alog = self.loop.run_until_complete(convlog.open_async(
            url, views=views, context_window_depth=DEPTH, preload_tokenizer=False))
        self.log = self.alog.sync  # only `record_injection`, which is sync-only

    def _run(self, coro: Awaitable[T]) -> T:
        try:
            return self.loop.run_until_complete(coro)
        except ConvlogError as exc:
            raise _from_error(exc) from None

    def start(self, key: str, *, user: str | None = None, agent: str | None = None,
              workspace: str | None = None) -> None:
        self._run(self.alog.conversation(key, user=user, agent=agent, workspace=workspace))

    def append(self, key: str, *messages: dict[str, Any]) -> None:
        self._run(self.alog.append_turn(key, [message(m) for m in messages]))

    def archive(self, key: str) -> None:
        self._run(self.alog.archive(key))

    def clear(self, key: str) -> None:
        self._run(self.alog.clear(key))

    def resume(self, key: str) -> str | None:
        async def fresh(call: convlog.TierCall) -> str:
            return NATIVE

        outcome = self._run(self.alog.resume(key, [convlog.Tier("session/new", fresh)]))
        return outcome.injection.text if outcome.injection else None

    def record_injection(self, key: str) -> bool:
        async def both() -> bool:  # the async host's way: the sync call off the loop
            context = await self.alog.context(key)
            return await asyncio.to_thread(self.alog.sync.record_injection, key, context,
                                           NATIVE)
        return self._run(both())

    def messages(self, key: str) -> list[str]:
        return [str(m.content) for m in self._run(self.alog.messages(key))]

    def set_memory_policy(self, key: str, cap: int, depth: int) -> None:
        self._run(self.alog.set_memory_policy(key, max_injected_blocks_in_history=cap,
                                              context_window_depth=depth))

    def summary(self, key: str, paused_after: float = 1800.0) -> dict[str, Any]:
        return plain(self._run(self.alog.summary(key, paused_after=paused_after)))

    def markdown_context(self, key: str) -> str:
        return str(self._run(self.alog.context(key, format="markdown")).text)

    def inject_memory(self, key: str, *memory_ids: str) -> None:
        self._run(self.alog.inject_memory(key, "a memory", list(memory_ids)))

    def memory_cooldown(self, key: str) -> dict[str, int]:
        return self._run(self.alog.memory_cooldown(key))

    def close(self) -> None:
        self.loop.run_until_complete(self.alog.close())
        self.loop.close()


# ---------------------------------------------------------------------- HTTP


class Client(Surface):
    """`convlog.Client` against a real `convlog serve` process."""

    name = "client"

    def __init__(self, base_url: str):
        self.client = convlog.Client(base_url)

    def _do(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        try:
            return fn(*args, **kwargs)
        except ConvlogError as exc:
            raise _from_error(exc) from None

    def _conv(self, key: str) -> Any:
        from convlog.http.client import RemoteConversation

        return RemoteConversation(self.client, key)  # no request: the call under test is

    def start(self, key: str, *, user: str | None = None, agent: str | None = None,
              workspace: str | None = None) -> None:
        self._do(self.client.conversation, key, user=user, agent=agent, workspace=workspace)

    def append(self, key: str, *messages: dict[str, Any]) -> None:
        self._do(self._conv(key).append_turn, [message(m) for m in messages])

    def archive(self, key: str) -> None:
        self._do(self._conv(key).archive)

    def clear(self, key: str) -> None:
        self._do(self._conv(key).clear)

    def resume(self, key: str) -> str | None:
        conv = self._conv(key)
        self._do(conv.resume_attempt, "session/new")
        self._do(conv.resume_outcome, "session/new", ok=True, native_session_id=NATIVE,
                 fresh=True)
        injection = self._do(conv.injection, native_session_id=NATIVE)
        return injection.context.text if injection.context else None

    def record_injection(self, key: str) -> bool:
        return bool(self._do(self._conv(key).injection, native_session_id=NATIVE).injected)

    def messages(self, key: str) -> list[str]:
        return [str(m.content) for m in self._do(self._conv(key).messages)]

    def set_memory_policy(self, key: str, cap: int, depth: int) -> None:
        self._do(self._conv(key).set_memory_policy, max_injected_blocks_in_history=cap,
                 context_window_depth=depth)

    def summary(self, key: str, paused_after: float = 1800.0) -> dict[str, Any]:
        return plain(self._do(self._conv(key).summary, paused_after=paused_after))

    def markdown_context(self, key: str) -> str:
        return str(self._do(self._conv(key).context, format="markdown").text)

    def inject_memory(self, key: str, *memory_ids: str) -> None:
        self._do(self._conv(key).inject_memory, "a memory", list(memory_ids))

    def memory_cooldown(self, key: str) -> dict[str, int]:
        return self._do(self._conv(key).memory_cooldown)

    def close(self) -> None:
        self.client.close()


class RawHTTP(Surface):
    """Plain HTTP requests (what a TypeScript, Go or Rust host sends) to the same
    server: a problem document's `type` says what was refused."""

    name = "http"

    def __init__(self, base_url: str):
        self.http = httpx.Client(base_url=base_url, timeout=60)

    @staticmethod
    def path(key: str) -> str:
        from convlog.http.wire import conversation_path

        return conversation_path(key)

    def send(self, method: str, path: str, body: Any = None, *,
             headers: dict[str, str] | None = None, raw: bytes | None = None) -> Any:
        content = raw if raw is not None else (
            None if body is None else json.dumps(body).encode())
        answer = self.http.request(method, path, content=content, headers={
            "content-type": "application/json", **(headers or {})})
        if answer.status_code >= 400:
            problem = answer.json()
            kind = SLUGS.get(problem["type"].rsplit(":", 1)[-1])
            if kind is None:
                raise AssertionError(f"{method} {path}: {answer.status_code} {answer.text}")
            raise Refused(kind, leaf(problem.get("field")), problem.get("detail", ""))
        return answer.json()

    def send_line(self, key: str, raw: bytes) -> None:
        """Through `/turns` and `/events` both: each must answer the same."""
        answers: list[tuple[str, str | None, str] | None] = []
        for path, field in (("/turns", b"messages"), ("/events", b"events")):
            try:
                self.send("POST", self.path(key) + path,
                          raw=b'{"%s": [%s]}' % (field, raw))
                answers.append(None)
            except Refused as exc:
                answers.append((exc.kind, exc.field, exc.reason))
        assert answers[0] == answers[1], answers
        if answers[0] is not None:
            raise Refused(*answers[0])

    def start(self, key: str, *, user: str | None = None, agent: str | None = None,
              workspace: str | None = None) -> None:
        self.send("POST", "/v1/conversations", {"key": key, "user": user, "agent": agent,
                                                "workspace": workspace})

    def append(self, key: str, *messages: dict[str, Any]) -> None:
        self.send("POST", self.path(key) + "/turns",
                  {"messages": [{"type": "message", **m} for m in messages]})

    def archive(self, key: str) -> None:
        self.send("POST", self.path(key) + "/archive", {})

    def clear(self, key: str) -> None:
        self.send("POST", self.path(key) + "/clear", {})

    def resume(self, key: str) -> str | None:
        path = self.path(key) + "/resume"
        self.send("POST", path + "/attempts", {"strategy": "session/new"})
        self.send("POST", path + "/outcomes", {"strategy": "session/new", "ok": True,
                                               "native_session_id": NATIVE, "fresh": True})
        injection = self.send("POST", path + "/injection", {"native_session_id": NATIVE})
        return injection["context"]["text"] if injection.get("context") else None

    def record_injection(self, key: str) -> bool:
        answer = self.send("POST", self.path(key) + "/resume/injection",
                           {"native_session_id": NATIVE})
        return bool(answer["injected"])

    def messages(self, key: str) -> list[str]:
        return [str(m["content"]) for m in self.send("GET", self.path(key) + "/messages")]

    def set_memory_policy(self, key: str, cap: int, depth: int) -> None:
        self.send("PUT", self.path(key) + "/memory/policy", {
            "max_injected_blocks_in_history": cap, "context_window_depth": depth})

    def inject_memory(self, key: str, *memory_ids: str) -> None:
        self.send("POST", self.path(key) + "/memory", {"text": "a memory",
                                                       "memory_ids": list(memory_ids)})

    def memory_cooldown(self, key: str) -> dict[str, int]:
        cooling: dict[str, int] = self.send("GET", self.path(key) + "/memory")["cooldown"]
        return cooling

    def summary(self, key: str, paused_after: float = 1800.0) -> dict[str, Any]:
        found: dict[str, Any] = self.send(
            "GET", f"{self.path(key)}/summary?paused_after={paused_after}")
        return found

    def markdown_context(self, key: str) -> str:
        return str(self.send("GET", self.path(key) + "/context?format=markdown")["text"])

    def close(self) -> None:
        self.http.close()


# ----------------------------------------------------------------------- CLI


CLI_KINDS = [  # how the CLI's one-line errors say what was refused
    ("archived", re.compile(r"is archived")),
    ("unknown", re.compile(r"unknown conversation")),
    ("cooling", re.compile(r"cooling down")),
    ("forgotten", re.compile(r"belongs to forgotten user")),
]


CLI_TYPES = {"ArchivedConversation": "archived", "UnknownConversation": "unknown",
             "MemoryCooling": "cooling", "ConversationForgotten": "forgotten",
             "InvalidInput": "invalid", "SystemMessageRejected": "invalid"}


class CLI(Surface):
    """The `convlog` command, one process per operation."""

    name = "cli"

    def __init__(self, url: str, cwd: Path):
        self.url, self.cwd = url, cwd

    def run(self, *args: str, stdin: bytes = b"") -> str:
        env = {**os.environ, "CONVLOG_CONTEXT_WINDOW_DEPTH": str(DEPTH)}
        env.pop("CONVLOG_URL", None)
        done = subprocess.run([sys.executable, "-m", "convlog.cli.main", args[0],
                               "--db", self.url, *args[1:]], input=stdin, cwd=self.cwd,
                              env=env, capture_output=True, timeout=120, check=False)
        if done.returncode == 0:
            return done.stdout.decode()
        line = done.stderr.decode().strip().splitlines()[-1] if done.stderr else ""
        if done.returncode == 1 and line.startswith("{"):  # --json: the error's type
            error = json.loads(line)["error"]
            kind = CLI_TYPES.get(error["type"])
            assert kind is not None, (args, line)
            raise Refused(kind, leaf(error.get("field")) or (
                "key" if kind != "invalid" else None), error["message"])
        assert done.returncode == 1 and line.startswith("convlog: error: "), (
            args, done.returncode, done.stderr.decode())
        text = line.removeprefix("convlog: error: ")
        field = re.search(r"field '([^']+)'", text)
        for kind, pattern in CLI_KINDS:
            if pattern.search(text):
                raise Refused(kind, leaf(field.group(1)) if field else "key", text)
        raise Refused("invalid", leaf(field.group(1)) if field else None,
                      text.rsplit(": ", 1)[-1])

    def send_line(self, key: str, raw: bytes) -> None:
        self.run("record", key, "--json", stdin=raw)

    def summary(self, key: str, paused_after: float = 1800.0) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(self.run(
            "summary", key, "--paused-after", str(paused_after), "--json"))
        return found

    def markdown_context(self, key: str) -> str:
        return self.run("context", key, "--format", "markdown")

    def record(self, key: str, *lines: dict[str, Any]) -> str:
        return self.run("record", key, stdin=b"\n".join(json.dumps(x).encode() for x in lines))

    def start(self, key: str, *, user: str | None = None, agent: str | None = None,
              workspace: str | None = None) -> None:
        self.record(key, {"type": "session_started", "user": user, "agent": agent,
                          "workspace": workspace})

    def append(self, key: str, *messages: dict[str, Any]) -> None:
        self.record(key, *({"type": "message", **m} for m in messages))

    def archive(self, key: str) -> None:
        self.run("archive", key)

    def clear(self, key: str) -> None:
        self.run("clear", key)

    def resume(self, key: str) -> str | None:
        # the CLI runs no tiers: a host that does records them, as lines
        self.record(key, {"type": "resume_attempted", "strategy": "session/new"},
                    {"type": "resume_succeeded", "strategy": "session/new",
                     "native_session_id": NATIVE, "fresh": True})
        return None

    def inject_memory(self, key: str, *memory_ids: str) -> None:
        self.record(key, {"type": "memory_injected", "text": "a memory",
                          "memory_ids": list(memory_ids)})

    def record_injection(self, key: str) -> bool:
        context = json.loads(self.run("context", key, "--json"))
        self.record(key, {"type": "history_injected", **{
            k: context[k] for k in ("from_version", "to_version", "message_count",
                                    "tokens", "format", "text")},
            "native_session_id": NATIVE})
        return True


# ----------------------------------------------------------------------- ACP


class ACP(Surface):
    """`convlog acp` in front of a test agent (tests/e2e/acp_agent.py, the real ACP
    SDK on both sides): a host reaches a conversation by its session id, and
    `session/load` is its resume."""

    name = "acp"

    def __init__(self, url: str, workdir: Path):
        self.url, self.workdir = url, workdir

    def key(self) -> str:
        from convlog.acp.sessions import key_of

        return key_of(uuid.uuid4().hex)

    def _load(self, key: str) -> list[str]:
        """`session/load` of the conversation under `key`; the texts it replayed."""
        import acp

        from convlog.acp.sessions import KEY_PREFIX
        from tests.e2e.acp_harness import (
            CLIENT_INFO,
            RecordingClient,
            agent_command,
            env,
            proxy_command,
        )

        client = RecordingClient()

        async def scenario() -> None:
            command = proxy_command(self.url, agent_command("memory", self.workdir))
            async with acp.spawn_agent_process(
                    cast(Any, client), *command,
                    env={**env(), "CONVLOG_CONTEXT_WINDOW_DEPTH": str(DEPTH)}) as (conn, _):
                await conn.initialize(protocol_version=acp.PROTOCOL_VERSION,
                                      client_info=CLIENT_INFO)
                await conn.load_session(cwd=str(self.workdir), mcp_servers=[],
                                        session_id=key.removeprefix(KEY_PREFIX))

        try:
            asyncio.run(asyncio.wait_for(scenario(), 120))
        except acp.RequestError as exc:
            if exc.code == -32002:
                raise Refused("unknown", "sessionId", str(exc)) from None
            raise
        return [u["content"]["text"] for _, u in client.updates
                if u.get("sessionUpdate") in ("user_message_chunk", "agent_message_chunk")
                and "text" in u.get("content", {})]

    def resume(self, key: str) -> str | None:
        self._load(key)
        return None

    def messages(self, key: str) -> list[str]:
        return self._load(key)
