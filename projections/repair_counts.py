"""Telemetry of tool-pairing repairs: which agent leaves orphans, and why (issue 28).

convlog repairs histories on read (convlog.projections.pairing); the log keeps the
orphans. This read model lists the repairs the rule makes to each conversation's
history, so an analyst can count them per agent, kind and cause (the DuckDB table
``tool_repairs`` and the SQL view ``tool_repair_counts``).

What is paired: each epoch of the conversation (from a clear to the next) on its
own, its live messages in order (a retracted message is not live; a result it
carried makes its call's result ``retracted``). The causes come from the same seam
as the agent's view (convlog.projections.pair_causes.lost_causes). A repair
belongs to the message it concerns (the call's, for a synthesized result), and is
attributed to that message's agent (None: the conversation's agent applies).

Pure: the adapter (convlog.views.repairs) feeds it a conversation's events and
writes the rows; the table declaration is here, with the other views'.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import msgspec

from convlog.domain.events import (
    ConversationCleared,
    ConversationStarted,
    MessageAppended,
    MessageRetracted,
    Recorded,
)
from convlog.projections.pair_causes import imported as imported_from
from convlog.projections.pair_causes import lost_causes
from convlog.projections.pairing import message_tools, pair
from convlog.projections.views import Column, Table, View


class RepairFact(msgspec.Struct, frozen=True, kw_only=True):
    version: int
    """The message the repair concerns (the call's, for a synthesized result)."""
    at: datetime
    kind: str
    cause: str | None
    call_id: str
    agent: str | None


def conversation_repairs(recorded: Iterable[Recorded]) -> list[RepairFact]:
    """Every repair pairing makes to the conversation's epochs (see the module doc)."""
    facts: list[RepairFact] = []
    live: list[tuple[int, MessageAppended]] = []
    retracted: list[MessageAppended] = []
    imported = False
    for r in recorded:
        e = r.event
        if isinstance(e, MessageAppended):
            live.append((r.version, e))
        elif isinstance(e, MessageRetracted):
            for i in range(len(live) - 1, -1, -1):  # a pop takes the newest: found at once
                if live[i][1].message_id == e.message_id:
                    retracted.append(live.pop(i)[1])
                    break
        elif isinstance(e, ConversationCleared):
            facts.extend(_epoch(live, retracted, imported))
            live, retracted = [], []
        elif isinstance(e, ConversationStarted):
            imported = imported_from(e)
    facts.extend(_epoch(live, retracted, imported))
    return facts


def _epoch(live: list[tuple[int, MessageAppended]], retracted: list[MessageAppended],
           imported: bool) -> list[RepairFact]:
    messages = [m for _, m in live]
    tools = [message_tools(m) for m in messages]
    if not any(t.calls or t.results for t in tools):
        return []
    causes, missing = lost_causes(messages, tools=tools, retracted=retracted,
                                  imported=imported)
    plan = pair(tools, causes=causes, missing=missing)
    return [RepairFact(version=live[r.index][0], at=messages[r.index].at, kind=r.kind,
                       cause=r.cause, call_id=r.call_id, agent=messages[r.index].agent)
            for r in plan.repairs]


TOOL_REPAIRS = Table(
    "tool_repairs",
    (
        Column("conversation_id", "VARCHAR"),
        Column("version", "BIGINT"),
        Column("at", "TIMESTAMP"),
        Column("kind", "VARCHAR"),
        Column("cause", "VARCHAR"),
        Column("call_id", "VARCHAR"),
        Column("agent", "VARCHAR"),
    ),
    select="",  # rows come from `conversation_repairs` (convlog.views.repairs), not SQL
    doc="one row per tool-pairing repair convlog makes on read: synthesized (a lost "
        "result), dropped (a result without its call) or moved (a late result), with "
        "its cause and the agent of the message it concerns",
)

REPAIRS = View("repairs", (TOOL_REPAIRS,), fields={
    "tool_call_id": "VARCHAR", "tool_calls": [{"id": "VARCHAR"}],
    "content": [{"type": "VARCHAR"}]})
"""`fields`: what says a batch's message carries tool calls or results (a conversation
without any is not read again)."""

TOOL_REPAIR_COUNTS = """
    SELECT COALESCE(r.agent, s.agent) AS agent, r.kind, r.cause, count(*) AS repairs,
           count(DISTINCT r.conversation_id) AS conversations
    FROM tool_repairs r LEFT JOIN sessions s USING (conversation_id)
    GROUP BY ALL"""
