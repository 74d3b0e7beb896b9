"""The pure parts of the ACP room: frame envelopes, turn assembly (the replay:
test_acp_replay)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

import convlog
from convlog.acp.catalog import advertise, command_name
from convlog.acp.turns import Turn
from convlog.acp.wire import check_envelope

pytest.importorskip("acp")


@pytest.mark.parametrize(("frame", "problem"), [
    ({"jsonrpc": "2.0", "id": 1, "method": "x", "params": {}}, None),
    ({"jsonrpc": "2.0", "method": "x"}, None),
    ({"jsonrpc": "2.0", "id": "a", "result": None}, None),
    ({"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "m"}}, None),
    ([1], "JSON object"),
    ({"jsonrpc": "1.0", "method": "x"}, "jsonrpc"),
    ({"id": 1.5, "method": "x"}, "'id'"),
    ({"id": True, "method": "x"}, "'id'"),
    ({"id": 1, "method": ""}, "'method'"),
    ({"id": 1, "method": "x", "params": "p"}, "'params'"),
    ({"jsonrpc": "2.0"}, "needs a 'method'"),
    ({"id": 1, "error": {"code": "x", "message": "m"}}, "integer code"),
])
def test_envelopes(frame: Any, problem: str | None) -> None:
    found = check_envelope(frame)
    assert found is None if problem is None else problem in (found or "")


def chunk(kind: str, text: str) -> dict[str, Any]:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}


def test_a_turn_becomes_one_user_and_one_assistant_message_in_arrival_order() -> None:
    turn = Turn(prompt=[{"type": "text", "text": "hi"},
                        {"type": "resource_link", "uri": "file:///a.py", "name": "a"}],
                agent="a1", model="m1")
    for update in (chunk("agent_thought_chunk", "hm"), chunk("agent_thought_chunk", "m"),
                   chunk("agent_message_chunk", "Hel"), chunk("agent_message_chunk", "lo"),
                   {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Read a.py",
                    "kind": "read", "status": "pending", "rawInput": {"path": "a.py"}},
                   {"sessionUpdate": "plan", "entries": []},
                   {"sessionUpdate": "tool_call_update", "toolCallId": "c1",
                    "status": "failed", "content": [{"type": "content", "content": {
                        "type": "text", "text": "no such file"}}]},
                   chunk("agent_message_chunk", "done"), "not a dict", {"sessionUpdate": 5}):
        turn.add(update, None)
    messages = turn.close("end_turn")
    assert messages is not None and turn.close("end_turn") is None  # handed out once
    user, agent = messages
    assert user.content == [convlog.TextPart(text="hi"),
                            convlog.TextPart(text="[resource: file:///a.py]")]
    assert agent.content == [
        convlog.ThinkingPart(text="hmm"), convlog.TextPart(text="Hello"),
        convlog.ToolUsePart(id="c1", name="Read a.py", arguments='{"path": "a.py"}'),
        convlog.ToolResultPart(tool_use_id="c1", content="no such file", is_error=True),
        convlog.TextPart(text="done")]
    assert (agent.agent, agent.model) == ("a1", "m1")
    assert user.id == f"{turn.id}:user" and agent.id == f"{turn.id}:agent"


def test_cost_is_the_rise_of_the_cumulative_usd_cost_and_usage_is_as_reported() -> None:
    turn = Turn(prompt=[{"type": "text", "text": "q"}])
    usage = {"sessionUpdate": "usage_update", "used": 1, "size": 2}
    assert turn.add({**usage, "cost": {"amount": 0.25, "currency": "USD"}},
                    Decimal("0.10")) == Decimal("0.25")
    assert turn.add({**usage, "cost": {"amount": 3, "currency": "EUR"}}, None) is None
    assert turn.add({**usage, "cost": {"amount": "NaN", "currency": "USD"}}, None) is None
    _, agent = turn.close("max_tokens", {"inputTokens": 10, "outputTokens": 4,
                                         "thoughtTokens": 1, "cachedReadTokens": 3,
                                         "totalTokens": 18}) or []
    assert agent.cost_usd == Decimal("0.15")
    assert agent.usage == convlog.Usage(input_tokens=10, output_tokens=5, cache_read_tokens=3)
    assert agent.content == "[turn max_tokens]"


def test_a_cut_off_turn_with_nothing_streamed_still_records_both_sides() -> None:
    user, agent = Turn(prompt=[{"type": "text", "text": "q"}]).close("cut off: gone") or []
    assert (user.content, agent.content) == ("q", "[turn cut off: gone]")


def test_advertise_adds_the_served_methods_and_keeps_the_rest() -> None:
    answer = advertise({"protocolVersion": 1, "x": 1, "agentCapabilities": {
        "loadSession": False, "future": {"y": 2},
        "sessionCapabilities": {"close": {}, "resume": {"_meta": {"k": 1}}}}})
    caps = answer["agentCapabilities"]
    assert caps["loadSession"] is True and caps["future"] == {"y": 2} and answer["x"] == 1
    assert caps["sessionCapabilities"] == {"close": {}, "resume": {"_meta": {"k": 1}},
                                           "list": {}, "delete": {}, "fork": {}}


@pytest.mark.parametrize(("command", "name"), [
    (["copilot", "--acp"], "copilot"), (["/usr/bin/python3", "-u", "agents/a.py"], "a.py"),
    (["npx", "-y", "@zed-industries/claude-code-acp"], "claude-code-acp"),
    (["uv", "run", "my-agent"], "my-agent"), (["python"], "python")])
def test_agent_names_from_command_lines(command: list[str], name: str) -> None:
    assert command_name(command) == name


def test_without_the_extra_convlog_imports_and_the_proxy_names_the_extra() -> None:
    import subprocess
    import sys

    script = ("import sys; sys.modules['acp'] = None\n"
              "import convlog\n"
              "try:\n    import convlog.acp\nexcept convlog.ConvlogError as e:\n    print(e)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "pip install 'convlog[acp]'" in done.stdout
