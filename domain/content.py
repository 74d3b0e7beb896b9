"""Message content: text, parts, tool calls and token usage.

WARNING: these Structs are part of the STORED FORMAT of `MessageAppended`. Renaming a
field or a tag breaks every database already written. Add optional fields with
defaults; change anything else through a new event class version and an upcaster
(see `convlog.domain.events`), and update the golden files in tests/golden.
"""

from __future__ import annotations

import json
from typing import Literal

import msgspec

from convlog.domain.errors import InvalidInput


class Part(
    msgspec.Struct, frozen=True, kw_only=True, tag_field="type", omit_defaults=True
):
    """One piece of a message that is more than plain text."""


class TextPart(Part, tag="text", frozen=True):
    text: str


class ImagePart(Part, tag="image", frozen=True):
    """A reference to an image (a URL or a host-side file id), never the bytes."""

    ref: str
    media_type: str | None = None
    size: int | None = None
    """The image's size in bytes, when known (an importer that saw inline data)."""


class ToolUsePart(Part, tag="tool_use", frozen=True):
    id: str
    name: str
    arguments: str = "{}"
    """The call's arguments as JSON text, exactly as the model produced them."""


class ToolResultPart(Part, tag="tool_result", frozen=True):
    tool_use_id: str
    content: str
    is_error: bool = False


class ThinkingPart(Part, tag="thinking", frozen=True):
    text: str


AnyPart = TextPart | ImagePart | ToolUsePart | ToolResultPart | ThinkingPart
Content = str | list[AnyPart]
Role = Literal["user", "assistant", "tool"]
ROLES: tuple[str, ...] = ("user", "assistant", "tool")


class ToolCall(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A tool call in the chat-completions style (`tool_calls` on an assistant message)."""

    id: str
    name: str
    arguments: str = "{}"


class Usage(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Tokens a provider reported for producing one message.

    `input_tokens` counts only the UNCACHED input (Anthropic's convention); cached
    input goes in `cache_read_tokens` / `cache_write_tokens`. OpenAI's
    `prompt_tokens` include cached tokens: subtract `cached_tokens` from them."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def check(self) -> None:
        """Counts are never negative nor past MAX_TOKENS. Called where usage enters
        convlog (a Message), not in __post_init__, which msgspec would also run on
        every stored event read."""
        for name in self.__struct_fields__:
            check_token_count(getattr(self, name), f"usage.{name}")


# No response comes near a quadrillion tokens; the bound keeps every count (and any
# sum of counts) inside the views' BIGINT columns and exact as a double.
MAX_TOKENS = 10**15


def check_token_count(value: int, field: str) -> None:
    """InvalidInput naming `field` for a count below 0 or above MAX_TOKENS."""
    if value < 0:
        raise InvalidInput("token counts cannot be negative", field=field)
    if value > MAX_TOKENS:
        raise InvalidInput(f"token count {value} is past the limit of {MAX_TOKENS}",
                           field=field)


_utf8 = msgspec.json.Encoder()


def check_unicode(value: object, field: str) -> None:
    """Every string must be valid Unicode (no lone surrogates, as `surrogateescape`
    leaves behind from undecodable bytes), or it could not be stored as UTF-8.
    One encode says whether all is well (~1 us); only then is the culprit searched."""
    try:
        _utf8.encode(value)
        return
    except UnicodeEncodeError:
        pass
    except RecursionError:
        raise InvalidInput("nested too deeply to store", field=field or None) from None
    except (TypeError, ValueError):
        pass  # not encodable for another reason: walk it and check the strings
    _find_bad_text(value, field)


def _find_bad_text(value: object, field: str) -> None:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidInput(
                f"text is not valid UTF-8 (lone surrogate at character {exc.start})",
                field=field) from None
    elif isinstance(value, msgspec.Struct):
        for name in value.__struct_fields__:
            _find_bad_text(getattr(value, name), f"{field}.{name}" if field else name)
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _find_bad_text(item, f"{field}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            _find_bad_text(key, field)
            _find_bad_text(item, f"{field}.{key}")


def check_json_arguments(arguments: str, field: str) -> None:
    """Tool arguments must be JSON text: replaying or re-sending them must not fail later."""
    try:
        json.loads(arguments)
    except ValueError as exc:
        raise InvalidInput(f"tool arguments are not valid JSON ({exc})", field=field) from None


def check_content(content: object, field: str = "content") -> None:
    """Content is text or a list of parts; tool arguments inside it are JSON."""
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise InvalidInput(
            f"content must be text or a list of parts, not {type(content).__name__}", field=field
        )
    for i, part in enumerate(content):
        if not isinstance(part, Part):
            raise InvalidInput(
                f"content parts must be parts, not {type(part).__name__}", field=f"{field}[{i}]"
            )
        if isinstance(part, ToolUsePart):
            check_json_arguments(part.arguments, f"{field}[{i}].arguments")


def countable_text(content: Content, tool_calls: list[ToolCall] | None = None) -> str:
    """The text a model re-reads when this message is replayed to it: text, tool
    calls and results; not thinking (never replayed) nor image bytes (not stored)."""
    if isinstance(content, str):
        if not tool_calls:
            return content
        pieces = [content]
    elif len(content) == 1 and not tool_calls:  # one block: no list to join (issue 30)
        return _countable(content[0]) or ""
    else:
        pieces = [piece for piece in map(_countable, content) if piece is not None]
    pieces.extend(f"{c.name}({c.arguments})" for c in tool_calls or ())
    return "\n".join(pieces)


def _countable(part: Part) -> str | None:
    """One part's share of `countable_text` (None: a part a model does not re-read)."""
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, ToolUsePart):
        return f"{part.name}({part.arguments})"
    if isinstance(part, ToolResultPart):
        return part.content
    if isinstance(part, ImagePart):
        return f"[image: {part.ref}]"
    return None


def content_text(content: Content) -> str:
    """The plain text of some content, as a reader would see it (tool details omitted)."""
    if isinstance(content, str):
        return content
    return "\n".join(p.text for p in content if isinstance(p, TextPart))
