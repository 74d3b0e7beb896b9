"""The ACP proxy's row: a host (the Python ACP SDK's client) -> `convlog acp` -> the
test agent (tests/e2e/acp_agent.py, memory mode: it forgets on restart), real
processes. The first turn and the next two are each a host, proxy and agent of their
own (killed after, as when the machine goes down), the session reopened with
`session/load`; the agent numbers its tool calls per process, so its `t0` comes back
after the restart.

The conversation is the host's prompts and what the agent did, as the host saw it
live: the first prompt is the system prompt (a block marked for the model), an image
and "title: Weather desk" (the agent names the session), each turn a `lookup` call
with its result and a `usage_update`, the third turn's "mid-tool" a call still in
flight when the turn ends (its result lost). The surface's own read is `session/load`
after everything, on a copy of the log (a load's replay is flushed by a prompt,
which would add a turn to the conversation the other readers read).
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any, cast

from tests.fidelity.conversation import PNG_B64 as IMAGE
from tests.fidelity.conversation import SYSTEM, Fact, Facts, call, image_of_bytes, lost

PROMPTS = ["title: Weather desk", "and tomorrow?", "and sunday, mid-tool"]


def prompt_blocks(turn: int) -> list[Any]:
    import acp
    from acp.schema import Annotations, ImageContentBlock, TextContentBlock

    if turn:
        return [acp.text_block(PROMPTS[turn])]
    return [TextContentBlock(type="text", text=SYSTEM,
                             annotations=Annotations(audience=["assistant"])),
            ImageContentBlock(type="image", data=IMAGE, mime_type="image/png"),
            acp.text_block(PROMPTS[0])]


def update_facts(facts: Facts, updates: list[dict[str, Any]]) -> None:
    """`session/update`s as facts, chunks already coalesced (`coalesced-chunks`). A
    call is its `title` and `rawInput`; its result the final update's text content,
    else its `rawOutput`; a final update the proxy marked as its repair is a lost
    result."""
    names: dict[str, str] = {}
    for u in updates:
        kind = u.get("sessionUpdate")
        content = u.get("content")
        if kind in ("user_message_chunk", "agent_message_chunk") and isinstance(content, dict):
            role = "user" if kind == "user_message_chunk" else "assistant"
            if content.get("type") == "text":
                facts.text(role, content["text"])
            elif content.get("type") == "image":
                facts.add(image_of_bytes(content["data"]))
        elif kind == "tool_call":
            names[u["toolCallId"]] = u.get("title", "")
            facts.add(call(u.get("title", ""), u.get("rawInput") or {}))
        if kind in ("tool_call", "tool_call_update") and u.get("status") in (
                "completed", "failed"):
            if "convlog/repair" in (u.get("_meta") or {}):
                facts.add(lost(names.get(u["toolCallId"], "")))
                continue
            texts = [c["content"]["text"] for c in u.get("content") or ()
                     if c.get("type") == "content" and c["content"].get("type") == "text"]
            facts.text("result", "\n".join(texts) if texts else json.dumps(
                u.get("rawOutput"), separators=(",", ":"), sort_keys=True))
        elif kind == "usage_update":
            facts.add(Fact("usage", f"{u['used']}/{u['size']}"))
        elif kind == "session_info_update" and u.get("title"):
            facts.add(Fact("title", u["title"]))


def in_flight(updates: list[dict[str, Any]]) -> list[str]:
    """The titles of the calls that got no final update."""
    calls = {u["toolCallId"]: u.get("title", "") for u in updates
             if u.get("sessionUpdate") == "tool_call"}
    for u in updates:
        if u.get("status") in ("completed", "failed"):
            calls.pop(u.get("toolCallId", ""), None)
    return list(calls.values())


async def _turns(db: str, workdir: Path, turns: list[int], session_id: str | None
                 ) -> tuple[str, list[list[dict[str, Any]]]]:
    """`turns` in one host, proxy and agent, all killed after; what the host saw
    during each turn."""
    import acp

    from tests.e2e.acp_harness import (
        CLIENT_INFO,
        RecordingClient,
        agent_command,
        env,
        kill_agents,
        proxy_command,
    )

    client = RecordingClient()
    async with acp.spawn_agent_process(cast(Any, client),
                                       *proxy_command(db, agent_command("memory", workdir)),
                                       env=env(), use_unstable_protocol=True) as (conn, proc):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_info=CLIENT_INFO)
        if session_id is None:
            session_id = str((await conn.new_session(cwd=str(workdir), mcp_servers=[])).session_id)
        else:
            await conn.load_session(cwd=str(workdir), session_id=session_id, mcp_servers=[])
        for turn in turns:
            answer = await conn.prompt(session_id=session_id, prompt=prompt_blocks(turn))
            assert answer.stop_reason == "end_turn"
        ours = [u for sid, u in client.updates if sid == session_id]
        starts = [next(i for i, u in enumerate(ours) if u.get("sessionUpdate") ==
                       "agent_thought_chunk" and repr(PROMPTS[turn]) in u["content"]["text"])
                  for turn in turns]
        proc.kill()
        kill_agents(workdir)
        await proc.wait()
        return session_id, [ours[a:b] for a, b in zip(starts, [*starts[1:], len(ours)],
                                                       strict=True)]


async def _replay(db: str, workdir: Path, session_id: str) -> list[dict[str, Any]]:
    import acp

    from tests.e2e.acp_harness import (
        CLIENT_INFO,
        RecordingClient,
        agent_command,
        env,
        proxy_command,
    )

    client = RecordingClient()
    async with acp.spawn_agent_process(cast(Any, client),
                                       *proxy_command(db, agent_command("memory", workdir)),
                                       env=env(), use_unstable_protocol=True) as (conn, _):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_info=CLIENT_INFO)
        await conn.load_session(cwd=str(workdir), session_id=session_id, mcp_servers=[])
        await conn.prompt(session_id=session_id, prompt=[acp.text_block("ping")])  # flushes
        ours = [u for sid, u in client.updates if sid == session_id]
        ping = next(i for i, u in enumerate(ours) if u.get("sessionUpdate") ==
                    "agent_thought_chunk" and "'ping'" in u["content"]["text"])
        return ours[:ping]


def acp_proxy(tmp: Path) -> Any:
    from tests.e2e.acp_harness import coalesced
    from tests.fidelity.writers import Written

    db = f"sqlite:///{tmp / 'acp.db'}"
    session_id: str | None = None
    live: list[list[dict[str, Any]]] = []
    for turns in ([0], [1, 2]):  # a restart between the first two turns: t0 again
        session_id, seen = asyncio.run(asyncio.wait_for(
            _turns(db, tmp, turns, session_id), 180))
        live += seen
    assert session_id is not None
    copy = tmp / "replay"
    copy.mkdir()
    for path in tmp.glob("acp.db*"):
        shutil.copy(path, copy / path.name)
    replayed = asyncio.run(asyncio.wait_for(
        _replay(f"sqlite:///{copy / 'acp.db'}", copy, session_id), 180))
    sent = Facts()
    for turn, updates in enumerate(live):
        if turn == 0:
            sent.add(Fact("system", SYSTEM))
            sent.add(image_of_bytes(IMAGE))
        sent.text("user", PROMPTS[turn])
        update_facts(sent, coalesced(updates))
        for name in in_flight(updates):  # a call the turn ended without: its result is lost
            sent.add(lost(name))
    native = Facts()
    update_facts(native, replayed)
    return Written("acp", db, f"acp:{session_id}", sent.sorted(), native, tmp)
