"""The shape of the two views (`ViewEntry`, `ConversationView`), shared by the user's
view, the agent's view and their diff. The moment they are taken at is parsed and cut
by convlog.projections.moment, as the timeline's is."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

import msgspec

ViewName = Literal["user", "agent"]
VIEWS: tuple[str, ...] = ("user", "agent")
EntryKind = Literal["message", "injection", "summary", "memory", "marker", "repair",
                    "preamble"]
"""``repair``: a tool result convlog synthesized for the model (issue 28), not a message.
``preamble``: what the host sent for the model only (its system prompt; issue 41)."""


class RepairMark(msgspec.Struct, frozen=True, kw_only=True):
    """One repair of tool pairing (convlog.projections.pairing) convlog makes to the
    model's input, shown in the agent's view: ``synthesized`` a result lost for call
    `call_id`, ``dropped`` a result without its call, ``moved`` a late result up to
    its call. `cause` says why (None for a move)."""

    kind: Literal["synthesized", "dropped", "moved"]
    call_id: str
    cause: str | None = None


class ViewEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One thing the user saw or the agent received, at the log position it entered."""

    version: int
    at: datetime
    kind: EntryKind
    text: str
    role: str | None = None
    """``user``, ``assistant`` or ``tool`` for a message."""
    message_id: str | None = None
    session: str | None = None
    """Agent view: the native session it entered (None: not named by the host)."""
    live: bool = True
    """Agent view: still in the agent's context at the view's point."""
    gone: str | None = None
    """Agent view: why it left the agent's context."""
    covers: tuple[int, int] | None = None
    """Injections and summaries: the log range (from_version, to_version) they stand for."""
    note: str | None = None
    alert: bool = False
    """A marker a debugger should look at first (e.g. a fresh session got no history)."""
    repairs: tuple[RepairMark, ...] = ()
    """Agent view: the pairing repairs convlog made to this entry for the model
    (always empty in the user's view)."""


class ConversationView(msgspec.Struct, frozen=True, kw_only=True):
    key: str
    view: ViewName
    version: int
    """The last log position the view includes."""
    entries: list[ViewEntry]
    session: str | None = None
    """Agent view: the agent session current at that point."""
    since: int = 0
    """Agent view: where that session's context began empty (a fresh session or a
    clear); 0 for the conversation's first session."""
