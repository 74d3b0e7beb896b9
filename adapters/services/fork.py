"""Fork, the use case: a new conversation whose history is a parent's up to a message.

By reference, never by copy: the fork's first event (`conversation_forked`) names the
parent and the position of the message, and its own events start right after it, so
every read by position assembles the parent's prefix and then the fork's own
(convlog.storage.lineage). The parent is not written to: it is unaffected.

The parent's message is found walking its log backwards from its newest event, so
what the parent did after the message is seen on the way: a retraction recorded
later of a message before the fork point is recorded again in the fork (a withdrawn
message stays withdrawn, whatever branch reads it); a later rewind, compaction or
clear is not (they lie after the fork point: the fork starts from the message as it
was). The fork's counters come from the parent's state at that position.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from convlog.domain.conversation import (
    Command,
    Conversation,
    Fork,
    Retract,
    check_key,
    conversation_id,
)
from convlog.domain.errors import ConversationForgotten, InvalidInput, UnknownConversation
from convlog.domain.events import ConversationForked, MessageAppended, MessageRetracted
from convlog.domain.records import is_record
from convlog.services.writer import Writer
from convlog.storage.application import project

__all__ = ["Forked", "fork"]

PAGE = 256


class Forked(msgspec.Struct, frozen=True, kw_only=True):
    """A fork recorded: `key` continues `parent`'s history after `fork_at` (the
    parent's message at log position `fork_version`)."""

    key: str
    parent: str
    fork_at: str
    fork_version: int
    version: int
    user: str | None = None


def fork(writer: Writer, parent: str, at: str, key: str, *, user: str | None = None,
         agent: str | None = None, channel: str | None = None, title: str | None = None,
         metadata: dict[str, Any] | None = None, owner_given: bool = False) -> Forked:
    """Fork `parent` at its message `at` into the new conversation `key`. The fork
    belongs to the parent's user unless `owner_given` (then to `user`)."""
    parent, key = check_key(parent), check_key(key)
    if not isinstance(at, str) or not at.strip():
        raise InvalidInput("must be a message id", field="at")
    if key == parent:
        raise InvalidInput("a fork needs a new key, not its parent's", field="key")
    store = writer.store
    pid = conversation_id(parent)
    state = store.load(pid, parent)
    if not state.started:
        raise UnknownConversation(parent)
    if state.forgotten:
        raise ConversationForgotten(parent, state.user or "")
    if state.status == "archived":
        raise InvalidInput(f"conversation {parent!r} is archived: reactivate it before "
                           "forking it", field="key")
    version, retracted = _find(store, pid, state, at)
    base = _state_at(store, state, version)
    event = ConversationForked(
        at=store.clock.now(),  # stamped again when decided
        key=key, user=user if owner_given else state.user,
        agent=agent if agent is not None else state.agent,
        channel=channel if channel is not None else state.channel,
        title=title if title is not None else state.title, workspace=state.workspace,
        metadata=dict(metadata or {}), parent_key=parent, at_message_id=at,
        at_version=version, base_message_count=base.message_count, base_records=base.records,
        base_turns=base.turns, base_epoch=base.epoch,
        base_epoch_start_version=base.epoch_start_version,
        base_epoch_start_message_count=base.epoch_start_message_count,
        base_summary_version=base.summary_version,
        base_compacted_version=base.compacted_version, base_compacted_to=base.compacted_to,
        base_compactions=base.compactions, base_rewinds=base.rewinds)
    commands: list[Command] = [Fork(event=event)]
    commands += [Retract(message_id=r.message_id, reason=r.reason) for r in retracted]

    def decide(_state: Conversation, _fresh: bool) -> Sequence[Command]:
        return commands

    after, _saved = writer.decide(key, decide)
    return Forked(key=key, parent=parent, fork_at=at, fork_version=version,
                  version=after.version, user=after.user)


def _state_at(store: Any, state: Conversation, version: int) -> Conversation:
    """The state of `state`'s history at position `version`: its own stream's, or,
    for a position at or below its fork point, its parent's (recursively)."""
    while state.parent is not None and version <= state.fork_version:
        state = store.load(conversation_id(state.parent), state.parent)
    found = store.repository.get(conversation_id(state.key), version=version,
                                 projector_func=project)
    assert isinstance(found, Conversation)
    return found


def _find(store: Any, pid: Any, state: Conversation, at: str
          ) -> tuple[int, list[MessageRetracted]]:
    """The position of message `at` in the parent, and the retractions recorded after
    it of messages before it. InvalidInput naming `at` when the parent has no such
    message (or it was withdrawn)."""
    later_ids: set[str] = set()
    retractions: list[MessageRetracted] = []
    upto = state.version
    while upto > 0:
        rows = store.recorded(pid, upto=upto, desc=True, limit=PAGE)
        for r in rows:
            e = r.event
            if isinstance(e, MessageAppended):
                if e.message_id == at and not is_record(e):
                    if any(x.message_id == at for x in retractions):
                        raise InvalidInput(f"message {at!r} of {state.key!r} was retracted: "
                                           "a fork cannot start from it", field="at")
                    return r.version, [x for x in reversed(retractions)
                                       if x.message_id not in later_ids]
                later_ids.add(e.message_id)
            elif isinstance(e, MessageRetracted):
                retractions.append(e)
        if len(rows) < PAGE:
            break
        upto = rows[-1].version - 1
    raise InvalidInput(f"conversation {state.key!r} has no message {at!r}", field="at")
