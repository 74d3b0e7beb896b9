"""Tool-pairing repairs in the agent's view (issue 28): the log keeps exactly what
happened and the user's view is unchanged, while the agent's view (and so the diff
and the HTML page) shows each repair convlog makes to the model's input: a
synthesized lost result right after its call, a result without its call left out.
Conversations are written through the real library on every storage backend."""

from __future__ import annotations

import json
from pathlib import Path

import convlog
from convlog.domain.events import MessageAppended
from convlog.html import write_conversation_page
from convlog.projections.transcript import transcript
from convlog.projections.view_model import ViewEntry


def call(text: str, call_id: str, name: str = "ls") -> convlog.Message:
    return convlog.assistant(text, tool_calls=[convlog.ToolCall(id=call_id, name=name)],
                             agent="coder")


def orphans(conv: convlog.ConversationHandle) -> None:
    """A call whose process died before its result, then a result without call."""
    conv.append_turn([convlog.user("list the files"), call("", "c1")])
    conv.append_turn([convlog.user("hello?"), convlog.assistant("hi", agent="coder")])
    conv.append(convlog.tool("stale output", tool_call_id="c9"))
    conv.append_turn([convlog.user("and now?"), convlog.assistant("done", agent="coder")])


def marks(entry: ViewEntry) -> list[tuple[str, str, str | None]]:
    return [(m.kind, m.call_id, m.cause) for m in entry.repairs]


def test_a_lost_result_is_synthesized_after_its_call_and_marked(
        log: convlog.ConversationLog) -> None:
    conv = log.conversation("k")
    orphans(conv)
    agent = conv.view("agent")
    kinds = [(e.kind, e.role) for e in agent.entries]
    at = kinds.index(("repair", "tool"))
    called = agent.entries[at - 1]
    assert called.kind == "message" and "[tool call ls(" in called.text
    repair = agent.entries[at]
    assert marks(repair) == [("synthesized", "c1", "process_died")]
    assert repair.version == called.version and repair.live and repair.session is None
    assert "the result of tool ls was lost" in repair.text
    assert "convlog" in (repair.note or "") and "process_died" in (repair.note or "")
    assert [e.text for e in agent.entries[at + 1:at + 3]] == ["hello?", "hi"]


def test_a_result_without_its_call_is_shown_left_out(log: convlog.ConversationLog) -> None:
    conv = log.conversation("k")
    orphans(conv)
    agent = conv.view("agent")
    (stale,) = [e for e in agent.entries if e.text == "stale output"]
    assert marks(stale) == [("dropped", "c9", "no_call")]
    assert not stale.live and stale.gone is not None and "left out" in stale.gone
    assert sum(bool(e.repairs) for e in agent.entries) == 2  # nothing else is marked

    d = conv.diff()
    (missing,) = d.missing
    assert missing.text == "stale output" and missing.reason == stale.gone
    (extra,) = d.extra
    assert extra.kind == "repair" and marks(extra) == [("synthesized", "c1", "process_died")]


def test_the_users_view_and_the_log_are_unchanged(log: convlog.ConversationLog) -> None:
    conv = log.conversation("k")
    orphans(conv)
    user = conv.view("user")
    lines = transcript(conv.events())
    assert [(e.version, e.text, e.role) for e in user.entries] == [
        (line.version, line.text, line.role) for line in lines]
    assert all(not e.repairs and e.kind == "message" for e in user.entries)
    assert "stale output" in [e.text for e in user.entries]
    stored = [r.event for r in conv.events() if isinstance(r.event, MessageAppended)]
    assert len(stored) == 7 and not any(m.role == "tool" and m.tool_call_id == "c1"
                                        for m in stored)


def test_a_retracted_result_is_repaired_with_its_cause(log: convlog.ConversationLog) -> None:
    conv = log.conversation("k")
    conv.append_turn([convlog.user("run it"), call("", "c2", "run")])
    conv.append(convlog.tool("ran", tool_call_id="c2"))
    conv.retract_last("pop_item")
    agent = conv.view("agent")
    (repair,) = [e for e in agent.entries if e.kind == "repair"]
    assert marks(repair) == [("synthesized", "c2", "retracted")]
    assert "retracted" in repair.text


def test_a_well_paired_history_has_no_marks(log: convlog.ConversationLog) -> None:
    conv = log.conversation("k")
    conv.append_turn([convlog.user("ls"), call("", "c1"),
                      convlog.tool("a.txt", tool_call_id="c1"), convlog.assistant("one file")])
    agent = conv.view("agent")
    assert not [e for e in agent.entries if e.repairs or e.kind == "repair"]
    assert not conv.diff().parted


def test_the_html_page_marks_each_repair(tmp_path: Path) -> None:
    with convlog.open(f"sqlite:///{tmp_path / 'r.db'}") as opened:
        orphans(opened.conversation("k"))
        path = write_conversation_page(opened, "k", tmp_path / "k.html")
    text = path.read_text("utf-8")
    start = text.index('<script type="application/json" id="data">') + len(
        '<script type="application/json" id="data">')
    data = json.loads(text[start:text.index("</script>", start)])
    (repair,) = [e for e in data["agent_view"] if e["kind"] == "repair"]
    assert repair["repairs"] == [{"kind": "synthesized", "call_id": "c1",
                                  "cause": "process_died"}]
    assert "was lost" in repair["text"]
    (dropped,) = [e for e in data["agent_view"] if e["kind"] == "message" and "repairs" in e]
    assert dropped["repairs"] == [{"kind": "dropped", "call_id": "c9", "cause": "no_call"}]
    assert "left out" in dropped["gone"]
    assert not [e for e in data["user_view"] if "repairs" in e or e["kind"] == "repair"]


def test_the_causes_come_from_the_log(log: convlog.ConversationLog) -> None:
    """A turn the user interrupted mid-tool is `cancelled`; a call an imported
    transcript never answered is `missing_in_import` (convlog.projections.pair_causes,
    through pair_causes.lost_causes)."""
    conv = log.conversation("k")
    conv.append_turn([convlog.user("build it"), call("", "c3", "make")])
    conv.append(convlog.user("[Request interrupted by user for tool use]"))
    imported = log.conversation("i", metadata={"source": "claude_code"})
    imported.append_turn([convlog.user("ls"), call("", "c4")])
    for key, cause in (("k", "cancelled"), ("i", "missing_in_import")):
        (repair,) = [e for e in log.view(key, "agent").entries if e.kind == "repair"]
        assert marks(repair)[0][2] == cause, key


def test_an_acp_turn_holding_calls_and_their_results_is_not_marked(
        log: convlog.ConversationLog) -> None:
    """The ACP proxy records a turn as ONE assistant message with its tool calls and
    their results: only the call whose result is missing is repaired."""
    conv = log.conversation("acp:k")
    conv.append_turn([convlog.user("go"), convlog.assistant([
        convlog.ToolUsePart(id="t1", name="lookup"),
        convlog.ToolResultPart(tool_use_id="t1", content="hits"),
        convlog.ToolUsePart(id="f1", name="fetch"),
        convlog.TextPart(text="[turn cancelled]")], agent="coder")])
    agent = conv.view("agent")
    repaired = [m[:2] for e in agent.entries for m in marks(e)]
    assert repaired == [("synthesized", "f1")]


def test_a_call_id_reused_in_a_later_turn_is_no_repair(log: convlog.ConversationLog) -> None:
    """Issue 41: an agent that numbers its calls per process uses `c1` again after a
    restart. Each call is paired within its turn: nothing is repaired, in the agent's
    view and in the repair telemetry; a call of the two that did lose its result is
    marked once, under its own id."""
    conv = log.conversation("k", agent="coder")
    for out in ("a.txt", "b.txt"):
        conv.append_turn([convlog.user("list the files"), call("", "c1"),
                          convlog.tool(out, tool_call_id="c1"), convlog.assistant("ok")])
    assert not any(e.repairs for e in conv.view("agent").entries)
    assert log.sql("SELECT count(*) FROM tool_repairs")[1] == [(0,)]
    conv.append_turn([convlog.user("once more"), call("", "c1")])  # died mid-tool
    conv.append_turn([convlog.user("and again"), call("", "c1")])  # and again
    agent = conv.view("agent")
    repairs = [e for e in agent.entries if e.kind == "repair"]
    assert [marks(e) for e in repairs] == [[("synthesized", "c1", "process_died")]] * 2
    kinds = [(e.kind, e.text) for e in agent.entries]
    assert kinds.index(("message", "once more")) < agent.entries.index(repairs[0]) < kinds.index(
        ("message", "and again")) < agent.entries.index(repairs[1])
    assert log.sql("SELECT kind, cause, call_id, count(*) FROM tool_repairs GROUP BY ALL"
                   )[1] == [("synthesized", "process_died", "c1", 2)]
