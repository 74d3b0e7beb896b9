"""Issue 41, item 5: one agent invocation, one span. `convlog export --otel` makes one
``invoke_agent`` span per turn (a user's input and everything the agent did for it),
whatever wrote the log and however many transactions it took, with a ``chat`` child
per model response and an ``execute_tool`` child per tool call (its result paired
within the turn); ``gen_ai.agent.name`` whenever the agent is known; tool results as
``tool`` messages of the input, never as the assistant's output.

Each SDK's real runner, offline: OpenAI Agents' `Runner.run` with a fake model that
calls a function tool (the session is not told the agent: the SDK's own agent span
says it), the Claude Agent SDK's bundled Claude Code against the fake Anthropic API
(its Read tool), and ADK's `Runner` with a fake model calling a function tool. The
spans go through the SDK's OTLP exporter to the test receiver."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import convlog
from tests.integration.test_otel_export import receiver as receiver  # the fixture
from tests.otlp_receiver import Receiver, Span

pytest.importorskip("agents")
pytest.importorskip("claude_agent_sdk")
pytest.importorskip("google.adk")


def export(url: str, tmp_path: Path) -> None:
    """Everything, with content. Every turn here is over (the agent answered), so
    none waits for the grace period."""
    from convlog.otel.exporter import Exporter
    from convlog.otel.sdk import Sender, endpoint
    from convlog.otel.tracking import TrackingFile

    sender = Sender()
    try:
        with convlog.open(url) as log:
            report = Exporter(log, TrackingFile(tmp_path / "otel.sqlite"), sender.send,
                              endpoint(), with_content=True).run()
            assert not report.held
    finally:
        sender.close()


class Turn:
    """An `invoke_agent` span and its children."""

    def __init__(self, root: Span, spans: list[Span]) -> None:
        self.root = root
        children = [s for s in spans if s.parent_id == root.span_id]
        self.chats = [s for s in children if s.attributes["gen_ai.operation.name"] == "chat"]
        self.tools = [s for s in children
                      if s.attributes["gen_ai.operation.name"] == "execute_tool"]
        assert len(self.chats) + len(self.tools) == len(children), children

    def messages(self, which: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = json.loads(
            str(self.root.attributes[f"gen_ai.{which}.messages"]))
        return found


def tree(spans: list[Span], key: str) -> list[Turn]:
    """The turns of conversation `key`, in order."""
    mine = [s for s in spans if s.attributes.get("gen_ai.conversation.id") == key]
    roots = sorted((s for s in mine if s.attributes["gen_ai.operation.name"] == "invoke_agent"),
                   key=lambda s: s.attributes["convlog.version.first"])
    assert all(not r.parent_id for r in roots)
    turns = [Turn(r, mine) for r in roots]
    assert sum(1 + len(t.chats) + len(t.tools) for t in turns) == len(mine)
    return turns


def tool_parts(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for m in messages for p in m["parts"] if p["type"] == "tool_call_response"]


def check_tool_turn(turn: Turn, agent: str, tool: str, result: str) -> None:
    """A turn in which the agent called `tool` once, then answered."""
    assert turn.root.name == f"invoke_agent {agent}"
    assert turn.root.attributes["gen_ai.agent.name"] == agent
    assert len(turn.chats) == 2, [c.attributes for c in turn.chats]
    (call,) = turn.tools
    a = call.attributes
    assert call.name == f"execute_tool {tool}" and a["gen_ai.tool.name"] == tool
    assert a["gen_ai.tool.call.id"] and result in str(a["gen_ai.tool.call.result"])
    assert call.status_code != 2
    first, second = sorted(turn.chats, key=lambda c: c.start_ns)
    assert first.end_ns <= call.start_ns <= call.end_ns <= second.end_ns
    inputs, outputs = turn.messages("input"), turn.messages("output")
    assert inputs[0]["role"] == "user"
    (answered,) = tool_parts(inputs)  # the result is the tool's, an input of the 2nd call
    assert answered["id"] == a["gen_ai.tool.call.id"] and result in str(answered["response"])
    assert not tool_parts(outputs) and all(m["role"] == "assistant" for m in outputs)
    assert any(p["type"] == "tool_call" for m in outputs for p in m["parts"])


# --------------------------------------------------------------------- OpenAI Agents


def test_openai_runner_runs_are_one_span_each(tmp_path: Path, receiver: Receiver) -> None:
    from agents import Agent, Runner, function_tool, set_tracing_disabled

    from convlog.integrations.openai_agents import ConvlogSession
    from tests.sdks.openai_fake import ToolCallingModel

    set_tracing_disabled(True)
    url = f"sqlite:///{tmp_path / 'openai.db'}"
    weather = iter(["21C clear", "18C rain"])

    @function_tool
    def fetch_weather(city: str) -> str:
        """The weather in a city."""
        return next(weather)

    for text in ("weather?", "and now?"):  # two processes; the session is not told the
        session = ConvlogSession("runs", url)  # agent's name
        try:
            agent = Agent(name="helper", model=ToolCallingModel(), tools=[fetch_weather])
            asyncio.run(Runner.run(agent, text, session=session))
        finally:
            session.close()
    export(url, tmp_path)
    first, second = tree(receiver.spans, "runs")
    check_tool_turn(first, "helper", "fetch_weather", "21C clear")
    check_tool_turn(second, "helper", "fetch_weather", "18C rain")


# ------------------------------------------------------------------- Claude Agent SDK


def test_claude_code_turns_are_one_span_each(tmp_path: Path, receiver: Receiver) -> None:
    from convlog.integrations.claude_agent_sdk import conversation_key
    from tests.sdks.claude_run import notes_session

    url = f"sqlite:///{tmp_path / 'claude.db'}"
    key = conversation_key(notes_session(url, tmp_path)[0])
    export(url, tmp_path)
    first, second = tree(receiver.spans, key)
    check_tool_turn(first, "claude", "Read", "KEY-FACT-42")
    assert second.root.attributes["gen_ai.agent.name"] == "claude"
    assert len(second.chats) == 1 and not second.tools


# ------------------------------------------------------------------------ Google ADK


def test_adk_runner_turns_are_one_span_each(tmp_path: Path, receiver: Receiver) -> None:
    from tests.sdks.adk_fake import remembering_session

    url = f"sqlite:///{tmp_path / 'adk.db'}"
    session = asyncio.run(remembering_session(url, ["remember the blue door", "thanks"]))
    key = f"adk:shop/u1/{session.id}"
    export(url, tmp_path)
    first, second = tree(receiver.spans, key)
    check_tool_turn(first, "helper", "remember", "the blue door")
    assert second.root.attributes["gen_ai.agent.name"] == "helper"
    assert len(second.chats) == 1 and not second.tools
