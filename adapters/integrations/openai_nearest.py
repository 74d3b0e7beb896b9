"""A message another host wrote, as the nearest OpenAI Responses input items.

A conversation is shared: the library (Anthropic-style `tool_use` / `tool_result`
parts, chat-style `tool_calls` and `tool` messages), the ACP proxy (a turn's calls and
results inline in one assistant message) and the importers write messages that keep
no SDK item (`raw`). `ConvlogSession.get_items` must still hand the SDK items it can
convert, with every call and result in pairs (issue 28): one message then becomes
several items, in the order of its content:

- its text, if any, as a message item (``{"role": ..., "content": text}``);
- each call as a ``function_call`` (call id, name, arguments as JSON text);
- each result as a ``function_call_output`` (a ``tool`` message is one);
- reasoning (`ThinkingPart`) is left out: a Responses reasoning item is the
  provider's own (an id and encrypted content it issued), which no other host has;
  images and other non-text parts are left out as in a plain message's text.

Each item comes with the `Tools` pairing reads, so pairing sees exactly the items
handed out (a call not handed out is never answered by a synthetic output).
"""

from __future__ import annotations

from typing import Any

from convlog.domain.content import TextPart, ToolResultPart, ToolUsePart, content_text
from convlog.domain.events import MessageAppended
from convlog.projections.pairing import Tools

_TEXT = Tools()


def _call(call_id: str, name: str, arguments: str) -> tuple[dict[str, Any], Tools]:
    return ({"type": "function_call", "call_id": call_id, "name": name,
             "arguments": arguments or "{}"},
            Tools(calls=((call_id, name),), other=False))


def _output(call_id: str, text: str) -> tuple[dict[str, Any], Tools]:
    return ({"type": "function_call_output", "call_id": call_id, "output": text},
            Tools(results=(call_id,), other=False))


def nearest_items(message: MessageAppended) -> list[tuple[dict[str, Any], Tools]]:
    """The items (with what pairing sees of each) for a message without `raw`."""
    content = message.content
    if message.role == "tool":  # without the call it answers, it answers nothing
        return [_output(message.tool_call_id, content_text(content))
                ] if message.tool_call_id else []
    role = "user" if message.role == "user" else "assistant"
    out: list[tuple[dict[str, Any], Tools]] = []
    words: list[str] = []

    def said() -> None:
        text = "\n".join(words)
        if text:
            out.append(({"role": role, "content": text}, _TEXT))
        words.clear()

    for part in (TextPart(text=content),) if isinstance(content, str) else content:
        if isinstance(part, TextPart):
            words.append(part.text)
        elif isinstance(part, ToolUsePart):
            said()
            out.append(_call(part.id, part.name, part.arguments))
        elif isinstance(part, ToolResultPart):
            said()
            out.append(_output(part.tool_use_id, part.content))
    said()
    out.extend(_call(c.id, c.name, c.arguments) for c in message.tool_calls)
    return out
