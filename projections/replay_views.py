"""The two views of a conversation: what the user saw, and what the agent received.

They part whenever the agent's context is not the transcript: a restart that started
an empty agent session, history injected in its place (cut to a budget), a summary
that replaced older messages, a clear. Both are pure functions of the event list, so
a debugger can replay them at any earlier point (`at`). The user's view is here; the
agent's view, and the rules it follows, in convlog.projections.agent_view; where the
two part, in convlog.projections.view_diff.
"""

from __future__ import annotations

from collections.abc import Iterable

from convlog.domain.errors import InvalidInput
from convlog.domain.events import Recorded
from convlog.projections.agent_view import AgentWalk, agent_view
from convlog.projections.memory import DEFAULT_CAP
from convlog.projections.moment import Moment, cut
from convlog.projections.rewind import abandoned
from convlog.projections.transcript import transcript
from convlog.projections.view_model import (
    VIEWS,
    ConversationView,
    EntryKind,
    RepairMark,
    ViewEntry,
    ViewName,
)

__all__ = ["VIEWS", "AgentWalk", "ConversationView", "EntryKind", "RepairMark", "ViewEntry",
           "ViewName", "agent_view", "user_view", "view"]


def user_view(key: str, recorded: Iterable[Recorded], at: Moment | None = None
              ) -> ConversationView:
    """Every message as the user saw it, in order (the transcript), and clears."""
    events = cut(recorded, at)
    left = abandoned(events)  # a rewind's abandoned messages: shown, struck
    entries = [ViewEntry(version=line.version, at=line.at,
                         kind="marker" if line.role == "marker" else "message",
                         text=line.text, role=None if line.role == "marker" else line.role,
                         message_id=line.message_id, live=line.version not in left,
                         gone=f"abandoned by the rewind at #{left[line.version]}"
                         if line.version in left else None)
               for line in transcript(events)]
    return ConversationView(key=key, view="user", version=events[-1].version if events else 0,
                            entries=entries)


def view(key: str, name: str, recorded: Iterable[Recorded], at: Moment | None = None, *,
         memory_cap: int = DEFAULT_CAP) -> ConversationView:
    if name == "user":
        return user_view(key, recorded, at)
    if name == "agent":
        return agent_view(key, recorded, at, memory_cap=memory_cap)
    raise InvalidInput(f"unknown view {name!r}; expected user or agent", field="view")
