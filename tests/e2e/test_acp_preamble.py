"""The host's system prompt (the preamble) through `convlog acp`, with real processes.

A host such as an Electron app sends, in the FIRST prompt of every agent session
(new, and again after a restart and `session/load`), its system prompt as the first
text block(s), then the user's text. The proxy forwards the preamble unchanged, never
records it as dialogue, never injects it as history, and puts the injected history
after it and before the user's text: system -> history -> question.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import convlog
from tests.e2e.acp_harness import (
    CLIENT_INFO,
    RecordingClient,
    agent_command,
    env,
    proxy_command,
    trace,
)
from tests.e2e.test_acp_proxy import kill_agents

acp = pytest.importorskip("acp")

SYSTEM = "You are Desk, the helpful assistant of ACME. SYSTEM-PROMPT-MARKER v7."


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


async def first_session(db: str, workdir: Path, *options: str) -> str:
    """A new session whose first prompt is [system prompt, user text]; then everything
    is killed, as when the host machine crashes."""
    async with acp.spawn_agent_process(
            RecordingClient(), *proxy_command(db, agent_command("memory", workdir), *options),
            env=env(), use_unstable_protocol=True) as (conn, proc):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_info=CLIENT_INFO)
        session = await conn.new_session(cwd=str(workdir), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[
            acp.text_block(SYSTEM), acp.text_block("Remember the code word PELICAN")])
        await conn.prompt(session_id=session.session_id,
                          prompt=[acp.text_block("Thanks, that is all.")])
        proc.kill()
        kill_agents(workdir)
        await proc.wait()
        return str(session.session_id)


async def after_restart(db: str, workdir: Path, session_id: str, *options: str) -> None:
    async with acp.spawn_agent_process(
            RecordingClient(), *proxy_command(db, agent_command("memory", workdir), *options),
            env=env(), use_unstable_protocol=True) as (conn, _):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_info=CLIENT_INFO)
        await conn.load_session(cwd=str(workdir), session_id=session_id, mcp_servers=[])
        await conn.prompt(session_id=session_id, prompt=[
            acp.text_block(SYSTEM), acp.text_block("What was the code word?")])
        await conn.prompt(session_id=session_id, prompt=[acp.text_block("And mine?")])


def test_the_preamble_is_forwarded_first_and_never_recorded_nor_injected(
        tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'acp.db'}"
    session_id = run(first_session(db, tmp_path))
    run(after_restart(db, tmp_path, session_id))

    prompts = trace(tmp_path)
    # the fresh session: the preamble reached the agent unchanged, in front
    assert prompts[0]["texts"] == [SYSTEM, "Remember the code word PELICAN"]
    assert prompts[1]["texts"] == ["Thanks, that is all."]
    # after the restart: system prompt -> history -> question, the history once
    system, history, question = prompts[2]["texts"]
    assert system == SYSTEM
    assert "conversation_history" in history and "PELICAN" in history
    assert "SYSTEM-PROMPT-MARKER" not in history  # the old preamble is not "history"
    assert question == "What was the code word?"
    assert prompts[3]["texts"] == ["And mine?"]

    with convlog.open(db) as log:
        key = f"acp:{session_id}"
        users = [m.content for m in log.messages(key) if m.role == "user"]
        assert users == ["Remember the code word PELICAN", "Thanks, that is all.",
                         "What was the code word?", "And mine?"]
        row = next(r for r in log.sessions() if r.key == key)
        assert "SYSTEM-PROMPT-MARKER" not in (row.title or "")
    shown = subprocess.run([sys.executable, "-m", "convlog.cli.main", "--db", db, "show",
                            f"acp:{session_id}"], capture_output=True, text=True, env=env())
    assert shown.returncode == 0, shown.stderr
    assert "PELICAN" in shown.stdout and "SYSTEM-PROMPT-MARKER" not in shown.stdout


def test_with_preamble_none_every_block_is_the_users_message(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'acp.db'}"
    session_id = run(first_session(db, tmp_path, "--preamble", "none"))
    run(after_restart(db, tmp_path, session_id, "--preamble", "none"))
    prompts = trace(tmp_path)
    history, system, _ = prompts[2]["texts"]  # the old order: history first
    assert "conversation_history" in history and system == SYSTEM
    with convlog.open(db) as log:
        first = log.messages(f"acp:{session_id}")[0]
        assert [p.text for p in first.content] == [  # type: ignore[union-attr]
            SYSTEM, "Remember the code word PELICAN"]
