"""The host's system prompt (the preamble) through `convlog acp`, with real processes.

A host such as an Electron app sends, in the FIRST prompt of every agent session
(new, and again after a restart and `session/load`), its system prompt as the first
text block, then the user's text. The proxy forwards the preamble unchanged, records
it as the preamble (never as dialogue), never injects it as history, and puts the
injected history after it and before the user's text: system -> history -> question.
A host can mark its preamble (annotations `audience: ["assistant"]`, or `_meta`
`convlog/preamble`); without a mark the guess takes at most one block, and nothing the
host sent is dropped from the log (issue 41 item 6).
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
    kill_agents,
    proxy_command,
    trace,
)

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


def test_the_preamble_is_forwarded_first_recorded_as_such_never_as_dialogue_nor_injected(
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
        row = next(r for r in log.conversations() if r.key == key)
        assert "SYSTEM-PROMPT-MARKER" not in (row.title or "")
        # recorded as what it is, each time the agent got it: the agent's view shows it
        preambles = [e for e in log.view(key, "agent").entries if e.kind == "preamble"]
        assert [e.text for e in preambles] == [SYSTEM, SYSTEM]
        assert all(SYSTEM not in e.text for e in log.view(key, "user").entries)
        # how full the agent's window was when its own resume failed (2 turns: 200/1000)
        failed = log.sql("SELECT strategy, window_used, window_size FROM resume_attempts "
                         "WHERE outcome = 'failed' ORDER BY version")
        assert [tuple(r) for r in failed[1]] == [("session/resume", 200, 1000),
                                                   ("session/load", 200, 1000)]
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


def test_a_new_agent_process_after_a_crash_gets_the_preamble_again_before_the_history(
        tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'acp.db'}"

    async def scenario() -> str:
        async with acp.spawn_agent_process(
                RecordingClient(), *proxy_command(db, agent_command("crash", tmp_path)),
                env=env(), use_unstable_protocol=True) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            await conn.prompt(session_id=session.session_id, prompt=[
                acp.text_block(SYSTEM), acp.text_block("the code word is HERON")])
            with pytest.raises(acp.RequestError):
                await conn.prompt(session_id=session.session_id,
                                  prompt=[acp.text_block("now crash")])
            # the host does not know the agent was replaced: it sends no system prompt
            await conn.prompt(session_id=session.session_id,
                              prompt=[acp.text_block("are you back?")])
            return str(session.session_id)

    session_id = run(scenario())
    system, history, question = trace(tmp_path)[-1]["texts"]
    assert system == SYSTEM and "HERON" in history and question == "are you back?"
    assert "SYSTEM-PROMPT-MARKER" not in history
    with convlog.open(db) as log:
        assert all("SYSTEM-PROMPT-MARKER" not in str(m.content)
                   for m in log.messages(f"acp:{session_id}"))


# ------------------------------------------------- issue 41 item 6: marked, never dropped

PASTED = "Pasted file notes.txt:\nThe launch code is KEY-FACT-42."


def marked(text: str, how: str = "annotation") -> Any:
    """A text block the host marks as meant for the model, not the user."""
    from acp.schema import Annotations, TextContentBlock

    if how == "annotation":
        return TextContentBlock(type="text", text=text,
                                annotations=Annotations(audience=["assistant"]))
    return TextContentBlock(type="text", text=text, field_meta={"convlog/preamble": True})


async def opened(db: str, workdir: Path, blocks: list[Any], *options: str) -> str:
    """A new session whose first prompt is `blocks`; then everything is killed."""
    async with acp.spawn_agent_process(
            RecordingClient(), *proxy_command(db, agent_command("memory", workdir), *options),
            env=env(), use_unstable_protocol=True) as (conn, proc):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_info=CLIENT_INFO)
        session = await conn.new_session(cwd=str(workdir), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=blocks)
        proc.kill()
        kill_agents(workdir)
        await proc.wait()
        return str(session.session_id)


def views(db: str, session_id: str) -> tuple[str, str, list[Any]]:
    """(the user's view, the agent's view, the user messages) as text."""
    with convlog.open(db) as log:
        key = f"acp:{session_id}"
        user = "\n".join(e.text for e in log.view(key, "user").entries)
        agent = log.view(key, "agent").entries
        return user, "\n".join(f"{e.kind}: {e.text}" for e in agent), [
            m.content for m in log.messages(key) if m.role == "user"]


@pytest.mark.parametrize("how", ["annotation", "meta"])
def test_a_marked_preamble_is_recorded_as_the_preamble_and_the_rest_as_the_users(
        tmp_path: Path, how: str) -> None:
    db = f"sqlite:///{tmp_path / 'acp.db'}"
    session_id = run(opened(db, tmp_path, [marked(SYSTEM, how), acp.text_block(PASTED),
                                           acp.text_block("Summarise the file")]))
    user, agent, said = views(db, session_id)
    assert said == [[convlog.TextPart(text=PASTED), convlog.TextPart(text="Summarise the file")]]
    assert f"preamble: {SYSTEM}" in agent  # the agent's view shows what the agent got
    assert "SYSTEM-PROMPT-MARKER" not in user and "KEY-FACT-42" in user
    run(after_restart(db, tmp_path, session_id))
    system, history, question = trace(tmp_path)[1]["texts"]
    assert system == SYSTEM and question == "What was the code word?"
    assert "KEY-FACT-42" in history and "SYSTEM-PROMPT-MARKER" not in history


def test_without_a_marker_the_guess_takes_one_block_and_records_it(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'acp.db'}"
    session_id = run(opened(db, tmp_path, [acp.text_block(SYSTEM), acp.text_block(PASTED),
                                           acp.text_block("Summarise the file")]))
    user, agent, said = views(db, session_id)
    assert said == [[convlog.TextPart(text=PASTED), convlog.TextPart(text="Summarise the file")]]
    assert f"preamble: {SYSTEM}" in agent and "SYSTEM-PROMPT-MARKER" not in user
    # two blocks of the user's own and no system prompt: the guess is recorded, not lost
    other = tmp_path / "other"
    other.mkdir()
    db2 = f"sqlite:///{other / 'acp.db'}"
    session_id = run(opened(db2, other, [acp.text_block("Context: we ship on Friday."),
                                         acp.text_block("Plan the week")]))
    user, agent, said = views(db2, session_id)
    assert said == ["Plan the week"] and "preamble: Context: we ship on Friday." in agent


def test_with_preamble_none_only_a_marked_block_is_the_preamble(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'acp.db'}"
    session_id = run(opened(db, tmp_path, [marked("Be brief."), acp.text_block(SYSTEM),
                                           acp.text_block("hi")], "--preamble", "none"))
    user, agent, said = views(db, session_id)
    assert said == [[convlog.TextPart(text=SYSTEM), convlog.TextPart(text="hi")]]
    assert "preamble: Be brief." in agent and "Be brief." not in user
