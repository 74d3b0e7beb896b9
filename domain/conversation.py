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
    ConversationReactivated,
    ConversationStarted,
    Event,
    HistoryInjected,
    MemoryInjected,
    MemoryPolicySet,
    MessageAppended,
    MessageRetracted,
    NativeSessionBound,
    PreambleSent,
    ResumeAttempted,
    ResumeFailed,
    ResumeSucceeded,
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


def evolve(state: Conversation, event: Event) -> None:
    """Apply one recorded event to the state, in place. Total: unknown events only
    advance the version, so a newer writer's event types never break an older reader."""
    state.version += 1
    state.last_active_at = event.at
    if isinstance(event, ConversationStarted):
        state.started = True
        state.created_at = event.at
        state.user, state.agent, state.channel = event.user, event.agent, event.channel
        state.title, state.workspace = event.title, event.workspace
    elif isinstance(event, MessageAppended):
        state.message_count += 1
        if event.role == "user":
            state.turns += 1
        elif is_record(event):
            state.records += 1
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
        state.summary_version = 0
        state.recent_memories = {}
    elif isinstance(event, SummaryRecorded):
        state.summary_version = state.version
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
        if isinstance(command, Archive | Reactivate | Clear | Retract):
            raise UnknownConversation(state.key)
        events.append(_start(state.key, StartConversation(), now))
    if isinstance(command, AppendMessages):
        messages = _new_messages(command)
        if not messages:
            return []
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
    elif isinstance(command, RecordFact):
        events.append(_checked_fact(msgspec.structs.replace(command.event, at=now), state))
    elif isinstance(command, InjectMemory):
        depth = state.cooldown_depth(command.cooldown_turns)
        if depth != command.cooldown_turns:  # pinned: the conversation's, not the writer's
            command = msgspec.structs.replace(command, cooldown_turns=depth)
        events.append(decide_memory(command, turns=state.turns, recent=state.recent_memories,
                                    bound_session=state.native_session_id, now=now))
    return events


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
