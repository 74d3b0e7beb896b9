"""Anthropic Messages API content blocks (as Claude Code stores them) -> convlog parts.

The ONE mapping: the Claude Code importer and the Claude Agent SDK store both use it,
so a tool block, and an image's reference, read the same whichever way a transcript
came in. Server tools' blocks (`server_tool_use`, web search results) are skipped: they
pair with each other, never with a `tool_result`.

Text, thinking, tool_use (its `input` kept as the exact JSON text), tool_result (its
content flattened to text) and image blocks; an image is kept as a reference (its
URL, or the SHA-256 and size of inline base64 data), never as bytes. Other block
types (redacted thinking, server tools...) are skipped and counted by type.
"""

from __future__ import annotations

from collections import Counter

import msgspec

from convlog.domain.content import (
    AnyPart,
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolResultPart,
    ToolUsePart,
)
from convlog.domain.errors import InvalidInput
from convlog.services.images import inline_image


class Source(msgspec.Struct):
    type: str = ""
    media_type: str | None = None
    data: msgspec.Raw = msgspec.Raw()
    url: str | None = None
    file_id: str | None = None


class Inner(msgspec.Struct):
    """A block inside a tool result's content."""

    type: str = ""
    text: str | None = None
    source: Source | None = None


class Block(msgspec.Struct):
    type: str = ""
    text: str | None = None
    thinking: str | None = None
    id: str | None = None
    name: str | None = None
    input: msgspec.Raw = msgspec.Raw()
    tool_use_id: str | None = None
    content: str | list[Inner] | None = None
    is_error: bool | None = None
    source: Source | None = None


class ApiUsage(msgspec.Struct):
    input_tokens: int | None = 0
    output_tokens: int | None = 0
    cache_read_input_tokens: int | None = 0
    cache_creation_input_tokens: int | None = 0



def to_part(block: Block, skipped: Counter[str]) -> AnyPart | None:
    kind = block.type
    if kind == "text" and block.text is not None:
        return TextPart(text=block.text)
    if kind == "thinking" and block.thinking is not None:
        return ThinkingPart(text=block.thinking)
    if kind == "tool_use" and block.id and block.name:
        arguments = bytes(block.input).decode() if block.input else "{}"
        return ToolUsePart(id=block.id, name=block.name, arguments=arguments)
    if kind == "tool_result" and block.tool_use_id:
        return ToolResultPart(tool_use_id=block.tool_use_id, content=_result_text(block),
                              is_error=bool(block.is_error))
    if kind == "image" and block.source is not None:
        return image(block.source)
    skipped[f"block:{kind}"] += 1
    return None


def _result_text(block: Block) -> str:
    if block.content is None or isinstance(block.content, str):
        return block.content or ""
    pieces = []
    for inner in block.content:
        if inner.text is not None:
            pieces.append(inner.text)
        elif inner.type == "image" and inner.source is not None:
            ref = image(inner.source)
            pieces.append(f"[image {ref.media_type or ''} {ref.size or 0} bytes {ref.ref}]")
    return "\n".join(pieces)


def image(source: Source) -> ImagePart:
    """A reference to an image: its URL, its file id, or the SHA-256 and size of
    inline data."""
    if source.url:
        return ImagePart(ref=source.url, media_type=source.media_type)
    if source.file_id:  # the Files API: the id is the reference
        return ImagePart(ref=source.file_id, media_type=source.media_type)
    found = inline_image(bytes(source.data), source.media_type)
    if found is None:
        raise InvalidInput("image data is not base64", field="source.data")
    return found
