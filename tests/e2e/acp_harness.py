"""What the ACP proxy's end-to-end tests share: the command lines of real processes
(`convlog acp` in front of tests/e2e/acp_agent.py), and an SDK client that keeps
every `session/update` it is sent."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp.schema import AllowedOutcome, Implementation, RequestPermissionResponse

HERE = Path(__file__).resolve().parent
AGENT = HERE / "acp_agent.py"


def proxy_command(db: str, agent: list[str], *options: str) -> list[str]:
    return [sys.executable, "-m", "convlog.cli.main", "acp", "--db", db, *options, "--", *agent]


def agent_command(mode: str, workdir: Path) -> list[str]:
    return [sys.executable, str(AGENT), "--mode", mode, "--trace", str(workdir / "trace.jsonl"),
            "--state", str(workdir / "state.json")]


def trace(workdir: Path) -> list[dict[str, Any]]:
    """Every prompt the test agents received, in order."""
    path = workdir / "trace.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def kill_agents(workdir: Path) -> None:
    """SIGKILL every agent process the test agent traced in `workdir`."""
    for pid in {t["pid"] for t in trace(workdir)}:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def one_turn(db: str, workdir: Path, *options: str) -> None:
    """One prompt through `convlog acp OPTIONS -- <the memory agent>` with the Python
    ACP SDK as the host, then every process ends: what the proxy's options record is
    then in the store."""
    import acp

    client: Any = RecordingClient()  # duck-typed, as the SDK's examples are

    async def turn() -> None:
        async with acp.spawn_agent_process(
                client, *proxy_command(db, agent_command("memory", workdir),
                                                  *options),
                env=env(), use_unstable_protocol=True) as (conn, proc):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION,
                                  client_info=CLIENT_INFO)
            session = await conn.new_session(cwd=str(workdir), mcp_servers=[])
            await conn.prompt(session_id=session.session_id,
                              prompt=[acp.text_block("hello")])
            proc.terminate()
            kill_agents(workdir)
            await proc.wait()

    asyncio.run(asyncio.wait_for(turn(), 60))


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


@dataclass
class RecordingClient:
    """An ACP client (the SDK's `Client` protocol, duck-typed) that keeps what it gets."""

    updates: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update.model_dump(by_alias=True, exclude_none=True)))

    asked: list[str] = field(default_factory=list)

    async def request_permission(self, session_id: str, tool_call: Any, options: Any,
                                 **kwargs: Any) -> Any:
        self.asked.append(session_id)
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected",
                                                                option_id=options[0].option_id))

    def texts(self, kind: str) -> list[str]:
        return [u["content"]["text"] for _, u in self.updates
                if u.get("sessionUpdate") == kind and "text" in u.get("content", {})]


CLIENT_INFO = Implementation(name="e2e-client", version="2.5")


CHUNKS = ("user_message_chunk", "agent_message_chunk", "agent_thought_chunk")


def _joinable(last: dict[str, Any], update: dict[str, Any]) -> bool:
    """Two text chunks of one message that differ in their text only."""
    if update["sessionUpdate"] not in CHUNKS or last["sessionUpdate"] != update["sessionUpdate"]:
        return False
    a, b = last.get("content"), update.get("content")
    if not (isinstance(a, dict) and isinstance(b, dict)
            and a.get("type") == b.get("type") == "text"):
        return False
    return ({k: v for k, v in last.items() if k != "content"}
            == {k: v for k, v in update.items() if k != "content"}
            and {k: v for k, v in a.items() if k != "text"}
            == {k: v for k, v in b.items() if k != "text"})


def coalesced(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`session/update` payloads as the ACP round-trip rule compares them (docs/acp.md):
    consecutive text chunks of one kind and one message, differing only in their
    text, are one chunk. Written here independently of the proxy's own code."""
    out: list[dict[str, Any]] = []
    for update in updates:
        if out and _joinable(out[-1], update):
            last = out[-1]
            out[-1] = {**last, "content": {**last["content"],
                                           "text": last["content"]["text"]
                                           + update["content"]["text"]}}
        else:
            out.append(update)
    return out


def unpaired(updates: list[dict[str, Any]]) -> list[str]:
    """What breaks ACP's pairing in a replay: a `tool_call` that never gets a final
    update (`completed`/`failed`) after it, or a final update with no call before it.
    (ACP lets the agent talk while a tool runs: text between the two is fine.)"""
    problems, open_calls = [], set()
    for i, update in enumerate(updates):
        if update.get("sessionUpdate") == "tool_call":
            open_calls.add(update["toolCallId"])
        if update.get("sessionUpdate") in ("tool_call", "tool_call_update") \
                and update.get("status") in ("completed", "failed"):
            if update["toolCallId"] not in open_calls:
                problems.append(f"update {i}: a final update for {update['toolCallId']!r} "
                                "with no call before it")
            open_calls.discard(update["toolCallId"])
    problems.extend(f"call {c!r} never finished" for c in sorted(open_calls))
    return problems
