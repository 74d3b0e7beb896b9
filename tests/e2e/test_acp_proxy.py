"""`convlog acp` with real processes: the SDK's client -> the proxy -> an SDK agent.

Every test spawns the proxy (`python -m convlog.cli.main acp ... -- agent`) and talks
to it with the SDK's own client connection; the agents are tests/e2e/acp_agent.py in
its modes. The database is a real SQLite file, read back with the public API.
"""

from __future__ import annotations

import asyncio
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


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


async def session_with(client: RecordingClient, db: str, mode: str, workdir: Path,
                       prompts: list[str], kill: bool = False) -> str:
    """A new session through the proxy, `prompts` sent in order; returns its id.
    `kill`: then SIGKILL the proxy and the agent, as a crash of the host machine would."""
    async with acp.spawn_agent_process(client, *proxy_command(db, agent_command(mode, workdir)),
                                       env=env(), use_unstable_protocol=True) as (conn, proc):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_info=CLIENT_INFO)
        session = await conn.new_session(cwd=str(workdir), mcp_servers=[])
        for text in prompts:
            answer = await conn.prompt(session_id=session.session_id,
                                       prompt=[acp.text_block(text)])
            assert answer.stop_reason == "end_turn"
        if kill:
            proc.kill()
            kill_agents(workdir)
            await proc.wait()
        return str(session.session_id)


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'acp.db'}"


def test_a_turn_is_forwarded_and_recorded_as_one_user_and_one_assistant_message(
        tmp_path: Path, db: str) -> None:
    client = RecordingClient()

    async def scenario() -> tuple[str, Any]:
        async with acp.spawn_agent_process(
                client, *proxy_command(db, agent_command("memory", tmp_path)), env=env(),
                use_unstable_protocol=True) as (conn, _):
            init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION,
                                         client_info=CLIENT_INFO)
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            await conn.prompt(session_id=session.session_id,
                              prompt=[acp.text_block("the codeword is PELICAN")])
            await conn.prompt(session_id=session.session_id,
                              prompt=[acp.text_block("ask permission")])
            return session.session_id, init

    session_id, init = run(scenario())
    caps = init.agent_capabilities
    assert caps.load_session is True  # advertised whatever the agent says
    assert caps.session_capabilities.list is not None
    assert caps.session_capabilities.resume is not None
    assert caps.field_meta == {"x.test/unknown": {"kept": True}}  # passed through unchanged
    assert session_id != trace(tmp_path)[0]["session"]  # the proxy's id, not the agent's "0"
    # the client got every update, under its own session id
    assert {s for s, _ in client.updates} == {session_id}
    assert [u["sessionUpdate"] for _, u in client.updates][:5] == [
        "agent_thought_chunk", "tool_call", "tool_call_update", "agent_message_chunk",
        "usage_update"]
    # the agent's request to the client went through, under the client's session id
    assert client.asked == [session_id]
    assert "permission: selected/ok" in client.texts("agent_message_chunk")

    with convlog.open(db) as log:
        key = f"acp:{session_id}"
        state = log.state(key)
        assert (state.agent, state.channel, state.workspace) == ("test-memory", "acp",
                                                                 str(tmp_path))
        assert state.native_session_id == "0"
        started: Any = log.events(key)[0].event
        assert started.metadata["client"] == "e2e-client"
        assert started.metadata["client_version"] == "2.5"
        user, agent = log.messages(key)[:2]
        parts: Any = agent.content
        assert (user.role, user.content) == ("user", "the codeword is PELICAN")
        assert agent.role == "assistant" and agent.agent == "test-memory"
        kinds = [type(p).__name__ for p in parts]
        assert kinds == ["ThinkingPart", "ToolUsePart", "ToolResultPart", "TextPart"]
        tool_use, result = parts[1], parts[2]
        assert (tool_use.name, tool_use.arguments) == ("lookup",
                                                       '{"q": "the codeword is PELICAN"}')
        assert result.content == '{"hits": 0}' and not result.is_error
        assert str(agent.cost_usd) == "0.01"  # the session's cumulative cost went 0 -> 0.01


def test_after_a_kill_session_load_replays_and_the_new_agent_gets_the_history_once(
        tmp_path: Path, db: str) -> None:
    first = RecordingClient()
    session_id = run(session_with(first, db, "memory", tmp_path,
                                  ["remember: the codeword is PELICAN", "my name is Ada"],
                                  kill=True))  # every answered turn was recorded before
    with convlog.open(db) as log:  # `convlog expire` archived it meanwhile: a load reopens it
        log.archive(f"acp:{session_id}")

    client = RecordingClient()

    async def after_restart() -> Any:
        async with acp.spawn_agent_process(
                client, *proxy_command(db, agent_command("memory", tmp_path)), env=env(),
                use_unstable_protocol=True) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION,
                                  client_info=CLIENT_INFO)
            await conn.load_session(cwd=str(tmp_path), session_id=session_id, mcp_servers=[])
            replayed = list(client.updates)
            for text in ("what is the codeword?", "thanks"):
                await conn.prompt(session_id=session_id, prompt=[acp.text_block(text)])
            listed = await conn.list_sessions()
            return replayed, listed

    replayed, listed = run(after_restart())
    # the replay came before load answered: user and agent messages, tool calls
    kinds = [u["sessionUpdate"] for _, u in replayed]
    assert kinds.count("user_message_chunk") == 2 and kinds.count("tool_call") == 2
    assert [u["content"]["text"] for _, u in replayed
            if u["sessionUpdate"] == "user_message_chunk"] == [
        "remember: the codeword is PELICAN", "my name is Ada"]
    assert "agent_message_chunk" in kinds
    # the new agent process got the history in its first prompt, and only there
    prompts = trace(tmp_path)[2:]
    assert len({p["pid"] for p in trace(tmp_path)}) == 2
    assert len(prompts[0]["texts"]) == 2 and "PELICAN" in prompts[0]["texts"][0]
    assert "conversation_history" in prompts[0]["texts"][0]
    assert prompts[0]["texts"][1] == "what is the codeword?"
    assert prompts[1]["texts"] == ["thanks"]
    assert [s.session_id for s in listed.sessions] == [session_id]

    with convlog.open(db) as log:
        rows = {r.group: r for r in log.telemetry(by="strategy")}
        assert rows["session/resume"].failed == 1 and rows["session/load"].failed == 1
        assert rows["session/new"].succeeded == 1
        messages = log.messages(f"acp:{session_id}")
        assert [m.role for m in messages] == ["user", "assistant"] * 4
        assert messages[4].content == "what is the codeword?"  # not the injected text
        assert log.info(f"acp:{session_id}").status == "active"
        types = [type(e.event).__name__ for e in log.events(f"acp:{session_id}")]
        assert "ConversationReactivated" in types


@pytest.mark.parametrize(("mode", "tier"), [("load", "session/load"),
                                            ("resume", "session/resume")])
def test_a_native_tier_that_works_gets_no_injection(tmp_path: Path, db: str, mode: str,
                                                      tier: str) -> None:
    session_id = run(session_with(RecordingClient(), db, mode, tmp_path, ["first words"]))
    client = RecordingClient()

    async def reload() -> None:
        async with acp.spawn_agent_process(
                client, *proxy_command(db, agent_command(mode, tmp_path)), env=env(),
                use_unstable_protocol=True) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            await conn.load_session(cwd=str(tmp_path), session_id=session_id, mcp_servers=[])
            await conn.prompt(session_id=session_id, prompt=[acp.text_block("again")])

    run(reload())
    # the agent's own replay of a native load is not forwarded: the log replays, once
    assert client.texts("user_message_chunk") == ["first words"]
    assert trace(tmp_path)[-1]["texts"] == ["again"]  # nothing injected
    with convlog.open(db) as log:
        succeeded = [r for r in log.telemetry(by="strategy") if r.succeeded]
        assert [r.group for r in succeeded] == [tier]


def test_session_resume_does_not_replay(tmp_path: Path, db: str) -> None:
    session_id = run(session_with(RecordingClient(), db, "memory", tmp_path, ["hello"]))
    client = RecordingClient()

    async def resume() -> None:
        async with acp.spawn_agent_process(
                client, *proxy_command(db, agent_command("memory", tmp_path)), env=env(),
                use_unstable_protocol=True) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            await conn.resume_session(cwd=str(tmp_path), session_id=session_id,
                                      mcp_servers=[])
            assert client.updates == []
            await conn.prompt(session_id=session_id, prompt=[acp.text_block("still there?")])

    run(resume())
    assert "conversation_history" in trace(tmp_path)[-1]["texts"][0]


def test_a_flaky_resume_is_recorded_and_the_next_tiers_take_over(tmp_path: Path,
                                                                   db: str) -> None:
    session_id = run(session_with(RecordingClient(), db, "flaky", tmp_path, ["hello"]))

    async def reload() -> None:
        async with acp.spawn_agent_process(
                RecordingClient(), *proxy_command(db, agent_command("flaky", tmp_path)),
                env=env(), use_unstable_protocol=True) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            await conn.load_session(cwd=str(tmp_path), session_id=session_id, mcp_servers=[])
            await conn.prompt(session_id=session_id, prompt=[acp.text_block("again")])

    run(reload())
    with convlog.open(db) as log:
        reasons = {r.group: r for r in log.telemetry(by="strategy")}
        assert reasons["session/resume"].failed == 1
        assert reasons["session/load"].failed == 1
        assert reasons["session/new"].succeeded == 1
        failed: list[Any] = [e.event for e in log.events(f"acp:{session_id}")
                             if type(e.event).__name__ == "ResumeFailed"]
        assert [(f.strategy, f.reason) for f in failed] == [("session/resume", "error"),
                                                            ("session/load", "not_found")]
        assert "backend busy" in (failed[0].error or "")
    assert "conversation_history" in trace(tmp_path)[-1]["texts"][0]


def test_an_unknown_session_id_gets_the_protocol_error(tmp_path: Path, db: str) -> None:
    async def scenario() -> None:
        async with acp.spawn_agent_process(
                RecordingClient(), *proxy_command(db, agent_command("memory", tmp_path)),
                env=env(), use_unstable_protocol=True) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            with pytest.raises(acp.RequestError) as caught:
                await conn.load_session(cwd=str(tmp_path), session_id="nope", mcp_servers=[])
            assert caught.value.code == -32002
            assert caught.value.data["sessionId"] == "nope"
            # extension methods and unknown methods go to the agent and back unchanged
            echoed = await conn.ext_method("x.test/echo", {"a": [1, 2]})
            assert echoed == {"echo": "x.test/echo", "params": {"a": [1, 2]}}
            with pytest.raises(acp.RequestError) as caught:
                await conn._conn.send_request("nes/start", {"x": 1})
            assert caught.value.code == -32601

    run(scenario())


def test_the_agent_dying_mid_turn_records_what_was_said_and_a_new_agent_takes_over(
        tmp_path: Path, db: str) -> None:
    client = RecordingClient()

    async def scenario() -> str:
        async with acp.spawn_agent_process(
                client, *proxy_command(db, agent_command("crash", tmp_path)), env=env(),
                use_unstable_protocol=True) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("hi")])
            with pytest.raises(acp.RequestError) as caught:
                await conn.prompt(session_id=session.session_id,
                                  prompt=[acp.text_block("now crash")])
            assert "exited (code 3)" in str(caught.value.data)
            # any request after the crash finds a new agent process
            other = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            assert other.session_id != session.session_id
            answer = await conn.prompt(session_id=session.session_id,
                                       prompt=[acp.text_block("are you back?")])
            assert answer.stop_reason == "end_turn"
            return str(session.session_id)

    session_id = run(scenario())
    prompts = trace(tmp_path)
    assert len({p["pid"] for p in prompts}) == 2  # a new agent process took over
    assert "conversation_history" in prompts[-1]["texts"][0]
    with convlog.open(db) as log:
        messages = log.messages(f"acp:{session_id}")
        assert [m.role for m in messages] == ["user", "assistant"] * 3
        cut: Any = messages[3]
        assert cut.content[-2].text == "about to"  # what the user saw before the crash
        assert cut.content[-1].text.startswith("[turn cut off: the agent process exited")


def test_cancel_and_client_disconnect_record_the_turn_as_it_ended(tmp_path: Path,
                                                                  db: str) -> None:
    async def scenario() -> tuple[str, int | None]:
        async with acp.spawn_agent_process(
                RecordingClient(), *proxy_command(db, agent_command("memory", tmp_path)),
                env=env(), use_unstable_protocol=True) as (conn, proc):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            pending = asyncio.ensure_future(conn.prompt(
                session_id=session.session_id, prompt=[acp.text_block("slow one")]))
            while len(trace(tmp_path)) < 1:
                await asyncio.sleep(0.02)
            await conn.cancel(session_id=session.session_id)
            assert (await pending).stop_reason == "cancelled"
            # a second slow turn, then the client goes away in the middle of it
            second = asyncio.ensure_future(conn.prompt(session_id=session.session_id,
                                                       prompt=[acp.text_block("slow two")]))
            while len(trace(tmp_path)) < 2:
                await asyncio.sleep(0.02)
            assert proc.stdin is not None
            proc.stdin.close()
            code = await asyncio.wait_for(proc.wait(), 15)
            second.cancel()
            return str(session.session_id), code

    session_id, code = run(scenario())
    assert code == 0
    with convlog.open(db) as log:
        messages = log.messages(f"acp:{session_id}")
        assert [m.content if isinstance(m.content, str) else getattr(m.content[-1], "text", "")
                for m in messages] == ["slow one", "[turn cancelled]",
                                       "slow two", "[turn cancelled]"]


def test_a_load_uses_the_agent_session_bound_to_that_conversation(tmp_path: Path,
                                                                  db: str) -> None:
    async def two_sessions() -> list[str]:
        async with acp.spawn_agent_process(
                RecordingClient(), *proxy_command(db, agent_command("load", tmp_path)),
                env=env()) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            ids = []
            for text in ("first conversation", "second conversation"):
                session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
                await conn.prompt(session_id=session.session_id, prompt=[acp.text_block(text)])
                ids.append(str(session.session_id))
            return ids

    first, second = run(two_sessions())

    async def load_second() -> None:
        async with acp.spawn_agent_process(
                RecordingClient(), *proxy_command(db, agent_command("load", tmp_path)),
                env=env()) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            await conn.load_session(cwd=str(tmp_path), session_id=second, mcp_servers=[])
            await conn.prompt(session_id=second, prompt=[acp.text_block("which one?")])

    run(load_second())
    assert trace(tmp_path)[-1] == {**trace(tmp_path)[-1], "session": "1",
                                   "texts": ["which one?"]}
    with convlog.open(db) as log:
        assert log.state(f"acp:{second}").native_session_id == "1"
        assert [e.event.native_session_id for e in log.events(f"acp:{second}")  # type: ignore[union-attr]
                if type(e.event).__name__ == "ResumeAttempted"][:2] == ["1", "1"]
        assert not [e for e in log.events(f"acp:{first}")
                    if type(e.event).__name__ == "ResumeAttempted"]


def test_an_agent_that_reuses_its_session_ids_gets_the_history_after_every_restart(
        tmp_path: Path, db: str) -> None:
    """The test agent hands out "0" in every process: after the second restart, "0" is
    a new empty session again, and must get the history again."""
    session_id = run(session_with(RecordingClient(), db, "memory", tmp_path, ["PELICAN"],
                                  kill=True))

    async def load_and_ask(text: str) -> None:
        async with acp.spawn_agent_process(
                RecordingClient(), *proxy_command(db, agent_command("memory", tmp_path)),
                env=env()) as (conn, proc):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            await conn.load_session(cwd=str(tmp_path), session_id=session_id, mcp_servers=[])
            await conn.prompt(session_id=session_id, prompt=[acp.text_block(text)])
            proc.kill()
            kill_agents(tmp_path)

    run(load_and_ask("once"))
    run(load_and_ask("twice"))
    first, second = trace(tmp_path)[1:]
    assert first["session"] == second["session"] == "0"
    for prompt, text in ((first, "once"), (second, "twice")):
        assert "PELICAN" in prompt["texts"][0] and prompt["texts"][1] == text
    with convlog.open(db) as log:
        injected = [e.event for e in log.events(f"acp:{session_id}")
                    if type(e.event).__name__ == "HistoryInjected"]
        assert len(injected) == 2
        assert sum(r.memory_lost for r in log.telemetry(by="agent")) == 0
