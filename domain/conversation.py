"""The Conversation aggregate: small state, a fold over events, and pure decisions.

Decisions are functions of (state, command) -> events, in the Equinox style: they
never touch storage, so the rules are tested without a database and the adapter is
free to retry a decision after a concurrent writer won (optimistic concurrency).

The state is deliberately small (counters and a few ids, no message history): it is
cached and snapshotted, and appending must cost the same at message 10 and at
message 100,000. Message history is read from the log's tail, never from here.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Literal

import msgspec

from convlog.domain.content import check_token_count, check_unicode
from convlog.domain.errors import (
    ArchivedConversation,
    CompactedMeanwhile,
    ConversationForgotten,
    InvalidInput,
    UnknownConversation,
)
from convlog.domain.events import (
    AgentSessionClosed,
    ContextWindowReported,
    ConversationArchived,
    ConversationCleared,
    ConversationDeleted,
    ConversationErased,
    ConversationForked,
    ConversationReactivated,
    ConversationStarted,
    Event,
    HistoryCompacted,
    HistoryInjected,
    HistoryRewound,
    MemoryInjected,
    MemoryPolicySet,
    MessageAppended,
    MessageRetracted,
    NativeSessionBound,
    PreambleSent,
    ResumeAttempted,
    ResumeFailed,
    ResumeSucceeded,
    RetentionCapReached,
    RetentionPolicySet,
    SummaryRecorded,
    TitleChanged,
    UserForgotten,
)
from convlog.domain.memory import (
    DEFAULT_CAP,
    DEFAULT_DEPTH,
    InjectMemory,
    decide_memory,
    remember,
)
from convlog.domain.messages import Message
from convlog.domain.records import is_record
from convlog.domain.renamed import renamed
from convlog.domain.retention import (
    CapReached,
    RetentionCause,
    RetentionPolicy,
    Source,
    due,
    idle_days,
    message_bytes,
    over_cap,
)

# WARNING: changing this namespace re-keys every stored conversation.
KEY_NAMESPACE = uuid.UUID("6f1d3a52-2b8e-5c47-9a0e-3c6b1f0e7d21")
MAX_KEY_LENGTH = 512


def check_key(key: object) -> str:
    """A conversation key is a non-empty, printable string the host chose."""
    if not isinstance(key, str) or not key.strip():
        raise InvalidInput("conversation key must be a non-empty string", field="key")
    if len(key) > MAX_KEY_LENGTH:
        raise InvalidInput(f"conversation key is longer than {MAX_KEY_LENGTH}", field="key")
    if not key.isprintable():  # every character, in one C loop
        raise InvalidInput("conversation key contains control characters", field="key")
    return key


def conversation_id(key: str) -> uuid.UUID:
    """The deterministic stream id of a conversation key (the same in every process)."""
    if not isinstance(key, str):
        check_key(key)  # raises the typed error
    return _conversation_id(key)


@functools.lru_cache(maxsize=8192)
def _conversation_id(key: str) -> uuid.UUID:
    # Cached: hosts address the same few conversations over and over.
    return uuid.uuid5(KEY_NAMESPACE, check_key(key))


class Conversation(msgspec.Struct, kw_only=True):
    """The decision state of one conversation. Also the snapshot format: add fields
    only with defaults, so older snapshots still decode."""

    key: str
    version: int = 0
    started: bool = False
    status: Literal["active", "archived"] = "active"
    user: str | None = None
    agent: str | None = None
    channel: str | None = None
    title: str | None = None
    workspace: str | None = None
    created_at: datetime | None = None
    last_active_at: datetime | None = None
    message_count: int = 0
    """`message_appended` events, records (`records`) included."""
    records: int = 0
    """Records among them, no messages (convlog.domain.records): the conversation has
    `message_count - records` messages. A snapshot taken before records were counted
    (issue 41) starts from 0: records before it still count as messages."""
    epoch: int = 0
    epoch_start_version: int = 0
    """Version of the latest ConversationCleared: context starts after it."""
    epoch_start_message_count: int = 0
    """How many messages came before that clear (so the epoch's count is a subtraction)."""
    summary_version: int = 0
    """Position of the latest summary of this epoch (0: none), so a context finds it
    with one read however many messages came after it."""
    compacted_version: int = 0
    """Position of the latest compaction of this epoch (HistoryCompacted; 0: none)."""
    compacted_to: int = 0
    """The last log position that compaction replaces for the model (0: none): every
    model-facing read of the epoch starts after it, with the compaction's summary."""
    compactions: int = 0
    """Compactions recorded (all epochs)."""
    rewinds: int = 0
    """Rewinds recorded (all epochs)."""
    native_session_id: str | None = None
    injected_native_session_ids: list[str] = []
    """Native sessions that already received injected history (at most once each)."""
    turns: int = 0
    """User messages recorded: the unit of the memory-block cooldown."""
    memory_blocks: int = 0
    recent_memories: dict[str, int] = {}
    """Memory id -> the turn of its latest injection in this epoch (bounded: see
    convlog.domain.memory.remember), so the cooldown is decided without a scan."""
    deleted: bool = False
    """The host deleted it from its list (ConversationDeleted): kept, but no longer
    offered to a host to load or resume."""
    resumed_at: datetime | None = None
    """When a resume of this conversation last succeeded (ResumeSucceeded)."""
    memory_cap: int | None = None
    """`max_injected_blocks_in_history` of the latest MemoryPolicySet (None: never
    recorded, the default applies; see `policy`)."""
    memory_depth: int | None = None
    """`context_window_depth` of the latest MemoryPolicySet (None: the default)."""
    memory_pinned: bool = False
    """The policy was set for this conversation on purpose (MemoryPolicySet.pinned)."""
    forgotten: bool = False
    """Its user was forgotten (UserForgotten): the content is erased, nothing more is
    recorded."""
    retention: RetentionPolicy | None = None
    """The conversation's own retention policy (its latest RetentionPolicySet); None:
    the store's applies (convlog.domain.retention)."""
    retention_pinned: bool = False
    activity_at: datetime | None = None
    """When its latest activity was recorded: any event but retention's own (see
    `is_activity`). None in a state snapshotted before retention existed, where
    `last_active_at` stands for it."""
    activity_version: int = 0
    """The position of that event (0: not known)."""
    content_bytes: int = 0
    """UTF-8 bytes of its messages' text since its latest erasure
    (convlog.domain.retention.message_bytes). A state snapshotted before retention
    existed counts from that snapshot on."""
    erased_version: int = 0
    """The position of its latest ConversationErased (0: never erased)."""
    erased_messages: int = 0
    """Messages (records excluded) recorded before that erasure."""
    erasures: int = 0
    """How many times it was erased: the number of its current data key epoch."""
    parent: str | None = None
    """The key of the conversation this one was forked from (None: not a fork)."""
    fork_at: str | None = None
    """The parent's message it was forked at (ConversationForked.at_message_id)."""
    fork_version: int = 0
    """The parent's log position of that message: the fork's history is the parent's
    events up to it, then its own (which start after it)."""
    cap_noted: str | None = None
    """The cap whose first refusal was recorded (``messages:100``), so a host that
    keeps retrying records it once."""

    @property
    def live_message_count(self) -> int:
        """Messages since its latest erasure, records excluded (what a cap counts)."""
        return self.message_count - self.records - self.erased_messages

    def retention_in_force(self, store: RetentionPolicy | None
                           ) -> tuple[RetentionPolicy | None, Source]:
        """The retention policy in force: its own, else the store's (`store`)."""
        if self.retention is not None:
            return self.retention, "conversation"
        return store, "store"

    def cooldown_depth(self, process_depth: int) -> int:
        """The `context_window_depth` in force for a memory cooldown: this
        conversation's pinned policy, else the writing process's. What an injection
        enforces and what every cooldown report computes with (one rule)."""
        return self.policy()[1] if self.memory_pinned else process_depth

    def policy(self) -> tuple[int, int]:
        """(max_injected_blocks_in_history, context_window_depth) in force now: the
        recorded policy, or the defaults (3, 10) when none was recorded."""
        return (DEFAULT_CAP if self.memory_cap is None else self.memory_cap,
                DEFAULT_DEPTH if self.memory_depth is None else self.memory_depth)


# --------------------------------------------------------------------------- fold


def _forked(state: Conversation, e: ConversationForked) -> None:
    """The fork's state after its first event: at the parent's position, with the
    parent's counters at the fork (its history up to there is the parent's)."""
    state.version = state.activity_version = e.at_version + 1
    state.parent, state.fork_at, state.fork_version = e.parent_key, e.at_message_id, \
        e.at_version
    state.message_count, state.records, state.turns = \
        e.base_message_count, e.base_records, e.base_turns
    state.epoch, state.epoch_start_version = e.base_epoch, e.base_epoch_start_version
    state.epoch_start_message_count = e.base_epoch_start_message_count
    state.summary_version = e.base_summary_version
    state.compacted_version, state.compacted_to = e.base_compacted_version, \
        e.base_compacted_to
    state.compactions, state.rewinds = e.base_compactions, e.base_rewinds


def evolve(state: Conversation, event: Event) -> None:
    """Apply one recorded event to the state, in place. Total: unknown events only
    advance the version, so a newer writer's event types never break an older reader."""
    state.version += 1
    state.last_active_at = event.at
    if is_activity(event):
        state.activity_at = event.at
        state.activity_version = state.version
    if isinstance(event, ConversationStarted):
        state.started = True
        state.created_at = event.at
        state.user, state.agent, state.channel = event.user, event.agent, event.channel
        state.title, state.workspace = event.title, event.workspace
        if isinstance(event, ConversationForked):
            _forked(state, event)
    elif isinstance(event, MessageAppended):
        state.message_count += 1
        if event.role == "user":
            state.turns += 1
        elif is_record(event):
            state.records += 1
            return
        state.content_bytes += message_bytes(event.content, event.tool_calls)
    elif isinstance(event, MemoryInjected):
        state.memory_blocks += 1
        state.recent_memories = remember(state.recent_memories, event, state.turns)
    elif isinstance(event, NativeSessionBound):
        state.native_session_id = event.native_session_id
    elif isinstance(event, HistoryInjected) and event.native_session_id:
        state.injected_native_session_ids = [
            *state.injected_native_session_ids[-9:], event.native_session_id
        ]
    elif isinstance(event, ConversationArchived):
        state.status = "archived"
    elif isinstance(event, ConversationReactivated):
        state.status = "active"
    elif isinstance(event, ConversationCleared):
        state.epoch += 1
        state.epoch_start_version = state.version
        state.epoch_start_message_count = state.message_count
        state.summary_version = state.compacted_version = state.compacted_to = 0
        state.recent_memories = {}
    elif isinstance(event, SummaryRecorded):
        state.summary_version = state.version
    elif isinstance(event, HistoryRewound):
        state.rewinds += 1
        if state.summary_version > event.to_version:  # it may cover what is abandoned
            state.summary_version = 0
    elif isinstance(event, HistoryCompacted):
        state.summary_version = state.compacted_version = state.version
        state.compacted_to = event.to_version
        state.compactions += 1
    elif isinstance(event, TitleChanged):
        state.title = event.title
    elif isinstance(event, ConversationDeleted):
        state.deleted = True
    elif isinstance(event, ResumeSucceeded):
        state.resumed_at = event.at
    elif isinstance(event, MemoryPolicySet):
        state.memory_cap = event.max_injected_blocks_in_history
        state.memory_depth = event.context_window_depth
        state.memory_pinned = event.pinned
    elif isinstance(event, UserForgotten):
        state.forgotten = True
        state.title = state.workspace = None
    elif isinstance(event, RetentionPolicySet):
        state.retention = event.policy
        state.retention_pinned = event.pinned
        state.cap_noted = None
    elif isinstance(event, ConversationErased):
        _erased(state)
    elif isinstance(event, RetentionCapReached):
        state.cap_noted = f"{event.limit}:{event.cap}"


def is_activity(event: Event) -> bool:
    """Whether `event` is activity of the conversation, which retention measures idle
    time from: every event but retention's own (a policy setting, an archive or
    erasure it decided, a cap reached)."""
    if isinstance(event, ConversationArchived):
        return event.retention is None
    return not isinstance(event, RetentionPolicySet | ConversationErased
                          | RetentionCapReached)


def _erased(state: Conversation) -> None:
    """After an erasure: archived, a new epoch whose counts start at 0, no text."""
    state.status = "archived"
    state.erased_version = state.version
    state.erased_messages = state.message_count - state.records
    state.erasures += 1
    state.content_bytes = 0
    state.epoch += 1
    state.epoch_start_version = state.version
    state.epoch_start_message_count = state.message_count
    state.summary_version = state.compacted_version = state.compacted_to = 0
    state.recent_memories = {}
    state.title = state.workspace = None
    state.cap_noted = None


def check_resumable(state: Conversation) -> None:
    """The rule every resume obeys, on every surface: only a conversation that exists
    and is not archived is resumed (UnknownConversation, ArchivedConversation).
    A resume never starts a conversation: a mistyped key is an error, not a new,
    empty conversation."""
    if not state.started:
        raise UnknownConversation(state.key)
    if state.status == "archived":
        raise ArchivedConversation(state.key)


PAUSED_AFTER = 1800.0
"""Seconds without a recorded event after which an active conversation is paused."""
Status = Literal["active", "paused", "archived"]


def status_of(state: Conversation, now: datetime, paused_after: float = PAUSED_AFTER
              ) -> Status:
    """Seed 001's status of a conversation at `now`: ``archived`` (not resumable until
    reactivated; a deleted one too), ``paused`` (resumable, but nothing was recorded
    for `paused_after` seconds: its agent session has likely gone, the next turn
    resumes it by tiers), else ``active`` (in use)."""
    if state.status == "archived" or state.deleted:
        return "archived"
    last = state.last_active_at
    if last is not None and (now - last).total_seconds() >= paused_after:
        return "paused"
    return "active"


RESUME_FACTS = (ResumeAttempted, ResumeSucceeded, ResumeFailed, HistoryInjected)
"""The facts of a resume: recorded only where `check_resumable` allows."""


# ---------------------------------------------------------------------- commands


class StartConversation(msgspec.Struct, frozen=True, kw_only=True):
    channel: str | None = None
    user: str | None = None
    agent: str | None = None
    title: str | None = None
    workspace: str | None = None
    metadata: dict[str, object] = {}


class AppendMessages(msgspec.Struct, frozen=True, kw_only=True):
    """One turn: every message of one agent run, recorded together or not at all."""

    messages: Sequence[Message]
    known_ids: frozenset[str] = frozenset()
    """Ids among `messages` that the log already holds (the adapter looks them up)."""
    store_retention: RetentionPolicy | None = None
    """The store's retention policy (the writer sets it), whose caps hold for a
    conversation without a policy of its own."""


class BindNativeSession(msgspec.Struct, frozen=True, kw_only=True):
    native_session_id: str
    agent: str | None = None


class Archive(msgspec.Struct, frozen=True, kw_only=True):
    reason: str | None = None


class Reactivate(msgspec.Struct, frozen=True, kw_only=True):
    pass


class Clear(msgspec.Struct, frozen=True, kw_only=True):
    reason: str | None = None


class Retract(msgspec.Struct, frozen=True, kw_only=True):
    """Withdraw one message from the live history (a compensating MessageRetracted).
    The service names the message: the state holds no history to choose it from."""

    message_id: str
    reason: str | None = None


class Compact(msgspec.Struct, frozen=True, kw_only=True):
    """Record a compaction (HistoryCompacted). The service chose the range from the
    log (the state holds no history) with the pairing rule, and asked the host's
    summarizer; the decision checks it against the state being written to: the range
    lies in the current epoch, after the compaction it folds in (`after`: the
    position of the latest compaction it read, 0: none), so two compactions made at
    once cannot both be recorded."""

    after: int
    from_version: int
    to_version: int
    through_message_id: str
    message_count: int
    text: str
    tokens_before: int
    tokens_after: int
    kept: int = 0
    summarizer: str | None = None
    reason: str | None = None


class Fork(msgspec.Struct, frozen=True, kw_only=True):
    """Start this (new) conversation as a fork: `event` (ConversationForked) was
    built by the service from the parent's state at the fork point. Refused when the
    key is taken (InvalidInput naming `key`), decided inside the write."""

    event: ConversationForked


class Rewind(msgspec.Struct, frozen=True, kw_only=True):
    """Record a rewind (HistoryRewound) to message `to_message_id`, which the service
    found at `to_version` with `abandoned` live messages after it (the state holds no
    history), looking at the state being written to (inside the write's retry loop,
    as a retraction chooses its message)."""

    to_message_id: str
    to_version: int
    abandoned: int
    reason: str | None = None


class RequireUser(msgspec.Struct, frozen=True, kw_only=True):
    """A guard, not a change: the batch is refused, as if the conversation did not
    exist (so a caller cannot probe keys), unless it belongs to `user`. Decided inside
    the write like every command, so it also holds against a writer that started the
    same key for someone else between the caller's check and its write."""

    user: str


class RecordFact(msgspec.Struct, frozen=True, kw_only=True):
    """A fact the host observed (a resume attempt and its outcome, an injection, an
    agent session's close, title or context window, the host's preamble): recorded as
    given once its fields are checked, stamped with the recording time."""

    event: (ResumeAttempted | ResumeSucceeded | ResumeFailed | HistoryInjected
            | SummaryRecorded | AgentSessionClosed | ConversationDeleted | TitleChanged
            | ContextWindowReported | PreambleSent)


class SetMemoryPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """The host's memory policy: recorded (MemoryPolicySet) when it differs from the
    one in force; nothing when it is the same, or when the conversation was not
    started (the writer places it after the command that starts it)."""

    max_injected_blocks_in_history: int
    context_window_depth: int
    pinned: bool = False
    """Set for this conversation on purpose: recorded even when equal, and a later
    unpinned policy (a process's options) leaves it alone."""


class SetRetentionPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """Record `policy` (RetentionPolicySet) when it differs from the one recorded;
    `pinned` as for SetMemoryPolicy: an unpinned one (a process's options) leaves a
    pinned one alone. Nothing for a conversation not started or forgotten."""

    policy: RetentionPolicy
    pinned: bool = False


class Expire(msgspec.Struct, frozen=True, kw_only=True):
    """Carry out what the retention policy in force asks now (`retention_due`): an
    archive, or an erasure's record (the adapter then destroys the text). `store`
    is the store's policy, for a conversation without one of its own."""

    store: RetentionPolicy | None = None


class NoteCapReached(msgspec.Struct, frozen=True, kw_only=True):
    """Record the first refusal of a turn at a retention cap (RetentionCapReached)."""

    limit: Literal["messages", "bytes"]
    cap: int
    size: int
    source: Source

    @classmethod
    def of(cls, refused: CapReached) -> NoteCapReached:
        return cls(limit=refused.limit, cap=refused.cap, size=refused.size,
                   source=refused.source)


class Forget(msgspec.Struct, frozen=True, kw_only=True):
    """Mark the conversation of `user` forgotten (the adapter destroys the key)."""

    user: str
    requested_by: str | None = None


__getattr__ = renamed(__name__, {"StartSession": "StartConversation"}, globals())
if TYPE_CHECKING:
    StartSession = StartConversation  # deprecated: a conversation starts, not a session

Command = (
    StartConversation | AppendMessages | BindNativeSession | Archive | Reactivate | Clear
    | RecordFact | RequireUser | InjectMemory | Forget | Retract | SetMemoryPolicy
    | SetRetentionPolicy | Expire | NoteCapReached | Compact | Rewind | Fork
)


# --------------------------------------------------------------------- decisions


def decide(state: Conversation, command: Command, now: datetime) -> list[Event]:
    """The events that `command` causes in `state`; [] when it changes nothing.

    Recording a message or a native session into a conversation that was never
    started starts it (hosts that skip the start must not lose data); archiving,
    reactivating or clearing an unknown conversation is an error, and so is a resume
    fact (attempt, outcome, injection) for an unknown or archived one
    (`check_resumable`).
    """
    if not isinstance(command, AppendMessages):  # messages check themselves when built
        check_unicode(command, "")
    events: list[Event] = []
    if isinstance(command, RequireUser):
        if not state.started or state.user != command.user:
            raise UnknownConversation(state.key)
        return []
    if isinstance(command, Fork):
        if state.started:
            raise InvalidInput(f"a conversation already exists under {state.key!r}: a "
                               "fork needs a new key", field="key")
        return [msgspec.structs.replace(command.event, key=state.key, at=now)]
    if isinstance(command, StartConversation):
        if state.started and command.user is not None and command.user != state.user:
            # Dropping it would misfile the user's text: it would be sealed under another
            # key, and `forget --user` would miss it. A conversation's user is fixed by
            # its first event (one begun without a user stays user-less).
            owner = f"as user {state.user!r}" if state.user else "without a user"
            raise InvalidInput(f"the conversation was started {owner}; it cannot start "
                               f"again as {command.user!r} (use another key)", field="user")
        return [] if state.started else [_start(state.key, command, now)]
    if isinstance(command, SetMemoryPolicy):
        wanted = (command.max_injected_blocks_in_history, command.context_window_depth)
        if not state.started or state.forgotten or (
                state.memory_pinned and not command.pinned) or (
                wanted == state.policy() and state.memory_pinned == command.pinned):
            return []
        return [MemoryPolicySet(at=now, max_injected_blocks_in_history=wanted[0],
                                context_window_depth=wanted[1], pinned=command.pinned)]
    if isinstance(command, SetRetentionPolicy | Expire | NoteCapReached):
        return _retention(state, command, now)
    if isinstance(command, Forget):
        if not state.started or state.user != command.user:
            raise UnknownConversation(state.key)
        return [] if state.forgotten else [
            UserForgotten(at=now, user=command.user, requested_by=command.requested_by)]
    if state.forgotten:
        raise ConversationForgotten(state.key, state.user or "")
    if isinstance(command, RecordFact) and isinstance(command.event, RESUME_FACTS):
        check_resumable(state)
    if not state.started:
        if isinstance(command, Archive | Reactivate | Clear | Retract | Compact | Rewind):
            raise UnknownConversation(state.key)
        events.append(_start(state.key, StartConversation(), now))
    if isinstance(command, AppendMessages):
        messages = _new_messages(command)
        if not messages:
            return []
        if state.retention is not None or command.store_retention is not None:
            _check_caps(state, command.store_retention, messages)
        if state.status == "archived":
            events.append(ConversationReactivated(at=now))
        events.extend(_appended(m, now) for m in messages)
    elif isinstance(command, BindNativeSession):
        _require_text(command.native_session_id, "native_session_id")
        if command.native_session_id != state.native_session_id:
            events.append(NativeSessionBound(
                at=now, native_session_id=command.native_session_id, agent=command.agent))
    elif isinstance(command, Archive):
        if state.status != "archived":
            events.append(ConversationArchived(at=now, reason=command.reason))
    elif isinstance(command, Reactivate):
        if state.status == "archived":
            events.append(ConversationReactivated(at=now))
    elif isinstance(command, Clear):
        events.append(ConversationCleared(at=now, reason=command.reason))
    elif isinstance(command, Retract):
        _require_text(command.message_id, "message_id")
        events.append(MessageRetracted(at=now, message_id=command.message_id,
                                       reason=command.reason))
    elif isinstance(command, Compact):
        events.append(decide_compaction(state, command, now))
    elif isinstance(command, Rewind):
        events.extend(decide_rewind(state, command, now))
    elif isinstance(command, RecordFact):
        events.append(_checked_fact(msgspec.structs.replace(command.event, at=now), state))
    elif isinstance(command, InjectMemory):
        depth = state.cooldown_depth(command.cooldown_turns)
        if depth != command.cooldown_turns:  # pinned: the conversation's, not the writer's
            command = msgspec.structs.replace(command, cooldown_turns=depth)
        events.append(decide_memory(command, turns=state.turns, recent=state.recent_memories,
                                    bound_session=state.native_session_id, now=now))
    return events


def decide_compaction(state: Conversation, c: Compact, now: datetime) -> HistoryCompacted:
    """The compaction `c` as an event, if it still fits the state: its range starts in
    the current epoch, ends after the compaction it folds in and within the log, and
    that compaction is still the latest (else CompactedMeanwhile: choose again)."""
    if c.after != state.compacted_version:
        raise CompactedMeanwhile(state.key)
    _require_text(c.through_message_id, "through_message_id")
    _require_text(c.text, "text")
    low = state.epoch_start_version
    if not low < c.from_version <= c.to_version <= state.version \
            or c.to_version <= state.compacted_to:
        raise InvalidInput(
            f"range {c.from_version}..{c.to_version} is not in the uncompacted part of "
            f"the epoch ({max(low, state.compacted_to) + 1}..{state.version})",
            field="to_version")
    for name in ("message_count", "tokens_before", "tokens_after", "kept"):
        check_token_count(getattr(c, name), name)
    return HistoryCompacted(
        at=now, from_version=c.from_version, to_version=c.to_version,
        through_message_id=c.through_message_id, message_count=c.message_count,
        text=c.text, tokens_before=c.tokens_before, tokens_after=c.tokens_after,
        kept=c.kept, summarizer=c.summarizer, reason=c.reason)


def decide_rewind(state: Conversation, c: Rewind, now: datetime) -> list[HistoryRewound]:
    """The rewind `c` as an event: [] when nothing comes after the message (already
    there). Its message must lie in the current epoch and after the latest compaction
    (a rewind never undoes a clear or a compaction: InvalidInput naming `to`)."""
    _require_text(c.to_message_id, "to")
    floor = max(state.epoch_start_version, state.compacted_version)
    if not floor < c.to_version <= state.version:
        raise InvalidInput(f"message {c.to_message_id!r} is not after the latest clear or "
                           f"compaction (#{floor}): a rewind cannot go back past them",
                           field="to")
    check_token_count(c.abandoned, "abandoned")
    if c.abandoned == 0:
        return []
    return [HistoryRewound(at=now, to_message_id=c.to_message_id, to_version=c.to_version,
                           abandoned=c.abandoned, reason=c.reason)]


def retention_due(state: Conversation, store: RetentionPolicy | None, now: datetime
                  ) -> tuple[Literal["archive", "erase"], RetentionCause] | None:
    """What the retention policy in force asks of `state` at `now` (an archive or an
    erasure, with its cause), or None. The dry run lists exactly this, and `Expire`
    records exactly this, decided again inside the write."""
    if not state.started or state.forgotten:
        return None
    policy, source = state.retention_in_force(store)
    idle = idle_days(state.activity_at or state.last_active_at, now)
    erased = state.erased_version > 0 and state.erased_version > state.activity_version
    action = due(policy, idle=idle, active=state.status == "active" and not state.deleted,
                 erased_since_activity=erased)
    if action is None or policy is None:
        return None
    return action, RetentionCause(source=source, policy=policy,
                                  idle_days=None if idle is None else round(idle, 6))


def _retention(state: Conversation, command: SetRetentionPolicy | Expire | NoteCapReached,
               now: datetime) -> list[Event]:
    if not state.started or state.forgotten:
        return []
    if isinstance(command, SetRetentionPolicy):
        if (state.retention_pinned and not command.pinned) or (
                command.policy == state.retention and command.pinned == state.retention_pinned):
            return []
        p = command.policy
        return [RetentionPolicySet(
            at=now, archive_after_days=p.archive_after_days, erase_after_days=p.erase_after_days,
            max_messages=p.max_messages, max_bytes=p.max_bytes, over_cap=p.over_cap,
            pinned=command.pinned)]
    if isinstance(command, NoteCapReached):
        if state.cap_noted == f"{command.limit}:{command.cap}":
            return []
        return [RetentionCapReached(at=now, limit=command.limit, cap=command.cap,
                                    size=command.size, source=command.source)]
    found = retention_due(state, command.store, now)
    if found is None:
        return []
    action, cause = found
    if action == "erase":
        return [ConversationErased(at=now, retention=cause)]
    return [ConversationArchived(
        at=now, reason=f"idle for {cause.idle_days:g} days (retention)", retention=cause)]


def _check_caps(state: Conversation, store: RetentionPolicy | None,
                messages: list[Message]) -> None:
    """CapReached when `messages` would take the conversation past a cap of the
    retention policy in force (records are neither messages nor bytes)."""
    policy, source = state.retention_in_force(store)
    if policy is None or (policy.max_messages is None and policy.max_bytes is None):
        return
    said = [m for m in messages if not is_record(m)]
    size = state.content_bytes + sum(message_bytes(m.content, m.tool_calls) for m in said) \
        if policy.max_bytes is not None else 0
    found = over_cap(policy, messages=state.live_message_count + len(said), size=size)
    if found is not None:
        raise CapReached(state.key, found[0], found[1], found[2], source)


def decide_and_evolve(
    state: Conversation,
    commands: Sequence[Command],
    now: datetime,
    origins: Sequence[str] | None = None,
) -> tuple[list[Event], Conversation]:
    """Decide a batch of commands against a scratch copy of the state, so each command
    sees the effect of the ones before it: the events, and the state after them (a new
    object; `state` is not changed), so a writer need not fold the events again.
    The first invalid command raises, located at its origin (``stdin:3``) when
    `origins` says where each command came from, else at its index; nothing of the
    batch is then recorded."""
    scratch = msgspec.structs.replace(state)
    out: list[Event] = []
    batch_ids: set[str] = set()
    for i, command in enumerate(commands):
        try:
            if isinstance(command, AppendMessages):
                _check_unique_in_batch(command, batch_ids)
            events = decide(scratch, command, now)
        except InvalidInput as exc:
            if isinstance(command, StartConversation) and scratch.started \
                    and any(isinstance(c, RequireUser) for c in commands[i + 1:]):
                # a guarded batch (HTTP) answers as if the key did not exist: an error
                # naming its owner would let a caller probe other users' keys
                raise UnknownConversation(state.key) from None
            if origins:
                raise exc.located(origins[i]) from None
            raise exc.located(f"command {i + 1}") if len(commands) > 1 else exc from None
        for event in events:
            evolve(scratch, event)
        out.extend(events)
    return out, scratch


def _check_unique_in_batch(command: AppendMessages, seen: set[str]) -> None:
    """A message id may appear once per batch (a retry is a new batch)."""
    if not seen:  # the usual batch (one append): one set, the loop only to say where
        ids = [m.id for m in command.messages if isinstance(m, Message)]
        seen.update(ids)
        if len(seen) == len(ids):
            return
        seen.clear()
    for j, message in enumerate(command.messages):
        if isinstance(message, Message) and message.id in seen:
            raise InvalidInput(f"message id {message.id!r} appears earlier in this batch",
                               field="id" if len(command.messages) == 1 else
                               f"messages[{j}].id")
    seen.update(m.id for m in command.messages if isinstance(m, Message))


def _start(key: str, c: StartConversation, now: datetime) -> ConversationStarted:
    return ConversationStarted(
        at=now, key=check_key(key), channel=c.channel, user=c.user, agent=c.agent,
        title=c.title, workspace=c.workspace, metadata=dict(c.metadata),
    )


def _new_messages(command: AppendMessages) -> list[Message]:
    messages, known = command.messages, command.known_ids
    ids = {m.id for m in messages if isinstance(m, Message)}
    if len(ids) == len(messages):  # all messages, all ids distinct: no error to locate
        return [m for m in messages if m.id not in known] if known else list(messages)
    seen: set[str] = set()
    fresh = []
    for i, message in enumerate(command.messages):
        if not isinstance(message, Message):
            raise InvalidInput(
                f"expected a Message, got {type(message).__name__}", field=f"messages[{i}]")
        if message.id in seen:
            raise InvalidInput(
                f"message id {message.id!r} appears twice in one turn", field=f"messages[{i}].id")
        seen.add(message.id)
        if message.id not in command.known_ids:
            fresh.append(message)
    return fresh


def _appended(m: Message, now: datetime) -> MessageAppended:
    # No count is made here (issue 45: a count is derived data, made when first needed);
    # a count the host gave is recorded as given, labelled "host" unless it said whose.
    tokens = m.tokens
    return MessageAppended(
        at=now, message_id=m.id, role=m.role,  # type: ignore[arg-type]  # checked by Message
        content=m.content, tool_calls=list(m.tool_calls), tool_call_id=m.tool_call_id,
        model=m.model, agent=m.agent, usage=m.usage, cost_usd=m.cost_usd, tokens=tokens,
        token_counter=m.token_counter or ("host" if tokens is not None else None),
        created_at=m.created_at, response_id=m.response_id, raw=m.raw, record=m.record,
    )


def _require_text(value: object, field: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput("must be a non-empty string", field=field)


def _checked_fact(event: Event, state: Conversation) -> Event:
    if isinstance(event, ResumeAttempted | ResumeSucceeded | ResumeFailed):
        _require_text(event.strategy, "strategy")
    if isinstance(event, HistoryInjected | SummaryRecorded):
        if not 0 <= event.from_version <= event.to_version <= state.version:
            raise InvalidInput(
                f"range {event.from_version}..{event.to_version} is outside the log "
                f"(0..{state.version})", field="from_version")
        for name in ("message_count", "tokens"):
            check_token_count(getattr(event, name), name)
    if isinstance(event, TitleChanged):
        _require_text(event.title, "title")
    if isinstance(event, ContextWindowReported):
        for name in ("used", "size"):
            check_token_count(getattr(event, name), name)
    return event
