"""The retention policy: how long a conversation is kept, and how large it may grow.

A policy is recorded like the memory policy (`retention_policy_set`): in a
conversation (its own, set on purpose: pinned), or in the store's settings stream
(`STORE_KEY`: the store's policy, for every conversation without one of its own).
What it asks, and when:

- `archive_after_days` N: a conversation idle N days is archived (kept whole,
  resumable once reactivated; a new message reactivates it).
- `erase_after_days` M: a conversation idle M days is erased: every event before the
  erasure keeps its public fields (kind, time, ids, roles, models, token counts,
  costs) and loses its text for good. Messages written later start a new epoch.
- `max_messages` / `max_bytes`: a turn that would take the conversation past the cap
  is handled by `over_cap`: ``refuse`` (the whole batch is refused, nothing written).
  ``compact`` needs the compaction operation, which this version does not have: it
  is refused as a setting (a typed error), never silently treated as ``refuse``.

*Idle* is the time since the conversation's last activity: its latest event other
than retention's own (a policy setting, an archive or erasure by retention, a cap
reached). *Bytes* are the UTF-8 bytes of the messages' text: text and thinking
parts, tool calls (name and arguments), tool results and image references; the
records an SDK store keeps are neither messages nor bytes (convlog.domain.records).

Every decision here is pure: `due` says what the policy asks of one conversation at
`now`, the one rule behind the dry run and the write that carries it out.
"""

from __future__ import annotations

import math
import uuid
from datetime import datetime
from typing import Literal, get_args

import msgspec

from convlog.domain.content import (
    Content,
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResultPart,
    ToolUsePart,
)
from convlog.domain.errors import ConvlogError, InvalidInput

OverCap = Literal["refuse", "compact"]
OVER_CAP: tuple[str, ...] = get_args(OverCap)
Source = Literal["conversation", "store"]
Action = Literal["archive", "erase"]
MAX_DAYS = 36_500.0
"""The longest period a policy may name (100 years)."""
DAY = 86_400.0

STORE_KEY = "convlog:store"
"""The key of the store's settings stream (its retention policy). The stream's id is
`STORE_STREAM`, which no conversation key maps to, so a host's own conversation
under this key is another stream."""
STORE_STREAM = uuid.UUID("3b8f4e0c-6a1d-5e27-9c43-7d2a0f5b1e68")
STORE_CHANNEL = "convlog-store"
"""The channel of the settings stream: left out of every list of conversations."""

COMPACTION_AVAILABLE = False
"""Whether `over_cap="compact"` can be carried out (the compaction operation of
issue 47). Until it exists, a policy asking for it is refused when it is set."""


class RetentionPolicy(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What a conversation's retention asks for; every field None: keep everything."""

    archive_after_days: float | None = None
    erase_after_days: float | None = None
    max_messages: int | None = None
    max_bytes: int | None = None
    over_cap: OverCap = "refuse"

    @property
    def keeps_everything(self) -> bool:
        return (self.archive_after_days is None and self.erase_after_days is None
                and self.max_messages is None and self.max_bytes is None)


KEEP_EVERYTHING = RetentionPolicy()


class RetentionCause(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Why retention acted: the policy in force, whose it was, and how long the
    conversation had been idle (days) when it was decided. Public, in every store."""

    source: Source
    policy: RetentionPolicy
    idle_days: float | None = None


class CapReached(ConvlogError):
    """A turn would take a conversation past its retention cap: refused whole,
    nothing written (`over_cap="refuse"`)."""

    def __init__(self, key: str, limit: Literal["messages", "bytes"], cap: int,
                 size: int, source: Source):
        self.key, self.limit, self.cap, self.size, self.source = key, limit, cap, size, source
        unit = "messages" if limit == "messages" else "bytes of text"
        super().__init__(
            f"conversation {key!r} is limited to {cap:,} {unit} by its retention policy "
            f"({'its own' if source == 'conversation' else 'the store' + chr(39) + 's'}); "
            f"this turn would take it to {size:,}: refused, nothing was written")


# --------------------------------------------------------------------- checking


def _days(value: object, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
            value) or not 0 < value <= MAX_DAYS:
        raise InvalidInput(f"must be a number of days above 0 and at most {MAX_DAYS:,.0f}, "
                           f"not {value!r}", field=field)
    return float(value)


def _cap(value: object, field: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**63:
        raise InvalidInput(f"must be a whole number above 0, not {value!r}", field=field)
    return value


def check_policy(policy: object, field: str = "retention") -> RetentionPolicy:
    """The policy, its numbers checked (a typed error naming the field otherwise)."""
    if not isinstance(policy, RetentionPolicy):
        raise InvalidInput(f"expected a RetentionPolicy, not {type(policy).__name__}",
                           field=field)
    archive = _days(policy.archive_after_days, "archive_after_days")
    erase = _days(policy.erase_after_days, "erase_after_days")
    messages = _cap(policy.max_messages, "max_messages")
    size = _cap(policy.max_bytes, "max_bytes")
    if policy.over_cap not in OVER_CAP:
        raise InvalidInput(f"must be one of {', '.join(OVER_CAP)}, not {policy.over_cap!r}",
                           field="over_cap")
    if policy.over_cap == "compact" and not COMPACTION_AVAILABLE:
        raise InvalidInput("'compact' needs the compaction operation, which this version "
                           "of convlog does not have yet: use 'refuse'", field="over_cap")
    return RetentionPolicy(archive_after_days=archive, erase_after_days=erase,
                           max_messages=messages, max_bytes=size, over_cap=policy.over_cap)


# ------------------------------------------------------------------------ sizes


def _text_bytes(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def message_bytes(content: Content, tool_calls: list[ToolCall] | None = None) -> int:
    """The bytes a message adds to its conversation's size (see the module)."""
    if isinstance(content, str):
        size = _text_bytes(content)
    else:
        size = 0
        for part in content:
            if isinstance(part, TextPart | ThinkingPart):
                size += _text_bytes(part.text)
            elif isinstance(part, ToolUsePart):
                size += _text_bytes(part.name) + _text_bytes(part.arguments)
            elif isinstance(part, ToolResultPart):
                size += _text_bytes(part.content)
            elif isinstance(part, ImagePart):
                size += _text_bytes(part.ref)
    for call in tool_calls or ():
        size += _text_bytes(call.name) + _text_bytes(call.arguments)
    return size


# ---------------------------------------------------------------------- the rule


def idle_days(since: datetime | None, now: datetime) -> float | None:
    """Days from `since` (the last activity) to `now`; None when unknown."""
    if since is None:
        return None
    return max(0.0, (now - since).total_seconds() / DAY)


def due(policy: RetentionPolicy | None, *, idle: float | None, active: bool,
        erased_since_activity: bool) -> Action | None:
    """What `policy` asks of a conversation idle `idle` days: ``erase`` (past
    `erase_after_days`, unless nothing happened since its last erasure), else
    ``archive`` (past `archive_after_days`, while `active`), else None."""
    if policy is None or idle is None:
        return None
    if policy.erase_after_days is not None and idle >= policy.erase_after_days \
            and not erased_since_activity:
        return "erase"
    if policy.archive_after_days is not None and idle >= policy.archive_after_days \
            and active:
        return "archive"
    return None


def over_cap(policy: RetentionPolicy | None, *, messages: int, size: int
             ) -> tuple[Literal["messages", "bytes"], int, int] | None:
    """(limit, cap, size) of the first cap `messages` / `size` would pass; None when
    within every cap."""
    if policy is None:
        return None
    if policy.max_messages is not None and messages > policy.max_messages:
        return "messages", policy.max_messages, messages
    if policy.max_bytes is not None and size > policy.max_bytes:
        return "bytes", policy.max_bytes, size
    return None
