"""One fixed sample of every stored event type, shared by the format tests."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from convlog.domain.content import (
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResultPart,
    ToolUsePart,
    Usage,
)
from convlog.domain.events import (
    AgentSessionClosed,
    ContextWindowReported,
    ConversationCleared,
    ConversationDeleted,
    Event,
    HistoryInjected,
    MemoryInjected,
    MemoryPolicySet,
    MessageAppended,
    MessageRetracted,
    NativeSessionBound,
    ResumeAttempted,
    ResumeFailed,
    ResumeSucceeded,
    SessionArchived,
    SessionReactivated,
    SessionStarted,
    SummaryRecorded,
    TitleChanged,
    UserForgotten,
)

AT = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


def samples() -> list[Event]:
    return [
        SessionStarted(at=AT, key="discord:thread:42", channel="discord", user="u1",
                       agent="copilot", title="Auth design", workspace="acme/api",
                       metadata={"guild": "7", "nsfw": False}),
        MessageAppended(
            at=AT, message_id="m-17", role="assistant",
            content=[ThinkingPart(text="compare"), TextPart(text="JWT."),
                     ImagePart(ref="file-9", media_type="image/png"),
                     ImagePart(ref="sha256:9f86d081", media_type="image/png", size=1024),
                     ToolUsePart(id="tu-1", name="grep", arguments='{"q": "auth"}'),
                     ToolResultPart(tool_use_id="tu-1", content="none", is_error=True)],
            tool_calls=[ToolCall(id="call-1", name="read_file", arguments='{"path": "a"}')],
            tool_call_id=None, model="gpt-4o", agent="copilot",
            usage=Usage(input_tokens=1200, output_tokens=80, cache_read_tokens=3,
                        cache_write_tokens=4),
            cost_usd=Decimal("0.004"), tokens=12, token_counter="o200k_base",
            created_at=datetime(2026, 1, 2, 3, 4, 0, tzinfo=UTC), response_id="resp-1",
            raw={"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
                 "content": [{"type": "output_text", "text": "JWT.", "annotations": []}],
                 "n": 3, "x": 0.1, "ok": True, "none": None}),
        NativeSessionBound(at=AT, native_session_id="sess-9", agent="copilot"),
        ResumeAttempted(at=AT, strategy="session/load", native_session_id="sess-9"),
        ResumeSucceeded(at=AT, strategy="session/new", native_session_id="sess-10",
                        latency_ms=12.5, fresh=True),
        ResumeFailed(at=AT, strategy="session/load", reason="not_found",
                     native_session_id="sess-9", error="no such session", latency_ms=3.25),
        HistoryInjected(at=AT, from_version=1, to_version=9, message_count=4, tokens=321,
                        format="xml", text="<conversation_history>…</conversation_history>",
                        native_session_id="sess-10"),
        SummaryRecorded(at=AT, from_version=2, to_version=40, message_count=30,
                        text="The user chose JWT.", tokens=5, summarizer="gpt-4o-mini"),
        MemoryInjected(at=AT, block_id="blk-3", memory_ids=["mem-1", "mem-7"],
                       text="[Context from memory]\nThe user prefers JWT.", turn=12,
                       native_session_id="sess-10"),
        SessionArchived(at=AT, reason="idle 30 days"),
        SessionReactivated(at=AT),
        ConversationCleared(at=AT, reason="user typed /clear"),
        UserForgotten(at=AT, user="u1", requested_by="dpo@example.com"),
        MessageRetracted(at=AT, message_id="m-17", reason="pop_item"),
        AgentSessionClosed(at=AT, native_session_id="sess-10"),
        ConversationDeleted(at=AT, reason="deleted in the host's list"),
        TitleChanged(at=AT, title="Auth design, JWT chosen",
                     update={"sessionUpdate": "session_info_update",
                             "title": "Auth design, JWT chosen",
                             "updatedAt": "2026-01-02T03:04:05Z"}),
        MemoryPolicySet(at=AT, max_injected_blocks_in_history=1, context_window_depth=4),
        ContextWindowReported(at=AT, used=91_000, size=128_000, message_id="m-17",
                              native_session_id="sess-10",
                              update={"sessionUpdate": "usage_update", "used": 91_000,
                                      "size": 128_000,
                                      "cost": {"amount": 0.42, "currency": "USD"}}),
    ]
