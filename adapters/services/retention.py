"""Retention as application operations: the policy set and read, and carried out.

The rule itself is the domain's (convlog.domain.retention, `retention_due`): this
module finds the conversations, asks the rule, and writes what it says through the
log's `Writer`, like every other write.

* The store's policy lives in the store's settings stream (`STORE_STREAM`, key
  `STORE_KEY`, channel `STORE_CHANNEL`, left out of every list of conversations);
  a conversation's own policy is a `retention_policy_set` in its stream, and wins.
* `run(dry_run=True)` lists exactly what `run()` would do at the same moment: both
  ask `retention_due` of every conversation's state; the write decides again
  (`Expire`), so nothing is archived or erased that the policy in force at the
  moment of the write did not ask for.
* An erasure is recorded first (`conversation_erased`), then carried out: the token
  counts of its messages are kept (they survive it), its earlier events lose their
  text (convlog.storage.erasure), the HTTP answers kept for retries are dropped
  (they may hold text), and the database's copies of the old bytes are erased. A
  run cut short between the record and the rewrite is finished by the next run
  (`pending_erasures`), before anything else.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Literal
from uuid import UUID

import msgspec

from convlog.domain.clock import Clock
from convlog.domain.conversation import (
    Conversation,
    Expire,
    SetRetentionPolicy,
    StartConversation,
    check_key,
    conversation_id,
    retention_due,
)
from convlog.domain.errors import UnknownConversation
from convlog.domain.events import ConversationErased, RetentionPolicySet
from convlog.domain.retention import (
    STORE_CHANNEL,
    STORE_KEY,
    STORE_STREAM,
    RetentionCause,
    RetentionPolicy,
    Source,
    check_policy,
)
from convlog.services.writer import Writer
from convlog.storage.erasure import erase_stream, erased_state
from convlog.storage.sealed import SEALED_FIELDS
from convlog.views.token_counts import keep_stream_counts

__all__ = ["RetentionAction", "RetentionInForce", "RetentionRun", "in_force", "run",
           "set_policy", "store_policy"]


class RetentionInForce(msgspec.Struct, frozen=True, kw_only=True):
    """The retention policy in force for a conversation (or the store): whose it is
    (``conversation``, ``store``, or ``none``: keep everything)."""

    policy: RetentionPolicy | None
    source: Literal["conversation", "store", "none"]


class RetentionAction(msgspec.Struct, frozen=True, kw_only=True):
    """One thing retention did (or, in a dry run, would do) to one conversation."""

    key: str
    action: Literal["archive", "erase"]
    source: Source
    """Whose policy asked for it."""
    policy: RetentionPolicy
    idle_days: float | None


class RetentionRun(msgspec.Struct, frozen=True, kw_only=True):
    """What one run of the policy did: at which moment, under which store policy."""

    at: datetime
    dry_run: bool
    store_policy: RetentionPolicy | None
    actions: list[RetentionAction]
    conversations: int
    """How many conversations were looked at."""
    rows_erased: int = 0
    """Stored events whose text this run removed (0 in a dry run)."""

    @property
    def archived(self) -> int:
        return sum(a.action == "archive" for a in self.actions)

    @property
    def erased(self) -> int:
        return sum(a.action == "erase" for a in self.actions)


# --------------------------------------------------------------------- policies


def _store_state(writer: Writer) -> Conversation:
    return writer.store.load(STORE_STREAM, STORE_KEY, fresh=True)


def store_policy(writer: Writer) -> RetentionPolicy | None:
    """The store's policy (None: none was ever set, keep everything)."""
    return _store_state(writer).retention


def set_policy(writer: Writer, policy: RetentionPolicy, key: str | None = None, *,
               pinned: bool = True) -> bool:
    """Record `policy` for the conversation `key` (which must exist), or for the
    store when `key` is None. `pinned=False` is a process's options (flags,
    environment): it leaves a policy set on purpose alone. Returns whether anything
    was recorded (nothing when the same policy is in force)."""
    policy = check_policy(policy)
    if key is None:
        state, saved = writer.execute_settings(
            lambda state, _fresh: [*([] if state.started else
                                     [StartConversation(channel=STORE_CHANNEL)]),
                                   SetRetentionPolicy(policy=policy, pinned=pinned)])
        writer.retention_changed(state.retention)
        return any(isinstance(r.event, RetentionPolicySet) for r in saved)
    key = check_key(key)
    if not writer.store.load(conversation_id(key), key).started:
        raise UnknownConversation(key)
    _, saved = writer.decide(key, lambda _s, _f: [SetRetentionPolicy(policy=policy,
                                                                     pinned=pinned)])
    return bool(saved)


def in_force(writer: Writer, key: str | None = None) -> RetentionInForce:
    """The policy in force for conversation `key`, or the store's (`key` None)."""
    store = store_policy(writer)
    if key is not None:
        key = check_key(key)
        state = writer.store.load(conversation_id(key), key)
        if not state.started:
            raise UnknownConversation(key)
        if state.retention is not None:
            return RetentionInForce(policy=state.retention, source="conversation")
    if store is None:
        return RetentionInForce(policy=None, source="none")
    return RetentionInForce(policy=store, source="store")


# -------------------------------------------------------------------------- run


def _conversations(writer: Writer) -> list[tuple[UUID, Conversation]]:
    out = []
    for stream in writer.store.keys.all_streams():
        if stream == STORE_STREAM:
            continue
        state = writer.store.load(stream, "", fresh=True)
        if state.started:
            out.append((stream, state))
    return out


def run(writer: Writer, *, dry_run: bool = False) -> RetentionRun:
    """Carry out what the retention policy in force asks of every conversation now
    (see the module); `dry_run` lists it and writes nothing."""
    store = writer.store
    now = store.clock.now()
    policy = store_policy(writer)
    rows = 0 if dry_run else finish_erasures(writer)
    found = _conversations(writer)
    actions: list[RetentionAction] = []
    for stream, state in found:
        due = retention_due(state, policy, now)
        if due is None:
            continue
        if dry_run:
            actions.append(_action(state.key, due[0], due[1]))
            continue
        _, saved = writer.decide(state.key, lambda _s, _f: [Expire(store=policy)])
        for recorded in saved:
            event = recorded.event
            cause = getattr(event, "retention", None)
            if cause is None:
                continue
            if isinstance(event, ConversationErased):
                actions.append(_action(state.key, "erase", cause))
                rows += _erase(writer, stream, recorded.version)
            else:
                actions.append(_action(state.key, "archive", cause))
    if rows:
        _erase_copies(writer)
    return RetentionRun(at=now, dry_run=dry_run, store_policy=policy, actions=actions,
                        conversations=len(found), rows_erased=rows)


def _action(key: str, action: Literal["archive", "erase"], cause: object) -> RetentionAction:
    assert isinstance(cause, RetentionCause)
    return RetentionAction(key=key, action=action, source=cause.source, policy=cause.policy,
                           idle_days=cause.idle_days)


def _erase(writer: Writer, stream: UUID, erased_at: int) -> int:
    """Remove the text of every event of `stream` before its erasure at `erased_at`
    (the counts of its messages kept first, while their text is readable)."""
    store = writer.store
    with writer.lock:
        keep_stream_counts(store, stream)
        return erase_stream(store.keys, stream, erased_at, store.snapshot_table)


def _erase_copies(writer: Writer) -> None:
    """The old bytes' copies: kept HTTP answers (which may hold text), free pages,
    the write-ahead log (convlog.storage.erasure)."""
    store = writer.store
    with writer.lock:
        store.drop_answers()
        store.keys.erase(vacuum=True)


def finish_erasures(writer: Writer) -> int:
    """Finish erasures a crash cut short (recorded, text not yet removed); returns
    how many rows it erased. A stream's rewrite is one transaction, so the newest
    event with private fields before its latest erasure tells: still readable, or
    erased."""
    store = writer.store
    rows = 0
    for stream in store.keys.all_streams():
        if stream == STORE_STREAM:
            continue
        state = store.load(stream, "", fresh=False)
        if state.erased_version and _pending(writer, stream, state.erased_version):
            rows += _erase(writer, stream, state.erased_version)
    if rows:
        _erase_copies(writer)
    return rows


def _pending(writer: Writer, stream: UUID, erased_at: int) -> bool:
    for _version, topic, state in writer.store.keys.select_rows(
            stream, lte=erased_at - 1, desc=True):
        if SEALED_FIELDS.get(topic.partition("@")[0]):
            new = erased_state(topic, state)
            return new is not None and new != state
    return False


# --------------------------------------------------------------------- schedule

DEFAULT_INTERVAL = 3600.0
"""Seconds between two runs of `convlog serve`'s schedule (`--retention-interval`)."""


class Schedule:
    """When a long-running process (`convlog serve`) runs the policy: at start, then
    every `interval` seconds of the log's clock (`Clock.elapsed`, which a test
    moves), so a test never sleeps. `due` and `tick` are the whole contract; the
    server only calls them. `carry_out` is the log's `enforce_retention`."""

    def __init__(self, carry_out: Callable[[], RetentionRun], clock: Clock,
                 interval: float = DEFAULT_INTERVAL) -> None:
        self.carry_out = carry_out
        self.clock = clock
        self.interval = interval
        self.next_at = clock.elapsed()
        self.runs = 0
        self.last: RetentionRun | None = None

    def due(self) -> bool:
        return self.clock.elapsed() >= self.next_at

    def tick(self) -> RetentionRun | None:
        """Run the policy if it is due; the run, or None when it was not due."""
        if not self.due():
            return None
        self.next_at = self.clock.elapsed() + self.interval
        self.last = self.carry_out()
        self.runs += 1
        return self.last
