"""A stored conversation as the `session/update` notifications of a `session/load`.

ACP says an agent answering `session/load` MUST first stream the whole conversation
to the client. The proxy (and the Python-agent helper) build those updates from the
log with the SDK's own helpers, so they are exactly the schema's shapes: user text as
``user_message_chunk``, agent text as ``agent_message_chunk``, thinking as
``agent_thought_chunk``, each tool use as a ``tool_call`` and its result as a
``tool_call_update`` (status completed or failed).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from convlog.domain.content import (
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolResultPart,
    ToolUsePart,
)
from convlog.domain.events import MessageAppended


def _dump(model: Any) -> dict[str, Any]:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)  # type: ignore[no-any-return]


def _arguments(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def message_updates(message: MessageAppended) -> Iterator[dict[str, Any]]:
    """The updates that show one stored message to a client (as wire dicts)."""
    import acp

    user = message.role == "user"
    text_update = acp.update_user_message_text if user else acp.update_agent_message_text
    if message.role == "tool":
        content = message.content if isinstance(message.content, str) else "\n".join(
            p.text if isinstance(p, TextPart) else p.content
            for p in message.content if isinstance(p, TextPart | ToolResultPart))
        yield _dump(acp.update_tool_call(
            message.tool_call_id or message.message_id, status="completed",
            content=[acp.tool_content(acp.text_block(content))]))
        return
    if isinstance(message.content, str):
        if message.content:
            yield _dump(text_update(message.content))
    else:
        for part in message.content:
            if isinstance(part, TextPart):
                yield _dump(text_update(part.text))
            elif isinstance(part, ThinkingPart) and not user:
                yield _dump(acp.update_agent_thought_text(part.text))
            elif isinstance(part, ImagePart):
                yield _dump(text_update(f"[image: {part.ref}]"))
            elif isinstance(part, ToolUsePart):
                yield _dump(acp.start_tool_call(part.id, part.name, status="in_progress",
                                                raw_input=_arguments(part.arguments)))
            elif isinstance(part, ToolResultPart):
                yield _dump(acp.update_tool_call(
                    part.tool_use_id, status="failed" if part.is_error else "completed",
                    content=[acp.tool_content(acp.text_block(part.content))]))
    for call in message.tool_calls:
        yield _dump(acp.start_tool_call(call.id, call.name, status="completed",
                                        raw_input=_arguments(call.arguments)))


def replay_updates(messages: Iterable[MessageAppended]) -> Iterator[dict[str, Any]]:
    """Every update of a conversation, in order."""
    for message in messages:
        yield from message_updates(message)
