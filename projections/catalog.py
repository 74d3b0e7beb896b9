"""The session catalog: one row per conversation, kept current batch by batch.

`forgotten`: the conversation's user was forgotten (user_forgotten): its content is
erased; counts and tokens stay.

`client` is the host application (``metadata.client`` of session_started, e.g. an ACP
client's name), else the channel.

Costs and usage are not summed here: usage repeated across records of one response
must count once, which only the whole message table can tell, so the catalog's cost
columns are computed from the `messages` table when it is queried.
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from convlog.domain.retention import STORE_CHANNEL
from convlog.projections.views import Column, Table, View


class ConversationFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What every account of one conversation starts with: its key, who and where,
    its status and its dates. The base of `ConversationInfo` (read from the log) and
    `CatalogRow` (read from this view), which add their own fields after these."""

    key: str
    user: str | None
    agent: str | None
    channel: str | None
    title: str | None
    workspace: str | None
    status: str
    created_at: datetime | None
    last_active_at: datetime | None
    message_count: int
    parent: str | None = None
    """The conversation it was forked from (`conv.fork`; None: not a fork)."""
    fork_at: str | None = None
    """The parent's message it was forked at."""

_STARTED = "FILTER (WHERE topic IN ('session_started', 'conversation_forked'))"
_FORKED = "FILTER (WHERE topic = 'conversation_forked')"

RECORD_SQL = """(e.record IS NOT NULL OR (
    e.raw IS NOT NULL AND e.role = 'assistant' AND COALESCE(len(e.content) = 0, FALSE)
    AND e.tool_calls IS NULL AND e.tool_call_id IS NULL AND e.usage IS NULL
    AND e.cost_usd IS NULL))"""
"""convlog.domain.records.is_record over a batch's stored `message_appended` fields
(`e`): a record an SDK store keeps is no message. A sealed row (an encrypted store)
shows only the mark: its content and item are not readable here."""

RECORD_FIELDS: dict[str, object] = {
    "record": "VARCHAR", "role": "VARCHAR", "content": [{"type": "VARCHAR"}],
    "tool_calls": [{"id": "VARCHAR"}], "tool_call_id": "VARCHAR", "cost_usd": "DOUBLE",
    "raw": "JSON", "usage": {"input_tokens": "BIGINT", "output_tokens": "BIGINT",
                             "cache_read_tokens": "BIGINT", "cache_write_tokens": "BIGINT"}}
"""The stored fields RECORD_SQL reads, typed as every view reads them."""

_MESSAGE = f"FILTER (WHERE topic = 'message_appended' AND NOT {RECORD_SQL})"

STATE_CHANNELS = ("google-adk-state", STORE_CHANNEL)
"""Channels of conversations that are a surface's own state, not conversations (the
Google ADK service's app- and user-scoped state, ``adk-state:<app>[/<user>]``): kept
in the catalog for the service's own reads, left out of every list of conversations
(issue 41); and the store's settings stream (its retention policy: issue 48)."""

SESSIONS = Table(
    "sessions",
    (
        Column("conversation_id", "VARCHAR", "key"),
        Column("key", "VARCHAR", "first"),
        Column("user", "VARCHAR", "first"),
        Column("agent", "VARCHAR", "first"),
        Column("channel", "VARCHAR", "first"),
        Column("title", "VARCHAR", "last"),
        Column("workspace", "VARCHAR", "first"),
        Column("client", "VARCHAR", "first"),
        Column("status", "VARCHAR", "last"),
        Column("created_at", "TIMESTAMP", "first"),
        Column("last_active_at", "TIMESTAMP", "max"),
        Column("last_message_at", "TIMESTAMP", "max"),
        Column("message_count", "BIGINT", "sum"),
        Column("content_tokens", "BIGINT", "sum"),
        Column("epochs", "BIGINT", "sum"),
        Column("version", "BIGINT", "max"),
        Column("native_session_id", "VARCHAR", "last"),
        Column("forgotten", "BOOLEAN", "any"),
        Column("parent", "VARCHAR", "first"),
        Column("fork_at", "VARCHAR", "first"),
    ),
    select=f"""
        SELECT conversation_id,
               max(e.key) {_STARTED}, max(e.user) {_STARTED}, max(e.agent) {_STARTED},
               max(e.channel) {_STARTED},
               arg_max(e.title, version) FILTER (WHERE topic IN ('session_started',
                   'conversation_forked', 'title_changed') AND e.title IS NOT NULL),
               max(e.workspace) {_STARTED},
               max(COALESCE(e.metadata.client, e.channel)) {_STARTED},
               arg_max(CASE WHEN topic IN ('session_archived', 'conversation_erased')
                                THEN 'archived'
                                WHEN topic = 'conversation_deleted' THEN 'deleted'
                                ELSE 'active' END,
                       version) FILTER (WHERE topic IN ('session_started',
                       'conversation_forked', 'session_archived',
                       'session_reactivated', 'conversation_deleted', 'conversation_erased')),
               min("at") {_STARTED},
               max("at"),
               max("at") {_MESSAGE},
               count(*) {_MESSAGE},
               COALESCE(sum(tokens) {_MESSAGE}, 0),
               count(*) FILTER (WHERE topic = 'conversation_cleared'),
               max(version),
               arg_max(e.native_session_id, version)
                   FILTER (WHERE topic = 'native_session_bound'),
               bool_or(topic = 'user_forgotten'),
               max(e.parent_key) {_FORKED}, max(e.at_message_id) {_FORKED}
        FROM batch GROUP BY conversation_id""",
    doc="one row per conversation: who, where, status, activity, message and token counts",
)

CATALOG = View("catalog", (SESSIONS,), fields={
    "key": "VARCHAR", "user": "VARCHAR", "agent": "VARCHAR", "channel": "VARCHAR",
    "title": "VARCHAR", "workspace": "VARCHAR", "tokens": "BIGINT",
    "native_session_id": "VARCHAR", "metadata": {"client": "VARCHAR"},
    "parent_key": "VARCHAR", "at_message_id": "VARCHAR", **RECORD_FIELDS})
