"""Short constructors for messages: `convlog.user("hi")`, `convlog.assistant(...)`.

Each takes every field of `Message` but the role, by name (tests/unit/test_api_parity.py
checks the lists stay equal); `id` left out gets a fresh one.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

from convlog.domain.content import Content, ToolCall, Usage
from convlog.domain.messages import Message


def _message(role: str, given: dict[str, Any]) -> Message:
    """The Message of `role` from a builder's own arguments (its `locals()`)."""
    fields = dict(given)
    if fields["id"] is None:
        del fields["id"]
    fields["tool_calls"] = list(fields["tool_calls"])
    return Message(role=role, **fields)


def user(content: Content, *, id: str | None = None, tool_calls: Sequence[ToolCall] = (),
         tool_call_id: str | None = None, model: str | None = None, agent: str | None = None,
         usage: Usage | None = None, cost_usd: Decimal | None = None,
         tokens: int | None = None, token_counter: str | None = None,
         created_at: datetime | None = None, response_id: str | None = None,
         raw: dict[str, Any] | None = None) -> Message:
    """A message the user wrote."""
    return _message("user", locals())


def assistant(content: Content, *, id: str | None = None,
              tool_calls: Sequence[ToolCall] = (), tool_call_id: str | None = None,
              model: str | None = None, agent: str | None = None, usage: Usage | None = None,
              cost_usd: Decimal | None = None, tokens: int | None = None,
              token_counter: str | None = None, created_at: datetime | None = None,
              response_id: str | None = None, raw: dict[str, Any] | None = None) -> Message:
    """A message the agent produced (`model=`, `usage=`, `tool_calls=`, `cost_usd=`...)."""
    return _message("assistant", locals())


def tool(content: Content, *, tool_call_id: str, id: str | None = None,
         tool_calls: Sequence[ToolCall] = (), model: str | None = None,
         agent: str | None = None, usage: Usage | None = None,
         cost_usd: Decimal | None = None, tokens: int | None = None,
         token_counter: str | None = None, created_at: datetime | None = None,
         response_id: str | None = None, raw: dict[str, Any] | None = None) -> Message:
    """The result of a tool call, answering `tool_call_id`."""
    return _message("tool", locals())
