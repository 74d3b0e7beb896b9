"""Issue 41, item 5, for the ACP proxy: a conversation recorded through `convlog acp`
(real processes: the SDK's client, the proxy, the SDK test agent of
tests/e2e/acp_agent.py) exports one ``invoke_agent`` span per prompt, named after the
agent, with its ``chat`` span and an ``execute_tool`` span for the agent's tool
call, its result paired within the turn."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import convlog
from tests.e2e.acp_harness import RecordingClient, agent_command, env, proxy_command
from tests.integration.test_otel_export import check_tree
from tests.otlp_receiver import running

acp = pytest.importorskip("acp")


def test_an_acp_conversation_is_one_span_per_prompt(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from convlog.otel.exporter import Exporter
    from convlog.otel.sdk import Sender, endpoint
    from convlog.otel.tracking import TrackingFile

    db = f"sqlite:///{tmp_path / 'acp.db'}"

    async def talk() -> str:
        async with acp.spawn_agent_process(
                RecordingClient(), *proxy_command(db, agent_command("memory", tmp_path)),
                env=env()) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            for text in ("hi", "and again"):
                await conn.prompt(session_id=session.session_id,
                                  prompt=[acp.text_block(text)])
            return str(session.session_id)

    session_id = asyncio.run(asyncio.wait_for(talk(), 60))
    with running() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        sender = Sender()
        with convlog.open(db) as log:
            Exporter(log, TrackingFile(tmp_path / "otel.sqlite"), sender.send, endpoint(),
                     with_content=True).run()
            key = f"acp:{session_id}"
            assert check_tree(log, key, receiver.spans) == 2
        sender.close()
    tools = [s for s in receiver.spans if s.name.startswith("execute_tool")]
    assert [s.attributes["gen_ai.tool.name"] for s in tools] == ["lookup", "lookup"]
    assert all('"hits"' in str(s.attributes["gen_ai.tool.call.result"]) for s in tools)
