"""What a host hands convlog to record: a message of a turn, validated on construction.

`Message` is a command value, not stored as is: the conversation turns it into a
`MessageAppended` event. Construction checks every rule that does not need the log
(role, content shape, JSON tool arguments), so a bad message fails where it is built.
"""

from __future__ import annotations

import os
from datetime import datetime
from decimal import Decimal
from typing import Any

import msgspec

from convlog.domain.content import (
    ROLES,
    Content,
    ToolCall,
    Usage,
    check_content,
    check_json_arguments,
    check_token_count,
    check_unicode,
)
from convlog.domain.errors import InvalidInput, SystemMessageRejected

# A billion dollars for one message is past any real price; the bound keeps costs
# finite in the views' DOUBLE columns and in every sum of them.
MAX_COST_USD = Decimal(10**9)


_VERSION_4 = (~(0xF000 << 64) & ~(0xC000 << 48), 0x4000 << 64 | 0x8000 << 48)
"""uuid4's fixed bits: version 4 (bits 76-79) and the RFC 4122 variant (bits 62-63)."""


def new_message_id() -> str:
    """A fresh id for a message the host did not name (retries then cannot dedupe it):
    `uuid.uuid4().hex`, made without the UUID object (~1 us rather than ~2.3, on every
    SDK item appended without an id; issue 30). tests/unit/test_message_ids.py."""
    keep, fixed = _VERSION_4
    return "%032x" % (int.from_bytes(os.urandom(16), "big") & keep | fixed)


class Message(msgspec.Struct, frozen=True, kw_only=True):
    role: str
    content: Content
    id: str = msgspec.field(default_factory=new_message_id)
    tool_calls: list[ToolCall] = []
    tool_call_id: str | None = None
    model: str | None = None
    agent: str | None = None
    usage: Usage | None = None
    cost_usd: Decimal | None = None
    tokens: int | None = None
    token_counter: str | None = None
    created_at: datetime | None = None
    response_id: str | None = None
    raw: dict[str, Any] | None = None
    """The item as the host's agent SDK gave it (JSON values only), kept losslessly."""
    record: str | None = None
    """Not a message: a record of this kind its surface keeps (`raw`) for its own
    reads, with no content, tool calls or usage (convlog.domain.records)."""

    def __post_init__(self) -> None:
        if self.role == "system":
            raise SystemMessageRejected(
                "system prompts are not stored: keep them in the host and pass them to the "
                "model yourself",
                field="role",
            )
        if self.role not in ROLES:
            raise InvalidInput(
                f"unknown role {self.role!r}; expected one of {', '.join(ROLES)}", field="role"
            )
        if not isinstance(self.id, str) or not self.id.strip():
            raise InvalidInput("message id must be a non-empty string", field="id")
        check_content(self.content)
        if self.usage is not None:
            self.usage.check()
        check_unicode(self, "")
        for i, call in enumerate(self.tool_calls):
            check_json_arguments(call.arguments, f"tool_calls[{i}].arguments")
        if self.tool_calls and self.role != "assistant":
            raise InvalidInput("only assistant messages carry tool_calls", field="tool_calls")
        if self.role == "tool" and not self.tool_call_id and isinstance(self.content, str):
            raise InvalidInput("a tool message needs the tool_call_id it answers",
                               field="tool_call_id")
        if self.cost_usd is not None and (not self.cost_usd.is_finite() or self.cost_usd < 0
                                          or self.cost_usd > MAX_COST_USD):
            raise InvalidInput(f"cost cannot be negative, infinite, NaN or above "
                               f"{MAX_COST_USD} USD ({self.cost_usd})", field="cost_usd")
        if self.raw is not None and not isinstance(self.raw, dict):
            raise InvalidInput("raw must be a JSON object", field="raw")
        if self.tokens is not None:
            check_token_count(self.tokens, "tokens")
        if self.record is not None:
            check_record(self)


def check_record(message: Message) -> None:
    """A record (`Message.record`) says nothing: kept for its surface, it holds the
    surface's own item and no content, tool call, result or usage."""
    if not isinstance(message.record, str) or not message.record:
        raise InvalidInput("a record's kind must be a non-empty string", field="record")
    if message.raw is None:
        raise InvalidInput("a record keeps its surface's item: raw is required",
                           field="raw")
    if message.role != "assistant" or message.content != [] or message.tool_calls or (
            message.tool_call_id is not None or message.usage is not None
            or message.cost_usd is not None):
        raise InvalidInput("a record is no message: role assistant, empty content, no "
                           "tool calls, result, usage or cost", field="record")
