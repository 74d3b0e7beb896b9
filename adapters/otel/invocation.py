"""A turn as spans: one ``invoke_agent {agent}`` span (gen_ai.operation.name
``invoke_agent``) per turn (convlog.otel.turns says which messages), with a ``chat
{model}`` child per model response and an ``execute_tool {tool}`` child per tool call
(convlog.otel.tools). A model response is the agent's consecutive messages of its own
(an SDK writes one response as several items: reasoning, text, calls), split where
their response ids differ; each has its usage, a response's usage counted once.
``gen_ai.usage.input_tokens`` counts ALL input tokens, cached ones included, as the
conventions say (convlog's own `input_tokens` is the uncached part): the cache counts
are given too, as parts of it. `gen_ai.agent.name`: the agent of the turn's messages,
else the conversation's.

Ids are derived from the log (the conversation's stream and the versions of the
turn's first message and of the span's own), never random: a span sent again after a
crash is the same span, with the same trace and span ids, which is what a backend
deduplicates on. Content (``gen_ai.input.messages`` / ``gen_ai.output.messages``, the
tools' arguments and results) only when the caller allows it for this conversation
(convlog.otel.content).
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import msgspec

from convlog.domain.content import ToolResultPart
from convlog.domain.events import ConversationStarted, MessageAppended, Recorded
from convlog.otel.content import input_messages, output_messages, text
from convlog.otel.spans import (
    Attributes,
    SpanSpec,
    conversation_attributes,
    derived_id,
    model_attributes,
    nanos,
)
from convlog.otel.tools import tool_spans
from convlog.otel.turns import Segment


class Usage(msgspec.Struct):
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    def add(self, event: MessageAppended) -> None:
        u = event.usage
        if u is not None:
            self.input += u.input_tokens + u.cache_read_tokens + u.cache_write_tokens
            self.output += u.output_tokens
            self.cache_read += u.cache_read_tokens
            self.cache_write += u.cache_write_tokens

    def attributes(self) -> Attributes:
        return {"gen_ai.usage.input_tokens": self.input,
                "gen_ai.usage.output_tokens": self.output,
                "gen_ai.usage.cache_read.input_tokens": self.cache_read,
                "gen_ai.usage.cache_creation.input_tokens": self.cache_write}


def _time(event: MessageAppended) -> int:
    return nanos(event.created_at or event.at)


def turn_spans(segment: Segment, stream: UUID, key: str, position: int,
               start: ConversationStarted, *, content: bool, system: str | None = None
               ) -> list[SpanSpec]:
    """A turn's (or a cut turn's part's: convlog.otel.turns) ``invoke_agent`` span,
    its ``chat`` spans and its ``execute_tool`` spans (see the module). `system`: the
    host's preamble the agent received with the turn (`preamble_sent`), sent as
    ``gen_ai.system_instructions`` with the content."""
    recorded = segment.messages
    messages = [r.event for r in recorded if isinstance(r.event, MessageAppended)]
    first = recorded[0].version
    trace = derived_id(128, "turn", stream, segment.turn_version)
    root = derived_id(64, "turn-span", stream, first)
    agent = next((m.agent for m in messages if m.role == "assistant" and m.agent), None) \
        or next((m.agent for m in messages if m.agent), None) or start.agent
    models = [m.model for m in messages if m.role == "assistant" and m.model]
    times = [_time(m) for m in messages]
    common = conversation_attributes(key, start, agent)
    usage, chats = Usage(), []
    counted: set[str] = set()
    for response in _responses(recorded):
        chat_usage = Usage()
        for r in response:
            event = r.event
            assert isinstance(event, MessageAppended)
            if event.response_id is None or event.response_id not in counted:
                chat_usage.add(event)  # a response's usage once, as the views count it
            if event.response_id is not None:
                counted.add(event.response_id)
        _merge(usage, chat_usage)
        chats.append(_chat_span(response, recorded, stream, trace, root, common, chat_usage,
                                content))
    attributes: Attributes = {**common, "gen_ai.operation.name": "invoke_agent",
                              **usage.attributes(),
                              "convlog.messages": len(messages),
                              "convlog.version.first": first,
                              "convlog.version.last": recorded[-1].version,
                              "convlog.position": position}
    if segment.turn_version != first:  # the turn went on after an earlier span of it
        attributes["convlog.turn.version"] = segment.turn_version
    if models:
        attributes |= model_attributes(models[0], models[-1])
    costs = [m.cost_usd for m in messages if m.cost_usd is not None]
    if costs:  # what the host said the messages cost (convlog's own prices: the views)
        attributes["convlog.cost_usd"] = float(sum(costs))
    if content and system:
        attributes["gen_ai.system_instructions"] = text([{"type": "text", "content": system}])
    if content:
        inputs, outputs = input_messages(messages), output_messages(messages)
        if inputs:
            attributes["gen_ai.input.messages"] = text(inputs)
        if outputs:
            attributes["gen_ai.output.messages"] = text(outputs)
    name = f"invoke_agent {agent}" if agent else "invoke_agent"
    span = SpanSpec(name=name, trace_id=trace, span_id=root, start_ns=min(times),
                    end_ns=max(times), attributes=attributes)
    return [span, *chats, *tool_spans(recorded, stream, trace, root, common, content)]


def _merge(total: Usage, part: Usage) -> None:
    total.input += part.input
    total.output += part.output
    total.cache_read += part.cache_read
    total.cache_write += part.cache_write


def _responds(event: MessageAppended) -> bool:
    """Part of a model's response: the agent's message with something of its own
    (words, reasoning, a call), not only the results of tools it ran."""
    if event.role != "assistant":
        return False
    if isinstance(event.content, str):
        return bool(event.content) or bool(event.tool_calls)
    return bool(event.tool_calls) or any(not isinstance(p, ToolResultPart)
                                         for p in event.content)


def _responses(turn: Sequence[Recorded]) -> list[list[Recorded]]:
    """The model responses (calls) of a turn: consecutive messages of the agent's own,
    not parted by a tool's result or a user's message, split where their response
    ids differ (an SDK writes one response as several items)."""
    out: list[list[Recorded]] = []
    last: str | None = None
    joined = False
    for r in turn:
        event = r.event
        assert isinstance(event, MessageAppended)
        if not _responds(event):
            joined = False
            continue
        ids = event.response_id
        if joined and not (ids is not None and last is not None and ids != last):
            out[-1].append(r)
        else:
            out.append([r])
        joined, last = True, ids if ids is not None else last
    return out


def _chat_span(response: list[Recorded], turn: Sequence[Recorded], stream: UUID, trace: int,
               parent: int, common: Attributes, usage: Usage, content: bool) -> SpanSpec:
    head = response[0]
    events = [r.event for r in response if isinstance(r.event, MessageAppended)]
    model = next((e.model for e in events if e.model), None)
    before = [t.event for t in turn if t.version < head.version
              and isinstance(t.event, MessageAppended)]
    end = max(_time(e) for e in events)
    begin = _time(before[-1]) if before else end
    attributes: Attributes = {**common, "gen_ai.operation.name": "chat", **usage.attributes()}
    if model:
        attributes |= model_attributes(model, model)
    if events[0].response_id:
        attributes["gen_ai.response.id"] = events[0].response_id
    if content:
        attributes["gen_ai.output.messages"] = text(output_messages(events))
    return SpanSpec(name=f"chat {model}" if model else "chat", trace_id=trace,
                    span_id=derived_id(64, "chat", stream, head.version),
                    parent_id=parent, start_ns=min(begin, end), end_ns=end, kind="client",
                    attributes=attributes)
