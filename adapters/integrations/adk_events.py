"""Google ADK events as convlog messages, and the records a session service needs.

An ADK event is kept whole, as its JSON (`raw = {"event": ...}`), and read back with
`Event.model_validate`: what `get_session` returns is what `append_event` was given.
Beside it, the readable message: the author's words, images (by reference), tool calls
and results, and the model's usage (`usage_metadata`, `model_version`) so costs work.

Three kinds of records live in the log beside them, none a message (issue 41:
`Message.record`, convlog.domain.records): ``{"adk": "session", "state": ...,
"time": ...}`` (``adk:session``) opens a session's epoch with its initial state,
``{"adk": "state", "delta": ...}`` (``adk:state``) records an app- or user-scoped state
delta in that scope's own conversation, and an event with no content and no usage
(a state delta, a transfer, an agent's end: ``adk:event``) is kept whole as any
event is, for `get_session`.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from convlog.domain.content import (
    AnyPart,
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolResultPart,
    ToolUsePart,
    Usage,
)
from convlog.domain.messages import Message
from convlog.services.images import inline_image, url_image

SESSION = "session"
STATE = "state"


class Record(msgspec.Struct, frozen=True, gc=False):
    """A record of a session's epoch as `get_session` reads it: its kind and either
    an event's JSON, left undecoded (`msgspec.Raw`, which the collector never
    tracks), or the session's initial state and time. Each event is decoded only
    when it is folded and when it is validated, one at a time: a session's events
    all decoded up front stayed alive through the validation of every ADK `Event`,
    and the collector walked them again and again (issue 30)."""

    adk: Any = None
    event: msgspec.Raw = msgspec.Raw()
    """Empty in a record that is not an event (msgspec has no ``Raw | None``)."""
    state: Any = None
    time: Any = 0.0


RECORD: msgspec.json.Decoder[Record] = msgspec.json.Decoder(Record)


def _parts(content: dict[str, Any] | None) -> list[AnyPart]:
    parts: list[AnyPart] = []
    for part in (content or {}).get("parts") or ():
        if not isinstance(part, dict):
            continue
        if part.get("text") is not None:
            kind = ThinkingPart if part.get("thought") else TextPart
            parts.append(kind(text=str(part["text"])))
        elif isinstance(part.get("function_call"), dict):
            call = part["function_call"]
            parts.append(ToolUsePart(id=str(call.get("id") or call.get("name") or "call"),
                                     name=str(call.get("name") or "tool"),
                                     arguments=json.dumps(call.get("args") or {})))
        elif isinstance(part.get("inline_data"), dict) or isinstance(part.get("file_data"), dict):
            image = _image(part)
            if image is not None:
                parts.append(image)
        elif isinstance(part.get("function_response"), dict):
            answer = part["function_response"]
            parts.append(ToolResultPart(
                tool_use_id=str(answer.get("id") or answer.get("name") or "call"),
                content=json.dumps(answer.get("response"))))
    return parts


def _image(part: dict[str, Any]) -> ImagePart | None:
    """An image part as a reference (what every reader shows), as the Anthropic
    mapping makes it: its URI, or the SHA-256 and size of inline bytes (kept whole in
    the event, for `get_session`). Other media (audio, PDF) stay in the event only."""
    blob = part.get("inline_data") or part.get("file_data") or {}
    media = blob.get("mime_type")
    if isinstance(media, str) and not media.startswith("image/"):
        return None
    if isinstance(blob.get("file_uri"), str):
        return url_image(blob["file_uri"], media)
    data = blob.get("data")  # pydantic dumps bytes as URL-safe base64
    return inline_image(data, media) if isinstance(data, str) else None


def _usage(usage: dict[str, Any] | None) -> Usage | None:
    if not usage:
        return None
    prompt = int(usage.get("prompt_token_count") or 0)
    cached = int(usage.get("cached_content_token_count") or 0)
    output = int(usage.get("candidates_token_count") or 0) + int(
        usage.get("thoughts_token_count") or 0)
    return Usage(input_tokens=max(0, prompt - cached), cache_read_tokens=cached,
                 output_tokens=output)


def event_message(event: dict[str, Any], app_name: str) -> Message:
    """One ADK event (its JSON dump) as a message keeping it whole."""
    role = "user" if event.get("author") == "user" else "assistant"
    parts = _parts(event.get("content"))
    usage = _usage(event.get("usage_metadata"))
    if not parts and usage is None:  # state deltas, transfers, ends: no dialogue
        author = event.get("author")
        return Message(role="assistant", content=[], raw={"event": event},
                       agent=str(author) if author and author != "user" else app_name,
                       model=event.get("model_version"), record="adk:event")
    if role == "user":
        return Message(role="user", content=parts, raw={"event": event})
    return Message(role="assistant", content=parts, raw={"event": event},
                   agent=str(event.get("author") or app_name),
                   model=event.get("model_version"), usage=usage)


def session_record(message_id: str, state: dict[str, Any], time: float) -> Message:
    return Message(id=message_id, role="assistant", content=[], record="adk:session",
                   raw={"adk": SESSION, "state": state, "time": time})


def state_record(delta: dict[str, Any]) -> Message:
    return Message(role="assistant", content=[], record="adk:state",
                   raw={"adk": STATE, "delta": delta})
