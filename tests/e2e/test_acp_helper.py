"""`convlog.acp.AgentSessions`: the README's minimal agent, run as it is printed there.

The SDK client creates a session and prompts; the agent process is stopped; a new
one answers `session/load` from the log: the client gets the replay, and the agent
has the history for its model."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

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
