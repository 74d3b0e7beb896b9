"""Issue 28 through the ACP proxy: a `session/load` replays tool calls in pairs.

Real processes, as in test_acp_proxy: the SDK's client -> `convlog acp` -> the SDK test
agent (tests/e2e/acp_agent.py). A turn ends with a tool call in flight, because the
agent process dies ("crash mid-tool") or the client cancels it ("slow mid-tool"); a new
proxy and a new agent process then serve `session/load`, and the updates the client
gets are checked with convlog's own pairing checker: every `tool_call` is followed by
a final `tool_call_update`, the lost one failed with a text that says why, and a
stored tool result without its call is not replayed at all.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

import convlog
from convlog.projections.pairing import Tools, check_pairs
from tests.e2e.acp_harness import RecordingClient, agent_command, env, proxy_command, trace

acp = pytest.importorskip("acp")

FINAL = ("completed", "failed")


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


def as_tools(update: dict[str, Any]) -> Tools:
    """A replayed update as the pairing checker sees it: a call, a final result, text
    (ends an exchange), or neutral (thoughts, progress without a final status)."""
    kind = update["sessionUpdate"]
    if kind == "tool_call":
        return Tools(calls=((update["toolCallId"], update.get("title", "")),), other=False)
    if kind == "tool_call_update" and update.get("status") in FINAL:
        return Tools(results=(update["toolCallId"],), other=False)
    return Tools(other=kind in ("user_message_chunk", "agent_message_chunk"))


def lost_updates(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [u for u in updates if u["sessionUpdate"] == "tool_call_update"
            and "was lost" in str(u.get("content"))]


async def cut_turn(client: RecordingClient, db: str, tmp_path: Path, how: str) -> str:
    """A session whose second turn ends with the `fetch` tool call in flight."""
    mode = "crash" if how == "crash" else "memory"
    async with acp.spawn_agent_process(client, *proxy_command(db, agent_command(mode, tmp_path)),
                                       env=env(), use_unstable_protocol=True) as (conn, _):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("hi")])
        if how == "crash":
            with pytest.raises(acp.RequestError):
                await conn.prompt(session_id=session.session_id,
                                  prompt=[acp.text_block("crash mid-tool")])
        else:
            pending = asyncio.ensure_future(conn.prompt(
                session_id=session.session_id, prompt=[acp.text_block("slow mid-tool")]))
            while not any(u.get("toolCallId") == "f1" for _, u in client.updates):
                await asyncio.sleep(0.02)  # the fetch call is in flight
            await conn.cancel(session_id=session.session_id)
            assert (await pending).stop_reason == "cancelled"
        return str(session.session_id)


async def load(client: RecordingClient, db: str, tmp_path: Path, session_id: str) -> None:
    async with acp.spawn_agent_process(
            client, *proxy_command(db, agent_command("memory", tmp_path)), env=env(),
            use_unstable_protocol=True) as (conn, _):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        await conn.load_session(cwd=str(tmp_path), session_id=session_id, mcp_servers=[])
        replayed = len(client.updates)
        await conn.prompt(session_id=session_id, prompt=[acp.text_block("and now?")])
        del client.updates[replayed:]  # keep the replay only


@pytest.mark.parametrize(("how", "why"), [
    ("crash", "the process running the tool stopped before recording its result"),
    ("cancel", "the turn was cancelled before the tool finished"),
])
def test_a_tool_call_cut_off_mid_flight_is_replayed_failed_with_why(
        tmp_path: Path, how: str, why: str) -> None:
    db = f"sqlite:///{tmp_path / 'acp.db'}"
    session_id = run(cut_turn(RecordingClient(), db, tmp_path, how))
    with convlog.open(db) as log:  # the log keeps exactly what happened: no result
        key = f"acp:{session_id}"
        parts: Any = log.messages(key)[3].content
        assert "f1" in {p.id for p in parts if isinstance(p, convlog.ToolUsePart)}
        assert "f1" not in {p.tool_use_id for p in parts
                            if isinstance(p, convlog.ToolResultPart)}
        # and a tool result whose call is nowhere (as a truncated import leaves it)
        log.append(key, convlog.tool("stray output", tool_call_id="ghost"))
        stored = log.messages(key)

    client = RecordingClient()
    run(load(client, db, tmp_path, session_id))
    replayed = [u for _, u in client.updates]
    assert check_pairs([as_tools(u) for u in replayed]) == []
    calls = [u["toolCallId"] for u in replayed if u["sessionUpdate"] == "tool_call"]
    assert calls == ["t0", "t1", "f1"]
    for call in calls:  # every call gets a final update, after it
        at = next(i for i, u in enumerate(replayed) if u.get("toolCallId") == call)
        assert any(u.get("toolCallId") == call and u.get("status") in FINAL
                   for u in replayed[at + 1:])
    lost, = lost_updates(replayed)
    assert (lost["toolCallId"], lost["status"]) == ("f1", "failed")
    text = lost["content"][0]["content"]["text"]
    assert "result of tool fetch was lost" in text and why in text
    assert "ghost" not in {u.get("toolCallId") for u in replayed}  # left out
    assert "stray output" not in str(replayed)
    # the user still sees how the turn ended, after the lost result
    texts = [u["content"]["text"] for u in replayed if u["sessionUpdate"] ==
             "agent_message_chunk"]
    assert texts[-1].startswith("[turn cut off" if how == "crash" else "[turn cancelled]")
    assert replayed.index(lost) < len(replayed) - 1
    with convlog.open(db) as log:  # replaying changed nothing in the log; the prompt
        assert log.messages(f"acp:{session_id}")[:5] == stored  # after it added its turn
    # the new agent process got the history with the same repair, once
    prompts = trace(tmp_path)
    assert len(prompts) == 3 and prompts[2]["texts"][-1] == "and now?"
    injected = prompts[2]["texts"][0]
    assert "conversation_history" in injected and "stray output" not in injected
    assert "result of tool fetch was lost" in injected and why in injected


def test_agent_sessions_load_replays_a_cancelled_tool_call_as_failed(tmp_path: Path) -> None:
    """The same replay from `AgentSessions.load`, in the docs' minimal agent (a real
    process): a turn its `record()` wrote as cancelled with a tool call in flight."""
    from convlog.acp import AgentSessions
    from tests.e2e.test_acp_helper import readme_agent

    db = f"sqlite:///{tmp_path / 'agent.db'}"
    agent = [sys.executable, str(readme_agent(tmp_path)), db]

    async def first() -> str:
        async with acp.spawn_agent_process(RecordingClient(), *agent, env=env()) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("hi")])
            return str(session.session_id)

    async def cancelled_turn(session_id: str) -> None:
        async with await convlog.open_async(db) as log:
            await AgentSessions(log, agent="minimal").record(
                session_id, [acp.text_block("run the slow tool")],
                [acp.start_tool_call("s1", "slow", status="in_progress")], "cancelled")

    client = RecordingClient()

    async def load(session_id: str) -> None:
        async with acp.spawn_agent_process(client, *agent, env=env()) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            await conn.load_session(cwd=str(tmp_path), session_id=session_id, mcp_servers=[])

    session_id = run(first())
    run(cancelled_turn(session_id))
    run(load(session_id))
    replayed = [u for _, u in client.updates]
    assert check_pairs([as_tools(u) for u in replayed]) == []
    lost, = lost_updates(replayed)
    assert (lost["toolCallId"], lost["status"]) == ("s1", "failed")
    assert "the turn was cancelled" in lost["content"][0]["content"]["text"]
