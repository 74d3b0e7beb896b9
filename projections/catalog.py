"""The session catalog: one row per conversation, kept current batch by batch.

Costs and usage are not summed here: usage repeated across records of one response
must count once, which only the whole message table can tell, so the catalog's cost
columns are computed from the `messages` view when it is queried.
"""

from __future__ import annotations

from collections.abc import Sequence

from convlog.domain.events import (
    ConversationCleared,
    MessageAppended,
    NativeSessionBound,
    SessionArchived,
    SessionReactivated,
    SessionStarted,
)
from convlog.projections.views import Column, Notified, Rows, Table

SESSIONS = Table("sessions", (
    Column("conversation_id", "VARCHAR", "key"),
    Column("key", "VARCHAR", "first"),
    Column("user", "VARCHAR", "first"),
    Column("agent", "VARCHAR", "first"),
    Column("channel", "VARCHAR", "first"),
    Column("title", "VARCHAR", "first"),
    Column("workspace", "VARCHAR", "first"),
    Column("status", "VARCHAR", "last"),
    Column("created_at", "TIMESTAMP", "first"),
    Column("last_active_at", "TIMESTAMP", "max"),
    Column("last_message_at", "TIMESTAMP", "max"),
    Column("message_count", "BIGINT", "sum"),
    Column("content_tokens", "BIGINT", "sum"),
    Column("epochs", "BIGINT", "sum"),
    Column("version", "BIGINT", "max"),
    Column("native_session_id", "VARCHAR", "last"),
), doc="one row per conversation: who, where, status, activity, message and token counts")

_INDEX = {c.name: i for i, c in enumerate(SESSIONS.columns)}


class CatalogView:
    tables = (SESSIONS,)

    def rows(self, batch: Sequence[Notified]) -> Rows:
        """One delta row per conversation touched by the batch."""
        deltas: dict[str, list[object]] = {}
        for n in batch:
            cid = str(n.conversation_id)
            row = deltas.get(cid)
            if row is None:
                row = deltas[cid] = [None] * len(SESSIONS.columns)
                row[_INDEX["conversation_id"]] = cid
                for name in ("message_count", "content_tokens", "epochs"):
                    row[_INDEX[name]] = 0
            e = n.event
            row[_INDEX["last_active_at"]] = e.at
            row[_INDEX["version"]] = n.version
            if isinstance(e, SessionStarted):
                for name in ("key", "user", "agent", "channel", "title", "workspace"):
                    row[_INDEX[name]] = getattr(e, name)
                row[_INDEX["created_at"]] = e.at
                row[_INDEX["status"]] = "active"
            elif isinstance(e, MessageAppended):
                row[_INDEX["message_count"]] += 1  # type: ignore[operator]
                row[_INDEX["content_tokens"]] += e.tokens or 0  # type: ignore[operator]
                row[_INDEX["last_message_at"]] = e.at
            elif isinstance(e, SessionArchived):
                row[_INDEX["status"]] = "archived"
            elif isinstance(e, SessionReactivated):
                row[_INDEX["status"]] = "active"
            elif isinstance(e, ConversationCleared):
                row[_INDEX["epochs"]] += 1  # type: ignore[operator]
            elif isinstance(e, NativeSessionBound):
                row[_INDEX["native_session_id"]] = e.native_session_id
        return {SESSIONS.name: [tuple(r) for r in deltas.values()]}
