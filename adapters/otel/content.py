"""Messages in the GenAI conventions' JSON schema (``gen_ai.input.messages`` and
``gen_ai.output.messages``): role, parts, and a finish reason on outputs.

A tool's result is the input of the model call after it, so it is a ``tool``
message (``tool_call_response`` parts) among the inputs, never a part of the
assistant's output, whatever message holds it: a chat-style ``tool`` message, an
Anthropic-style user message of ``tool_result`` blocks, a Google ADK function
response (an event the agent authored), or the ACP proxy's turn (calls, results and
text in one assistant message). Reasoning is a ``reasoning`` part of the output.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from convlog.domain.content import ImagePart, TextPart, ThinkingPart, ToolResultPart, ToolUsePart
from convlog.domain.events import MessageAppended

Message = dict[str, object]


def arguments(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _parts(event: MessageAppended) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """(its own parts, its tool results as parts)."""
    own: list[dict[str, object]] = []
    results: list[dict[str, object]] = []
    content = event.content
    if isinstance(content, str):
        if event.role == "tool":
            results.append({"type": "tool_call_response", "id": event.tool_call_id,
                            "response": content})
        elif content:
            own.append({"type": "text", "content": content})
    else:
        for part in content:
            if isinstance(part, TextPart):
                if event.role == "tool":  # a chat-style result written as parts
                    results.append({"type": "tool_call_response", "id": event.tool_call_id,
                                    "response": part.text})
                else:
                    own.append({"type": "text", "content": part.text})
            elif isinstance(part, ThinkingPart):
                own.append({"type": "reasoning", "content": part.text})
            elif isinstance(part, ToolUsePart):
                own.append({"type": "tool_call", "id": part.id, "name": part.name,
                            "arguments": arguments(part.arguments)})
            elif isinstance(part, ToolResultPart):
                results.append({"type": "tool_call_response", "id": part.tool_use_id,
                                "response": part.content})
            elif isinstance(part, ImagePart):
                own.append({"type": "uri", "modality": "image", "uri": part.ref,
                            "mime_type": part.media_type})
    own.extend({"type": "tool_call", "id": call.id, "name": call.name,
                "arguments": arguments(call.arguments)} for call in event.tool_calls)
    return own, results


def input_messages(events: Iterable[MessageAppended]) -> list[Message]:
    """The user's inputs and the tools' results among `events`, in order."""
    out: list[Message] = []
    for event in events:
        own, results = _parts(event)
        if results:
            out.append({"role": "tool", "parts": results})
        if own and event.role == "user":
            out.append({"role": "user", "parts": own})
    return out


def output_messages(events: Iterable[MessageAppended]) -> list[Message]:
    """The agent's messages among `events` (without the tool results they hold)."""
    out: list[Message] = []
    for event in events:
        if event.role != "assistant":
            continue
        own, _ = _parts(event)
        if own:
            calls = any(p["type"] == "tool_call" for p in own)
            out.append({"role": "assistant", "parts": own,
                        "finish_reason": "tool_call" if calls else "stop"})
    return out


def text(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
