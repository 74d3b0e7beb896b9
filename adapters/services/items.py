"""The live history of a conversation: the messages of its current epoch that were not
retracted. This is what an agent SDK's session store hands back (`get_items`), and
`retract_last` is its `pop_item`, recorded as a compensating event.

Why a walk over events and not over messages: a retraction is an event of its own,
written after the message it withdraws, so walking the log backwards meets the
retraction first and can skip the message without ever rewriting it. The walk reads
limited pages of the conversation's index and stops at the epoch's start, so
`get_items(limit=N)` costs about N rows, like a plain SQLite session table.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from convlog.domain.conversation import Command, Conversation, Retract, conversation_id
from convlog.domain.errors import UnknownConversation
from convlog.domain.events import (
    ConversationCleared,
    HistoryCompacted,
    HistoryRewound,
    MessageAppended,
    MessageRetracted,
    Recorded,
)
from convlog.projections.pairing import PartKinds, Tools, describe, message_tools
from convlog.projections.rewind import abandoned
from convlog.services.writer import Writer
from convlog.storage.application import ConversationStore
from convlog.storage.mapper import all_topics
from convlog.storage.raw_items import (
    ImageRef,
    Lean,
    TextRef,
    ThinkingRef,
    ToolResultRef,
    ToolUseRef,
)
from convlog.storage.raw_items import RawEntry as RawEntry
from convlog.storage.raw_items import RawItem as RawItem
from convlog.storage.raw_items import RawJson as RawJson
from convlog.storage.raw_items import json_item as json_item

PAGE = 128
_UNDO_TOPICS = [*all_topics(MessageRetracted), *all_topics(ConversationCleared)]


def _newest_first(store: ConversationStore, state: Conversation, page: int
                  ) -> Iterator[MessageAppended]:
    """Live messages of the current epoch up to `state.version`, newest first."""
    return (r.event for r in newest_live(store, state, page))  # type: ignore[misc]


def newest_live(store: ConversationStore, state: Conversation, page: int
                ) -> Iterator[Recorded]:
    """`_newest_first` with each message's position (its `Recorded`)."""
    cid = conversation_id(state.key)
    upto = state.version
    retracted: set[str] = set()
    rewound_to = 0
    while upto > state.epoch_start_version:
        rows = store.recorded(cid, upto=upto, desc=True,
                              limit=min(page, upto - state.epoch_start_version))
        for recorded in rows:
            event = recorded.event
            if isinstance(event, ConversationCleared):
                return
            if rewound_to:
                if recorded.version > rewound_to:
                    continue
                rewound_to = 0
            if isinstance(event, HistoryRewound):
                rewound_to = event.to_version
            elif isinstance(event, MessageRetracted):
                retracted.add(event.message_id)
            elif isinstance(event, MessageAppended) and event.message_id not in retracted:
                yield recorded
        if not rows:
            return
        upto = rows[-1].version - 1


def live_messages(store: ConversationStore, state: Conversation, last: int | None = None
                  ) -> list[MessageAppended]:
    """The live messages of the current epoch, oldest first; the newest `last` only
    when it is given (only about that many rows are read)."""
    if last is None:
        rows = store.recorded(conversation_id(state.key), after=state.epoch_start_version,
                              upto=state.version)
        retracted = {r.event.message_id for r in rows if isinstance(r.event, MessageRetracted)}
        left = abandoned(rows) if state.rewinds else {}
        return [r.event for r in rows if isinstance(r.event, MessageAppended)
                and r.event.message_id not in retracted and r.version not in left]
    found: list[MessageAppended] = []
    if last > 0:
        for message in _newest_first(store, state, page=min(PAGE, last + 8)):
            found.append(message)
            if len(found) >= last:
                break
    return found[::-1]


Summarized = Callable[[HistoryCompacted], Any]
"""A surface's own item standing for a compaction's summary (it must have a
`message_id`, as a synthetic MessageAppended has)."""
Kept = Callable[[Any], bool]
"""Which items of a compacted range a surface still hands its model (OpenAI's
compaction keeps every user message), or None: none."""


def live_items(store: ConversationStore, key: str, last: int | None = None,
               shape: Lean = RawItem, summarized: Summarized | None = None,
               kept: Kept | None = None
               ) -> list[MessageAppended | RawItem | RawEntry | RawJson]:
    """`live_messages` for SDK session stores: the same choice of live messages, but a
    message carrying an SDK item comes back as a `RawItem` (its id and the item),
    decoded without the rest of the message (issue 30: the full decode was two thirds
    of `get_items()`). Messages without an item come back whole.

    No state is loaded (issue 30: that query and fold were a third of a
    `get_items(limit=20)`): the epoch is found in the rows themselves, whose walk
    stops at (or restarts after) the newest `conversation_cleared`. Reading starts
    after the epoch start this process last saw, which is safe because epochs only
    move forward. Raises UnknownConversation when nothing was ever recorded.
    `shape`: `RawEntry`s (id and item, no readable content) for the messages
    carrying an SDK item (a Claude transcript entry holds what pairing reads), or
    `RawJson`s (id and the item's JSON, undecoded: Google ADK's `get_session`).
    `summarized`: the surface honours compactions (HistoryCompacted): the range
    of the newest one is replaced by `summarized(event)`, with only the range's
    items that `kept` keeps before it; a read with `last` then stops at the range
    (unless `kept` asks for more). None: compactions are not this surface's."""
    cid = conversation_id(key)
    floor = store.epoch_floor(cid)
    after = floor or None
    if last is None:
        events = store.item_events(cid, after=after, shape=shape)
        if not events and not floor:
            raise UnknownConversation(key)
        return _live(events, summarized, kept)
    if last == 0:
        if not floor and not store.item_rows(cid, desc=True, limit=1):
            raise UnknownConversation(key)
        return []
    found: list[MessageAppended | RawItem | RawEntry | RawJson] = []
    seen: set[str] = set()
    upto: int | None = None
    pending: HistoryCompacted | None = None  # the newest compaction, its range not reached
    within = False  # walking the newest compaction's range
    rewound: str | None = None  # a rewind met: skip to its message
    page = min(PAGE, last)  # the usual tail is all live messages: read just those
    while True:
        rows, oldest = store.item_page(cid, after=after, upto=upto, limit=page, shape=shape)
        if not rows and upto is None and not floor:
            raise UnknownConversation(key)
        if not found and len(rows) >= last and set(map(type, rows[:last])) <= _LEAN:
            return rows[last - 1::-1]  # the usual tail: `last` SDK items, nothing undone
        for event in rows:
            if rewound is not None:
                if getattr(event, "message_id", None) != rewound or not (
                        type(event) in _ITEMS or isinstance(event, MessageAppended)):
                    continue
                rewound = None
            if isinstance(event, HistoryRewound):
                rewound = event.to_message_id
                continue
            if type(event) in _ITEMS or isinstance(event, MessageAppended):
                if pending is not None and not within and \
                        event.message_id == pending.through_message_id:
                    assert summarized is not None  # the range starts here: its summary
                    found.append(summarized(pending))
                    within = True
                    if len(found) >= last or kept is None:
                        return found[::-1]
                if event.message_id in seen or (within and not (kept and kept(event))):
                    continue
                found.append(event)
                if len(found) >= last:
                    return found[::-1]
            elif isinstance(event, HistoryCompacted):
                if summarized is not None and pending is None and not within:
                    pending = event
            elif isinstance(event, MessageRetracted):
                seen.add(event.message_id)
            elif isinstance(event, ConversationCleared):
                return found[::-1]
        if len(rows) < page:
            return found[::-1]
        upto = oldest - 1
        page = min(PAGE, 2 * (last - len(found)) + 8)  # retractions hide rows: read ahead


def retracted_since(store: ConversationStore, key: str, since: str
                    ) -> list[MessageAppended | RawItem]:
    """The messages of the current epoch retracted after message `since` was stored
    (newest first; messages carrying an SDK item as `RawItem`s): why a tool output
    is missing when an SDK's `pop_item` took it back (convlog.projections.
    pair_causes). Walks the conversation backwards from its newest row to that
    message, so it reads about as many rows as the history after it; first one
    indexed look at the newest retraction or clear, so an epoch without any
    retraction (a process that died mid-tool) reads nothing more."""
    cid = conversation_id(key)
    newest = store.last_of(cid, _UNDO_TOPICS, 1)
    if not newest or not isinstance(newest[0].event, MessageRetracted):
        return []
    after = store.epoch_floor(cid) or None
    ids: set[str] = set()
    found: list[MessageAppended | RawItem] = []
    upto: int | None = None
    while True:
        rows = store.item_rows(cid, after=after, upto=upto, desc=True, limit=PAGE)
        for _, event in rows:
            if isinstance(event, MessageRetracted):
                ids.add(event.message_id)
            elif type(event) is RawItem or isinstance(event, MessageAppended):
                if event.message_id in ids:
                    found.append(event)
                if event.message_id == since:
                    return found
            elif isinstance(event, ConversationCleared):
                return found
        if len(rows) < PAGE:
            return found
        upto = rows[-1][0] - 1


_ITEMS = (RawItem, RawEntry, RawJson)
_LEAN = frozenset(_ITEMS)


def _live(events: list[Any], summarized: Summarized | None = None, keep: Kept | None = None
          ) -> list[MessageAppended | RawItem | RawEntry | RawJson]:
    """The live messages among `events` (oldest first): those after the newest clear,
    without the retracted ones; compacted as `live_items` says when `summarized`."""
    kinds = set(map(type, events))  # a loop in C
    undo: tuple[type, ...] = (MessageRetracted, ConversationCleared, HistoryCompacted,
                              HistoryRewound) \
        if summarized is not None else (MessageRetracted, ConversationCleared, HistoryRewound)
    if not any(issubclass(k, undo) for k in kinds):
        return _without(events, [k for k in kinds if k not in _ITEMS
                                 and not issubclass(k, MessageAppended)])
    kept: list[MessageAppended | RawItem | RawEntry | RawJson] = []
    retracted: set[str] = set()
    append = kept.append
    for event in events:
        if type(event) in _ITEMS or isinstance(event, MessageAppended):
            append(event)
        elif isinstance(event, MessageRetracted):
            retracted.add(event.message_id)
        elif isinstance(event, ConversationCleared):  # a new epoch: start over
            kept, retracted = [], set()
            append = kept.append
        elif isinstance(event, HistoryCompacted) and summarized is not None:
            kept = _compacted(kept, event, summarized, keep)
            append = kept.append
        elif isinstance(event, HistoryRewound):  # back to its message: drop what followed
            at = next((i for i in range(len(kept) - 1, -1, -1)
                       if kept[i].message_id == event.to_message_id), None)
            if at is not None:
                del kept[at + 1:]
    return [e for e in kept if e.message_id not in retracted] if retracted else kept


def _compacted(items: list[Any], event: HistoryCompacted, summarized: Summarized,
               keep: Kept | None) -> list[Any]:
    """`items` (oldest first) with the range of `event` replaced by its summary, the
    items `keep` keeps before it (an earlier summary is folded into this one)."""
    through = event.through_message_id
    at = next((i for i in range(len(items) - 1, -1, -1)
               if items[i].message_id == through), None)
    if at is None:  # the range is not in this epoch's items: nothing to replace
        return items
    head = [e for e in items[:at + 1] if keep is not None and not is_summary(e) and keep(e)]
    return [*head, summarized(event), *items[at + 1:]]


SUMMARY_ID = "convlog:compaction:"
"""The id prefix of a compaction's summary as a surface's item (never a message's)."""


def is_summary(item: Any) -> bool:
    return str(getattr(item, "message_id", "")).startswith(SUMMARY_ID)


def summary_id(event: HistoryCompacted) -> str:
    return f"{SUMMARY_ID}{event.to_version}"


def _without(events: list[Any], kinds: list[type]) -> list[Any]:
    """`events` without those of `kinds` (the session's start, and any other event
    that is no message), found and cut out by C loops (`list.index`, slices): a
    whole session's `get_items()` looked at each event in Python to drop the one
    `session_started` (issue 30)."""
    if not kinds:
        return events
    types = list(map(type, events))
    cuts: list[int] = []
    for kind in kinds:
        at = -1
        with contextlib.suppress(ValueError):
            while True:
                at = types.index(kind, at + 1)
                cuts.append(at)
    out: list[Any] = []
    start = 0
    for at in sorted(cuts):
        out += events[start:at]
        start = at + 1
    out += events[start:]
    return out


_TEXT = Tools()
_NEUTRAL = Tools(other=False)


def item_tools(item: MessageAppended | RawItem) -> Tools:
    """`message_tools` of a live item: a `RawItem` holds only its parts' kinds and
    its calls' ids (convlog.storage.raw_items), described by the same rule
    (`pairing.describe`) over those lean part classes (a property test holds the two
    answers together)."""
    if type(item) is not RawItem:
        return message_tools(item)  # type: ignore[arg-type]  # a MessageAppended
    return describe(item.role, item.content, item.tool_calls, item.tool_call_id, _REF_PARTS)


_REF_PARTS = PartKinds(TextRef, ImageRef, ThinkingRef, ToolUseRef, ToolResultRef)


def texts_skipped(item: MessageAppended | RawItem | RawEntry) -> bool:
    """Whether `item` is a lean `RawItem` whose content held texts it did not decode
    (a reader of those texts, such as convlog.projections.pair_causes, needs the
    whole message)."""
    if type(item) is not RawItem or type(item.content) is str:
        return False
    return any(type(part) is TextRef for part in item.content)


def items_tools(items: Sequence[MessageAppended | RawItem]) -> list[Tools]:
    """`item_tools` of each item, in one loop: the usual item of a session (a
    `RawItem` without calls whose content is one string or one text part) is
    answered inline, the rest by `item_tools` (issue 30: a call per item was a
    tenth of a whole session's `get_items()`)."""
    out: list[Tools] = []
    append = out.append
    for item in items:
        if type(item) is RawItem and not item.tool_calls and item.role != "tool":
            content = item.content
            if type(content) is str:
                append(_TEXT if content else _NEUTRAL)
                continue
            if len(content) == 1 and type(content[0]) is TextRef:
                append(_TEXT)
                continue
        append(item_tools(item))
    return out


def raws_tools(items: Sequence[MessageAppended | RawItem],
               plain: Callable[[MessageAppended], dict[str, Any]]
               ) -> tuple[list[dict[str, Any]], list[Tools], bool]:
    """(each item's `raw`, or `plain(item)` for a message without one; `items_tools`;
    whether any item makes a call or carries a result) in ONE loop: a whole session's
    `get_items()` made three passes over its items (issue 30). When no item makes a
    call or carries a result the history is well paired without asking
    `pairing.well_paired`."""
    raws: list[dict[str, Any]] = []
    out: list[Tools] = []
    add_raw, add = raws.append, out.append
    tooled = False
    for item in items:
        if type(item) is RawItem and not item.tool_calls and item.role != "tool":
            content = item.content
            if type(content) is str:  # a RawItem always has its raw (storage.mapper)
                add(_TEXT if content else _NEUTRAL)
                add_raw(item.raw)  # type: ignore[arg-type]
                continue
            if len(content) == 1 and type(content[0]) is TextRef:
                add(_TEXT)
                add_raw(item.raw)  # type: ignore[arg-type]
                continue
        tools = item_tools(item)
        add(tools)
        tooled = tooled or bool(tools.calls or tools.results)
        raw = item.raw
        add_raw(raw if raw is not None else plain(item))  # type: ignore[arg-type]
    return raws, out, tooled


def retract_last(writer: Writer, key: str, reason: str | None
                 ) -> MessageAppended | None:
    """Retract the newest live message and return it; None when there is none.

    The choice is made inside the write's retry loop against the state being written
    to, so two writers popping at once retract two different messages: the loser's
    insert conflicts, and it chooses again on the fresh state."""
    chosen: list[MessageAppended] = []

    def commands(state: Conversation, fresh: bool) -> Sequence[Command]:
        chosen.clear()
        if not state.started:
            return []
        newest = next(_newest_first(writer.store, state, page=8), None)
        if newest is None:
            return []
        chosen.append(newest)
        return [Retract(message_id=newest.message_id, reason=reason)]

    _, saved = writer.decide(key, commands)
    return chosen[0] if saved and chosen else None
