"""The shape of the two views (`ViewEntry`, `ConversationView`) and the point of the
log they are taken at (`parse_point`, `cut`): shared by the user's view, the agent's
view and their diff. `parse_point` and `parse_time` are THE parsers of "a version
or a time" and "a time" for every surface (library, CLI, HTTP)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Literal

import msgspec

from convlog.domain.errors import InvalidInput
from convlog.domain.events import Recorded

ViewName = Literal["user", "agent"]
VIEWS: tuple[str, ...] = ("user", "agent")
EntryKind = Literal["message", "injection", "summary", "memory", "marker", "repair",
                    "preamble"]
"""``repair``: a tool result convlog synthesized for the model (issue 28), not a message.
``preamble``: what the host sent for the model only (its system prompt; issue 41)."""
Point = int | datetime
MAX_VERSION = 2**63 - 1  # past the last position means "everything"


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


def utc(moment: datetime) -> datetime:
    """A time without a timezone is taken as UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def parse_time(text: str, field: str) -> datetime:
    """An ISO date (``2026-01-31``) or time; without an offset, UTC. Anything else is
    an InvalidInput naming `field` and the value."""
    try:
        return utc(datetime.fromisoformat(text))
    except ValueError:
        raise InvalidInput(f"expected an ISO date or time, got {text!r}", field=field) from None


def parse_point(value: object, field: str = "at") -> Point | None:
    """A point of the log: a version (int, or digits) or a time (datetime or ISO text).

    A time without a timezone is taken as UTC. Anything else is an InvalidInput
    naming `field` and the value."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidInput(f"{value!r} is neither a version number nor an ISO time",
                           field=field)
    if isinstance(value, int):
        if value < 0:
            raise InvalidInput(f"a version cannot be negative: {value}", field=field)
        return min(value, MAX_VERSION)
    if isinstance(value, datetime):
        return utc(value)
    if isinstance(value, str):
        text = value.strip()
        if text.isascii() and text.isdigit():
            return min(int(text), MAX_VERSION)
        try:
            return parse_time(text, field)
        except InvalidInput:
            raise InvalidInput(f"{value!r} is neither a version number nor an ISO time",
                               field=field) from None
    raise InvalidInput(f"expected a version number or a time, got {type(value).__name__}",
                       field=field)


def cut(recorded: Iterable[Recorded], at: Point | None) -> list[Recorded]:
    """The events up to `at` (a version, inclusive, or a time, inclusive)."""
    out = []
    for r in recorded:
        if isinstance(at, int) and r.version > at:
            break
        if isinstance(at, datetime) and r.event.at > at:
            break
        out.append(r)
    return out
