"""The wire types of `convlog serve`: every request body and every answer is a Struct.

Bodies are decoded with msgspec into these types (unknown fields are errors, so a typo
does not pass silently), messages and events into the very Structs `convlog record`
uses (`convlog.services.jsonlines`), and the OpenAPI document is generated from the
same types, so the documentation cannot drift from what the server accepts.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import msgspec

from convlog.domain.events import AnyEvent, MessageAppended, ReasonClass
from convlog.domain.retention import RetentionPolicy
from convlog.projections.formats import Format
from convlog.services.compaction import Compaction
from convlog.services.context import Context
from convlog.services.fork import Forked
from convlog.services.jsonlines import AnyLine, MessageLine
from convlog.services.memory import MemoryBlock
from convlog.services.rewind import Rewound

CostGroup = Literal["conversation", "user", "agent", "model", "day"]
TelemetryGroup = Literal["strategy", "agent", "client", "day", "reason"]

MAX_KEY = 512


class Body(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Base of request bodies: unknown fields are rejected, naming the field."""


class StartIn(Body, frozen=True):
    """Start (or get) the conversation under `key`; starting an existing one records
    nothing and returns it as it is."""

    key: str
    user: str | None = None
    agent: str | None = None
    channel: str | None = None
    title: str | None = None
    workspace: str | None = None
    metadata: dict[str, Any] = {}


class TurnIn(Body, frozen=True):
    """One agent run's messages, appended in ONE transaction. Messages whose `id` is
    already recorded in the conversation are skipped (a retried turn is safe); a
    message without an id gets one derived from the `Idempotency-Key` header when
    there is one, else a fresh one."""

    messages: list[MessageLine]


class EventsIn(Body, frozen=True):
    """Lines in the JSON Lines format of `convlog record`, recorded as ONE atomic
    batch: one bad line records nothing, and the error names it (`events[3].role`)."""

    events: list[AnyLine]


class NativeSessionIn(Body, frozen=True):
    native_session_id: str
    agent: str | None = None


class MemoryIn(Body, frozen=True):
    """A block of retrieved memories to place before a turn. `text` gets the
    ``[Context from memory]`` prefix if it lacks it; `block_id` is generated when absent."""

    text: str
    memory_ids: list[str] = []
    block_id: str | None = None
    native_session_id: str | None = None


class MemoryPolicyIn(Body, frozen=True):
    """The memory policy of this conversation from here on (recorded; the server's own
    `--max-injected-blocks-in-history` / `--context-window-depth` no longer change it)."""

    max_injected_blocks_in_history: int
    context_window_depth: int


class CompactIn(Body, frozen=True):
    """A compaction whose summary the host wrote (from GET .../compaction, the plan):
    `summary` replaces, for the model, the live messages but the newest `keep_last`.
    With `through_message_id` (the plan's), it is refused (409 `compacted-meanwhile`)
    when the range has moved since; `summarizer`: who made the summary."""

    summary: str
    keep_last: int = 10
    through_message_id: str | None = None
    reason: str | None = None
    summarizer: str | None = None


class CompactOut(msgspec.Struct, frozen=True, kw_only=True):
    """The compaction recorded, or None when there was nothing to compact."""

    compaction: Compaction | None


class RetentionIn(Body, frozen=True):
    """A retention policy (docs/settings.md#retention): every field left out asks for
    nothing. Days are above 0 and at most 36,500; caps are whole numbers above 0;
    `over_cap` is `refuse` (`compact` needs compaction, which this version lacks)."""

    archive_after_days: float | None = None
    erase_after_days: float | None = None
    max_messages: int | None = None
    max_bytes: int | None = None
    over_cap: Literal["refuse", "compact"] = "refuse"

    def policy(self) -> RetentionPolicy:
        return RetentionPolicy(
            archive_after_days=self.archive_after_days,
            erase_after_days=self.erase_after_days, max_messages=self.max_messages,
            max_bytes=self.max_bytes, over_cap=self.over_cap)


class RewindIn(Body, frozen=True):
    """Back to message `to`, for the model: the messages after it are abandoned."""

    to: str
    reason: str | None = None


class RewindOut(msgspec.Struct, frozen=True, kw_only=True):
    """The rewind recorded, or None when nothing came after the message."""

    rewound: Rewound | None


class ForkIn(Body, frozen=True):
    """Fork at message `at` into the new conversation `key` (its history is the
    parent's up to that message, by reference). The parent's user, agent, channel
    and title unless given (a user token forks for its own user only)."""

    at: str
    key: str
    user: str | None = None
    agent: str | None = None
    channel: str | None = None
    title: str | None = None
    metadata: dict[str, Any] = {}


class ForkOut(msgspec.Struct, frozen=True, kw_only=True):
    """The fork recorded: its key, parent, the message and position it starts after."""

    forked: Forked


class ReasonIn(Body, frozen=True):
    reason: str | None = None


class AttemptIn(Body, frozen=True):
    """A resume tier is about to be tried (`session/resume`, `session/load`, ...)."""

    strategy: str
    native_session_id: str | None = None


class OutcomeIn(Body, frozen=True):
    """How a tier went. `ok=false` needs a `reason` class; `fresh=true` says the tier
    started an EMPTY agent session (ask for the injection next)."""

    strategy: str
    ok: bool
    reason: ReasonClass | None = None
    error: str | None = None
    native_session_id: str | None = None
    latency_ms: float | None = None
    fresh: bool | None = None


class BudgetIn(Body, frozen=True):
    tokens: int = 10_000
    messages: int = 30
    chars: int = 2_000


class InjectionIn(Body, frozen=True):
    """A fresh agent session needs the history: build it to the budget and record
    what was injected, at most once per native session."""

    native_session_id: str | None = None
    budget: BudgetIn = BudgetIn()
    format: Format = "xml"
    exclude: list[str] = []
    model: str | None = None


class SqlIn(Body, frozen=True):
    """One SELECT over the analytics views; `params` fill its `?` placeholders."""

    query: str
    params: list[str | int | float | bool | None] = []


# -------------------------------------------------------------------- answers


class StateChange(msgspec.Struct, frozen=True, kw_only=True):
    key: str
    changed: bool
    version: int
    status: str


class Injection(msgspec.Struct, frozen=True, kw_only=True):
    """`context` is the text to place after the system prompt; None when there was
    nothing to inject or when this native session already got it."""

    injected: bool
    already_injected: bool
    context: Context | None = None


class MemoryState(msgspec.Struct, frozen=True, kw_only=True):
    """The memory blocks the agent has now (oldest first), and {memory id: turns left}
    for the ids a host must not inject yet, computed with `context_window_depth`: the
    depth in force, the one an injection enforces (the conversation's pinned policy,
    else the server's)."""

    live: list[MemoryBlock]
    cooldown: dict[str, int]
    max_injected_blocks_in_history: int
    context_window_depth: int


class TimelineOut(msgspec.Struct, frozen=True, kw_only=True):
    version: int
    at: datetime
    type: str
    details: str
    event: AnyEvent


class EventOut(msgspec.Struct, frozen=True, kw_only=True):
    """One recorded event with its position (the SSE stream's `data`)."""

    version: int
    event: AnyEvent


class SqlOut(msgspec.Struct, frozen=True, kw_only=True):
    columns: list[str]
    rows: list[list[Any]]


class Health(msgspec.Struct, frozen=True, kw_only=True):
    ok: bool
    version: str
    backend: str


class Problem(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """An error, as RFC 9457 `application/problem+json`. `field` names the offending
    field of the body or the query (``messages[2].role``, ``tokens``)."""

    type: str
    title: str
    status: int
    detail: str
    field: str | None = None
    instance: str | None = None


MessagesOut = list[MessageAppended]
