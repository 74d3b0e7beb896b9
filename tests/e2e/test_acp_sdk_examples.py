"""The proxy in front of the SDK's OWN example agents, driven by the SDK's own example
client: the programs from the `agent-client-protocol` sdist of the installed version.

The sdist is downloaded from the package index into .pytest_cache (nothing of it is
committed); without network or index the tests skip, saying so."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

import convlog
from tests.e2e.acp_harness import CLIENT_INFO, RecordingClient, env, proxy_command
from tests.sdists import sdist

acp = pytest.importorskip("acp")


@pytest.fixture(scope="module")
def examples() -> Path:
    """examples/ of the sdist of the installed SDK version (downloaded once, cached)."""
    return sdist("agent-client-protocol", "examples/echo_agent.py") / "examples"


def test_the_sdk_example_client_through_the_proxy_to_the_sdk_example_agent(
        examples: Path, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'x.db'}"
    command = proxy_command(db, [sys.executable, str(examples / "agent.py")])
    done = subprocess.run([sys.executable, str(examples / "client.py"), *command],
                          input="hello there\nsecond line\n", capture_output=True, text=True,
                          timeout=60, env=env(), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "| Agent: Client sent:" in done.stdout
    assert "| Agent: hello there" in done.stdout and "| Agent: second line" in done.stdout
    with convlog.open(db) as log:
        (row,) = log.conversations()
        assert (row.agent, row.workspace) == ("example-agent", str(tmp_path))
        texts = [m.content for m in log.messages(row.key)]
        assert texts == ["hello there", "Client sent:hello there",
                         "second line", "Client sent:second line"]
        assert log.events(row.key)[0].event.metadata["client"] == "example-client"  # type: ignore[union-attr]


def test_the_sdk_echo_agent_forgets_and_convlog_gives_the_history_back(
        examples: Path, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'x.db'}"
    command = proxy_command(db, [sys.executable, str(examples / "echo_agent.py")])

    async def first() -> str:
        async with acp.spawn_agent_process(RecordingClient(), *command, env=env()) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION,
                                  client_info=CLIENT_INFO)
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            await conn.prompt(session_id=session.session_id,
                              prompt=[acp.text_block("the codeword is PELICAN")])
            return str(session.session_id)

    client = RecordingClient()

    async def second(session_id: str) -> None:
        async with acp.spawn_agent_process(client, *command, env=env()) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION,
                                  client_info=CLIENT_INFO)
            await conn.load_session(cwd=str(tmp_path), session_id=session_id, mcp_servers=[])
            await conn.prompt(session_id=session_id, prompt=[acp.text_block("and now?")])

    session_id = asyncio.run(asyncio.wait_for(first(), 60))
    asyncio.run(asyncio.wait_for(second(session_id), 60))
    assert client.texts("user_message_chunk") == ["the codeword is PELICAN"]  # the replay
    echoed = client.texts("agent_message_chunk")
    # the echo agent echoes its whole prompt: the injected history, then the new text
    assert echoed[0] == "the codeword is PELICAN"  # replayed from the log
    assert "conversation_history" in echoed[1] and "PELICAN" in echoed[1]
    assert echoed[2] == "and now?"
    with convlog.open(db) as log:
        worked = [r.group for r in log.telemetry(by="strategy") if r.succeeded]
        assert worked == ["session/new"]
        assert [r.group for r in log.telemetry(by="agent")] == ["echo_agent.py"]
