"""The transcript: the messages of a conversation as the user saw them.

Thinking is hidden (users do not see it), tool calls and results are shown as
one-line markers, and a clear is shown where it happened: history is kept, but the
agent's context starts again after it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import msgspec

from convlog.domain.content import (
    Content,
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolResultPart,
    ToolUsePart,
)
from convlog.domain.events import (
    ConversationCleared,
    HistoryRewound,
    MessageAppended,
    Recorded,
    UserForgotten,
)
from convlog.domain.records import is_record

PREVIEW_CHARS = 80


class TranscriptLine(msgspec.Struct, frozen=True, kw_only=True):
    version: int
    at: datetime
    role: str
    """``user``, ``assistant``, ``tool``, or ``marker`` for a clear or an erasure."""
    text: str
    message_id: str | None = None
    model: str | None = None
    agent: str | None = None


def shorten(text: str, limit: int = PREVIEW_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def render_content(content: Content) -> str:
    """Content as a person reads it: text as is, everything else as a short marker."""
    if isinstance(content, str):
        return content
    pieces: list[str] = []
    for part in content:
        if isinstance(part, TextPart):
            pieces.append(part.text)
        elif isinstance(part, ImagePart):
            pieces.append(f"[image: {part.ref}]")
        elif isinstance(part, ToolUsePart):
            pieces.append(f"[tool call {part.name}({shorten(part.arguments, 60)})]")
        elif isinstance(part, ToolResultPart):
            marker = "tool error" if part.is_error else "tool result"
            pieces.append(f"[{marker}: {shorten(part.content)}]")
        elif isinstance(part, ThinkingPart):
            continue
    return "\n".join(pieces)


def transcript(recorded: Iterable[Recorded]) -> list[TranscriptLine]:
    lines: list[TranscriptLine] = []
    for r in recorded:
        e = r.event
        if isinstance(e, MessageAppended):
            if is_record(e):
                continue  # a record its SDK store keeps: no message
            text = render_content(e.content)
            calls = [f"[tool call {c.name}({shorten(c.arguments, 60)})]" for c in e.tool_calls]
            if calls:
                text = "\n".join(filter(None, [text, *calls]))
            lines.append(TranscriptLine(
                version=r.version, at=e.created_at or e.at, role=e.role, text=text,
                message_id=e.message_id, model=e.model, agent=e.agent))
        elif isinstance(e, ConversationCleared):
            note = f" ({e.reason})" if e.reason else ""
            lines.append(TranscriptLine(
                version=r.version, at=e.at, role="marker",
                text=f"conversation cleared{note}: the agent's context starts again here"))
        elif isinstance(e, HistoryRewound):
            note = f" ({e.reason})" if e.reason else ""
            lines.append(TranscriptLine(
                version=r.version, at=e.at, role="marker",
                text=f"rewound to message {e.to_message_id}{note}: the {e.abandoned} "
                     "messages after it are abandoned for the agent"))
        elif isinstance(e, UserForgotten):
            lines.append(TranscriptLine(
                version=r.version, at=e.at, role="marker",
                text=f"user {e.user} was forgotten: the content above is erased "
                     "([forgotten]); counts and tokens remain"))
    return lines
