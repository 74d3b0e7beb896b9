"""What a host saw live through `convlog acp` comes back the same after a restart
(issue 41 item 1), and two prompts sent at once are both recorded (issue 43 item 7).

Real processes: the Python ACP SDK's client -> `convlog acp` -> tests/e2e/acp_agent.py.
The round-trip rule (docs/acp.md): `session/load` replays each turn as the prompt's
blocks (`user_message_chunk`) then every update the agent sent during the turn, as it
sent it; the only differences allowed are text chunks of one message joined into one
(`coalesced`) and the pairing rule's marked repairs (none here: every call finished).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import convlog
from convlog.projections.transcript import render_content
from tests.e2e.acp_harness import (
    CLIENT_INFO,
    RecordingClient,
    agent_command,
    coalesced,
    env,
    kill_agents,
    proxy_command,
    trace,
)

acp = pytest.importorskip("acp")

PROMPTS = ["title: Weather desk", "edit the file, twice", "thanks"]


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 180))  # a bound for a hung run, not a speed test


@contextlib.asynccontextmanager
async def new_session(client: RecordingClient, db: str, workdir: Path
                      ) -> AsyncIterator[tuple[Any, Any, str]]:
    """(connection, proxy process, session id) of a new session through the proxy in
    front of the test agent (memory mode)."""
    async with acp.spawn_agent_process(client, *proxy_command(db, agent_command("memory", workdir)),
                                       env=env(), use_unstable_protocol=True) as (conn, proc):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_info=CLIENT_INFO)
        session = await conn.new_session(cwd=str(workdir), mcp_servers=[])
        yield conn, proc, str(session.session_id)


async def killed(proc: Any, workdir: Path) -> None:
    """Host side done: proxy and agent die at once, as when the machine goes down."""
    proc.kill()
    kill_agents(workdir)
    await proc.wait()


async def live_turns(db: str, workdir: Path) -> tuple[str, list[list[dict[str, Any]]]]:
    """A session of PROMPTS; returns its id and what the host got during each turn.
    Then host, proxy and agent are killed."""
    client = RecordingClient()
    async with new_session(client, db, workdir) as (conn, proc, session_id):
        turns = []
        for text in PROMPTS:
            start = len(client.updates)
            answer = await conn.prompt(session_id=session_id, prompt=[acp.text_block(text)])
            assert answer.stop_reason == "end_turn"
            turns.append([u for _, u in client.updates[start:]])
        await killed(proc, workdir)
        return session_id, turns


async def replay(db: str, workdir: Path, session_id: str) -> list[dict[str, Any]]:
    client = RecordingClient()
    async with acp.spawn_agent_process(client, *proxy_command(db, agent_command("memory", workdir)),
                                       env=env(), use_unstable_protocol=True) as (conn, _):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_info=CLIENT_INFO)
        await conn.load_session(cwd=str(workdir), session_id=session_id, mcp_servers=[])
        await conn.prompt(session_id=session_id, prompt=[acp.text_block("ping")])  # flushes
        ours = [u for sid, u in client.updates if sid == session_id]
        ping = next(i for i, u in enumerate(ours) if u.get("sessionUpdate") == "agent_thought_chunk"
                    and "ping" in u["content"]["text"])
        return ours[:ping]


def test_a_load_replays_the_tool_calls_usage_and_title_the_host_saw_live(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'acp.db'}"
    session_id, turns = run(live_turns(db, tmp_path))
    edit = next(u for u in turns[1] if u.get("toolCallId") == "e1"
                and u.get("status") == "completed")
    assert edit["rawOutput"] == {"tempC": 21, "sky": "clear"}  # what the host saw live
    assert edit["content"][0]["type"] == "diff" and edit["locations"][0]["line"] == 3

    replayed = run(replay(db, tmp_path, session_id))

    expected: list[dict[str, Any]] = []
    for text, live in zip(PROMPTS, turns, strict=True):
        expected.append({"sessionUpdate": "user_message_chunk",
                         "content": {"type": "text", "text": text}})
        expected.extend(coalesced(live))
    assert replayed == expected
    # what the issue names, one by one: tool calls as they were, the last usage and title
    calls = [u for u in replayed if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
    assert {u.get("kind") for u in calls if u["sessionUpdate"] == "tool_call"} == {
        "search", "edit"}
    replayed_edit = next(u for u in calls if u["toolCallId"] == "e1" and "rawOutput" in u)
    assert replayed_edit == edit  # kind, rawOutput, locations, the diff: as they were
    usage = [u for u in replayed if u["sessionUpdate"] == "usage_update"]
    assert usage[-1] == [u for t in turns for u in t if u["sessionUpdate"] == "usage_update"][-1]
    titles = [u["title"] for u in replayed if u["sessionUpdate"] == "session_info_update"]
    assert titles == ["Weather desk"]
    # the readable record is unchanged: one user and one assistant message per turn
    with convlog.open(db) as log:
        messages = log.messages(f"acp:{session_id}")
        assert [m.role for m in messages] == ["user", "assistant"] * (len(PROMPTS) + 1)  # + ping
        assert messages[3].tool_calls == [] and any(
            getattr(p, "id", None) == "e1" for p in messages[3].content)


def test_a_title_and_usage_sent_after_a_turn_are_replayed_as_they_came(
        tmp_path: Path) -> None:
    """Updates the agent sends outside a prompt turn are no message's: they are kept
    with their facts (title_changed, context_window_reported) and replayed in place."""
    db = f"sqlite:///{tmp_path / 'acp.db'}"

    async def live() -> tuple[str, list[dict[str, Any]]]:
        client = RecordingClient()
        async with new_session(client, db, tmp_path) as (conn, proc, session_id):
            await conn.prompt(session_id=session_id, prompt=[acp.text_block("tell me later")])
            while not any(u.get("used") == 777 for _, u in client.updates):
                await asyncio.sleep(0.05)  # the agent's updates after the turn came
            await conn.prompt(session_id=session_id, prompt=[acp.text_block("ok")])
            await killed(proc, tmp_path)
            return session_id, [u for _, u in client.updates]

    session_id, seen = run(live())
    after = [u for u in seen if u.get("used") == 777 or "updatedAt" in u]
    assert [u["sessionUpdate"] for u in after] == ["session_info_update", "usage_update"]
    replayed = run(replay(db, tmp_path, session_id))
    assert replayed == [{"sessionUpdate": "user_message_chunk",
                         "content": {"type": "text", "text": "tell me later"}},
                        *coalesced(seen[:seen.index(after[0])]), *after,
                        {"sessionUpdate": "user_message_chunk",
                         "content": {"type": "text", "text": "ok"}},
                        *coalesced(seen[seen.index(after[1]) + 1:])]
    with convlog.open(db) as log:
        row = next(r for r in log.conversations() if r.key == f"acp:{session_id}")
        assert row.title == "Named after the turn"


def test_two_prompts_sent_at_once_are_both_recorded_in_order(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'acp.db'}"

    async def scenario() -> str:
        async with new_session(RecordingClient(), db, tmp_path) as (conn, _, session_id):
            answers = await asyncio.gather(*(
                conn.prompt(session_id=session_id, prompt=[acp.text_block(text)])
                for text in ("first at once", "second at once")))
            assert [a.stop_reason for a in answers] == ["end_turn", "end_turn"]
            return session_id

    session_id = run(scenario())
    assert [p["texts"] for p in trace(tmp_path)] == [["first at once"], ["second at once"]]
    with convlog.open(db) as log:
        messages = log.messages(f"acp:{session_id}")
        assert [(m.role, m.content if m.role == "user" else None) for m in messages] == [
            ("user", "first at once"), ("assistant", None),
            ("user", "second at once"), ("assistant", None)]
        replies = [render_content(m.content)
                   for m in messages if m.role == "assistant"]
        assert "you said 'first at once'" in replies[0]
        assert "you said 'second at once'" in replies[1]
