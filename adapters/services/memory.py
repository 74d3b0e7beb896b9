"""Memory blocks from storage: inject one (decided inside the write), the cooldown,
and the blocks live now or at any point of a replay.

The rules are pure (convlog.domain.memory decides an injection, the projection
convlog.projections.memory says which blocks are live); this module only feeds them
the conversation's state or the tail of its log.
"""

from __future__ import annotations

import msgspec

from convlog.domain.conversation import Conversation, conversation_id
from convlog.domain.errors import InvalidInput, UnknownConversation
from convlog.domain.events import (
    ConversationCleared,
    MemoryInjected,
    MessageAppended,
    Recorded,
)
from convlog.domain.memory import InjectMemory
from convlog.projections.memory import TailLiveness, live_blocks, memory_cooldown
from convlog.services.context import tail
from convlog.services.writer import Writer
from convlog.storage.application import ConversationStore
from convlog.storage.mapper import all_topics

BLOCK_TOPICS = all_topics(MemoryInjected)


class MemoryBlock(msgspec.Struct, frozen=True, kw_only=True):
    """A recorded memory block. `text` is exactly what the host must send to the
    agent (it starts with ``[Context from memory]``)."""

    block_id: str
    memory_ids: list[str]
    text: str
    turn: int
    """User messages the conversation had when the block entered."""
    version: int
    """The block's position in the conversation's log."""
    native_session_id: str | None = None


def as_block(version: int, event: MemoryInjected) -> MemoryBlock:
    return MemoryBlock(block_id=event.block_id, memory_ids=list(event.memory_ids),
                       text=event.text, turn=event.turn, version=version,
                       native_session_id=event.native_session_id)


def inject(writer: Writer, key: str, command: InjectMemory) -> MemoryBlock:
    """Record the block (the writer redacts its text and sets the log's cooldown);
    MemoryCooling (nothing written) if a memory id cools down."""
    if not isinstance(command.memory_ids, list | tuple):
        raise InvalidInput("must be a list of memory ids", field="memory_ids")
    _state, saved = writer.decide(key, lambda _state, _fresh: [command])
    for r in saved:
        if isinstance(r.event, MemoryInjected):
            return as_block(r.version, r.event)
    raise AssertionError("an injection always records a block")  # pragma: no cover


def cooldown(state: Conversation, depth: int) -> dict[str, int]:
    return memory_cooldown(state.recent_memories, state.turns, depth)


def live_now(store: ConversationStore, state: Conversation, cap: int) -> list[MemoryBlock]:
    """The live blocks, oldest first, reading the tail only as far as the rule needs
    (cap blocks back, or the latest user message when the cap is 0)."""
    if not state.started:
        raise UnknownConversation(state.key)
    if state.memory_blocks == 0:
        return []
    if cap > 0:  # the newest `cap` blocks of the epoch: read only block rows
        rows = store.last_of(conversation_id(state.key), BLOCK_TOPICS, cap)
        return [as_block(r.version, r.event) for r in reversed(rows)
                if isinstance(r.event, MemoryInjected) and r.version > state.epoch_start_version]
    liveness = TailLiveness(cap)  # ephemeral: the walk stops at the latest user message
    found: list[MemoryBlock] = []
    for r in tail(store, state, page=64):
        event = r.event
        if isinstance(event, ConversationCleared) or r.version <= state.epoch_start_version:
            break
        if isinstance(event, MessageAppended):
            liveness.saw(event)
            if cap == 0 and liveness.user_seen:
                break
        elif isinstance(event, MemoryInjected):
            if not liveness.live(event):
                break
            found.append(as_block(r.version, event))
    return found[::-1]


def live_at(recorded: list[Recorded], cap: int, at: int | None) -> list[MemoryBlock]:
    """The blocks the agent had at version `at` of a replay (the log from its start:
    a clear evicts every block before it)."""
    return [as_block(v, e) for v, e in live_blocks(recorded, cap, at=at)]
