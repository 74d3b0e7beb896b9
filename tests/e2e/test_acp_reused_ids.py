"""Issue 41 through the ACP proxy: an agent that numbers its tool calls per process
(the test agent's `t0`, `t1`... start again in every new agent process) reuses ids
after a restart. Each call is paired within its turn: the history injected into the
next new agent session, and `convlog context`, show every call with its own result.

Real processes: the SDK's client -> `convlog acp` -> the SDK test agent
(tests/e2e/acp_agent.py), killed and started again between turns."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import convlog
from tests.e2e.acp_harness import RecordingClient, agent_command, env, proxy_command, trace

acp = pytest.importorskip("acp")


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


async def turn(db: str, tmp_path: Path, text: str, session_id: str | None = None) -> str:
    """One prompt in a fresh proxy and agent process (a new session, or a load)."""
    async with acp.spawn_agent_process(
            RecordingClient(), *proxy_command(db, agent_command("memory", tmp_path)),
            env=env(), use_unstable_protocol=True) as (conn, _):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        if session_id is None:
            session_id = str((await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
                              ).session_id)
        else:
            await conn.load_session(cwd=str(tmp_path), session_id=session_id, mcp_servers=[])
        await conn.prompt(session_id=session_id, prompt=[acp.text_block(text)])
        return session_id


def exchanges(history: str) -> list[str]:
    """The tool markers of a history, in order: "call" or the result's text."""
    marks = re.findall(r"\[called tool lookup\(|\[tool result: ([^\]]*)\]", history)
    return [m or "call" for m in marks]


def test_reused_tool_call_ids_keep_their_results_in_the_injected_history(
        tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'acp.db'}"
    session_id = run(turn(db, tmp_path, "one"))
    run(turn(db, tmp_path, "two", session_id))    # a new agent process: t0 again
    run(turn(db, tmp_path, "three", session_id))  # and again
    with convlog.open(db) as log:  # the log holds each turn's t0 with its result
        turns = [m for m in log.messages(f"acp:{session_id}") if m.role == "assistant"]
        assert [[p.id for p in m.content if isinstance(p, convlog.ToolUsePart)]
                for m in turns] == [["t0"], ["t0"], ["t0"]]
    prompts = trace(tmp_path)
    assert len(prompts) == 3
    injected = prompts[2]["texts"][0]  # the third agent process got turns one and two
    assert "conversation_history" in injected
    marks = exchanges(injected)
    assert marks[0::2] == ["call", "call"] and len(marks) == 4, injected
    assert all(m != "call" for m in marks[1::2]) and "was lost" not in injected, injected
    cli = subprocess.run([sys.executable, "-m", "convlog.cli.main", "context", "--db", db,
                          f"acp:{session_id}"], capture_output=True, text=True, check=True,
                         env=env())
    marks = exchanges(cli.stdout)
    assert marks[0::2] == ["call"] * 3 and len(marks) == 6, cli.stdout
    assert "was lost" not in cli.stdout, cli.stdout
