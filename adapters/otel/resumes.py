"""Resume attempts as spans: one per tier's outcome, with convlog's own attributes.

``resume {strategy}`` spans carry ``convlog.resume.strategy``, ``.tier`` (the tier's
place in its resume: 1 for the first tried since the previous success), ``.outcome``
(``succeeded``/``failed``), ``.reason``, ``.latency_ms``, ``.fresh`` and the native
session id; a fresh tier that worked (a new, empty agent session) adds
``convlog.injected_tokens`` and ``convlog.injected_messages`` (the history injected
right after it) and ``convlog.memory_lost``: no history was injected although the
conversation had messages, the failure the telemetry views count. A failed tier's
span has an ERROR status and ``error.type`` = its reason class.

The injection is recorded in its own transaction just after the success, so a
success that is the newest event of its conversation is not decided yet: it is held
(None) until the injection or any other event follows, or until `grace` seconds
have passed without one.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal

import convlog
from convlog.domain.events import (
    ConversationStarted,
    HistoryInjected,
    MessageAppended,
    NativeSessionBound,
    ResumeAttempted,
    ResumeFailed,
    ResumeSucceeded,
    is_fresh_strategy,
)
from convlog.otel.spans import Attributes, SpanSpec, derived_id, nanos
from convlog.services.feed import FeedEvent

PAGE = 200


def resume_span(log: convlog.ConversationLog, item: FeedEvent, start: ConversationStarted, *,
                content: bool, now: datetime, grace: float) -> SpanSpec | None:
    """The span of one resume outcome; None while its injection may still come."""
    event = item.event
    assert isinstance(event, ResumeSucceeded | ResumeFailed)
    attributes: Attributes = {"gen_ai.conversation.id": item.key,
                              "convlog.resume.strategy": event.strategy,
                              "convlog.resume.tier": _tier(log, item),
                              "convlog.position": item.position,
                              "convlog.version.first": item.version}
    if start.agent:
        attributes["gen_ai.agent.name"] = start.agent
    for name, value in (("convlog.user", start.user), ("convlog.channel", start.channel),
                        ("convlog.client", start.metadata.get("client")),
                        ("convlog.resume.native_session_id", event.native_session_id)):
        if isinstance(value, str) and value:
            attributes[name] = value
    if event.latency_ms is not None:
        attributes["convlog.resume.latency_ms"] = event.latency_ms
    error = None
    if isinstance(event, ResumeFailed):
        attributes["convlog.resume.outcome"] = "failed"
        attributes["convlog.resume.reason"] = event.reason
        attributes["error.type"] = event.reason
        if content and event.error:  # error texts are private: sealed in a store
            attributes["convlog.resume.error"] = event.error
        error = event.reason
    else:
        fresh = event.fresh if event.fresh is not None else is_fresh_strategy(event.strategy)
        attributes["convlog.resume.outcome"] = "succeeded"
        attributes["convlog.resume.fresh"] = fresh
        if fresh:
            injection = _injection(log, item, now, grace)
            if injection == "pending":
                return None
            if isinstance(injection, HistoryInjected):
                attributes["convlog.injected_tokens"] = injection.tokens
                attributes["convlog.injected_messages"] = injection.message_count
                attributes["convlog.memory_lost"] = False
            else:
                attributes["convlog.injected_tokens"] = 0
                attributes["convlog.memory_lost"] = _had_messages(log, item)
    end = nanos(event.at)
    begin = end - int(event.latency_ms * 1e6) if event.latency_ms else end
    return SpanSpec(name=f"resume {event.strategy}",
                    trace_id=derived_id(128, "resume", item.stream, item.version),
                    span_id=derived_id(64, "resume-span", item.stream, item.version),
                    start_ns=begin, end_ns=end, attributes=attributes, error=error)


def _tier(log: convlog.ConversationLog, item: FeedEvent) -> int:
    """How many tiers were tried in this resume so far, this one included."""
    tried, upto = 0, item.version - 1
    while upto > 0:
        page = log.events(item.key, upto=upto, desc=True, limit=PAGE)
        for recorded in page:
            if isinstance(recorded.event, ResumeSucceeded):
                return max(tried, 1)
            if isinstance(recorded.event, ResumeAttempted):
                tried += 1
        if len(page) < PAGE:
            break
        upto = page[-1].version - 1
    return max(tried, 1)


def _injection(log: convlog.ConversationLog, item: FeedEvent, now: datetime, grace: float
               ) -> HistoryInjected | Literal["pending"] | None:
    """The history injected right after a fresh success; None if none was;
    "pending" if that is not known yet."""
    after = log.events(item.key, after=item.version, limit=8)
    for recorded in after:
        if isinstance(recorded.event, HistoryInjected):
            return recorded.event
        if not isinstance(recorded.event, NativeSessionBound):
            return None  # the conversation went on without an injection
    if len(after) == 8 or now - item.event.at > timedelta(seconds=grace):
        return None
    return "pending"


def _had_messages(log: convlog.ConversationLog, item: FeedEvent) -> bool:
    """Whether the conversation had a message before this event."""
    after = 0
    while after < item.version:
        page = log.events(item.key, after=after, upto=item.version - 1, limit=PAGE)
        if any(isinstance(r.event, MessageAppended) for r in page):
            return True
        if len(page) < PAGE:
            return False
        after = page[-1].version
    return False
