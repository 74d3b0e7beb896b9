"""The `redact=` hook of `convlog.open`: applied to what a message says before any of
it is stored (text, thinking, tool arguments, tool results), never after.

The hook reaches the payload a surface keeps beside the message too (`raw`: an ACP
turn's updates, an SDK's own item): every string in it passes the hook.

The hook is any ``str -> str`` function (`convlog.redact_secrets` is the built-in
one). Tool arguments must stay JSON: a hook that breaks them is refused with the
field named, rather than storing arguments no agent could replay. Besides messages,
every other text a write stores from outside convlog passes the hook too: memory
blocks, summaries (the host's summarizer wrote them), injected history, a title (and
the agent's own payload kept with a title or a context window), the host's preamble
and the error text of a failed resume tier (`redact_command`; the writer applies it to
every command).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from convlog.domain.content import (
    AnyPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResultPart,
    ToolUsePart,
    check_json_arguments,
)
from convlog.domain.conversation import AppendMessages, Command, RecordFact
from convlog.domain.errors import InvalidInput
from convlog.domain.events import (
    ContextWindowReported,
    HistoryInjected,
    PreambleSent,
    ResumeFailed,
    SummaryRecorded,
    TitleChanged,
)
from convlog.domain.memory import InjectMemory
from convlog.domain.messages import Message

Redactor = Callable[[str], str]


def _apply(redact: Redactor, text: str, field: str) -> str:
    out = redact(text)
    if not isinstance(out, str):
        raise InvalidInput(f"the redact hook returned {type(out).__name__}, not text",
                           field=field)
    return out


def _arguments(redact: Redactor, arguments: str, field: str) -> str:
    out = _apply(redact, arguments, field)
    if out != arguments:
        try:
            check_json_arguments(out, field)
        except InvalidInput:
            raise InvalidInput("the redact hook turned tool arguments into invalid JSON "
                               "(replace secrets inside JSON strings with text that has no "
                               "quotes or backslashes)", field=field) from None
    return out


def _part(redact: Redactor, part: AnyPart, field: str) -> AnyPart:
    if isinstance(part, TextPart | ThinkingPart):
        return msgspec.structs.replace(part, text=_apply(redact, part.text, f"{field}.text"))
    if isinstance(part, ToolUsePart):
        return msgspec.structs.replace(
            part, arguments=_arguments(redact, part.arguments, f"{field}.arguments"))
    if isinstance(part, ToolResultPart):
        return msgspec.structs.replace(
            part, content=_apply(redact, part.content, f"{field}.content"))
    return part


def redact_message(redact: Redactor, message: Message) -> Message:
    """`message` with the hook applied to every text it carries (a new Message)."""
    if isinstance(message.content, str):
        content: str | list[AnyPart] = _apply(redact, message.content, "content")
    else:
        content = [_part(redact, p, f"content[{i}]") for i, p in enumerate(message.content)]
    calls = [ToolCall(id=c.id, name=c.name,
                      arguments=_arguments(redact, c.arguments, f"tool_calls[{i}].arguments"))
             for i, c in enumerate(message.tool_calls)]
    raw = _json(redact, message.raw, "raw") if message.raw is not None else None
    return msgspec.structs.replace(message, content=content, tool_calls=calls, raw=raw)


def _json(redact: Redactor, value: Any, field: str) -> Any:
    """A JSON value (a surface's own payload, `raw`) with the hook applied to every
    string in it; keys, numbers and the shape are kept."""
    if isinstance(value, str):
        return _apply(redact, value, field)
    if isinstance(value, list):
        return [_json(redact, v, f"{field}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: _json(redact, v, f"{field}.{k}") for k, v in value.items()}
    return value


def redact_command(redact: Redactor, command: Command) -> Command:
    """`command` with the hook applied to every text it would store (the same command
    when it stores none). Items that are not Messages are left for the domain to
    refuse with its own error."""
    if isinstance(command, AppendMessages):
        return msgspec.structs.replace(command, messages=[
            redact_message(redact, m) if isinstance(m, Message) else m
            for m in command.messages])
    if isinstance(command, InjectMemory) and isinstance(command.text, str):
        return msgspec.structs.replace(command, text=_apply(redact, command.text, "text"))
    if isinstance(command, RecordFact):
        event = command.event
        if isinstance(event, SummaryRecorded | HistoryInjected) and isinstance(event.text,
                                                                                 str):
            text = _apply(redact, event.text, "text")
            if text != event.text:
                return RecordFact(event=msgspec.structs.replace(event, text=text))
        elif isinstance(event, ResumeFailed) and isinstance(event.error, str):
            error = _apply(redact, event.error, "error")
            if error != event.error:
                return RecordFact(event=msgspec.structs.replace(event, error=error))
        elif isinstance(event, TitleChanged) and isinstance(event.title, str):
            return RecordFact(event=msgspec.structs.replace(
                event, title=_apply(redact, event.title, "title"),
                update=_json(redact, event.update, "update")))
        elif isinstance(event, PreambleSent) and isinstance(event.text, str):
            return RecordFact(event=msgspec.structs.replace(
                event, text=_apply(redact, event.text, "text"),
                blocks=_json(redact, event.blocks, "blocks")))
        elif isinstance(event, ContextWindowReported) and event.update is not None:
            return RecordFact(event=msgspec.structs.replace(
                event, update=_json(redact, event.update, "update")))
    return command
