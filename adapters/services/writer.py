"""The unit of work: every write of a process goes through one `Writer`, and only it.

A write takes the same steps whichever use case makes it (a turn, a `record` batch,
a resume attempt, a summary, a memory block, a retraction, an injection, an import,
an erasure): the host's redaction of every text it will store, the log's memory
cooldown, then the decision under the process's write lock (SQLite
has one writer anyway; other processes are ordered by the store's optimistic
concurrency) and, on a retry after a conflict, the message ids already recorded.

The services that write (resume, context summaries, memory, live items, privacy,
the import driver) are handed this object, never the whole `ConversationLog`: a new
write path cannot skip a step, because there is no other way to the store's write.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import msgspec

from convlog.domain.conversation import (
    AppendMessages,
    Command,
    Conversation,
    NoteCapReached,
    RecordFact,
    SetMemoryPolicy,
    StartConversation,
    conversation_id,
)
from convlog.domain.events import HistoryInjected, MessageAppended, Recorded, SummaryRecorded
from convlog.domain.memory import InjectMemory
from convlog.domain.messages import Message
from convlog.domain.retention import STORE_KEY, STORE_STREAM, CapReached, RetentionPolicy
from convlog.projections.memory import DEFAULT_DEPTH
from convlog.services import requests
from convlog.services.redacting import Redactor, redact_command
from convlog.services.results import AppendResult
from convlog.storage.application import ConversationStore
from convlog.storage.errors import WriteLockBusy

__all__ = ["Decide", "Writer"]

_HOST_OWN = (AppendMessages, InjectMemory)
"""Commands of the host's own batches (see `Writer._with_policy`)."""

RETENTION_REFRESH = 5.0
"""Seconds (of the log's clock) a writer keeps the store's retention policy before
reading it again: another process's new policy caps this one's turns from then on."""

Decide = Callable[[Conversation, bool], Sequence[Command]]
"""Commands chosen inside the write: (the state written to, whether it was just read
fresh after a conflict) -> commands. Called again on every retry."""


class Writer:
    """The write side of one open log: the lock and the steps of every write."""

    def __init__(self, store: ConversationStore, *, redact: Redactor | None = None,
                 context_window_depth: int = DEFAULT_DEPTH,
                 max_injected_blocks_in_history: int | None = None):
        self.store = store
        """The store, for reads (writes go through `execute` and `decide`)."""
        self.redact = redact
        self.context_window_depth = context_window_depth
        self.policy = None if max_injected_blocks_in_history is None else SetMemoryPolicy(
            max_injected_blocks_in_history=max_injected_blocks_in_history,
            context_window_depth=context_window_depth)
        """The host's memory policy, recorded with its writes (None: this writer
        records none, e.g. a maintenance open)."""
        self.lock = threading.RLock()
        """Held by every write of this process (maintenance takes it too)."""
        self._retention: RetentionPolicy | None = None
        self._retention_until: float | None = None

    def prepare(self, commands: Sequence[Command]) -> list[Command]:
        """The steps before a decision: redaction first (before anything else sees the
        text), then the memory cooldown. No token count: a count is derived data, made
        when first needed (issue 45; convlog.accounting.counted)."""
        out: list[Command] = []
        for command in commands:
            if self.redact is not None:
                redacted = redact_command(self.redact, command)
                if redacted is not command and isinstance(redacted, RecordFact):
                    redacted = _recounted(redacted)
                command = redacted
            if isinstance(command, InjectMemory):
                command = msgspec.structs.replace(
                    command, cooldown_turns=self.context_window_depth)
            out.append(command)
        return out

    def execute(self, key: str, commands: Sequence[Command],
                origins: Sequence[str] | None = None) -> AppendResult:
        """Decide and record a batch of commands atomically (all or nothing)."""
        prepared = self.prepare(commands)
        ids = [m.id for c in prepared if isinstance(c, AppendMessages) for m in c.messages
               if isinstance(m, Message)]
        state, saved = self._write(key, lambda _state, _fresh: prepared, origins)
        appended = [r.event.message_id for r in saved if isinstance(r.event, MessageAppended)]
        if len(appended) == len(ids):  # ids are unique in a batch: none was skipped
            return AppendResult(version=state.version, appended=appended, events=len(saved))
        new = set(appended)
        return AppendResult(version=state.version, appended=appended,
                            skipped=[i for i in ids if i not in new], events=len(saved))

    def execute_at_once(self, key: str, commands: Sequence[Command],
                        origins: Sequence[str] | None = None) -> AppendResult | None:
        """`execute`, if it needs no waiting: not for this process's other writes (the
        lock is free), nor for another process's write lock, nor to back off from a
        race on the conversation. None when it would have waited: nothing was
        written, and `execute` (from a thread that may wait) does it. `convlog serve`
        writes small batches this way on its event loop."""
        if not self.lock.acquire(blocking=False):
            return None
        try:
            with self.store.not_waiting():
                return self.execute(key, commands, origins)
        except WriteLockBusy:
            return None
        finally:
            self.lock.release()

    def decide(self, key: str, decide: Decide, origins: Sequence[str] | None = None
               ) -> tuple[Conversation, list[Recorded]]:
        """Record what `decide` chooses against the state being written to (a
        retraction picks its message, an injection checks its native session): each
        attempt's commands take the same steps. Returns the new state and what was
        saved ([] when `decide` chose nothing)."""
        return self._write(key, lambda state, fresh: self.prepare(decide(state, fresh)),
                           origins)

    def execute_settings(self, commands: Decide) -> tuple[Conversation, list[Recorded]]:
        """Record `commands(state, fresh)` in the store's settings stream
        (`STORE_STREAM`: the store's retention policy), under the write lock."""
        return self.store.execute(STORE_STREAM, STORE_KEY, commands, slot=self.lock)

    def store_retention(self) -> RetentionPolicy | None:
        """The store's retention policy (convlog.services.retention), read again
        every `RETENTION_REFRESH` seconds: its caps hold for every conversation
        without a policy of its own."""
        until = self._retention_until
        if until is None or self.store.clock.elapsed() >= until:
            state = self.store.load(STORE_STREAM, STORE_KEY, fresh=True)
            self.retention_changed(state.retention)
        return self._retention

    def retention_changed(self, policy: RetentionPolicy | None) -> None:
        """The store's policy as this process just recorded (or read) it."""
        self._retention = policy
        self._retention_until = self.store.clock.elapsed() + RETENTION_REFRESH

    def known_message_ids(self, key: str, ids: Sequence[str]) -> set[str]:
        """Which of `ids` the conversation already holds (indexed queries; an unknown
        conversation holds none)."""
        with self.lock:
            return self.store.index.known_message_ids(conversation_id(key), list(ids))

    def _write(self, key: str, choose: Decide, origins: Sequence[str] | None
               ) -> tuple[Conversation, list[Recorded]]:
        cid = conversation_id(key)
        claim = requests.current()  # a keyed HTTP request: its mark goes with the events

        def with_known_ids(state: Conversation, fresh: bool) -> Sequence[Command]:
            # Optimistic: the first attempt skips the lookup; a known id makes the
            # insert conflict on the index, and the retry (fresh) looks ids up.
            if claim is not None and fresh and state.started and \
                    self.store.index.known_message_ids(cid, [claim.entry]):
                raise requests.RequestRecorded(key)  # recorded under this key before
            commands = self._with_policy(state, choose(state, fresh))
            if not fresh or not state.started:
                return commands
            ids = [m.id for c in commands if isinstance(c, AppendMessages)
                   for m in c.messages if isinstance(m, Message)]
            if not ids:
                return commands
            known = frozenset(self.store.index.known_message_ids(cid, ids))
            return [msgspec.structs.replace(c, known_ids=known)
                    if isinstance(c, AppendMessages) else c for c in commands]

        # The write slot is held by each attempt, not across a conflict's reload and
        # back-off (ConversationStore.execute): a race on one conversation never
        # stalls this process's other writes.
        try:
            state, saved = self.store.execute(
                cid, key, with_known_ids, origins, slot=self.lock,
                mark=claim.entry if claim is not None else None)
        except CapReached as refused:  # nothing was written; the refusal is, once
            note: list[Command] = [NoteCapReached.of(refused)]
            self.store.execute(cid, key, lambda _s, _f: note, slot=self.lock)
            raise
        if claim is not None and saved:
            claim.used = True
        return state, saved

    def _with_policy(self, state: Conversation, commands: Sequence[Command]
                     ) -> Sequence[Command]:
        """The batch, with the host's memory policy where it takes effect: before the
        batch's commands (after the one that starts the conversation), when the batch
        is the host's own (a new conversation, a turn, a memory block): opening an
        existing conversation or a maintenance write
        (archive, a resume fact) never changes the policy in force. A turn also
        carries the store's retention policy, whose caps it must respect."""
        commands = self._with_retention(commands)
        policy = self.policy
        if policy is None or state.memory_pinned:
            return commands
        for c in commands:  # a loop, not any(<generator>): this runs on every append
            if isinstance(c, _HOST_OWN) or (isinstance(c, StartConversation)
                                            and not state.started):
                break
        else:
            return commands
        if (policy.max_injected_blocks_in_history, policy.context_window_depth
                ) == state.policy():
            return commands
        at = 0 if state.started else 1
        return [*commands[:at], policy, *commands[at:]]


    def _with_retention(self, commands: Sequence[Command]) -> Sequence[Command]:
        retention = self.store_retention()
        if retention is None or (retention.max_messages is None
                                 and retention.max_bytes is None):
            return commands
        return [msgspec.structs.replace(c, store_retention=retention)
                if isinstance(c, AppendMessages) else c for c in commands]


def _recounted(command: RecordFact) -> RecordFact:
    """A summary or an injection whose text the redaction changed: its token count
    is the new text's (counted here: the process that records one built a context,
    so it counts anyway)."""
    event = command.event
    if isinstance(event, SummaryRecorded | HistoryInjected):
        from convlog.accounting.tokens import count_tokens

        return RecordFact(event=msgspec.structs.replace(
            event, tokens=count_tokens(event.text)[0]))
    return command
