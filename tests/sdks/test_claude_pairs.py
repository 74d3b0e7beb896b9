"""Issue 28 with the real `claude_agent_sdk`: what the store's `load` hands back, as
the SDK's own reader (`get_session_messages_from_store`) rebuilds the conversation
chain from it, answers every tool_use with a tool_result in the next user message and
holds no tool_result without its tool_use, whatever was stored."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("claude_agent_sdk")
from claude_agent_sdk import get_session_messages_from_store

from convlog.integrations.claude_agent_sdk import ConvlogSessionStore
from convlog.services.log import application
from tests.sdks.test_claude_agent_sdk import KEY, TRANSCRIPT, entry

CALL = TRANSCRIPT[2]  # a2: tool_use toolu_1, child of a1


def blocks(message: Any) -> list[dict[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def api_problems(messages: list[Any]) -> list[str]:
    """The Messages API's rule on the chain the SDK rebuilt (consecutive assistant
    records of one response merged, as the API sees them)."""
    problems: list[str] = []
    pending: set[str] = set()
    for i, m in enumerate(messages):
        body = m.message if isinstance(m.message, dict) else {}
        results = {b["tool_use_id"] for b in blocks(body) if b.get("type") == "tool_result"}
        calls = {b["id"] for b in blocks(body) if b.get("type") == "tool_use"}
        if m.type == "user":
            if results - pending:
                problems.append(f"{i}: tool_result for {sorted(results - pending)} "
                                "without tool_use")
            if pending - results:
                problems.append(f"{i}: tool_use {sorted(pending - results)} unanswered")
            pending = set()
        else:
            pending |= calls
    if pending:
        problems.append(f"end: tool_use {sorted(pending)} unanswered")
    return problems


def chain(tmp_path: Path, entries: list[Any]) -> tuple[list[Any], list[Any]]:
    async def go() -> tuple[list[Any], list[Any]]:
        store = ConvlogSessionStore(f"sqlite:///{tmp_path / 'c.db'}")
        try:
            await store.append(KEY, entries)
            loaded = await store.load(KEY) or []
            messages = await get_session_messages_from_store(
                store, KEY["session_id"], directory="/home/me/api")
            return loaded, messages
        finally:
            store.close()
    return asyncio.run(go())


def test_a_tool_use_whose_process_died_is_answered(tmp_path: Path) -> None:
    loaded, messages = chain(tmp_path, TRANSCRIPT[:3])
    assert loaded[:3] == TRANSCRIPT[:3]
    lost = loaded[3]
    assert lost["parentUuid"] == "a2" and lost["type"] == "user"
    assert blocks(lost["message"])[0]["tool_use_id"] == "toolu_1"
    assert api_problems(messages) == []


def test_the_turn_after_a_lost_result_is_chained_to_it(tmp_path: Path) -> None:
    later = entry("u9", "user", {"role": "user", "content": "are you there?"}, "a2")
    _, messages = chain(tmp_path, [*TRANSCRIPT[:3], later])
    assert [m.uuid for m in messages][:3] == ["u1", "a1", "a2"]
    assert messages[-1].uuid == "u9" and len(messages) == 5
    assert api_problems(messages) == []


def test_a_tool_result_without_tool_use_is_left_out(tmp_path: Path) -> None:
    orphan = entry("u2", "user", {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_gone", "content": "x"},
        {"type": "text", "text": "and this"}]}, "u1")
    loaded, messages = chain(tmp_path, [TRANSCRIPT[0], orphan])
    assert blocks(loaded[1]["message"]) == [{"type": "text", "text": "and this"}]
    assert api_problems(messages) == []


def test_a_well_paired_transcript_comes_back_exactly(tmp_path: Path) -> None:
    loaded, messages = chain(tmp_path, TRANSCRIPT)
    assert loaded == TRANSCRIPT and api_problems(messages) == []


def lost_text_of(entry_: Any) -> str:
    (block,) = blocks(entry_["message"])
    assert block["type"] == "tool_result" and block["is_error"] is True
    return str(block["content"])


def test_a_lost_result_says_the_process_died_when_nothing_else_is_known(
        tmp_path: Path) -> None:
    loaded, _ = chain(tmp_path, TRANSCRIPT[:3])
    assert "the process running the tool stopped" in lost_text_of(loaded[3])


def test_a_lost_result_of_a_cancelled_turn_says_it_was_cancelled(tmp_path: Path) -> None:
    """Claude Code records an interrupt as the next user entry; the synthetic result
    names that cause (convlog.projections.pair_causes), not a dead process."""
    stop = entry("u9", "user", {"role": "user", "content": [
        {"type": "text", "text": "[Request interrupted by user for tool use]"}]}, "a2")
    loaded, messages = chain(tmp_path, [*TRANSCRIPT[:3], stop])
    assert loaded[3]["parentUuid"] == "a2" and loaded[4]["uuid"] == "u9"
    assert "the turn was cancelled" in lost_text_of(loaded[3])
    assert api_problems(messages) == []


def test_a_lost_result_of_an_imported_transcript_says_so(tmp_path: Path) -> None:
    """A conversation whose start names an importer (metadata ``source``) and whose
    transcript stops after a tool_use: the result is missing in the import."""
    from convlog.domain.conversation import StartConversation
    from convlog.integrations.claude_agent_sdk import CHANNEL, conversation_key

    async def go() -> list[Any]:
        store = ConvlogSessionStore(f"sqlite:///{tmp_path / 'c.db'}")
        try:
            application(store.log).execute(conversation_key(KEY), [StartConversation(
                channel=CHANNEL, workspace=KEY["project_key"],
                metadata={"source": "claude-code"})])
            await store.append(KEY, TRANSCRIPT[:3])
            return await store.load(KEY) or []
        finally:
            store.close()
    loaded = asyncio.run(go())
    assert "the imported transcript does not contain it" in lost_text_of(loaded[3])


def test_entry_tools_reads_the_entry_as_pairing_reads_its_readable_message() -> None:
    """`load` judges a transcript's pairing from the entries alone (issue 30): the
    same calls, results and text as the readable message stored beside each entry."""
    from convlog.integrations.claude_entries import entry_tools, to_message
    from convlog.projections.pairing import message_tools

    def user(content: Any) -> Any:
        return entry("x", "user", {"role": "user", "content": content})

    def assistant(content: Any) -> Any:
        return entry("x", "assistant", {"role": "assistant", "content": content})

    image = {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}
    cases = [*TRANSCRIPT, user(""), user("hi"), user(7), user([]), user(["text"]),
             user([{"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
                   {"type": "text", "text": "and"}]),
             user([{"type": "tool_result", "tool_use_id": "", "content": "ok"}]),
             user([image]), assistant([{"type": "thinking", "thinking": "hm"}]),
             assistant([{"type": "tool_use", "id": "t1", "name": "Grep", "input": {}},
                        {"type": "tool_use", "id": "t2", "name": "", "input": {}},
                        {"type": "server_tool_use", "id": "s1", "name": "web_search"}]),
             assistant([{"type": "redacted_thinking", "data": "x"}, {"type": "text"}]),
             entry("x", "system"), entry("x", "user", "not a body"),
             {"type": "summary", "summary": "s", "leafUuid": "x"}]
    for case in cases:
        readable: Any = to_message(case, "m")  # what was stored beside the entry
        assert entry_tools(case) == message_tools(readable), case


def test_a_tool_use_id_reused_in_a_later_turn_keeps_its_own_result(tmp_path: Path) -> None:
    """Issue 41: a later turn's tool_use with an id used before (an agent numbering its
    calls per process) is a call of its own, answered by its own tool_result. `load`
    hands it back under its key (`toolu_1_2`): the Messages API refuses an id used
    twice; the first keeps its own, and the stored entries are not changed."""
    def turn(n: int, result: str) -> list[Any]:
        ask = entry(f"q{n}", "user", {"role": "user", "content": f"again {n}"}, f"z{n - 1}")
        use = entry(f"c{n}", "assistant", {"id": f"msg_c{n}", "role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "Grep", "input": {}}]}, f"q{n}")
        out = entry(f"r{n}", "user", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": result}]}, f"c{n}")
        done = entry(f"z{n}", "assistant", {"id": f"msg_z{n}", "role": "assistant",
                                            "content": [{"type": "text", "text": result}]},
                     f"r{n}")
        return [ask, use, out, done]

    entries = [*turn(1, "first"), *turn(2, "second")]
    loaded, messages = chain(tmp_path, entries)
    assert api_problems(messages) == []
    ids = [(b["type"], b.get("id") or b.get("tool_use_id"), b.get("content"))
           for e in loaded for b in blocks(e.get("message") or {})
           if b["type"] in ("tool_use", "tool_result")]
    assert ids == [("tool_use", "toolu_1", None), ("tool_result", "toolu_1", "first"),
                   ("tool_use", "toolu_1_2", None), ("tool_result", "toolu_1_2", "second")]
    assert [e["uuid"] for e in loaded] == [e["uuid"] for e in entries]
    assert loaded[:4] == entries[:4]
    calls = [b["id"] for m in messages for b in blocks(m.message) if b["type"] == "tool_use"]
    assert calls == ["toolu_1", "toolu_1_2"]  # unique, as the Messages API wants
