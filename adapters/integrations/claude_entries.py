"""Claude Code transcript entries (what the Claude Agent SDK mirrors to a SessionStore)
as convlog messages.

The store must hand entries back deep-equal, and treats them as opaque: the entry is
the message's `raw`. The readable message beside it follows the transcript's shape
where there is one (``type`` user/assistant with a ``message`` in the Messages API
form), so contexts, token counts and costs work: an assistant record carries its
model, its usage and the API message id as `response_id` (the CLI writes one record
per content block of a response, each repeating the usage: counted once). Entries
with no words (titles, tags, mode markers, snapshots) get empty content, which
contexts skip.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from convlog.domain.content import (
    AnyPart,
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolResultPart,
    ToolUsePart,
    Usage,
)
from convlog.domain.errors import InvalidInput
from convlog.domain.messages import Message


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(str(b.get("text", "")) for b in value
                         if isinstance(b, Mapping) and b.get("type") == "text")
    return json.dumps(value)


def _block(block: Mapping[str, Any]) -> AnyPart | None:
    kind = block.get("type")
    if kind == "text":
        return TextPart(text=str(block.get("text", "")))
    if kind == "thinking":
        return ThinkingPart(text=str(block.get("thinking", "")))
    if kind in ("tool_use", "server_tool_use"):
        return ToolUsePart(id=str(block.get("id", "")), name=str(block.get("name", "tool")),
                           arguments=json.dumps(block.get("input", {})))
    if kind == "tool_result":
        return ToolResultPart(tool_use_id=str(block.get("tool_use_id", "")),
                              content=_text(block.get("content", "")),
                              is_error=bool(block.get("is_error", False)))
    if kind == "image":
        source = block.get("source") or {}
        ref = source.get("url") or source.get("file_id") or "inline image"
        return ImagePart(ref=str(ref)[:200], media_type=source.get("media_type"))
    return None


def _usage(usage: object) -> Usage | None:
    if not isinstance(usage, Mapping):
        return None

    def count(name: str) -> int:
        value = usage.get(name)
        return value if isinstance(value, int) and value >= 0 else 0

    return Usage(input_tokens=count("input_tokens"), output_tokens=count("output_tokens"),
                 cache_read_tokens=count("cache_read_input_tokens"),
                 cache_write_tokens=count("cache_creation_input_tokens"))


def to_message(entry: Mapping[str, Any], message_id: str, *, agent: str | None = None
               ) -> Message:
    """One transcript entry as a message that keeps the entry as `raw`."""
    if not isinstance(entry, Mapping):
        raise InvalidInput(f"a session store entry must be a JSON object, not "
                           f"{type(entry).__name__}", field="entries")
    raw = json.loads(json.dumps(entry))
    body = entry.get("message")
    kind = entry.get("type")
    if kind not in ("user", "assistant") or not isinstance(body, Mapping):
        return Message(id=message_id, role="assistant", content=[], raw=raw, agent=agent)
    content = body.get("content", "")
    parts: str | list[AnyPart] = content if isinstance(content, str) else [
        part for part in (_block(b) for b in content if isinstance(b, Mapping))
        if part is not None] if isinstance(content, list) else ""
    if kind == "user":
        return Message(id=message_id, role="user", content=parts, raw=raw)
    return Message(id=message_id, role="assistant", content=parts, raw=raw, agent=agent,
                   model=body.get("model") if isinstance(body.get("model"), str) else None,
                   usage=_usage(body.get("usage")),
                   response_id=body.get("id") if isinstance(body.get("id"), str) else None)
