"""What every span of the export is made of: the span's plain values (`SpanSpec`),
ids derived from the log, and the GenAI attributes shared by a conversation's spans
(OpenTelemetry's GenAI conventions of 2026, status "development"). Turns become
spans in convlog.otel.invocation, resume outcomes in convlog.otel.resumes.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Literal

import msgspec

from convlog.domain.events import ConversationStarted

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


def conversation_attributes(key: str, start: ConversationStarted, agent: str | None) -> Attributes:
    attributes: Attributes = {"gen_ai.conversation.id": key}
    if agent:
        attributes["gen_ai.agent.name"] = agent
    for name, value in (("convlog.user", start.user), ("convlog.channel", start.channel),
                        ("convlog.client", start.metadata.get("client"))):
        if isinstance(value, str) and value:
            attributes[name] = value
    return attributes


def model_attributes(request: str, response: str) -> Attributes:
    attributes: Attributes = {"gen_ai.request.model": request,
                              "gen_ai.response.model": response}
    name = provider(request)
    if name:
        attributes["gen_ai.provider.name"] = name
    return attributes
