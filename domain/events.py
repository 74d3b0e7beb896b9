"""The events of a conversation: every fact convlog knows is one of these.

WARNING: this module is a STORED FORMAT. Each event is stored under its tag (the
stable name below, never the Python class path) and its `class_version`. Renaming a
class is free; renaming a tag or a field, or changing a field's type, breaks every
database already written. To evolve an event:

1. bump `class_version`, and
2. add a static `upcast_vN_vN1(state: dict) -> None` that rewrites the stored dict of
   version N into version N+1 in place, and
3. keep the old golden file in tests/golden and add the new one.

Fields equal to their default are not stored (``omit_defaults``), so NEVER change a
default value: old events would silently read back with the new one.

The mapper (convlog.storage.mapper) runs the upcasters when it reads an older version.
"""

from __future__ import annotations

import re
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, ClassVar, Literal, get_args

import msgspec

from convlog.domain.content import Content, ToolCall, Usage
from convlog.domain.renamed import renamed
from convlog.domain.retention import OverCap, RetentionCause, RetentionPolicy

ReasonClass = Literal["unsupported", "not_found", "transient", "timeout", "error"]
REASON_CLASSES: tuple[str, ...] = get_args(ReasonClass)


class Event(
    msgspec.Struct, frozen=True, kw_only=True, tag_field="type", omit_defaults=True
):
    """Base of every conversation event. `at` is when convlog recorded the fact (UTC)."""

    class_version: ClassVar[int] = 1
    at: datetime

    @classmethod
    def event_name(cls) -> str:
        """The stable stored name of this event type."""
        tag = cls.__struct_config__.tag
        assert isinstance(tag, str), cls
        return tag


class ConversationStarted(Event, tag="session_started", frozen=True):
    """A conversation began under a key the host chose (``discord:thread:42``)."""

    key: str
    channel: str | None = None
    user: str | None = None
    agent: str | None = None
    title: str | None = None
    workspace: str | None = None
    metadata: dict[str, Any] = {}


class ConversationForked(ConversationStarted, tag="conversation_forked", frozen=True):
    """A conversation began as a fork of `parent_key` at its message `at_message_id`
    (log position `at_version`): its history is the parent's events 1..`at_version`,
    by reference (never copied), then its own, which start at `at_version + 1`. A
    `session_started` in all but name (every reader that finds where a conversation
    began finds this). The `base_*` fields are the parent's counters at the fork, so
    the fork's state is whole without reading the parent (issue 47)."""

    parent_key: str = ""
    at_message_id: str = ""
    at_version: int = 0
    base_message_count: int = 0
    base_records: int = 0
    base_turns: int = 0
    base_epoch: int = 0
    base_epoch_start_version: int = 0
    base_epoch_start_message_count: int = 0
    base_summary_version: int = 0
    base_compacted_version: int = 0
    base_compacted_to: int = 0
    base_compactions: int = 0
    base_rewinds: int = 0


class MessageAppended(Event, tag="message_appended", frozen=True):
    """One message as the user or the agent saw it. Never a system prompt."""

    message_id: str
    role: Literal["user", "assistant", "tool"]
    content: Content
    tool_calls: list[ToolCall] = []
    tool_call_id: str | None = None
    model: str | None = None
    agent: str | None = None
    usage: Usage | None = None
    cost_usd: Decimal | None = None
    tokens: int | None = None
    """Token count of the content, counted once when the message was appended."""
    token_counter: str | None = None
    """Which counter produced `tokens` (e.g. ``o200k_base``, ``host``)."""
    created_at: datetime | None = None
    """When the host says the message was written, if it differs from `at`."""
    response_id: str | None = None
    """The provider's response/request id: usage repeated across several records of
    one response (e.g. one record per content block) is counted once."""
    raw: dict[str, Any] | None = None
    """The message exactly as an agent SDK handed it over (its own JSON item), for
    the SDK session stores that must give back what they were given, unchanged."""
    record: str | None = None
    """Set when this is no message but a record its surface keeps for its own reads
    (`raw`), with nothing in it for a reader or a model: what kind of record (a
    Claude Code entry's type such as ``attachment``, ``adk:state``...). Never counted
    or shown as a message (convlog.domain.records). Public in an encrypted store."""


class MessageRetracted(Event, tag="message_retracted", frozen=True):
    """A compensating event: the message `message_id` no longer belongs to the live
    history (an SDK session's `pop_item`). The message stays in the log for replay;
    contexts and SDK stores skip it from here on."""

    message_id: str
    reason: str | None = None


class NativeSessionBound(Event, tag="native_session_bound", frozen=True):
    """The agent's own session id for this conversation (e.g. an ACP ``sessionId``)."""

    native_session_id: str
    agent: str | None = None


class ResumeAttempted(Event, tag="resume_attempted", frozen=True):
    strategy: str
    native_session_id: str | None = None


def _latency_seconds_to_ms(state: dict[str, Any]) -> None:
    """v1 -> v2 of the resume outcomes: latency moved from float seconds (`latency_s`)
    to milliseconds (`latency_ms`), the unit every telemetry query reports."""
    seconds = state.pop("latency_s", None)
    state["latency_ms"] = None if seconds is None else round(seconds * 1000.0, 3)


FRESH_STRATEGY = r"(^|[/:._ -])new$"
"""A strategy named like this ("session/new", "new"; not "session/renew") started an
empty agent session: the rule wherever `fresh` was not given (tiers, the agent's view,
the telemetry views' SQL)."""
_FRESH_STRATEGY = re.compile(FRESH_STRATEGY)


def is_fresh_strategy(strategy: str) -> bool:
    return _FRESH_STRATEGY.search(strategy.lower()) is not None


class ResumeSucceeded(Event, tag="resume_succeeded", frozen=True):
    class_version: ClassVar[int] = 2
    upcast_v1_v2 = staticmethod(_latency_seconds_to_ms)

    strategy: str
    native_session_id: str | None = None
    latency_ms: float | None = None
    fresh: bool | None = None
    """True when the tier started an EMPTY agent session (history had to be injected);
    None when the host did not say (analytics then infer it from the strategy name)."""


class ResumeFailed(Event, tag="resume_failed", frozen=True):
    strategy: str
    reason: ReasonClass = "error"
    native_session_id: str | None = None
    error: str | None = None
    latency_ms: float | None = None

    class_version: ClassVar[int] = 2
    upcast_v1_v2 = staticmethod(_latency_seconds_to_ms)


class HistoryInjected(Event, tag="history_injected", frozen=True):
    """The exact text convlog handed to a fresh agent session, and what it covered."""

    from_version: int
    to_version: int
    message_count: int
    tokens: int
    format: str
    text: str
    native_session_id: str | None = None


class SummaryRecorded(Event, tag="summary_recorded", frozen=True):
    """A summary of the messages from `from_version` to `to_version`, made by the
    host's summarizer (its own LLM). Recorded once, so it is never recomputed and a
    replay shows exactly what the agent was told."""

    from_version: int
    to_version: int
    message_count: int
    text: str
    tokens: int
    summarizer: str | None = None


class HistoryCompacted(Event, tag="history_compacted", frozen=True):
    """The host compacted the history: for the model, the messages of log positions
    `from_version`..`to_version` (the last of them `through_message_id`) are replaced
    by `text`, a summary its summarizer made (folding the previous compaction's
    summary in, so the latest compaction covers the epoch from its start). Nothing
    is deleted or rewritten: the user's view, transcripts and replays keep every
    message; the model-facing reads (contexts, SDK stores) start from the summary.
    The range never splits a tool call from its result (the pairing rule)."""

    from_version: int
    to_version: int
    through_message_id: str
    message_count: int
    """Messages the summary stands for (those of earlier compactions included)."""
    text: str
    tokens_before: int
    """Tokens the model would have read for the range: the previous summary and the
    messages folded in, each counted as the context counts it."""
    tokens_after: int
    """Tokens of `text`."""
    kept: int = 0
    """Live messages after the range when it was compacted (`keep_last`, or more to
    keep a tool call with its result)."""
    summarizer: str | None = None
    """Who or what made the summary (a model, a host's function)."""
    reason: str | None = None


class HistoryRewound(Event, tag="history_rewound", frozen=True):
    """The host rewound the conversation to message `to_message_id` (at log position
    `to_version`): for the model, every message recorded after it and before this
    event is abandoned (`abandoned` of them), and later appends continue from it.
    Nothing is deleted: the user's view shows the abandoned messages struck, replays
    before this event show them as they were."""

    to_message_id: str
    to_version: int
    abandoned: int
    reason: str | None = None


class MemoryInjected(Event, tag="memory_injected", frozen=True):
    """A block of retrieved memories the host placed before a turn. `text` is the
    exact block it sent (it starts with ``[Context from memory]``); `turn` is how many
    user messages the conversation had when it entered (its log version is the
    event's own position). Whether it is still live is a projection of the log."""

    block_id: str
    memory_ids: list[str]
    text: str
    turn: int
    native_session_id: str | None = None


class ConversationArchived(Event, tag="session_archived", frozen=True):
    reason: str | None = None
    retention: RetentionCause | None = None
    """Set when the retention policy in force archived it (idle past its
    `archive_after_days`): which policy, whose, and how long it had been idle. None:
    the host archived it."""


class ConversationReactivated(Event, tag="session_reactivated", frozen=True):
    pass


class ConversationCleared(Event, tag="conversation_cleared", frozen=True):
    """A new epoch: later context starts empty; earlier history is kept for the record."""

    reason: str | None = None


class UserForgotten(Event, tag="user_forgotten", frozen=True):
    """The conversation's user was forgotten (erasure): their data key is destroyed, so
    the content of every earlier event is unreadable for good. Records who was
    forgotten, when and at whose request; never what was erased."""

    user: str
    requested_by: str | None = None


class AgentSessionClosed(Event, tag="agent_session_closed", frozen=True):
    """The host closed its agent session (ACP `session/close`): the agent may free it.
    The conversation stays as it was; a later load opens a new agent session."""

    native_session_id: str | None = None


class ConversationDeleted(Event, tag="conversation_deleted", frozen=True):
    """The host deleted the conversation from its list (ACP `session/delete`). Recorded,
    not erased: the events stay and `replay` shows them; lists leave it out. Erasure
    is `forget`."""

    reason: str | None = None


class TitleChanged(Event, tag="title_changed", frozen=True):
    """A new title for the conversation, e.g. the agent's ACP `session_info_update`."""

    title: str
    update: dict[str, Any] | None = None
    """The agent's own ACP `session_info_update` as it sent it, when it came outside a
    prompt turn (one inside a turn is kept with the turn's message): `session/load`
    replays it as it came."""


class ContextWindowReported(Event, tag="context_window_reported", frozen=True):
    """How full the agent's context window was after a turn (ACP `usage_update`:
    `used` of `size` tokens), recorded once per turn, so telemetry can tell how full
    the window was when a later resume failed."""

    used: int
    size: int
    message_id: str | None = None
    """The turn's assistant message, when the turn recorded one."""
    native_session_id: str | None = None
    update: dict[str, Any] | None = None
    """The agent's own ACP `usage_update` as it sent it (with its cost), when it came
    outside a prompt turn (one inside a turn is kept with the turn's message):
    `session/load` replays it as it came."""


PreambleHow = Literal["marked", "guessed", "resent"]


class PreambleSent(Event, tag="preamble_sent", frozen=True):
    """Text the host put in a prompt for the model and not for the user (its system
    prompt), as the agent received it with the turn that follows. Not dialogue: the
    agent's view shows it; the user's view, transcripts, contexts and injected history
    leave it out. `how`: ``marked`` (the host marked the blocks: ACP content
    annotations ``audience: ["assistant"]``, or ``_meta: {"convlog/preamble": true}``),
    ``guessed`` (convlog acp's first-block rule), ``resent`` (the proxy sent the last
    one again to a new agent process, which the host did not know of)."""

    text: str
    how: PreambleHow
    blocks: list[dict[str, Any]] = []
    """The content blocks as the host sent them (ACP: with annotations and `_meta`)."""
    native_session_id: str | None = None


class MemoryPolicySet(Event, tag="memory_policy_set", frozen=True):
    """The memory policy the host runs this conversation with from here on: how many
    injected memory blocks stay live (`max_injected_blocks_in_history`, 0: a block
    lives for its own turn) and the re-injection cooldown in turns
    (`context_window_depth`). Recorded when a conversation starts under a policy
    other than the defaults (3 and 10) or when the host changes it, so every
    projection applies the policy that was in force at each point."""

    max_injected_blocks_in_history: int
    context_window_depth: int
    pinned: bool = False
    """Set for this conversation on purpose (`log.set_memory_policy`, PUT
    /v1/conversations/{key}/memory/policy): a process's own options no longer
    change it; only another such setting does."""


class RetentionPolicySet(Event, tag="retention_policy_set", frozen=True):
    """The retention policy in force from here on (convlog.domain.retention): in a
    conversation, its own; in the store's settings stream, the store's, for every
    conversation without one of its own. Every field None keeps everything."""

    archive_after_days: float | None = None
    erase_after_days: float | None = None
    max_messages: int | None = None
    max_bytes: int | None = None
    over_cap: OverCap = "refuse"
    pinned: bool = False
    """Set on purpose (`set_retention_policy`, the CLI's `retention set`, HTTP PUT):
    a process's options (flags, environment) no longer change it; another such
    setting does."""

    @property
    def policy(self) -> RetentionPolicy:
        return RetentionPolicy(
            archive_after_days=self.archive_after_days,
            erase_after_days=self.erase_after_days, max_messages=self.max_messages,
            max_bytes=self.max_bytes, over_cap=self.over_cap)


class ConversationErased(Event, tag="conversation_erased", frozen=True):
    """The retention policy in force erased the conversation: every event before
    this one keeps its public fields and loses its text for good (in an encrypted
    store, its data key is destroyed; in a plain one, the stored text is overwritten
    and the files compacted). Records why, never what. Later events start afresh (a
    new epoch, a new data key)."""

    retention: RetentionCause


class RetentionCapReached(Event, tag="retention_cap_reached", frozen=True):
    """A turn was refused because it would take the conversation past a cap of its
    retention policy (recorded once, on the first refusal under that policy)."""

    limit: Literal["messages", "bytes"]
    cap: int
    size: int
    """What the refused turn would have taken the conversation to."""
    source: Literal["conversation", "store"] = "conversation"


AnyEvent = (
    ConversationStarted
    | MessageAppended
    | NativeSessionBound
    | ResumeAttempted
    | ResumeSucceeded
    | ResumeFailed
    | HistoryInjected
    | SummaryRecorded
    | MemoryInjected
    | ConversationArchived
    | ConversationReactivated
    | ConversationCleared
    | UserForgotten
    | MessageRetracted
    | AgentSessionClosed
    | ConversationDeleted
    | TitleChanged
    | ContextWindowReported
    | MemoryPolicySet
    | PreambleSent
    | RetentionPolicySet
    | ConversationErased
    | RetentionCapReached
    | HistoryCompacted
    | HistoryRewound
    | ConversationForked
)

EVENT_TYPES: tuple[type[Event], ...] = get_args(AnyEvent)
"""Every event type, in `AnyEvent`'s order: a new event is added there only."""


RENAMED = {"SessionStarted": "ConversationStarted", "SessionArchived": "ConversationArchived",
           "SessionReactivated": "ConversationReactivated"}
"""Old class names (a "session" here was the conversation, unlike the agent's native
session of NativeSessionBound): deprecated aliases; the stored tags never changed."""
__getattr__ = renamed(__name__, RENAMED, globals())
if TYPE_CHECKING:
    SessionStarted = ConversationStarted
    SessionArchived = ConversationArchived
    SessionReactivated = ConversationReactivated


class Recorded(msgspec.Struct, frozen=True):
    """An event with its position in the conversation's log (1 = first event)."""

    version: int
    event: AnyEvent
