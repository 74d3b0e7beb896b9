"""Short constructors for messages: `convlog.user("hi")`, `convlog.assistant(...)`."""

from __future__ import annotations

from typing import Any

from convlog.domain.content import Content
from convlog.domain.messages import Message


def user(content: Content, **fields: Any) -> Message:
    """A message the user wrote."""
    return Message(role="user", content=content, **fields)


def assistant(content: Content, **fields: Any) -> Message:
    """A message the agent produced (`model=`, `usage=`, `tool_calls=`, `cost_usd=`...)."""
    return Message(role="assistant", content=content, **fields)


def tool(content: Content, *, tool_call_id: str, **fields: Any) -> Message:
    """The result of a tool call, answering `tool_call_id`."""
    return Message(role="tool", content=content, tool_call_id=tool_call_id, **fields)
