"""`convlog.acp.AgentSessions`: the README's minimal agent, run as it is printed there.

The SDK client creates a session and prompts; the agent process is stopped; a new
one answers `session/load` from the log: the client gets the replay, and the agent
has the history for its model."""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

import convlog
from tests.e2e.acp_harness import RecordingClient, env

acp = pytest.importorskip("acp")
README = (Path(__file__).resolve().parents[2] / "docs" / "acp.md").read_text()


def readme_agent(tmp_path: Path) -> Path:
    section = README.split("### For agents written in Python", 1)[1]
    code = section.split("```python", 1)[1].split("```", 1)[0]
    path = tmp_path / "minimal_agent.py"
    path.write_text(code)
    return path


def test_the_readme_agent_loads_its_sessions_from_the_log(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'agent.db'}"
    agent = [sys.executable, str(readme_agent(tmp_path)), db]

    async def first() -> str:
        async with acp.spawn_agent_process(RecordingClient(), *agent, env=env()) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            await conn.prompt(session_id=session.session_id,
                              prompt=[acp.text_block("the codeword is PELICAN")])
            return str(session.session_id)

    client = RecordingClient()

    async def second(session_id: str) -> None:
        async with acp.spawn_agent_process(client, *agent, env=env()) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            with pytest.raises(acp.RequestError) as caught:
                await conn.load_session(cwd=str(tmp_path), session_id="nope", mcp_servers=[])
            assert caught.value.code == -32002
            await conn.load_session(cwd=str(tmp_path), session_id=session_id, mcp_servers=[])
            await conn.prompt(session_id=session_id, prompt=[acp.text_block("what was it")])

    session_id = asyncio.run(asyncio.wait_for(first(), 60))
    asyncio.run(asyncio.wait_for(second(session_id), 60))
    assert client.texts("user_message_chunk") == ["the codeword is PELICAN"]
    replayed, answer = client.texts("agent_message_chunk")
    assert replayed == "the codeword is PELICAN? I have 0 chars of history"
    assert answer.startswith("what was it? I have ") and not answer.endswith(" 0 chars of history")
    with convlog.open(db) as log:
        messages = log.messages(f"acp:{session_id}")
        assert [m.content for m in messages] == [
            "the codeword is PELICAN", replayed, "what was it", answer]
        assert log.state(f"acp:{session_id}").agent == "minimal"


NATIVE_AGENT = Path(__file__).resolve().parent / "acp_native_agent.py"


def test_load_records_the_resume_and_a_native_agent_resumes_natively_first(
        tmp_path: Path) -> None:
    """`AgentSessions.load` records the resume as the proxy does (attempt, outcome,
    injection), and gives a natively-resuming agent its bound session id first."""
    db = f"sqlite:///{tmp_path / 'agent.db'}"
    store = tmp_path / "native-sessions"

    async def session(*load: str, prompt: str, native: bool = True) -> list[str]:
        client = RecordingClient()
        agent = [sys.executable, str(NATIVE_AGENT), db, str(store),
                 *([] if native else ["--no-native"])]
        async with acp.spawn_agent_process(client, *agent, env=env()) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            if load:
                session_id = load[0]
                await conn.load_session(cwd=str(tmp_path), session_id=session_id,
                                        mcp_servers=[])
            else:
                session_id = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
                              ).session_id
            await conn.prompt(session_id=session_id, prompt=[acp.text_block(prompt)])
        return [session_id, *client.texts("agent_message_chunk")]

    def run(coro: Any) -> list[str]:
        return asyncio.run(asyncio.wait_for(coro, 60))

    session_id, first = run(session(prompt="the codeword is PELICAN"))
    assert first.endswith("[new] history=False")
    # the agent kept its own session: native resume, no history for the model
    answer = run(session(session_id, prompt="still there?"))[-1]
    assert "[native:native-" in answer and answer.endswith("history=False")
    # its own session is lost: native resume fails, the model gets convlog's history
    shutil.rmtree(store)
    answer = run(session(session_id, prompt="what was it?"))[-1]
    assert "[history:native-" in answer and answer.endswith("history=True")
    # an agent without native resume: the history, recorded the same way
    answer = run(session(session_id, prompt="and now?", native=False))[-1]
    assert "[history:native-" in answer and answer.endswith("history=True")

    with convlog.open(db) as log:
        story = [(r.event.event_name(), getattr(r.event, "strategy", None))
                 for r in log.events(f"acp:{session_id}")
                 if r.event.event_name().startswith(("resume_", "history_"))]
        assert story == [
            ("resume_attempted", "native"), ("resume_succeeded", "native"),
            ("resume_attempted", "native"), ("resume_failed", "native"),
            ("resume_attempted", "history"), ("resume_succeeded", "history"),
            ("history_injected", None),
            ("resume_attempted", "history"), ("resume_succeeded", "history"),
            ("history_injected", None)]
        rows = {r.group: r for r in log.telemetry(by="strategy")}
        assert rows["native"].succeeded == 1 and rows["native"].failed == 1
        assert rows["history"].succeeded == 2


def test_record_keeps_the_agents_updates_and_a_marked_preamble_as_such(tmp_path: Path) -> None:
    """`record()` writes a turn as the proxy does (issue 41): the updates the agent sent
    kept for the replay, a block the host marked for the model recorded as the
    preamble, the rest as the user's words; nothing the host sent is dropped."""
    from acp.schema import Annotations, TextContentBlock

    from convlog.acp import AgentSessions

    system = TextContentBlock(type="text", text="You are terse.",
                              annotations=Annotations(audience=["assistant"]))
    call = acp.start_tool_call("c1", "Read a.py", kind="read", status="completed",
                               raw_output={"lines": 3})

    async def scenario() -> None:
        async with await convlog.open_async(f"sqlite:///{tmp_path / 'a.db'}") as log:
            sessions = AgentSessions(log, agent="minimal")
            session_id = await sessions.new(str(tmp_path))
            await sessions.record(session_id, [system, acp.text_block("read a.py")],
                                  [call, acp.update_agent_message_text("3 lines")])
            key = f"acp:{session_id}"
            user, agent = await log.messages(key)
            assert user.content == "read a.py"
            assert agent.raw == {"acp": [call.model_dump(mode="json", by_alias=True,
                                                         exclude_none=True),
                                         {"sessionUpdate": "agent_message_chunk",
                                          "content": {"type": "text", "text": "3 lines"}}]}
            entries = (await log.view(key, "agent")).entries
            assert (entries[0].kind, entries[0].text) == ("preamble", "You are terse.")

    asyncio.run(scenario())
