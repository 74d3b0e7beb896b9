"""`services.items._live`, whose usual case (no retraction, no clear) cuts the events
that are no message out with C loops: the same answer as the plain walk, on random
histories of lean items, whole messages, starts, titles, retractions and clears."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

from convlog.domain.events import (
    ConversationCleared,
    ConversationStarted,
    MessageAppended,
    MessageRetracted,
    TitleChanged,
)
from convlog.services.items import _live
from convlog.storage.raw_items import RawEntry, RawItem

AT = datetime(2026, 11, 27, tzinfo=UTC)


def _walk(events: list[Any]) -> list[Any]:
    """The plain walk: items after the newest clear, without the retracted ones."""
    kept: list[Any] = []
    retracted: set[str] = set()
    for event in events:
        if isinstance(event, (RawItem, RawEntry, MessageAppended)):
            kept.append(event)
        elif isinstance(event, MessageRetracted):
            retracted.add(event.message_id)
        elif isinstance(event, ConversationCleared):
            kept, retracted = [], set()
    return [e for e in kept if e.message_id not in retracted]


def _history(rng: random.Random, undo: bool) -> list[Any]:
    events: list[Any] = [ConversationStarted(at=AT, key="k")]
    for n in range(rng.randrange(0, 40)):
        roll = rng.random()
        if roll < 0.6:
            events.append(RawItem(message_id=f"m{n}", raw={"role": "user", "content": "hi"}))
        elif roll < 0.7:
            events.append(RawEntry(message_id=f"m{n}", raw={"type": "user"}))
        elif roll < 0.8:
            events.append(MessageAppended(at=AT, message_id=f"m{n}", role="user", content="x"))
        elif roll < 0.9:
            events.append(TitleChanged(at=AT, title="t"))
        elif undo and roll < 0.95:
            events.append(MessageRetracted(at=AT, message_id=f"m{rng.randrange(0, n + 1)}"))
        elif undo:
            events.append(ConversationCleared(at=AT))
    return events


def test_the_cut_answers_as_the_walk() -> None:
    rng = random.Random(30)
    for case in range(500):
        events = _history(rng, undo=case % 2 == 1)
        assert _live(list(events)) == _walk(events), events
