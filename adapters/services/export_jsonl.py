"""`convlog export --format convlog-jsonl`: a conversation as `convlog record` lines,
which `convlog record KEY FILE` reads back into another store.

What the `record` format carries, and so what comes back: the conversation's start
(user, agent, channel, title, workspace, metadata) and every message with its id,
role, content parts (text, thinking, images by reference, tool uses and results),
tool calls, model, agent, usage, cost, token count as recorded, response id and its
time (`created_at`, else when convlog recorded it); the native sessions bound, the
resume attempts and their outcomes, archives, reactivations and clears. Left out, by
rule (the format has no line for them): the records an SDK store keeps (not
messages), native payloads (`raw`), retractions, memory blocks, injected history and
summaries (positions of the old log), titles changed later, context windows, the
preamble, policies, compactions and erasures; and every event's own recording time
but a message's (docs/importers.md#export).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from convlog.domain.events import (
    ConversationArchived,
    ConversationCleared,
    ConversationReactivated,
    ConversationStarted,
    MessageAppended,
    NativeSessionBound,
    Recorded,
    ResumeAttempted,
    ResumeFailed,
    ResumeSucceeded,
)
from convlog.domain.records import is_record

FORMATS = ("convlog-jsonl",)
_encode = msgspec.json.Encoder(decimal_format="number").encode


def _clean(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None and v != [] and v != {}}


def _message(e: MessageAppended) -> dict[str, Any]:
    return _clean({
        "type": "message", "id": e.message_id, "role": e.role,
        "content": msgspec.to_builtins(e.content),
        "tool_calls": [msgspec.to_builtins(c) for c in e.tool_calls],
        "tool_call_id": e.tool_call_id, "model": e.model, "agent": e.agent,
        "usage": msgspec.to_builtins(e.usage) if e.usage is not None else None,
        "cost_usd": e.cost_usd, "tokens": e.tokens,
        "created_at": (e.created_at or e.at).isoformat(), "response_id": e.response_id})


def line_of(event: object) -> dict[str, Any] | None:
    """The `record` line of one event; None for what the format cannot carry."""
    if isinstance(event, ConversationStarted):
        return _clean({"type": "session_started", "user": event.user, "agent": event.agent,
                       "channel": event.channel, "title": event.title,
                       "workspace": event.workspace, "metadata": event.metadata})
    if isinstance(event, MessageAppended):
        return None if is_record(event) else _message(event)
    if isinstance(event, NativeSessionBound):
        return _clean({"type": "native_session_bound",
                       "native_session_id": event.native_session_id, "agent": event.agent})
    if isinstance(event, ResumeAttempted):
        return _clean({"type": "resume_attempted", "strategy": event.strategy,
                       "native_session_id": event.native_session_id})
    if isinstance(event, ResumeSucceeded):
        return _clean({"type": "resume_succeeded", "strategy": event.strategy,
                       "native_session_id": event.native_session_id,
                       "latency_ms": event.latency_ms, "fresh": event.fresh})
    if isinstance(event, ResumeFailed):
        return _clean({"type": "resume_failed", "strategy": event.strategy,
                       "reason": event.reason, "error": event.error,
                       "native_session_id": event.native_session_id,
                       "latency_ms": event.latency_ms})
    if isinstance(event, ConversationArchived) and event.retention is None:
        return _clean({"type": "session_archived", "reason": event.reason})
    if isinstance(event, ConversationReactivated):
        return {"type": "session_reactivated"}
    if isinstance(event, ConversationCleared):
        return _clean({"type": "conversation_cleared", "reason": event.reason})
    return None


def conversation_lines(events: Iterable[Recorded]) -> bytes:
    """The conversation's `record` lines, in log order (one JSON document a line)."""
    out = []
    for recorded in events:
        line = line_of(recorded.event)
        if line is not None:
            out.append(_encode(line))
    return b"".join(line + b"\n" for line in out)
