"""Compaction, the use case: choose the range, ask the host's summarizer, record it.

The decision (convlog.domain.conversation.decide_compaction) is pure and checks the
range against the state being written to; the range itself is chosen here, from the
log (the state holds no history): the live messages of the epoch not yet compacted,
cut by the pairing rule (convlog.projections.compaction) so that no tool call is
separated from its result. The summarizer gets what a context would show of each
message (text, tool names, short results) and the previous compaction's summary to
fold in, as the context's summarizer does (`Summarizer`). Nothing is deleted: the
event says which range the summary replaces, and each model-facing read honours it.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from convlog.accounting.counted import COUNTS
from convlog.domain.conversation import Compact, Conversation, conversation_id
from convlog.domain.errors import CompactedMeanwhile, InvalidInput
from convlog.domain.events import (
    HistoryCompacted,
    MessageAppended,
    MessageRetracted,
    Recorded,
)
from convlog.domain.records import is_record
from convlog.projections.compaction import compaction_point
from convlog.projections.context import ContextMessage
from convlog.projections.context_pieces import render_for_context
from convlog.projections.pairing import message_tools
from convlog.projections.rewind import abandoned
from convlog.services.context import ContextBuilder, is_async_callable

__all__ = ["Compaction", "CompactionPlan", "Plan", "finish", "plan"]

SUMMARY_INPUT_CHARS = 8_000
"""Each message as the summarizer reads it is capped here (as for a context's summary)."""


class Compaction(msgspec.Struct, frozen=True, kw_only=True):
    """A compaction recorded: what the model reads from now on in place of
    `message_count` messages (`compacted` of them new in this compaction)."""

    key: str
    version: int
    """The log position of its `history_compacted` event."""
    from_version: int
    to_version: int
    through_message_id: str
    message_count: int
    compacted: int
    kept: int
    tokens_before: int
    tokens_after: int
    text: str
    summarizer: str | None = None
    reason: str | None = None

    @property
    def tokens_saved(self) -> int:
        return max(0, self.tokens_before - self.tokens_after)


class CompactionPlan(msgspec.Struct, frozen=True, kw_only=True):
    """What a compaction would replace now, for a host that writes the summary
    elsewhere (over HTTP, from the shell): the messages to summarize, the previous
    summary to fold in, and the last message of the range (`through_message_id`;
    None: nothing to compact). Pass `through_message_id` back with the summary: the
    compaction is refused (CompactedMeanwhile) if the range has moved since."""

    key: str
    through_message_id: str | None
    compacted: int
    kept: int
    previous_summary: str | None
    messages: list[ContextMessage]


class Plan(msgspec.Struct, frozen=True, kw_only=True):
    """A compaction chosen, before the summary is made."""

    state: Conversation
    previous: HistoryCompacted | None
    covered: list[Recorded]
    kept: int
    messages: list[ContextMessage]
    """What the summarizer reads, oldest first."""


def check_keep_last(keep_last: object) -> int:
    if not isinstance(keep_last, int) or isinstance(keep_last, bool) or keep_last < 0:
        raise InvalidInput(f"must be a whole number, 0 or more, not {keep_last!r}",
                           field="keep_last")
    return keep_last


def plan(builder: ContextBuilder, key: str, keep_last: int) -> Plan:
    """The compaction to make now; nothing `covered` when nothing can be compacted
    (fewer live messages than `keep_last`, or every cut would split an exchange)."""
    state = builder.state(key)
    store, cid = builder.store, conversation_id(key)
    start = max(state.epoch_start_version, state.compacted_to)
    rows = store.recorded(cid, after=start, upto=state.version) if state.version > start else []
    gone = {r.event.message_id for r in rows if isinstance(r.event, MessageRetracted)}
    left = abandoned(rows)
    live = [r for r in rows if isinstance(r.event, MessageAppended) and r.version not in left
            and r.event.message_id not in gone and not is_record(r.event)]
    point = compaction_point([message_tools(r.event) for r in live],  # type: ignore[arg-type]
                             keep_last)
    previous = None
    if state.compacted_version:
        found = store.recorded(cid, after=state.compacted_version - 1,
                               upto=state.compacted_version)
        if found and isinstance(found[0].event, HistoryCompacted):
            previous = found[0].event
    covered = live[:point]
    messages = []
    for r in covered:
        assert isinstance(r.event, MessageAppended)
        text, truncated = render_for_context(r.event, SUMMARY_INPUT_CHARS)
        messages.append(ContextMessage(version=r.version, at=r.event.created_at or r.event.at,
                                       role=r.event.role, text=text, tokens=0,
                                       truncated=truncated))
    return Plan(state=state, previous=previous, covered=covered, kept=len(live) - point,
                messages=messages)


def finish(builder: ContextBuilder, p: Plan, text: object, summarizer: str | None,
           reason: str | None) -> Compaction:
    """Record the compaction `p` with the summary `text` (one write, decided against
    the state written to: CompactedMeanwhile if another one came first)."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("the summarizer returned no text: nothing was compacted",
                           field="summarizer")
    state, previous = p.state, p.previous
    through = p.covered[-1]
    assert isinstance(through.event, MessageAppended)
    before = previous.tokens_after if previous else 0
    for r in p.covered:
        assert isinstance(r.event, MessageAppended)
        before += COUNTS.message(r.event)
    command = Compact(
        after=state.compacted_version,
        from_version=previous.from_version if previous else state.epoch_start_version + 1,
        to_version=through.version, through_message_id=through.event.message_id,
        message_count=(previous.message_count if previous else 0) + len(p.covered),
        text=text, tokens_before=before, tokens_after=builder.count(text), kept=p.kept,
        summarizer=summarizer, reason=reason)
    _, saved = builder.writer.decide(state.key, lambda _s, _f: [command])
    recorded = next(r for r in saved if isinstance(r.event, HistoryCompacted))
    e = recorded.event
    assert isinstance(e, HistoryCompacted)
    return Compaction(key=state.key, version=recorded.version, from_version=e.from_version,
                      to_version=e.to_version, through_message_id=e.through_message_id,
                      message_count=e.message_count, compacted=len(p.covered), kept=e.kept,
                      tokens_before=e.tokens_before, tokens_after=e.tokens_after,
                      text=e.text, summarizer=e.summarizer, reason=e.reason)


Summarize = Callable[[str | None, list[ContextMessage]], Any]


def public_plan(builder: ContextBuilder, key: str, keep_last: int) -> CompactionPlan:
    """`plan` as a host sees it (`ConversationLog.compaction_plan`)."""
    p = plan(builder, key, check_keep_last(keep_last))
    last = p.covered[-1].event if p.covered else None
    return CompactionPlan(key=key, through_message_id=last.message_id
                          if isinstance(last, MessageAppended) else None,
                          compacted=len(p.covered), kept=p.kept,
                          previous_summary=p.previous.text if p.previous else None,
                          messages=p.messages)


def _pinned(p: Plan, key: str, through: str | None) -> Plan | None:
    """`p` (None: it covers nothing), if it still ends where the host's plan ended
    (`through`)."""
    if through is None:
        return p if p.covered else None
    now = p.covered[-1].event if p.covered else None
    if not isinstance(now, MessageAppended) or now.message_id != through:
        ends = f"at {now.message_id!r}" if isinstance(now, MessageAppended) else "nowhere"
        raise CompactedMeanwhile(key, f"conversation {key!r}: the range to compact now ends "
                                      f"{ends}, not at {through!r}: nothing recorded; plan "
                                      "again")
    return p


def compact(builder: ContextBuilder, key: str, summarizer: Summarize | str, keep_last: int,
            reason: str | None, summarizer_name: str | None, through: str | None = None
            ) -> Compaction | None:
    """Compact `key` now (None: nothing to compact). `summarizer` may be the summary
    itself (a host that wrote it from `compaction_plan`, whose `through` it passes)."""
    p = _pinned(plan(builder, key, check_keep_last(keep_last)), key, through)
    if p is None:
        return None
    if isinstance(summarizer, str):
        return finish(builder, p, summarizer, summarizer_name, reason)
    text = summarizer(p.previous.text if p.previous else None, p.messages)
    if inspect.isawaitable(text):
        if inspect.iscoroutine(text):
            text.close()
        raise InvalidInput("the summarizer returned an awaitable: async summarizers need "
                           "convlog.open_async()", field="summarizer")
    return finish(builder, p, text, summarizer_name or _name(summarizer), reason)


async def compact_async(builder: ContextBuilder, key: str,
                        summarizer: Summarize | Callable[..., Awaitable[str]] | str,
                        keep_last: int, reason: str | None, summarizer_name: str | None,
                        through: str | None = None) -> Compaction | None:
    """`compact` off the event loop; `summarizer` may be a coroutine function."""
    import asyncio

    p = _pinned(await asyncio.to_thread(plan, builder, key, check_keep_last(keep_last)),
                key, through)
    if p is None:
        return None
    if isinstance(summarizer, str):
        return await asyncio.to_thread(finish, builder, p, summarizer, summarizer_name, reason)
    previous = p.previous.text if p.previous else None
    if is_async_callable(summarizer):
        text = await summarizer(previous, p.messages)
    else:
        text = await asyncio.to_thread(summarizer, previous, p.messages)
    if inspect.isawaitable(text):
        text = await text
    return await asyncio.to_thread(finish, builder, p, text,
                                   summarizer_name or _name(summarizer), reason)


def _name(summarizer: object) -> str | None:
    """Who made the summary when the host did not say: its function's name."""
    name = getattr(summarizer, "__qualname__", None) or getattr(
        type(summarizer), "__qualname__", None)
    return name if isinstance(name, str) and name != "<lambda>" else None
