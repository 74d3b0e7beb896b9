"""OpenAI message shapes -> convlog messages: Chat Completions messages and Responses
API / Agents SDK items. Both `openai` and `codex` (whose rollouts carry Responses
items) read through here, so the two formats agree on every mapping.

System and developer messages are skipped and counted (convlog never stores system
prompts); tool call arguments must be JSON text, as the API defines them; an item
type convlog has no message for (web search calls, ...) is skipped and counted.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

import msgspec

from convlog.domain.content import AnyPart, ImagePart, TextPart, ThinkingPart, ToolCall, Usage
from convlog.domain.errors import InvalidInput
from convlog.domain.messages import Message
from convlog.services.images import url_image


class ImageURL(msgspec.Struct):
    url: str = ""


class Part(msgspec.Struct):
    type: str = ""
    text: str | None = None
    refusal: str | None = None
    image_url: str | ImageURL | None = None
    file_id: str | None = None


class Function(msgspec.Struct):
    name: str
    arguments: str | dict[str, Any] = "{}"


class ChatToolCall(msgspec.Struct):
    id: str
    function: Function
    type: str = "function"


class Item(msgspec.Struct):
    """A chat message (no `type`) or a Responses item (`type`); unread fields ignored."""

    type: str | None = None
    id: str | None = None
    role: str | None = None
    content: str | list[Part] | None = None
    refusal: str | None = None
    tool_calls: list[ChatToolCall] | None = None
    tool_call_id: str | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | dict[str, Any] | None = None
    input: str | None = None
    output: str | list[Part] | None = None
    summary: list[Part] | None = None
    action: msgspec.Raw = msgspec.Raw()
    model: str | None = None


class TokenDetails(msgspec.Struct):
    cached_tokens: int | None = 0


class ApiUsage(msgspec.Struct):
    """Chat Completions (`prompt_tokens`) or Responses (`input_tokens`) usage; both
    include cached input, which convlog counts apart."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    prompt_tokens_details: TokenDetails | None = None
    input_tokens_details: TokenDetails | None = None


def usage(u: ApiUsage) -> Usage:
    details = u.prompt_tokens_details or u.input_tokens_details
    cached = u.cached_input_tokens or (details.cached_tokens if details else 0) or 0
    total_in = (u.prompt_tokens if u.prompt_tokens is not None else u.input_tokens) or 0
    out = (u.completion_tokens if u.completion_tokens is not None else u.output_tokens) or 0
    return Usage(input_tokens=max(total_in - cached, 0), output_tokens=out,
                 cache_read_tokens=cached)


def to_message(item: Item, fallback_id: str, skipped: Counter[str], *,
               model: str | None = None, created_at: datetime | None = None
               ) -> Message | None:
    """The convlog message of one item, or None (counted in `skipped`)."""
    kind = item.type or "message"
    fields: dict[str, Any] = {"id": item.id or fallback_id, "created_at": created_at}
    if kind == "message":
        return _chat(item, fields, skipped, model)
    if kind in ("function_call", "custom_tool_call", "local_shell_call"):
        name = item.name or ("local_shell" if kind == "local_shell_call" else None)
        if not name:
            raise InvalidInput(f"a {kind} needs a name", field="name")
        return Message(role="assistant", content="", model=model, tool_calls=[ToolCall(
            id=item.call_id or item.id or fallback_id, name=name,
            arguments=_arguments(item, kind))], **fields)
    if kind in ("function_call_output", "custom_tool_call_output"):
        if not item.call_id:
            raise InvalidInput(f"a {kind} needs its call_id", field="call_id")
        return Message(role="tool", content=_text(item.output, skipped),
                       tool_call_id=item.call_id, **fields)
    if kind == "reasoning":
        texts = [p.text for p in item.summary or () if p.text]
        if not texts:
            skipped["reasoning without summary"] += 1
            return None
        return Message(role="assistant", model=model,
                       content=[ThinkingPart(text=t) for t in texts], **fields)
    skipped[f"item:{kind}"] += 1
    return None


def _chat(item: Item, fields: dict[str, Any], skipped: Counter[str], model: str | None
          ) -> Message | None:
    role = item.role or ""
    if role in ("system", "developer", "function"):
        skipped[f"{role} message"] += 1
        return None
    if role not in ("user", "assistant", "tool"):
        raise InvalidInput(f"unknown role {role!r}", field="role")
    calls = [ToolCall(id=c.id, name=c.function.name, arguments=_json(c.function.arguments))
             for c in item.tool_calls or ()]
    content: str | list[AnyPart]
    if item.content is None or isinstance(item.content, str):
        content = item.content or ""
    else:
        content = [part for p in item.content if (part := _part(p, skipped)) is not None]
        if len(content) == 1 and isinstance(content[0], TextPart):
            content = content[0].text
    if not content and item.refusal:  # a Chat Completions refusal instead of content
        content = item.refusal
    if not content and not calls:
        skipped[f"empty {role} message"] += 1
        return None
    return Message(role=role, content=content, tool_calls=calls,
                   tool_call_id=item.tool_call_id,
                   model=item.model or (model if role == "assistant" else None), **fields)


def _part(p: Part, skipped: Counter[str]) -> AnyPart | None:
    if p.text is not None and p.type in ("text", "input_text", "output_text", "summary_text"):
        return TextPart(text=p.text)
    if p.type == "refusal" and p.refusal is not None:
        return TextPart(text=p.refusal)
    if p.type in ("image_url", "input_image"):
        url = p.image_url.url if isinstance(p.image_url, ImageURL) else p.image_url
        if url or p.file_id:
            # an inline image (a data: URL) by its bytes' SHA-256, never its bytes
            return url_image(str(url)) if url else ImagePart(ref=str(p.file_id))
    skipped[f"part:{p.type or '(none)'}"] += 1
    return None


def _text(value: str | list[Part] | None, skipped: Counter[str]) -> str:
    if value is None or isinstance(value, str):
        return value or ""
    parts = [_part(p, skipped) for p in value]
    return "\n".join(p.text if isinstance(p, TextPart) else f"[image: {p.ref}]"
                     for p in parts if isinstance(p, TextPart | ImagePart))


def _arguments(item: Item, kind: str) -> str:
    if kind == "custom_tool_call":  # free text, not JSON: wrapped so it can be replayed
        return msgspec.json.encode({"input": item.input or ""}).decode()
    if kind == "local_shell_call":
        return bytes(item.action).decode() if item.action else "{}"
    return _json(item.arguments)


def _json(value: str | dict[str, Any] | None) -> str:
    if value is None:
        return "{}"
    return value if isinstance(value, str) else msgspec.json.encode(value).decode()
