"""What the log's writes and reads hand back: plain, frozen values (no handles to the
store), so a host can keep them, print them or send them as JSON."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import msgspec

from convlog.domain.conversation import Conversation
from convlog.domain.renamed import renamed
from convlog.projections.catalog import ConversationFacts


class AppendResult(msgspec.Struct, frozen=True, kw_only=True):
    """What a write did: the conversation's version after it, and which message ids
    were appended or skipped as already recorded (a retried turn skips them all)."""

    version: int
    appended: list[str] = []
    skipped: list[str] = []
    events: int = 0


class ConversationInfo(ConversationFacts, frozen=True, kw_only=True):
    """A conversation's state, as `log.info(key)` reads it from the log."""

    version: int
    native_session_id: str | None
    forgotten: bool = False
    """Its user was forgotten: the content is erased, the figures remain."""
    resumed_at: datetime | None = None
    """When a resume of it last succeeded (its last-active time moves with it)."""
    compactions: int = 0
    """Compactions recorded (`conv.compact`; issue 47), all epochs."""
    rewinds: int = 0
    """Rewinds recorded (`conv.rewind`; issue 47), all epochs."""


__getattr__ = renamed(__name__, {"SessionInfo": "ConversationInfo"}, globals())
if TYPE_CHECKING:
    SessionInfo = ConversationInfo  # deprecated


def conversation_info(state: Conversation) -> ConversationInfo:
    return ConversationInfo(
        key=state.key, user=state.user, agent=state.agent, channel=state.channel,
        title=state.title, workspace=state.workspace, status=state.status,
        created_at=state.created_at, last_active_at=state.last_active_at,
        message_count=state.message_count - state.records, version=state.version,
        native_session_id=state.native_session_id, forgotten=state.forgotten,
        resumed_at=state.resumed_at, compactions=state.compactions, rewinds=state.rewinds,
        parent=state.parent, fork_at=state.fork_at,
    )
