"""A moment of the log, and the log cut at it: THE parser and THE cut.

A moment is a version (the log position, inclusive) or a time (inclusive). Every
surface that takes one (the library's ``timeline(until=)``, ``view(at=)`` and
``diff(at=)``, the CLI's ``--at``/``--until``, HTTP's ``?at=``/``?until=``) parses it
with `parse_moment` and cuts the events with `cut`, so they agree on every input.

The rule, stated once: a time without a timezone is UTC (stored times are UTC).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from convlog.domain.errors import InvalidInput
from convlog.domain.events import Recorded
from convlog.domain.numbers import whole_number

Moment = int | datetime
MAX_VERSION = 2**63 - 1  # past the last position means "everything"


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


def parse_moment(value: object, field: str = "at") -> Moment | None:
    """A moment of the log: a version (int, or digits) or a time (datetime or ISO text);
    None stays None (no cut). Anything else is an InvalidInput naming `field`."""
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
        version = whole_number(text, maximum=None)
        if version is not None:
            return min(version, MAX_VERSION)
        try:
            return parse_time(text, field)
        except InvalidInput:
            raise InvalidInput(f"{value!r} is neither a version number nor an ISO time",
                               field=field) from None
    raise InvalidInput(f"expected a version number or a time, got {type(value).__name__}",
                       field=field)


def last_version(moment: Moment | None) -> int | None:
    """The last version a read for `moment` needs (None: read to the end, and `cut`)."""
    return moment if isinstance(moment, int) else None


def cut(recorded: Iterable[Recorded], at: Moment | None) -> list[Recorded]:
    """The events up to `at` (a version, inclusive, or a time, inclusive)."""
    out = []
    for r in recorded:
        if isinstance(at, int) and r.version > at:
            break
        if isinstance(at, datetime) and r.event.at > at:
            break
        out.append(r)
    return out
