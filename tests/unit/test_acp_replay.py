"""The ACP replay builder holds tool calls and results in pairs (issue 28).

`replay_updates` is what a client gets on `session/load` (from the proxy and from
`AgentSessions.load`): every `tool_call` is followed by a final `tool_call_update`; a
call whose result the log does not hold gets one with status failed saying the result
was lost and why (the turn's end marker tells why); a result without its call is left
out. The log's messages are read, never changed.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
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


# ---------------------------------------------------------------- native updates (issue 41)

GOLDEN = Path(__file__).parent.parent / "golden" / "acp"
EDIT_CALL = {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Edit a.py",
             "kind": "edit", "status": "pending", "rawInput": {"path": "/p/a.py"},
             "locations": [{"path": "/p/a.py", "line": 3}]}
EDIT_DONE = {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed",
             "content": [{"type": "diff", "path": "/p/a.py", "oldText": "x = 1\n",
                          "newText": "x = 2\n"}],
             "rawOutput": {"ok": True}, "locations": [{"path": "/p/a.py", "line": 3}]}
USAGE = {"sessionUpdate": "usage_update", "used": 100, "size": 1000,
         "cost": {"amount": 0.01, "currency": "USD"}}


def valid_in_turn(updates: list[dict[str, Any]]) -> None:
    """Schema-valid, and paired as ACP pairs: each `tool_call` gets a final update
    later (the agent may talk in between), each final update follows its call."""
    import acp.schema

    open_calls: set[str] = set()
    for update in updates:
        acp.schema.SessionNotification.model_validate({"sessionId": "s", "update": update})
        if update["sessionUpdate"] == "tool_call":
            open_calls.add(update["toolCallId"])
        elif update.get("status") in ("completed", "failed"):
            assert update["toolCallId"] in open_calls, update
            open_calls.discard(update["toolCallId"])
    assert not open_calls


def said(text: str, kind: str = "agent_message_chunk", **extra: Any) -> dict[str, Any]:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}, **extra}


def native_turn(turn: str, updates: list[dict[str, Any]], prompt: str = "edit it",
                end: str = "") -> list[MessageAppended]:
    """A turn as the proxy records it (convlog.acp.turns), keeping the updates."""
    from convlog.acp.turns import Turn

    t = Turn(prompt=[{"type": "text", "text": prompt}], id=turn)
    for update in updates:
        t.add(update, None)
    messages = t.close(end or "end_turn")
    assert messages is not None
    return [msg(m.id, m.role, m.content, raw=m.raw) for m in messages]


def test_a_turn_is_replayed_as_the_agent_sent_it_text_chunks_of_a_message_joined() -> None:
    updates = [said("hm", "agent_thought_chunk"), EDIT_CALL, said("Edit", messageId="m1"),
               said("ing", messageId="m1"), {**EDIT_CALL, "sessionUpdate": "tool_call_update",
                                              "status": "in_progress"},
               said(" now", messageId="m2"), EDIT_DONE, USAGE,
               {"sessionUpdate": "session_info_update", "title": "Edits"},
               {"sessionUpdate": "available_commands_update", "availableCommands": []}]
    replayed = list(replay_updates(native_turn("t1", updates)))
    assert replayed == [said("edit it", "user_message_chunk"), *updates[:2],
                        said("Editing", messageId="m1"), *updates[4:9],
                        # the agent session's own state is not replayed; the title ends it
                        ]
    valid_in_turn(replayed)


def test_a_call_left_open_in_its_turn_gets_a_marked_failed_update_at_the_turns_end() -> None:
    messages = native_turn("t1", [EDIT_CALL, said("working")], end="cancelled")
    replayed = list(replay_updates(messages))
    lost = replayed[-1]
    assert lost["toolCallId"] == "c1" and lost["status"] == "failed"
    assert text_of(lost) == lost_text("cancelled", "Edit a.py")
    assert lost["_meta"] == {"convlog/repair": {"kind": "synthesized", "cause": "cancelled"}}
    # an update for a call never made is left out; a reused id is its own call
    later = native_turn("t2", [{**EDIT_DONE, "toolCallId": "zz"}, EDIT_CALL, EDIT_DONE])
    replayed = list(replay_updates([*messages, *later]))
    assert [u.get("toolCallId") for u in replayed if "toolCallId" in u] == [
        "c1", "c1", "c1~2", "c1~2"]
    valid_in_turn(replayed)


def test_titles_and_usage_sent_outside_a_turn_replay_in_place_and_the_title_ends_it() -> None:
    from convlog.domain.events import ContextWindowReported, TitleChanged

    turn = native_turn("t1", [said("hi")])
    named = {"sessionUpdate": "session_info_update", "title": "Named"}
    outside = [ContextWindowReported(at=AT, used=5, size=10, update=USAGE),
               TitleChanged(at=AT, title="Named", update=named)]
    assert list(replay_updates([*turn, *outside]))[-2:] == [USAGE, named]
    renamed = TitleChanged(at=AT, title="Renamed by the host")  # no update: not the agent's
    assert list(replay_updates([*turn, *outside, renamed]))[-1] == {
        "sessionUpdate": "session_info_update", "title": "Renamed by the host"}


def test_the_stored_acp_messages_golden_files_replay_as_pinned() -> None:
    """The stored shape of an ACP turn (docs/events.md): `raw = {"acp": [update...]}`.
    Regenerate with CONVLOG_UPDATE_GOLDEN=1 only for an intended format change."""
    import os

    import msgspec
    from eventsourcing.persistence import StoredEvent

    from convlog.storage.mapper import Envelope, MsgspecMapper

    mapper, stream = MsgspecMapper(), uuid.UUID("00000000-0000-4000-8000-000000000001")
    messages = native_turn("t1", [EDIT_CALL, said("Edit", messageId="m1"),
                                  said("ed.", messageId="m1"), EDIT_DONE, USAGE])
    for message in messages:
        stored = mapper.to_stored_event(Envelope(stream, 1, message))
        path = GOLDEN / f"{message.role}.json"
        if os.environ.get("CONVLOG_UPDATE_GOLDEN"):
            path.write_bytes(msgspec.json.format(stored.state, indent=2) + b"\n")
        golden = mapper.to_domain_event(StoredEvent(stream, 1, stored.topic,
                                                    path.read_bytes())).event
        assert golden == message
    assert list(replay_updates(messages)) == [
        said("edit it", "user_message_chunk"), EDIT_CALL, said("Edited.", messageId="m1"),
        EDIT_DONE, USAGE]


def test_the_replay_starts_after_the_latest_clear_and_keeps_the_title() -> None:
    from convlog.domain.events import ConversationCleared, TitleChanged

    before = native_turn("t1", [said("old answer")], prompt="old question")
    after = native_turn("t2", [said("new answer")], prompt="new question")
    replayed = list(replay_updates([TitleChanged(at=AT, title="Kept"), *before,
                                    ConversationCleared(at=AT), *after]))
    assert replayed == [said("new question", "user_message_chunk"), said("new answer"),
                        {"sessionUpdate": "session_info_update", "title": "Kept"}]
