"""The resume context's pairing, pure (issue 28): the cap never shows half a tool
marker, a window cut keeps calls with their results, and the cause of a lost result
is read from the log (convlog.projections.pair_causes)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from convlog.domain.content import TextPart, ToolCall, ToolResultPart, ToolUsePart
from convlog.domain.events import ConversationStarted, MessageAppended, Recorded
from convlog.projections.context import TRUNCATED, Budget, front_cut, select_window
from convlog.projections.context_pieces import Piece, capped
from convlog.projections.pair_causes import imported, lost_causes
from convlog.projections.pairing import lost_text

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def event(i: int, content: Any = "", *, role: str = "assistant", **fields: Any
          ) -> MessageAppended:
    return MessageAppended(at=T0 + timedelta(minutes=i), message_id=f"m{i}",
                           role=role, content=content, **fields)  # type: ignore[arg-type]


def words(text: str) -> int:
    return len(text.split())


def test_the_cap_leaves_a_tool_marker_out_whole_rather_than_cut() -> None:
    pieces = [Piece("text", "abc"), Piece("call", "[called tool ls({})]", "c1", "ls")]
    kept, truncated = capped(pieces, 22)
    assert truncated and [p.text for p in kept] == ["abc" + TRUNCATED]
    kept, _ = capped([*pieces, Piece("text", "x" * 50)], 40)
    assert [p.kind for p in kept] == ["text", "call", "text"]
    assert kept[-1].text == TRUNCATED  # its own piece: a lost-result note goes before it


def test_a_call_cut_by_the_cap_loses_its_result_to_the_budget() -> None:
    acp = event(2, [TextPart(text="x" * 60), ToolUsePart(id="t1", name="bash", arguments="{}"),
                    ToolResultPart(tool_use_id="t1", content="y" * 100)])
    window = select_window([Recorded(2, acp)], Budget(chars=120), words, epoch_messages=1)
    (only,) = window.messages
    assert "[called tool bash({})]" in only.text
    assert lost_text("budget", "bash") in only.text and "yyy" not in only.text
    assert only.text.endswith(TRUNCATED)


def test_a_window_cut_never_keeps_a_result_without_its_call() -> None:
    call = event(2, "", tool_calls=[ToolCall(id="c1", name="ls", arguments="{}")])
    result = event(3, "files", role="tool", tool_call_id="c1")
    after = event(4, "done")
    tail = [Recorded(4, after), Recorded(3, result), Recorded(2, call)]
    window = select_window(tail, Budget(), words, epoch_messages=3)
    assert [m.follows for m in window.messages] == [False, True, False]
    assert front_cut(window.messages, 1) == 2  # the result goes with its call


def test_causes_read_from_the_log() -> None:
    calls = event(1, [ToolUsePart(id="a", name="x", arguments="{}"),
                      ToolUsePart(id="b", name="x", arguments="{}"),
                      ToolUsePart(id="c", name="x", arguments="{}"),
                      TextPart(text="[turn cancelled]")])
    retracted = event(2, "out", role="tool", tool_call_id="b")
    causes, missing = lost_causes([calls], retracted=[retracted])
    assert causes == {"a": "cancelled", "b": "retracted", "c": "cancelled"}
    assert missing == "process_died"
    plain = event(3, [ToolUsePart(id="d", name="x", arguments="{}")])
    interrupted = event(4, "[Request interrupted by user for tool use]", role="user")
    assert lost_causes([plain, interrupted])[0] == {"d": "cancelled"}
    assert lost_causes([plain], imported=True) == ({}, "missing_in_import")
    asked: list[bool] = []

    def ask() -> bool:
        asked.append(True)
        return True

    answered = event(5, "out", role="tool", tool_call_id="d")
    lost_causes([plain, answered], imported=ask)
    assert asked == []  # nothing missing: the log is not asked
    started = ConversationStarted(at=T0, key="k", metadata={"source": "claude-code"})
    assert imported(started) and not imported(ConversationStarted(at=T0, key="k"))
