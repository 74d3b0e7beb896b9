"""One conversation's summary, without building a context (seed 001's contract).

Status, dates, message count, tokens, cost, agents and the latest summary of one
conversation, in one call: the state gives the status and dates, the session
catalog (the views) the token, cost and agent figures, one indexed read the latest
summary's text. The seed's statuses, with their meaning:

* ``active``: in use; something was recorded within `paused_after` (30 minutes by
  default);
* ``paused``: resumable, but nothing was recorded for `paused_after`: its agent
  session has likely gone, so the next turn resumes it by tiers;
* ``archived``: not resumable until it is reactivated (`archive`, `convlog expire`,
  or ACP's `session/delete`); a new message reactivates it.
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from convlog.domain.conversation import (
    PAUSED_AFTER,
    Conversation,
    Status,
    conversation_id,
    status_of,
)
from convlog.domain.errors import InvalidInput
from convlog.domain.events import HistoryCompacted, SummaryRecorded
from convlog.storage.application import ConversationStore
from convlog.views.analytics import Analytics


class ConversationSummary(msgspec.Struct, frozen=True, kw_only=True):
    """A conversation at a glance (`log.summary(key)`)."""

    key: str
    user: str | None
    workspace: str | None
    """The project it belongs to."""
    title: str | None
    status: Status
    """active, paused or archived (see convlog.services.summary)."""
    created_at: datetime | None
    last_active_at: datetime | None
    message_count: int
    content_tokens: int
    """Tokens of the messages' own text."""
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    cost_incomplete: bool
    agents: list[str]
    """The agents that answered in it, most active first (at most five)."""
    latest_summary: str | None
    """The text of its latest summary in the current epoch (None: none yet)."""


__all__ = ["MAX_PAUSED_AFTER", "PAUSED_AFTER", "ConversationSummary", "Status",
           "check_paused_after", "status_of", "summarize"]
MAX_PAUSED_AFTER = 10 * 365 * 86400.0


def check_paused_after(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            0 < value <= MAX_PAUSED_AFTER):
        raise InvalidInput(f"must be a number of seconds above 0, at most "
                           f"{MAX_PAUSED_AFTER:.0f} (ten years)", field="paused_after")
    return float(value)


def summarize(store: ConversationStore, analytics: Analytics, state: Conversation,
              paused_after: float) -> ConversationSummary:
    rows = analytics.sessions(key=state.key, include_archived=True)
    row = rows[0] if rows else None
    latest = None
    if state.summary_version:
        [found] = store.recorded(conversation_id(state.key),
                                 after=state.summary_version - 1, upto=state.summary_version)
        if isinstance(found.event, SummaryRecorded | HistoryCompacted):  # a compaction's
            latest = found.event.text  # summary is the latest summary too (issue 47)
    return ConversationSummary(
        key=state.key, user=state.user, workspace=state.workspace, title=state.title,
        status=status_of(state, store.clock.now(), check_paused_after(paused_after)),
        created_at=state.created_at, last_active_at=state.last_active_at,
        message_count=state.message_count - state.records,  # records are no messages
        content_tokens=row.content_tokens if row else 0,
        input_tokens=row.input_tokens if row else 0,
        output_tokens=row.output_tokens if row else 0,
        cost_usd=row.cost_usd if row else None,
        cost_incomplete=row.cost_incomplete if row else False,
        agents=list(row.top_agents) if row else ([state.agent] if state.agent else []),
        latest_summary=latest)
