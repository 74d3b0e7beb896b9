"""The domain's decisions and fold as the tests read them: a state folded from events,
and the events a batch of commands decides. Kept with the tests, the only users: the
code decides and evolves in one pass (`decide_and_evolve`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from convlog.domain.conversation import Command, Conversation, decide_and_evolve, evolve
from convlog.domain.events import Event


def fold(key: str, events: Iterable[Event]) -> Conversation:
    """The state of conversation `key` after `events`, from nothing."""
    state = Conversation(key=key)
    for event in events:
        evolve(state, event)
    return state


def decide_all(state: Conversation, commands: Sequence[Command], now: datetime,
               origins: Sequence[str] | None = None) -> list[Event]:
    """The events a batch decides against `state` (which is left as it was)."""
    return decide_and_evolve(state, commands, now, origins)[0]
