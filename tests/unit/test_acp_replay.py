"""The ACP replay builder holds tool calls and results in pairs (issue 28).

`replay_updates` is what a client gets on `session/load` (from the proxy and from
`AgentSessions.load`): every `tool_call` is followed by a final `tool_call_update`; a
call whose result the log does not hold gets one with status failed saying the result
was lost and why (the turn's end marker tells why); a result without its call is left
out. The log's messages are read, never changed.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

import convlog
from convlog.acp.replay import replay_updates
from convlog.domain.content import ToolCall
from convlog.domain.events import MessageAppended
from convlog.projections.pairing import Tools, check_pairs, lost_text

pytest.importorskip("acp")

AT = datetime(2026, 1, 1, tzinfo=UTC)


def msg(id: str, role: str, content: Any, **kw: Any) -> MessageAppended:
    return MessageAppended(at=AT, message_id=id, role=role, content=content, **kw)  # type: ignore[arg-type]


def use(id: str, name: str = "lookup") -> convlog.ToolUsePart:
    return convlog.ToolUsePart(id=id, name=name, arguments='{"q": 1}')


def result(id: str, text: str = "out") -> convlog.ToolResultPart:
    return convlog.ToolResultPart(tool_use_id=id, content=text)


def as_tools(update: dict[str, Any]) -> Tools:
    kind = update["sessionUpdate"]
    if kind == "tool_call":
        return Tools(calls=((update["toolCallId"], update["title"]),), other=False)
    if kind == "tool_call_update" and update.get("status") in ("completed", "failed"):
        return Tools(results=(update["toolCallId"],), other=False)
    return Tools(other=kind in ("user_message_chunk", "agent_message_chunk"))


def text_of(update: dict[str, Any]) -> str:
    return str(update["content"][0]["content"]["text"]) if update.get("content") else ""


def valid(updates: list[dict[str, Any]]) -> None:
    import acp.schema

    for update in updates:  # every one is valid for the SDK's own schema
        acp.schema.SessionNotification.model_validate({"sessionId": "s", "update": update})
    assert check_pairs([as_tools(u) for u in updates]) == []


def test_a_well_paired_turn_replays_each_part_in_order() -> None:
    stored = [
        msg("1", "user", "hi"),
        msg("2", "assistant", [convlog.ThinkingPart(text="t"), use("c"), result("c"),
                               convlog.TextPart(text="answer")]),
    ]
    updates = list(replay_updates(stored))
    assert [u["sessionUpdate"] for u in updates] == [
        "user_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update",
        "agent_message_chunk"]
    assert updates[2]["rawInput"] == {"q": 1} and updates[3]["status"] == "completed"
    valid(updates)


@pytest.mark.parametrize(("marker", "cause"), [
    ("[turn cancelled]", "cancelled"),
    ("[turn cut off: the agent process exited (code 3)]", "process_died"),
    ("[turn cut off: the client disconnected]", "process_died"),  # the agent was stopped
    ("[turn failed: Internal error]", "process_died"),
])
def test_a_call_without_result_is_followed_by_a_failed_update_saying_why(
        marker: str, cause: Any) -> None:
    stored = [msg("1", "user", "go"),
              msg("2", "assistant", [use("a"), result("a"), use("b", "fetch"),
                                     convlog.TextPart(text="about to"),
                                     convlog.TextPart(text=marker)])]
    updates = list(replay_updates(stored))
    assert [(u["sessionUpdate"], u.get("toolCallId"), u.get("status")) for u in updates] == [
        ("user_message_chunk", None, None), ("tool_call", "a", "in_progress"),
        ("tool_call_update", "a", "completed"), ("tool_call", "b", "in_progress"),
        ("tool_call_update", "b", "failed"), ("agent_message_chunk", None, None),
        ("agent_message_chunk", None, None)]
    assert text_of(updates[4]) == lost_text(cause, "fetch")
    valid(updates)


def test_a_result_without_its_call_is_left_out() -> None:
    stored = [msg("1", "user", [result("gone"), convlog.TextPart(text="and then?")]),
              msg("2", "tool", "stray", tool_call_id="ghost"),
              msg("3", "tool", "no id at all"),
              msg("4", "assistant", "ok")]
    updates = list(replay_updates(stored))
    assert [u["sessionUpdate"] for u in updates] == ["user_message_chunk",
                                                     "agent_message_chunk"]
    valid(updates)


def test_chat_style_calls_get_their_tool_messages_or_a_lost_result() -> None:
    call = ToolCall(id="k1", name="search", arguments='{"q": "x"}')
    other = ToolCall(id="k2", name="read", arguments="{}")
    stored = [msg("1", "user", "find x"),
              msg("2", "assistant", "", tool_calls=[call, other]),
              msg("3", "tool", "found", tool_call_id="k1"),
              msg("4", "assistant", "done")]
    updates = list(replay_updates(stored))
    assert [(u["sessionUpdate"], u.get("toolCallId"), u.get("status")) for u in updates] == [
        ("user_message_chunk", None, None), ("tool_call", "k1", "in_progress"),
        ("tool_call", "k2", "in_progress"), ("tool_call_update", "k1", "completed"),
        ("tool_call_update", "k2", "failed"), ("agent_message_chunk", None, None)]
    assert "result of tool read was lost" in text_of(updates[4])
    valid(updates)


def test_a_call_id_an_agent_reused_in_a_later_turn_is_its_own_call() -> None:
    """Agents may count their tool call ids per process ("t0" again after a restart):
    each turn's call is replayed as its own call, with its own result."""
    stored = [msg("1", "user", "one"), msg("2", "assistant", [use("t0"), result("t0", "A")]),
              msg("3", "user", "two"), msg("4", "assistant", [use("t0"), result("t0", "B")]),
              msg("5", "user", "three"),
              msg("6", "assistant", [use("t0"), convlog.TextPart(text="[turn cancelled]")])]
    updates = list(replay_updates(stored))
    calls = [u["toolCallId"] for u in updates if u["sessionUpdate"] == "tool_call"]
    assert len(set(calls)) == 3 and calls[0] == "t0"
    finals = [(u["toolCallId"], u["status"], text_of(u)) for u in updates
              if u["sessionUpdate"] == "tool_call_update"]
    assert finals[:2] == [(calls[0], "completed", "A"), (calls[1], "completed", "B")]
    assert finals[2][:2] == (calls[2], "failed") and "cancelled" in finals[2][2]
    valid(updates)


def test_replay_reads_the_messages_and_changes_none() -> None:
    stored = [msg("1", "user", "go"), msg("2", "assistant", [use("b")])]
    before = [m for m in stored]
    list(replay_updates(stored))
    assert stored == before and stored[1].content == [use("b")]
