"""ACP's session methods through `convlog acp`, with real processes, for an agent that
has none of them (tests/e2e/acp_agent.py --mode memory): `session/close` and
`session/delete` are served by the proxy and recorded, `usage_update`'s context window
is kept per turn, `session_info_update`'s title goes into the catalog, and a fork is a
new conversation that names its parent and the point it forked at."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

import convlog
from convlog.domain.events import (
    AgentSessionClosed,
    ContextWindowReported,
    ConversationDeleted,
    ConversationForked,
    MessageAppended,
    TitleChanged,
)
from tests.e2e.acp_harness import (
    CLIENT_INFO,
    RecordingClient,
    agent_command,
    env,
    proxy_command,
    trace,
)

acp = pytest.importorskip("acp")


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_close_delete_window_title_and_fork_are_served_and_recorded(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'acp.db'}"
    client = RecordingClient()

    async def scenario() -> dict[str, Any]:
        async with acp.spawn_agent_process(
                client, *proxy_command(db, agent_command("memory", tmp_path)), env=env(),
                use_unstable_protocol=True) as (conn, _):
            init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION,
                                         client_info=CLIENT_INFO)
            kept = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            gone = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            for text in ("the code word is PELICAN", "title: Code words", "and HERON"):
                await conn.prompt(session_id=kept.session_id, prompt=[acp.text_block(text)])
            await conn.prompt(session_id=gone.session_id, prompt=[acp.text_block("bye")])
            fork = await conn.fork_session(session_id=kept.session_id, cwd=str(tmp_path),
                                           mcp_servers=[])
            await conn.prompt(session_id=fork.session_id,
                              prompt=[acp.text_block("what were the code words?")])
            await conn.prompt(session_id=kept.session_id, prompt=[acp.text_block("later")])
            closed = await conn.close_session(session_id=kept.session_id)
            deleted = await conn._conn.send_request("session/delete",
                                                    {"sessionId": gone.session_id})
            with pytest.raises(acp.RequestError) as unknown:
                await conn._conn.send_request("session/delete", {"sessionId": "nope"})
            listed = await conn.list_sessions()
            # a closed session is still a session: a load opens it again
            await conn.load_session(cwd=str(tmp_path), session_id=kept.session_id,
                                    mcp_servers=[])
            await conn.prompt(session_id=kept.session_id, prompt=[acp.text_block("again")])
            return {"init": init, "kept": kept.session_id, "gone": gone.session_id,
                    "fork": fork.session_id, "closed": closed, "deleted": deleted,
                    "unknown": unknown.value.code, "listed": listed}

    out = run(scenario())
    caps = out["init"].agent_capabilities.session_capabilities
    assert caps.close is not None and caps.delete is not None and caps.fork is not None
    assert out["deleted"] == {} and out["unknown"] == -32002
    listed = {s.session_id: s for s in out["listed"].sessions}
    assert out["gone"] not in listed  # deleted: no longer listed ...
    assert listed[out["kept"]].title == "Code words"  # the agent's title, in the catalog
    kept, gone, fork = (f"acp:{out[k]}" for k in ("kept", "gone", "fork"))
    prompts = trace(tmp_path)
    forked = next(p for p in prompts if p["texts"][-1] == "what were the code words?")
    assert "conversation_history" in forked["texts"][0]  # the fork starts from the parent
    assert "PELICAN" in forked["texts"][0] and "HERON" in forked["texts"][0]
    assert "later" not in forked["texts"][0]

    with convlog.open(db) as log:
        events = [r.event for r in log.events(gone)]
        assert any(isinstance(e, ConversationDeleted) for e in events)
        assert log.messages(gone)[0].content == "bye"  # ... but not erased
        kept_events = log.events(kept)
        assert any(isinstance(r.event, AgentSessionClosed) for r in kept_events)
        windows = [r.event for r in kept_events if isinstance(r.event, ContextWindowReported)]
        assert [(w.used, w.size) for w in windows][:3] == [(100, 1000), (200, 1000),
                                                           (300, 1000)]
        agent_ids = [m.message_id for m in log.messages(kept) if m.role == "assistant"]
        assert [w.message_id for w in windows] == agent_ids  # one per turn, named
        assert any(isinstance(r.event, TitleChanged) for r in kept_events)
        assert log.state(kept).title == "Code words"
        # a fork by reference (issue 47): the parent's history up to its last message
        # before the fork, then the fork's own; lineage in the catalog
        info = log.info(fork)
        assert info.parent == kept and info.channel == "acp"
        started: Any = next(r.event for r in log.events(fork)
                            if isinstance(r.event, ConversationForked))
        assert started.at_message_id == info.fork_at
        parent_version = started.metadata["forked_at_version"]
        assert started.metadata["forked_from"] == kept
        # the parent's log at the fork point ends with the turn before the fork
        before = [r.event for r in log.events(kept, upto=parent_version)
                  if isinstance(r.event, MessageAppended)]
        assert before[-2].content == "and HERON"
        said = [m.content for m in log.messages(fork)]
        assert said[0] == "the code word is PELICAN" and "and HERON" in said
        assert said[-2] == "what were the code words?" and "later" not in said
        assert {r.key: r for r in log.conversations()}[kept].children == [fork]
        assert gone not in {r.key for r in log.conversations()}  # like an archived one
        rows = {r.key: r for r in log.conversations(include_archived=True)}
        assert rows[gone].status == "deleted" and rows[kept].title == "Code words"


def test_a_deleted_session_is_not_found_by_load_resume_or_prompt(tmp_path: Path) -> None:
    """`session/delete` removes the session from the host's view: it is no longer
    listed, and loading, resuming or prompting it is -32002 (so the host falls back to
    `session/new`), while the log keeps every event (forget is the erasure)."""
    db = f"sqlite:///{tmp_path / 'acp.db'}"

    async def scenario() -> dict[str, int]:
        codes: dict[str, int] = {}
        async with acp.spawn_agent_process(
                RecordingClient(), *proxy_command(db, agent_command("memory", tmp_path)),
                env=env(), use_unstable_protocol=True) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION,
                                  client_info=CLIENT_INFO)
            gone = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            await conn.prompt(session_id=gone.session_id, prompt=[acp.text_block("bye")])
            await conn._conn.send_request("session/delete", {"sessionId": gone.session_id})
            calls: dict[str, Callable[[], Awaitable[Any]]] = {
                "load": lambda: conn.load_session(cwd=str(tmp_path), mcp_servers=[],
                                                  session_id=gone.session_id),
                "resume": lambda: conn.resume_session(cwd=str(tmp_path), mcp_servers=[],
                                                      session_id=gone.session_id),
                "prompt": lambda: conn.prompt(session_id=gone.session_id,
                                              prompt=[acp.text_block("still there?")]),
            }
            for name, call in calls.items():
                with pytest.raises(acp.RequestError) as caught:
                    await call()
                codes[name] = caught.value.code
        return codes

    assert run(scenario()) == {"load": -32002, "resume": -32002, "prompt": -32002}
    with convlog.open(db) as log:
        (row,) = log.conversations(include_archived=True)
        assert row.status == "deleted"
        assert log.messages(row.key)[0].content == "bye"  # recorded, not erased
