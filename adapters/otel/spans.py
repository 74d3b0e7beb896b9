"""Turns as spans, with OpenTelemetry's GenAI attributes (conventions of 2026, status
"development").

A turn is what a host recorded together (one `append_turn`, one transaction), split
at user messages: a user's message and the agent's messages after it. It becomes an
``invoke_agent {agent}`` span (gen_ai.operation.name ``invoke_agent``) with a child
``chat {model}`` span per model response in it (the messages sharing a response id:
one provider call), each with its usage. ``gen_ai.usage.input_tokens`` counts ALL
input tokens, cached ones included, as the conventions say (convlog's own
`input_tokens` is the uncached part): the cache counts are given too, as parts of it.

Ids are derived from the log (the conversation's stream and the turn's first
version), never random: a span sent again after a crash is the same span, with the
same trace and span ids, which is what a backend deduplicates on.

Content (``gen_ai.input.messages`` / ``gen_ai.output.messages``, as the conventions'
JSON message schema) only when the caller allows it for this conversation.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Literal

import msgspec

from convlog.domain.content import (
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolResultPart,
    ToolUsePart,
)
from convlog.domain.events import ConversationStarted, MessageAppended
from convlog.domain.records import is_record
from convlog.services.feed import FeedEvent

AttributeValue = str | bool | int | float
Attributes = dict[str, AttributeValue]


class SpanSpec(msgspec.Struct, kw_only=True):
    """A span to send, in plain values (the exporter builds the SDK's span from it)."""

    name: str
    trace_id: int
    span_id: int
    parent_id: int | None = None
    start_ns: int
    end_ns: int
    kind: Literal["internal", "client"] = "internal"
    attributes: Attributes = {}
    error: str | None = None
    """The span's status is ERROR with this description (a failed resume tier)."""


def derived_id(bits: int, *parts: object) -> int:
    """A non-zero id of `bits` bits derived from `parts` (the same every time)."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[: bits // 8], "big") or 1


def nanos(moment: datetime) -> int:
    return int(moment.timestamp() * 1e9)


_PROVIDERS = (("claude", "anthropic"), ("gpt-", "openai"), ("o1", "openai"), ("o3", "openai"),
              ("o4", "openai"), ("codex", "openai"), ("chatgpt", "openai"),
              ("gemini", "gcp.gemini"), ("mistral", "mistral_ai"), ("codestral", "mistral_ai"),
              ("deepseek", "deepseek"), ("grok", "x_ai"), ("command", "cohere"),
              ("sonar", "perplexity"))


def provider(model: str | None) -> str | None:
    """The conventions' provider name for a model id, when its name says it (a
    ``provider/model`` prefix, or a well-known family); None when unknown."""
    if not model:
        return None
    name = model.lower()
    if "/" in name:
        name = name.rsplit("/", 1)[-1]
    if name.startswith(("anthropic.", "us.anthropic.")):
        return "aws.bedrock"
    return next((p for prefix, p in _PROVIDERS if name.startswith(prefix)), None)


def turns(group: Sequence[FeedEvent]) -> list[list[FeedEvent]]:
    """The messages of one transaction, split into turns at user messages."""
    out: list[list[FeedEvent]] = []
    for item in group:
        event = item.event
        if not isinstance(event, MessageAppended) or is_record(event):
            continue  # a record its SDK store keeps is no message
        answered = out and any(isinstance(m.event, MessageAppended)
                               and m.event.role != "user" for m in out[-1])
        if not out or (event.role == "user" and answered):
            out.append([])
        out[-1].append(item)
    return out


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


def turn_spans(turn: list[FeedEvent], start: ConversationStarted, *, content: bool
               ) -> list[SpanSpec]:
    """The turn's ``invoke_agent`` span and its ``chat`` spans (see the module)."""
    first = turn[0]
    messages = [m.event for m in turn if isinstance(m.event, MessageAppended)]
    trace = derived_id(128, "turn", first.stream, first.version)
    root = derived_id(64, "turn-span", first.stream, first.version)
    agent = next((m.agent for m in messages if m.agent), None) or start.agent
    models = [m.model for m in messages if m.role == "assistant" and m.model]
    times = [nanos(m.created_at or m.at) for m in messages]
    common = _conversation(first.key, start, agent)
    usage, chats = Usage(), []
    counted: set[str] = set()
    for response in _responses(turn):
        chat_usage = Usage()
        for item in response:
            event = item.event
            assert isinstance(event, MessageAppended)
            if event.response_id is None or event.response_id not in counted:
                chat_usage.add(event)  # a response's usage once, as the views count it
            if event.response_id is not None:
                counted.add(event.response_id)
        _merge(usage, chat_usage)
        chats.append(_chat_span(response, turn, trace, root, common, chat_usage, content))
    attributes: Attributes = {**common, "gen_ai.operation.name": "invoke_agent",
                              **usage.attributes(),
                              "convlog.messages": len(messages),
                              "convlog.version.first": first.version,
                              "convlog.version.last": turn[-1].version,
                              "convlog.position": turn[-1].position}
    if models:
        attributes |= _model(models[0], models[-1])
    costs = [m.cost_usd for m in messages if m.cost_usd is not None]
    if costs:  # what the host said the messages cost (convlog's own prices: the views)
        attributes["convlog.cost_usd"] = float(sum(costs))
    if content:
        inputs = [m for m in messages if m.role != "assistant"]
        outputs = [m for m in messages if m.role == "assistant"]
        if inputs:
            attributes["gen_ai.input.messages"] = _json([_message(m) for m in inputs])
        if outputs:
            attributes["gen_ai.output.messages"] = _json(
                [_message(m, output=True) for m in outputs])
    name = f"invoke_agent {agent}" if agent else "invoke_agent"
    span = SpanSpec(name=name, trace_id=trace, span_id=root, start_ns=min(times),
                    end_ns=max(times), attributes=attributes)
    return [span, *chats]


def _merge(total: Usage, part: Usage) -> None:
    total.input += part.input
    total.output += part.output
    total.cache_read += part.cache_read
    total.cache_write += part.cache_write


def _responses(turn: list[FeedEvent]) -> list[list[FeedEvent]]:
    """The agent's model responses in a turn: consecutive assistant messages with the
    same response id (or one message, without an id)."""
    out: list[list[FeedEvent]] = []
    last: str | None = None
    for item in turn:
        event = item.event
        assert isinstance(event, MessageAppended)
        if event.role != "assistant":
            last = None
            continue
        if out and event.response_id is not None and event.response_id == last:
            out[-1].append(item)
        else:
            out.append([item])
        last = event.response_id
    return out


def _chat_span(response: list[FeedEvent], turn: list[FeedEvent], trace: int, parent: int,
               common: Attributes, usage: Usage, content: bool) -> SpanSpec:
    head = response[0]
    events = [r.event for r in response if isinstance(r.event, MessageAppended)]
    model = next((e.model for e in events if e.model), None)
    before = [t.event for t in turn if t.version < head.version
              and isinstance(t.event, MessageAppended)]
    end = max(nanos(e.created_at or e.at) for e in events)
    start = nanos(before[-1].created_at or before[-1].at) if before else end
    attributes: Attributes = {**common, "gen_ai.operation.name": "chat", **usage.attributes()}
    if model:
        attributes |= _model(model, model)
    if events[0].response_id:
        attributes["gen_ai.response.id"] = events[0].response_id
    if content:
        attributes["gen_ai.output.messages"] = _json(
            [_message(e, output=True) for e in events])
    return SpanSpec(name=f"chat {model}" if model else "chat", trace_id=trace,
                    span_id=derived_id(64, "chat", head.stream, head.version),
                    parent_id=parent, start_ns=min(start, end), end_ns=end, kind="client",
                    attributes=attributes)


def _conversation(key: str, start: ConversationStarted, agent: str | None) -> Attributes:
    attributes: Attributes = {"gen_ai.conversation.id": key}
    if agent:
        attributes["gen_ai.agent.name"] = agent
    for name, value in (("convlog.user", start.user), ("convlog.channel", start.channel),
                        ("convlog.client", start.metadata.get("client"))):
        if isinstance(value, str) and value:
            attributes[name] = value
    return attributes


def _model(request: str, response: str) -> Attributes:
    attributes: Attributes = {"gen_ai.request.model": request,
                              "gen_ai.response.model": response}
    name = provider(request)
    if name:
        attributes["gen_ai.provider.name"] = name
    return attributes


def _message(event: MessageAppended, *, output: bool = False) -> dict[str, object]:
    """One message in the conventions' schema: role, parts (and a finish reason)."""
    parts: list[dict[str, object]] = []
    if isinstance(event.content, str) and event.role == "tool":
        parts.append({"type": "tool_call_response", "id": event.tool_call_id,
                      "response": event.content})
    elif isinstance(event.content, str):
        parts.append({"type": "text", "content": event.content})
    else:
        for part in event.content:
            if isinstance(part, TextPart):
                parts.append({"type": "text", "content": part.text})
            elif isinstance(part, ThinkingPart):
                parts.append({"type": "reasoning", "content": part.text})
            elif isinstance(part, ToolUsePart):
                parts.append({"type": "tool_call", "id": part.id, "name": part.name,
                              "arguments": _arguments(part.arguments)})
            elif isinstance(part, ToolResultPart):
                parts.append({"type": "tool_call_response", "id": part.tool_use_id,
                              "response": part.content})
            elif isinstance(part, ImagePart):
                parts.append({"type": "uri", "modality": "image", "uri": part.ref,
                              "mime_type": part.media_type})
    for call in event.tool_calls:
        parts.append({"type": "tool_call", "id": call.id, "name": call.name,
                      "arguments": _arguments(call.arguments)})
    role = "tool" if event.role == "tool" else event.role
    message: dict[str, object] = {"role": role, "parts": parts}
    if output:
        calls = any(p["type"] == "tool_call" for p in parts)
        message["finish_reason"] = "tool_call" if calls else "stop"
    return message


def _arguments(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
