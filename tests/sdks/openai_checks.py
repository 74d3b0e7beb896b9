"""What a model API checks of a history, asked of the OpenAI Agents SDK's own
converter: shared by the pairing tests (issue 28)."""

from __future__ import annotations

from typing import Any

from agents.models.chatcmpl_converter import Converter

from convlog.projections.pairing import Tools


def chat_problems(items: list[Any]) -> list[str]:
    """Convert with the SDK's own converter, then check what the Chat Completions API
    checks: an assistant message's tool calls are each answered by a tool message
    before any other message, and a tool message answers an open call."""
    messages = Converter.items_to_messages(items)
    problems: list[str] = []
    pending: set[str] = set()
    for i, m in enumerate(messages):
        role = m["role"]
        if role == "tool":
            cid = m["tool_call_id"]  # type: ignore[typeddict-item]
            if cid not in pending:
                problems.append(f"message {i}: tool result {cid} without an open call")
            pending.discard(cid)
            continue
        if pending:
            problems.append(f"message {i}: calls {sorted(pending)} unanswered")
            pending = set()
        for tc in m.get("tool_calls") or ():  # type: ignore[attr-defined]
            pending.add(tc["id"])
    if pending:
        problems.append(f"end: calls {sorted(pending)} unanswered")
    return problems


def item_tools(item: dict[str, Any]) -> Tools:
    """An SDK item as the pairing checker sees it (`check_pairs`)."""
    kind = item.get("type", "message")
    if kind == "function_call":
        return Tools(calls=((item["call_id"], item["name"]),), other=False)
    if kind == "function_call_output":
        return Tools(results=(item["call_id"],), other=False)
    return Tools(other=kind == "message")
