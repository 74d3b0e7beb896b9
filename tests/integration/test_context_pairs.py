"""The resume context holds tool calls and results in pairs (issue 28), in every
format, from the library and over HTTP: a result whose call the budget cut off is left
out, and a call whose result is missing is followed by a note saying it was lost, and
why (read from the log: retracted, cancelled, missing in an import, the process died)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import convlog
from convlog.projections.pairing import lost_text
from tests.conftest import open_backend
from tests.httpserver import served

FORMATS = ("xml", "markdown", "messages")
CLAUDE_CODE = Path(__file__).parent.parent / "fixtures" / "importers" / "claude-code"


def call(call_id: str, name: str = "search") -> convlog.Message:
    return convlog.assistant("", id=f"call-{call_id}", tool_calls=[
        convlog.ToolCall(id=call_id, name=name, arguments='{"q": "x"}')])


def texts(conv: convlog.ConversationHandle, **kwargs: Any) -> dict[str, str]:
    return {fmt: conv.context(format=fmt, **kwargs).text for fmt in FORMATS}


def test_a_result_whose_call_the_budget_cut_off_is_left_out(
        log: convlog.ConversationLog) -> None:
    conv = log.conversation("c")
    conv.append_turn([convlog.user("find it", id="u"), call("c1"),
                      convlog.tool("RESULT-OF-C1", tool_call_id="c1", id="r1"),
                      convlog.assistant("found it", id="a")])
    for fmt, text in texts(conv, budget=convlog.Budget(messages=2)).items():
        assert "found it" in text, fmt
        assert "RESULT-OF-C1" not in text and "tool result" not in text, fmt
    ctx = conv.context(budget=convlog.Budget(messages=2))
    assert (ctx.message_count, ctx.omitted) == (1, 3)
    whole = conv.context(budget=convlog.Budget(messages=3))  # call and result both fit
    assert "[called tool search(" in whole.text and "RESULT-OF-C1" in whole.text


def test_a_call_whose_result_never_came_gets_a_lost_note(
        log: convlog.ConversationLog) -> None:
    conv = log.conversation("c")
    conv.append_turn([convlog.user("find it", id="u"), call("c1")])
    conv.append_turn([convlog.user("hello again?", id="u2")])
    note = lost_text("process_died", "search")
    for fmt, text in texts(conv).items():
        assert "[called tool search(" in text, fmt
        # the note follows the call, before the next message
        flat = text.replace("&gt;", ">").replace("&lt;", "<").replace("> ", "")
        assert flat.index("called tool search(") < flat.index(note[:40]) < flat.index(
            "hello again?"), fmt
    ctx = conv.context(format="messages")
    assert ctx.message_count == 3


def test_a_retracted_result_is_named_as_the_cause(log: convlog.ConversationLog) -> None:
    conv = log.conversation("c")
    conv.append_turn([convlog.user("find it", id="u"), call("c1"),
                      convlog.tool("RESULT-OF-C1", tool_call_id="c1", id="r1")])
    conv.retract_last("pop_item")
    text = conv.context(format="markdown").text
    assert "RESULT-OF-C1" not in text
    assert "the result was retracted" in text


def test_a_cancelled_turn_is_named_as_the_cause(log: convlog.ConversationLog) -> None:
    conv = log.conversation("c")
    conv.append_turn([convlog.user("run it", id="u"), convlog.assistant([
        convlog.TextPart(text="Running."),
        convlog.ToolUsePart(id="t1", name="bash", arguments="{}"),
        convlog.TextPart(text="[turn cancelled]")], id="a")])  # how the ACP proxy records it
    ctx = conv.context(format="messages")
    assert ctx.messages is not None
    content = ctx.messages[-1]["content"]
    note = lost_text("cancelled", "bash")
    assert content.index("[called tool bash(") < content.index(note) < content.index(
        "[turn cancelled]")


def test_a_truncated_import_is_named_as_the_cause(log: convlog.ConversationLog,
                                                  tmp_path: Path) -> None:
    source = next(CLAUDE_CODE.glob("*/*.jsonl"))
    lines = []
    for line in source.read_text().splitlines():
        lines.append(line)
        if '"tool_use"' in line:
            break  # the transcript ends right after a tool call
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines) + "\n")
    log.import_("claude-code", [cut])
    key = f"claude-code:{json.loads(lines[-1])['sessionId']}"
    text = log.get(key).context(format="xml").text
    assert "the imported transcript does not contain it" in text


# ---------------------------------------------------------------- over HTTP


@pytest.fixture
def http(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[httpx.Client]:
    with open_backend("sqlite", tmp_path, request) as log, served(log) as url, \
            httpx.Client(base_url=url, timeout=10) as client:
        yield client


def test_the_http_context_is_paired_in_every_format(http: httpx.Client) -> None:
    turn = {"messages": [
        {"type": "message", "role": "user", "content": "find it", "id": "u"},
        {"type": "message", "role": "assistant", "content": "", "id": "c", "tool_calls": [
            {"id": "c1", "name": "search", "arguments": "{}"}]},
        {"type": "message", "role": "tool", "content": "RESULT-OF-C1", "tool_call_id": "c1",
         "id": "r1"},
        {"type": "message", "role": "assistant", "content": "", "id": "c2", "tool_calls": [
            {"id": "c2", "name": "fetch", "arguments": "{}"}]},
    ]}
    assert http.post("/v1/conversations", json={"key": "k"}).status_code == 200
    assert http.post("/v1/conversations/k/turns", json=turn).status_code == 200
    note = lost_text("process_died", "fetch")
    for fmt in FORMATS:
        cut = http.get("/v1/conversations/k/context", params={"format": fmt, "messages": 2})
        body = cut.json()
        assert "RESULT-OF-C1" not in body["text"], fmt
        whole = http.get("/v1/conversations/k/context", params={"format": fmt}).json()
        assert "RESULT-OF-C1" in whole["text"], fmt
        shown = json.loads(whole["text"]) if fmt == "messages" else whole["text"]
        assert note[:60] in (shown[-1]["content"] if fmt == "messages" else shown), fmt


def weather_turns(style: str) -> list[list[convlog.Message]]:
    """Two turns of an agent that numbers its tool calls per process: after a restart
    its first call is `call-1` again (issue 41). ACP: a turn as one assistant message,
    the proxy's format; chat: `tool_calls` and tool messages; anthropic: parts."""
    turns = []
    for turn, out in enumerate(("21C clear", "18C rain")):
        ask = convlog.user(f"weather {turn}?")
        use = convlog.ToolUsePart(id="call-1", name="fetch_weather", arguments='{"city":"Oslo"}')
        said = convlog.assistant(f"It is {out}.")
        if style == "acp":
            turns.append([ask, convlog.assistant([
                use, convlog.ToolResultPart(tool_use_id="call-1", content=out),
                convlog.TextPart(text=f"It is {out}.")])])
        elif style == "chat":
            turns.append([ask, convlog.assistant("", tool_calls=[convlog.ToolCall(
                id="call-1", name="fetch_weather", arguments='{"city":"Oslo"}')]),
                convlog.tool(out, tool_call_id="call-1"), said])
        else:
            turns.append([ask, convlog.assistant([use]), convlog.user(
                [convlog.ToolResultPart(tool_use_id="call-1", content=out)]), said])
    return turns


@pytest.mark.parametrize("style", ["acp", "chat", "anthropic"])
def test_a_call_id_reused_in_a_later_turn_keeps_its_own_result(
        log: convlog.ConversationLog, style: str) -> None:
    """Issue 41: each call is paired within its turn. The second `call-1` is a call of
    its own with its own result, not a repeat of the first."""
    conv = log.conversation("c")
    for turn in weather_turns(style):
        conv.append_turn(turn)
    for fmt, text in texts(conv).items():
        flat = text.replace("&gt;", ">").replace("&lt;", "<").replace("> ", "")
        calls = [i for i in range(len(flat)) if flat.startswith("[called tool fetch_weather(",
                                                                   i)]
        assert len(calls) == 2, (fmt, text)
        first, second = calls
        assert first < flat.index("[tool result: 21C clear]") < second, (fmt, text)
        assert second < flat.index("[tool result: 18C rain]"), (fmt, text)
        assert "was lost" not in flat, (fmt, text)
    ctx = conv.context()
    assert ctx.omitted == 0 and ctx.message_count == sum(map(len, weather_turns(style)))
