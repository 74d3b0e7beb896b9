"""Which messages make one agent invocation: turns across transactions (issue 41).

A turn is a user's input and everything the agent did for it, up to the next input
(or a clear). Hosts write a turn in one transaction (the library's `append_turn`,
the ACP proxy) or in many: an OpenAI Agents run writes its input, then each step;
Google ADK one event at a time; Claude Code its entries in batches. The export sends
a turn as ONE ``invoke_agent`` span, when the turn is over, so the spans of a turn
are made at the transaction that ends it, from the turn's messages read back from
the log.

When is a turn over? The rule is read from the log alone (and `grace`), so every run
of the export, and every later transaction, finds the same cuts. After a transaction
the turn is cut (its span is sent) when:

- it looks finished: its last message is the agent's (not only tool results), with
  words, and no tool call of the turn is left without a result; or
- the next message of the conversation is a new input, or comes more than `grace`
  seconds later (a turn left as it was: the host died mid-turn);
- with no next message yet: more than `grace` seconds have passed (else the export
  waits there, as it waits for a resume's injection).

A turn that goes on after a cut (a tool that ran longer than `grace`, or an export
that ran between two writes of one response) gets one more ``invoke_agent`` span for
its later messages, in the same trace: nothing is ever left out. Records (convlog.
domain.records) are no messages and take no part.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import NamedTuple

import convlog
from convlog.domain.content import TextPart, ToolResultPart
from convlog.domain.events import ConversationCleared, MessageAppended, Recorded
from convlog.domain.records import is_record
from convlog.projections.pairing import message_tools
from convlog.services.feed import FeedEvent

FIRST_PAGE, PAGE = 8, 256
"""Reads around a transaction start small (a turn's messages are usually a few rows
away) and grow: each read decodes every event it returns."""
MAX_TURN = 5_000
"""How far back a turn is looked for: a conversation with no user input in this many
messages is cut there (its spans start where the look-back stopped)."""


class Segment(NamedTuple):
    """The messages of one ``invoke_agent`` span (a whole turn, or its part after a
    cut), oldest first, and the version of the turn's first message (its trace)."""

    messages: list[Recorded]
    turn_version: int


def is_input(event: MessageAppended) -> bool:
    """A user's input: a user message with something besides tool results (an
    Anthropic-style tool result is a user message too, and no new turn)."""
    if event.role != "user":
        return False
    content = event.content
    if isinstance(content, str):
        return bool(content)
    return any(not isinstance(p, ToolResultPart) for p in content)


def dialogue(event: object) -> bool:
    return isinstance(event, MessageAppended) and not is_record(event)


def _says(event: MessageAppended) -> bool:
    """The agent's words: text (not reasoning, calls or results only)."""
    if event.role != "assistant":
        return False
    content = event.content
    if isinstance(content, str):
        return bool(content.strip())
    return any(isinstance(p, TextPart) and p.text.strip() for p in content)


class _Open:
    """The turn's calls still without a result (ids, the newest call first answered:
    the pairing rule's scope, convlog.projections.pairing)."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    def add(self, event: MessageAppended) -> None:
        tools = message_tools(event)
        for call_id, _ in tools.calls:
            self.calls[call_id] = self.calls.get(call_id, 0) + 1
        for call_id in tools.results:
            if self.calls.get(call_id):
                self.calls[call_id] -= 1

    def any(self) -> bool:
        return any(self.calls.values())


class Near:
    """The conversation's events the export already read (its batch), by version:
    what the turn's reads find there costs no query (an SDK writes a turn in many
    small transactions, most of them in one batch)."""

    def __init__(self, log: convlog.ConversationLog, key: str,
                 events: Mapping[int, object] | None = None) -> None:
        self.log, self.key, self.events = log, key, events or {}

    def before(self, upto: int, limit: int) -> list[Recorded]:
        """The events at `upto` and before, newest first (up to `limit`)."""
        out: list[Recorded] = []
        while upto > 0 and len(out) < limit and upto in self.events:
            out.append(Recorded(upto, self.events[upto]))  # type: ignore[arg-type]
            upto -= 1
        if len(out) < limit and upto > 0:
            out += self.log.events(self.key, upto=upto, desc=True, limit=limit - len(out))
        return out

    def after(self, after: int, limit: int) -> list[Recorded]:
        """The events after `after`, oldest first (up to `limit`)."""
        out: list[Recorded] = []
        while len(out) < limit and after + 1 in self.events:
            after += 1
            out.append(Recorded(after, self.events[after]))  # type: ignore[arg-type]
        if len(out) < limit:
            out += self.log.events(self.key, after=after, limit=limit - len(out))
        return out


def segments(near: Near, group: Sequence[FeedEvent], now: datetime, grace: float
             ) -> list[Segment] | None:
    """The segments a transaction `group` cuts (see the module): [] when it cuts none
    (a later transaction will), None when the export must wait."""
    said = [Recorded(e.version, e.event) for e in group if dialogue(e.event)]
    if not said:
        return []
    first = said[0].event
    assert isinstance(first, MessageAppended)
    before = [] if is_input(first) else _turn_before(near, said[0].version)
    turn = before + said
    gap = timedelta(seconds=grace)
    out: list[Segment] = []
    start = 0  # where the open segment starts, in `turn`
    turn_version = turn[0].version
    open_calls = _Open()
    for i, r in enumerate(turn):
        event = r.event
        assert isinstance(event, MessageAppended)
        if i > start and is_input(event):  # a new turn: the open segment ends here
            if i > len(before):
                out.append(Segment(turn[start:i], turn_version))
            start, turn_version, open_calls = i, r.version, _Open()
        open_calls.add(event)
        later = turn[i + 1].event if i + 1 < len(turn) else None
        assert later is None or isinstance(later, MessageAppended)
        if later is not None and later.at == event.at:
            continue  # the same transaction goes on: no cut inside it
        if _says(event) and not open_calls.any():
            cut: bool | None = True
        elif later is not None:
            cut = is_input(later) or later.at - event.at > gap
        else:
            cut = _after(near, r, now, gap)
        if cut is None:
            return None
        if cut and i >= len(before):
            out.append(Segment(turn[start:i + 1], turn_version))
        if cut:
            start = i + 1
    return out


def _turn_before(near: Near, version: int) -> list[Recorded]:
    """The messages of the turn that message `version` is part of, before it, oldest
    first: back to the turn's input, a clear, the conversation's start or MAX_TURN."""
    found: list[Recorded] = []
    upto, limit = version - 1, FIRST_PAGE
    while upto > 0 and len(found) < MAX_TURN:
        page = near.before(upto, limit)
        for r in page:
            if isinstance(r.event, ConversationCleared):
                return found[::-1]
            if dialogue(r.event):
                found.append(r)
                if is_input(r.event):  # type: ignore[arg-type]
                    return found[::-1]
        if len(page) < limit:
            break
        upto, limit = page[-1].version - 1, min(PAGE, 4 * limit)
    return found[::-1]


def _after(near: Near, last: Recorded, now: datetime, gap: timedelta) -> bool | None:
    """Whether the turn is cut after `last`, its newest message in the log so far, by
    what follows it: a clear or an input (cut), a message more than `gap` later (cut),
    one sooner (no cut); nothing yet: cut once `gap` has passed, else None (wait)."""
    after, limit = last.version, FIRST_PAGE
    event = last.event
    while True:
        page = near.after(after, limit)
        for r in page:
            if isinstance(r.event, ConversationCleared):
                return True
            if dialogue(r.event):
                return is_input(r.event) or r.event.at - event.at > gap  # type: ignore[arg-type]
        if len(page) < limit:
            break
        after, limit = page[-1].version, min(PAGE, 4 * limit)
    return True if now - event.at > gap else None
