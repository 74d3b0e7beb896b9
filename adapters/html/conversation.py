"""What the conversation page shows, as plain JSON-ready data.

Built once from the conversation's events (one indexed read) and the `messages` view
(the prices convlog applies), so the page needs no server: its script renders the
timeline and the two views from this data, a page at a time.

The shape is the page's own, not a stored format: `at` as ISO text, and each message
kept whole (parts, tool calls, thinking) so the page can collapse and hide them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import convlog
from convlog.domain.content import (
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolResultPart,
    ToolUsePart,
)
from convlog.domain.events import MessageAppended, Recorded
from convlog.domain.memory import is_forged
from convlog.domain.records import is_record
from convlog.projections.money import usd_text
from convlog.projections.replay_views import view as log_view
from convlog.services.shown_counts import shown_tokens

# How the timeline colours an event: the resume story stands out from the chatter.
EVENT_CLASS = {
    "resume_attempted": "resume", "resume_succeeded": "ok", "resume_failed": "fail",
    "history_injected": "inject", "memory_injected": "inject", "summary_recorded": "inject",
    "conversation_cleared": "marker", "session_archived": "marker",
    "session_reactivated": "marker", "session_started": "marker",
    "message_retracted": "marker", "agent_session_closed": "marker",
    "conversation_deleted": "marker", "title_changed": "marker",
}


def parts_of(event: MessageAppended) -> list[dict[str, Any]]:
    """The message's content as typed pieces; tool calls in the chat-completions style
    become tool_use pieces, so the page shows both styles alike."""
    content = event.content
    parts: list[dict[str, Any]] = []
    if isinstance(content, str):
        if content:
            parts.append({"k": "text", "text": content})
    else:
        for part in content:
            if isinstance(part, TextPart):
                parts.append({"k": "text", "text": part.text})
            elif isinstance(part, ThinkingPart):
                parts.append({"k": "thinking", "text": part.text})
            elif isinstance(part, ToolUsePart):
                parts.append({"k": "tool_use", "id": part.id, "name": part.name,
                              "args": part.arguments})
            elif isinstance(part, ToolResultPart):
                parts.append({"k": "tool_result", "id": part.tool_use_id,
                              "text": part.content, "error": part.is_error})
            elif isinstance(part, ImagePart):
                parts.append({"k": "image", "ref": part.ref, "media": part.media_type})
    parts.extend({"k": "tool_use", "id": call.id, "name": call.name, "args": call.arguments}
                 for call in event.tool_calls)
    return parts


def message_data(version: int, event: MessageAppended,
                 priced: dict[int, dict[str, Any]]) -> dict[str, Any]:
    usage = event.usage
    row = priced.get(version, {})
    return {
        "v": version, "at": (event.created_at or event.at).isoformat(), "role": event.role,
        "id": event.message_id, "model": event.model, "agent": event.agent,
        "parts": parts_of(event), "tokens": shown_tokens(event),
        "input": usage.input_tokens if usage else None,
        "output": usage.output_tokens if usage else None,
        "cost": row.get("cost_usd"),
        "cost_unknown": row.get("cost_unknown", False),
        "cost_text": usd_text(row.get("cost_usd"), row.get("cost_unknown", False)),
    }


def priced_messages(log: convlog.ConversationLog, key: str) -> dict[int, dict[str, Any]]:
    """USD per message as the views price it (host cost, else the price table)."""
    _, rows = log.sql(
        "SELECT m.version, m.cost_usd, m.cost_unknown FROM messages m "
        "JOIN sessions s USING (conversation_id) WHERE s.key = ? AND m.counted", [key])
    return {int(r[0]): {"cost_usd": None if r[1] is None else float(r[1]),
                        "cost_unknown": bool(r[2])} for r in rows}


def turns(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Turns as the user lived them: a user message and every message after it up to
    the next one. Tokens and USD are summed per turn."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m["role"] == "user" or not out:
            out.append({"from": m["v"], "to": m["v"], "tokens": 0, "input": 0, "output": 0,
                        "cost": None, "cost_unknown": False})
        turn = out[-1]
        turn["to"] = m["v"]
        turn["tokens"] += m["tokens"] or 0
        turn["input"] += m["input"] or 0
        turn["output"] += m["output"] or 0
        if m["cost"] is not None:
            turn["cost"] = (turn["cost"] or 0.0) + m["cost"]
        turn["cost_unknown"] = turn["cost_unknown"] or m["cost_unknown"]
    for turn in out:  # written as every surface writes a cost (convlog.projections.money)
        turn["cost_text"] = usd_text(turn["cost"], turn["cost_unknown"])
    return out


def _total_cost(messages: Sequence[dict[str, Any]]) -> str:
    """The page's total USD as every surface writes it (convlog.projections.money)."""
    known = [m["cost"] for m in messages if m["cost"] is not None]
    return usd_text(sum(known) if known else None, any(m["cost_unknown"] for m in messages))


def conversation_data(log: convlog.ConversationLog, key: str) -> dict[str, Any]:
    recorded: list[Recorded] = log.events(key)
    info = log.info(key)
    priced = priced_messages(log, key)
    messages = [message_data(r.version, r.event, priced) for r in recorded
                if isinstance(r.event, MessageAppended) and not is_record(r.event)]
    timeline = [{"v": row.version, "at": row.at.isoformat(), "type": row.type,
                 "details": row.details, "cls": EVENT_CLASS.get(row.type, "")}
                for row in log.timeline(key)]
    views = log_views(log, key, recorded)
    return {
        "key": key, "title": info.title, "user": info.user, "agent": info.agent,
        "status": info.status, "version": recorded[-1].version if recorded else 0,
        "messages": messages, "turns": turns(messages), "timeline": timeline, **views,
        "totals": {
            "messages": len(messages),
            "tokens": sum(m["tokens"] or 0 for m in messages),
            "cost": sum(m["cost"] for m in messages if m["cost"] is not None),
            "cost_text": _total_cost(messages),
        },
    }


def _forged(event: MessageAppended) -> bool:
    """Does some text of this message start a line like a memory block?"""
    content = event.content
    if isinstance(content, str):
        return is_forged(content)
    return any(is_forged(p.text) for p in content if isinstance(p, TextPart)) or any(
        is_forged(p.content) for p in content if isinstance(p, ToolResultPart))


def view_entry(entry: convlog.ViewEntry, forged: set[int]) -> dict[str, Any]:
    """A view's entry for the page: a message points at its data by position; every
    other entry (injected text, summaries, memory blocks, markers) carries its own
    text. In the agent's view, `gone` says why an entry has left the agent's context,
    `repairs` lists convlog's tool-pairing repairs (a ``repair`` entry is a result it
    synthesized for a lost one), and `forged` marks dialogue that starts like a memory
    block but is not one."""
    out: dict[str, Any] = {"v": entry.version, "kind": entry.kind}
    if entry.kind != "message":
        out["text"] = entry.text
    elif entry.version in forged:
        out["forged"] = True
    if entry.note:
        out["note"] = entry.note
    if entry.kind == "memory" and entry.live:
        out["note"] = f"{entry.note}; live"
    if entry.gone:
        out["gone"] = entry.gone
    if entry.alert:
        out["alert"] = True
    if entry.repairs:  # convlog's tool-pairing repairs (issue 28), marked on the page
        out["repairs"] = [{"kind": m.kind, "call_id": m.call_id, "cause": m.cause}
                          for m in entry.repairs]
    return out


def log_views(log: convlog.ConversationLog, key: str,
              recorded: Sequence[Recorded]) -> dict[str, list[dict[str, Any]]]:
    """The user's view and the agent's view (convlog.projections.replay_views, with
    the log's memory-block cap), built from the events the page already read."""
    user = log_view(key, "user", recorded)
    agent = log_view(key, "agent", recorded)  # the policies recorded in the log apply
    forged = {r.version for r in recorded
              if isinstance(r.event, MessageAppended) and _forged(r.event)}
    return {"user_view": [view_entry(e, set()) for e in user.entries],
            "agent_view": [view_entry(e, forged) for e in agent.entries]}
