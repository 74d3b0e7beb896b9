"""Issue 28 with the real `agents` package, for messages the SDK did not store: a
conversation another host wrote through the library (Anthropic-style tool_use /
tool_result parts, chat-style tool_calls and tool messages, the ACP proxy's inline
turns), read with `ConvlogSession.get_items()`. Such a message keeps no SDK item
(`raw`), so it is given back as the nearest SDK items: its text as a message, each
call as a `function_call`, each result as a `function_call_output`. Whatever the
limit, the items are paired and the SDK's own converter accepts them; a lost
output says why (retracted by `pop_item`, cancelled, missing in an import)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

import convlog
from convlog.integrations.openai_agents import ConvlogSession
from convlog.projections.pairing import check_pairs, lost_text
from tests.sdks.openai_checks import chat_problems, item_tools


@pytest.fixture
def log(tmp_path: Path) -> Iterator[convlog.ConversationLog]:
    with convlog.open(f"sqlite:///{tmp_path / 'c.db'}") as opened:
        yield opened


def get_items(log: convlog.ConversationLog, key: str, limit: int | None = None,
              pop: int = 0) -> list[dict[str, Any]]:
    async def go() -> list[dict[str, Any]]:
        session = ConvlogSession(key, log)
        for _ in range(pop):
            await session.pop_item()
        return await session.get_items(limit)  # type: ignore[return-value]
    return asyncio.run(go())


def call(cid: str, name: str = "grep", arguments: str = '{"q": "x"}') -> dict[str, Any]:
    return {"type": "function_call", "call_id": cid, "name": name, "arguments": arguments}


def output(cid: str, text: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": cid, "output": text}


def write_both_styles(log: convlog.ConversationLog, key: str) -> None:
    conv = log.conversation(key)
    conv.append_turn([
        convlog.user("find x"),
        convlog.assistant([convlog.ThinkingPart(text="let me look"),
                           convlog.TextPart(text="looking"),
                           convlog.ToolUsePart(id="a1", name="grep", arguments='{"q": "x"}')]),
        convlog.user([convlog.ToolResultPart(tool_use_id="a1", content="x.py"),
                      convlog.TextPart(text="and y?")]),
        convlog.assistant("", tool_calls=[
            convlog.ToolCall(id="c1", name="grep", arguments='{"q": "y"}'),
            convlog.ToolCall(id="c2", name="ls", arguments="{}")]),
        convlog.tool("y.py", tool_call_id="c1"),
        convlog.tool("a b", tool_call_id="c2"),
        convlog.assistant("found both"),
    ])


def test_tool_messages_written_by_the_library_come_back_as_sdk_items(
        log: convlog.ConversationLog) -> None:
    write_both_styles(log, "k")
    assert get_items(log, "k") == [
        {"role": "user", "content": "find x"},
        {"role": "assistant", "content": "looking"},
        call("a1"),
        output("a1", "x.py"),
        {"role": "user", "content": "and y?"},
        call("c1", arguments='{"q": "y"}'),
        call("c2", name="ls", arguments="{}"),
        output("c1", "y.py"),
        output("c2", "a b"),
        {"role": "assistant", "content": "found both"},
    ]


def test_every_limit_of_a_foreign_history_is_paired_and_converts(
        log: convlog.ConversationLog) -> None:
    write_both_styles(log, "k")
    conv = log.get("k")
    conv.append_turn([  # the ACP proxy's record of a turn: calls inline, one cancelled
        convlog.user("and z?"),
        convlog.assistant([convlog.TextPart(text="on it"),
                           convlog.ToolUsePart(id="p1", name="read", arguments="{}"),
                           convlog.ToolResultPart(tool_use_id="p1", content="z"),
                           convlog.ToolUsePart(id="p2", name="read", arguments="{}"),
                           convlog.TextPart(text="[turn cancelled]")]),
        convlog.assistant("", tool_calls=[convlog.ToolCall(id="d1", name="rm")]),  # died
        convlog.tool("stray", tool_call_id="ghost"),
    ])
    everything = get_items(log, "k")
    for limit in [None, *range(1, len(everything) + 2)]:
        items = get_items(log, "k", limit)
        assert check_pairs([item_tools(i) for i in items]) == [], (limit, items)
        assert chat_problems(items) == [], (limit, items)
        assert limit is None or len(items) <= limit
    cancelled = next(i for i in everything if i.get("call_id") == "p2"
                     and i.get("type") == "function_call_output")
    assert cancelled["output"] == lost_text("cancelled", "read")
    died = next(i for i in everything if i.get("call_id") == "d1"
                and i.get("type") == "function_call_output")
    assert died["output"] == lost_text("process_died", "rm")
    assert not any(i.get("call_id") == "ghost" for i in everything)


def test_a_popped_output_is_said_to_be_retracted(log: convlog.ConversationLog) -> None:
    async def go() -> list[Any]:
        session = ConvlogSession("s", log)
        await session.add_items([{"role": "user", "content": "find it"},
                                 call("c1"), output("c1", "found")])  # type: ignore[list-item]
        await session.pop_item()
        return [await session.get_items(), await session.get_items(2)]
    for items in asyncio.run(go()):
        assert items[-1] == output("c1", lost_text("retracted", "grep"))
        assert chat_problems(items) == []


def test_a_popped_foreign_result_is_said_to_be_retracted(
        log: convlog.ConversationLog) -> None:
    write_both_styles(log, "k")
    log.retract_last("k")  # "found both"
    items = get_items(log, "k", pop=1)  # pops c2's result
    assert items[-2:] == [output("c1", "y.py"), output("c2", lost_text("retracted", "ls"))]


def test_a_truncated_import_says_the_result_is_missing_in_it(
        log: convlog.ConversationLog) -> None:
    conv = log.conversation("imp", metadata={"source": "claude-code"})
    conv.append_turn([convlog.user("go"), convlog.assistant(
        [convlog.ToolUsePart(id="t1", name="bash", arguments='{"cmd": "ls"}')])])
    assert get_items(log, "imp") == [
        {"role": "user", "content": "go"}, call("t1", "bash", '{"cmd": "ls"}'),
        output("t1", lost_text("missing_in_import", "bash"))]


def test_popping_a_foreign_message_returns_its_text_as_one_item(
        log: convlog.ConversationLog) -> None:
    log.conversation("pop").append_turn([convlog.assistant([
        convlog.TextPart(text="looking"), convlog.ToolUsePart(id="t1", name="grep")])])

    async def go() -> Any:
        session = ConvlogSession("pop", log)
        return await session.pop_item(), await session.get_items()
    assert asyncio.run(go()) == ({"role": "assistant", "content": "looking"}, [])


def test_an_sdk_interruption_after_a_dead_call_says_cancelled(
        log: convlog.ConversationLog) -> None:
    """The cause reads the text of the user item after the lost call; SDK items are
    read lean (their texts skipped), so that one read is made whole."""
    interrupted = {"role": "user", "content": [
        {"type": "input_text", "text": "[Request interrupted by user for tool use]"}]}

    async def go() -> list[Any]:
        session = ConvlogSession("int", log)
        added: list[Any] = [{"role": "user", "content": "find it"}, call("c1"), interrupted]
        await session.add_items(added)
        return [await session.get_items(), await session.get_items(3)]
    for items in asyncio.run(go()):
        assert items[-2:] == [output("c1", lost_text("cancelled", "grep")), interrupted]
        assert chat_problems(items) == []
