"""Issue 28 through the ACP proxy: a `session/load` replays tool calls in pairs.

Real processes, as in test_acp_proxy: the SDK's client -> `convlog acp` -> the SDK test
agent (tests/e2e/acp_agent.py). A turn ends with a tool call in flight, because the
agent process dies ("crash mid-tool") or the client cancels it ("slow mid-tool"); a new
proxy and a new agent process then serve `session/load`, and the updates the client
gets are checked: every `tool_call` is followed, within its turn, by a final
`tool_call_update` (ACP lets the agent talk while a tool runs), the lost one failed
with a text that says why, and a stored tool result without its call is not replayed
at all.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

import convlog
from tests.e2e.acp_harness import (
    RecordingClient,
    agent_command,
    env,
    proxy_command,
    trace,
    unpaired,
)

acp = pytest.importorskip("acp")

FINAL = ("completed", "failed")


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


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
    assert unpaired(replayed) == []  # the turns' own updates, paired within each turn
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
    # the repair ends the cut turn (the last one replayed), marked as convlog's; the
    # record's end marker ("[turn cancelled]") is not replayed: the host never saw it
    assert replayed[-1] == lost
    assert lost["_meta"]["convlog/repair"]["kind"] == "synthesized"
    assert not any(u["content"]["text"].startswith("[turn ") for u in replayed
                   if u["sessionUpdate"] == "agent_message_chunk")
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
    assert unpaired(replayed) == []
    lost, = lost_updates(replayed)
    assert (lost["toolCallId"], lost["status"]) == ("s1", "failed")
    assert "the turn was cancelled" in lost["content"][0]["content"]["text"]
