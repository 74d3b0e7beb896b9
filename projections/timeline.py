"""The timeline: every event of a conversation, one line each, for debugging.

`until` cuts the log at a version or at a point in time, so a developer can see the
conversation exactly as it stood when something went wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime

import msgspec

from convlog.domain.events import (
    AgentSessionClosed,
    ContextWindowReported,
    ConversationArchived,
    ConversationCleared,
    ConversationDeleted,
    ConversationStarted,
    Event,
    HistoryCompacted,
    HistoryInjected,
    HistoryRewound,
    MemoryInjected,
    MemoryPolicySet,
    MessageAppended,
    MessageRetracted,
    NativeSessionBound,
    PreambleSent,
    Recorded,
    ResumeAttempted,
    ResumeFailed,
    ResumeSucceeded,
    SummaryRecorded,
    TitleChanged,
    UserForgotten,
)
from convlog.domain.records import record_kind
from convlog.projections.moment import Moment, cut
from convlog.projections.transcript import render_content, shorten


class TimelineRow(msgspec.Struct, frozen=True, kw_only=True):
    version: int
    at: datetime
    type: str
    details: str
    event: Event
    """The full event, for `--json` consumers and for debugging in Python."""


def _pairs(**fields: object) -> str:
    return " ".join(f"{k}={v}" for k, v in fields.items() if v not in (None, "", [], {}))


def describe(event: Event, tokens: Callable[[MessageAppended], int | None] | None = None
             ) -> str:
    """One line saying what happened, with the details a debugger looks for first.
    `tokens(message)`: a message's token count (default: the one stored on it; no
    append counts since issue 45, so the log gives the count made on read)."""
    if isinstance(event, ConversationStarted):
        return _pairs(key=event.key, user=event.user, agent=event.agent,
                      channel=event.channel, title=event.title, workspace=event.workspace)
    if isinstance(event, MessageAppended):
        kind = record_kind(event)
        if kind is not None:  # kept for its SDK store's own reads: no message
            return _pairs(id=event.message_id, record=kind) + " | not a message"
        usage = event.usage
        used = f"{usage.input_tokens}in/{usage.output_tokens}out" if usage else None
        return _pairs(id=event.message_id, role=event.role, model=event.model,
                      usage=used, cost_usd=event.cost_usd,
                      tokens=event.tokens if tokens is None else tokens(event)) + (
            f" | {shorten(render_content(event.content))}")
    if isinstance(event, NativeSessionBound):
        return _pairs(native_session_id=event.native_session_id, agent=event.agent)
    if isinstance(event, ResumeAttempted):
        return _pairs(strategy=event.strategy, native_session_id=event.native_session_id)
    if isinstance(event, ResumeSucceeded):
        return _pairs(strategy=event.strategy, native_session_id=event.native_session_id,
                      latency_ms=_ms(event.latency_ms))
    if isinstance(event, ResumeFailed):
        return _pairs(strategy=event.strategy, reason=event.reason,
                      native_session_id=event.native_session_id,
                      latency_ms=_ms(event.latency_ms)) + (
            f" | {shorten(event.error)}" if event.error else "")
    if isinstance(event, HistoryInjected):
        return _pairs(range=f"{event.from_version}..{event.to_version}",
                      messages=event.message_count, tokens=event.tokens, format=event.format,
                      native_session_id=event.native_session_id)
    if isinstance(event, SummaryRecorded):
        return _pairs(range=f"{event.from_version}..{event.to_version}",
                      messages=event.message_count, tokens=event.tokens,
                      summarizer=event.summarizer) + f" | {shorten(event.text)}"
    if isinstance(event, HistoryCompacted):
        return _pairs(range=f"{event.from_version}..{event.to_version}",
                      messages=event.message_count, tokens_before=event.tokens_before,
                      tokens_after=event.tokens_after, kept=event.kept,
                      summarizer=event.summarizer, reason=event.reason
                      ) + f" | {shorten(event.text)}"
    if isinstance(event, HistoryRewound):
        return _pairs(to=event.to_message_id, to_version=event.to_version,
                      abandoned=event.abandoned, reason=event.reason)
    if isinstance(event, MemoryInjected):
        return _pairs(block=event.block_id, memories=",".join(event.memory_ids),
                      turn=event.turn, native_session_id=event.native_session_id) + (
            f" | {shorten(event.text)}")
    if isinstance(event, ConversationArchived | ConversationCleared):
        return _pairs(reason=event.reason)
    if isinstance(event, UserForgotten):
        return _pairs(user=event.user, requested_by=event.requested_by) + (
            " | FORGOTTEN: the content of every earlier event is erased")
    if isinstance(event, MessageRetracted):
        return _pairs(id=event.message_id, reason=event.reason)
    if isinstance(event, AgentSessionClosed):
        return _pairs(native_session_id=event.native_session_id)
    if isinstance(event, ConversationDeleted):
        return _pairs(reason=event.reason) + " | recorded, not erased"
    if isinstance(event, TitleChanged):
        return _pairs(title=shorten(event.title))
    if isinstance(event, ContextWindowReported):
        return _pairs(used=event.used, size=event.size, message=event.message_id,
                      native_session_id=event.native_session_id)
    if isinstance(event, PreambleSent):
        return _pairs(how=event.how, native_session_id=event.native_session_id) + (
            f" | {shorten(event.text)}")
    if isinstance(event, MemoryPolicySet):
        return _pairs(max_injected_blocks_in_history=event.max_injected_blocks_in_history,
                      context_window_depth=event.context_window_depth)
    return ""


def _ms(value: float | None) -> str | None:
    return None if value is None else f"{value:.1f}"


def timeline(
    recorded: Iterable[Recorded], *, until: Moment | None = None,
    tokens: Callable[[MessageAppended], int | None] | None = None,
) -> list[TimelineRow]:
    """One row per event up to `until` (parsed by convlog.projections.moment)."""
    return [TimelineRow(version=r.version, at=r.event.at, type=r.event.event_name(),
                        details=describe(r.event, tokens), event=r.event)
            for r in cut(recorded, until)]
