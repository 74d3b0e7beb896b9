"""The store's read API, as the host API and the entry points ask it: a conversation's
state, its events by position, its messages (the current epoch), its live messages
and the SDK stores' lean live items. Every read is an indexed query of the event
store (convlog.storage.application), never a replay into a read model.

One `Reads` per open log, built by the composition root (services.application).
"""

from __future__ import annotations

import msgspec

from convlog.domain.conversation import Conversation, check_key, conversation_id
from convlog.domain.errors import InvalidInput, UnknownConversation
from convlog.domain.events import MessageAppended, Recorded
from convlog.domain.records import is_record
from convlog.services import items
from convlog.storage.application import MESSAGE_TOPICS, ConversationStore
from convlog.storage.mapper import RawEntry, RawItem, RawJson


class Reads:
    """What a conversation holds, read from the event store."""

    def __init__(self, store: ConversationStore):
        self._store = store

    def state(self, key: str) -> Conversation:
        """The conversation's current decision state (a copy); UnknownConversation if
        it was never started."""
        state = self._store.load(conversation_id(key), check_key(key))
        if not state.started:
            raise UnknownConversation(key)
        return msgspec.structs.replace(state)

    def exists(self, key: str) -> bool:
        return self._store.load(conversation_id(key), check_key(key)).started

    def can_resume(self, key: str) -> bool:
        """True for a conversation that exists and is not archived."""
        state = self._store.load(conversation_id(key), check_key(key))
        return state.started and state.status == "active"

    def events(self, key: str, *, after: int = 0, upto: int | None = None,
               desc: bool = False, limit: int | None = None) -> list[Recorded]:
        """Recorded events of a conversation, by position; one indexed query."""
        if limit is not None and limit <= 0:
            raise InvalidInput("limit must be positive", field="limit")
        recorded = self._store.recorded(conversation_id(key), after=after or None, upto=upto,
                                        desc=desc, limit=limit)
        if not recorded and after == 0 and not self.exists(key):
            raise UnknownConversation(key)
        return recorded

    def messages(self, key: str, *, last: int | None = None) -> list[MessageAppended]:
        """The messages of the current epoch, in order, records left out; `last=N`
        walks the conversation's index backwards for about N rows."""
        if last is not None and last <= 0:
            raise InvalidInput("last must be positive", field="last")
        start = self.state(key).epoch_start_version  # UnknownConversation, or the epoch
        if last is None:
            return [r.event for r in self.events(key, after=start)
                    if isinstance(r.event, MessageAppended) and not is_record(r.event)]
        cid, rows = conversation_id(key), last
        while True:  # select_tail stops at `rows`, newest first: read past any records
            found = self._store.last_of(cid, MESSAGE_TOPICS, rows)
            said = [r.event for r in found if r.version > start
                    and isinstance(r.event, MessageAppended) and not is_record(r.event)]
            if len(said) >= last or len(found) < rows or found[-1].version <= start:
                break
            rows = 2 * rows + last - len(said)
        return said[last - 1::-1]

    def live_messages(self, key: str, *, last: int | None = None) -> list[MessageAppended]:
        """The messages of the current epoch that were not retracted, oldest first."""
        if last is not None and last < 0:
            raise InvalidInput("last cannot be negative", field="last")
        return items.live_messages(self._store, self.state(key), last)

    def live_items(self, key: str, *, last: int | None = None, raw_only: bool = False,
                   summarized: items.Summarized | None = None, kept: items.Kept | None = None
                   ) -> list[MessageAppended | RawItem | RawEntry]:
        """`live_messages` for SDK session stores (`RawItem`s, or `RawEntry`s with
        `raw_only`: issue 30); `summarized(event)`: the store's own item for a
        compaction's summary, which replaces the compacted range (with what `kept`
        keeps of it)."""
        if last is not None and last < 0:
            raise InvalidInput("last cannot be negative", field="last")
        return items.live_items(  # type: ignore[return-value]  # no RawJson asked for
            self._store, check_key(key), last, RawEntry if raw_only else RawItem,
            summarized, kept)

    def live_json(self, key: str, *, summarized: items.Summarized | None = None,
                  kept: items.Kept | None = None) -> list[MessageAppended | RawJson]:
        """`live_items` with each SDK item's JSON left undecoded (`RawJson`)."""
        return items.live_items(  # type: ignore[return-value]  # only RawJson asked for
            self._store, check_key(key), None, RawJson, summarized, kept)
