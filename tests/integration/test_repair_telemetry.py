"""Telemetry of tool-pairing repairs (issue 28): which agent leaves orphans.

Conversations with calls whose results were lost, results without calls and
retracted results are written through the real library (every storage backend);
the DuckDB views count the repairs pairing makes, per agent, kind and cause, and
follow later appends, retractions and clears."""

from __future__ import annotations

from typing import Any

import convlog
from convlog.services.log import application
from tests.integration.test_repair_marks import call, orphans

COUNTS = ("SELECT agent, kind, cause, repairs, conversations FROM tool_repair_counts "
          "ORDER BY ALL")


def counts(log: convlog.ConversationLog) -> list[tuple[Any, ...]]:
    return log.sql(COUNTS)[1]


def test_repairs_per_agent_and_cause(log: convlog.ConversationLog) -> None:
    orphans(log.conversation("a", agent="coder"))
    orphans(log.conversation("b", agent="coder"))
    writer = log.conversation("c", agent="writer")
    run = convlog.ToolCall(id="c2", name="run")
    writer.append_turn([convlog.user("run it"), convlog.assistant("", tool_calls=[run])])
    writer.append(convlog.tool("ran", tool_call_id="c2"))
    writer.retract_last("pop_item")
    clean = log.conversation("d", agent="tidy")
    clean.append_turn([convlog.user("ls"), call("", "c1"),
                       convlog.tool("a.txt", tool_call_id="c1"), convlog.assistant("ok")])
    # `call` names the message's agent "coder": the message's agent counts; a message
    # without one (the stale tool output) counts under its conversation's agent.
    assert counts(log) == [("coder", "dropped", "no_call", 2, 2),
                           ("coder", "synthesized", "process_died", 2, 2),
                           ("writer", "synthesized", "retracted", 1, 1)]
    _, rows = log.sql("SELECT key, kind, call_id, r.version FROM tool_repairs r "
                      "JOIN sessions USING (conversation_id) WHERE key = 'a' ORDER BY ALL")
    assert rows == [("a", "dropped", "c9", 6), ("a", "synthesized", "c1", 3)]


def test_the_counts_follow_the_log(log: convlog.ConversationLog) -> None:
    conv = log.conversation("a", agent="coder")
    orphans(conv)
    assert [r[1:4] for r in counts(log)] == [("dropped", "no_call", 1),
                                             ("synthesized", "process_died", 1)]
    conv.append(convlog.tool("late files", tool_call_id="c1"))  # the lost result, late
    assert [r[1:4] for r in counts(log)] == [("dropped", "no_call", 1), ("moved", None, 1)]
    conv.clear("new topic")
    conv.append_turn([convlog.user("again"), call("", "c5")])
    assert [r[1:4] for r in counts(log)] == [("dropped", "no_call", 1), ("moved", None, 1),
                                             ("synthesized", "process_died", 1)]
    conv.append(convlog.tool("done", tool_call_id="c5"))
    assert [r[1:4] for r in counts(log)] == [("dropped", "no_call", 1), ("moved", None, 1)]


def test_a_rebuild_gives_the_same_rows(log: convlog.ConversationLog) -> None:
    orphans(log.conversation("a", agent="coder"))
    before = counts(log)
    application(log).catalog.rebuild()
    assert counts(log) == before and before


def test_a_cancel_recorded_after_the_call_updates_the_cause(
        log: convlog.ConversationLog) -> None:
    conv = log.conversation("k", agent="coder")
    conv.append_turn([convlog.user("build it"), call("", "c3", "make")])
    assert [r[1:3] for r in counts(log)] == [("synthesized", "process_died")]
    conv.append(convlog.user("[Request interrupted by user for tool use]"))  # no tool in it
    assert [r[1:3] for r in counts(log)] == [("synthesized", "cancelled")]
