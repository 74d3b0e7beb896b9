"""Building the resume context from storage: paging the tail, summarizing, formatting.

The selection rules are pure (convlog.projections.context); this module feeds them
the tail of the log page by page (descending, limited queries), asks the host's
summarizer for a summary when older history does not fit, records that summary as
an event (so it is made once and replayable), and formats the result.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import msgspec

from convlog.domain.conversation import (
    PAUSED_AFTER,
    Conversation,
    RecordFact,
    conversation_id,
    status_of,
)
from convlog.domain.errors import InvalidInput, UnknownConversation
from convlog.domain.events import (
    ConversationStarted,
    HistoryCompacted,
    MessageAppended,
    MessageRetracted,
    Recorded,
    SummaryRecorded,
)
from convlog.domain.records import is_record
from convlog.projections.context import (
    Budget,
    ContextMessage,
    Window,
    front_cut,
    render_for_context,
)
from convlog.services.writer import Writer
from convlog.storage.application import ConversationStore

__all__ = ["AsyncSummarizer", "Context", "ContextBuilder", "ContextMessage", "Summarizer"]
from convlog.accounting.counted import COUNTS
from convlog.accounting.tokens import counter_label
from convlog.projections.context import select_window as select
from convlog.projections.formats import Format, SessionHeader, check_format, render
from convlog.projections.memory import DEFAULT_CAP
from convlog.projections.pair_causes import imported
from convlog.projections.rewind import abandoned

Summarizer = Callable[[str | None, list[ContextMessage]], str]
"""(previous summary or None, messages to fold in, oldest first) -> new summary text."""
AsyncSummarizer = Callable[[str | None, list[ContextMessage]], Awaitable[str]]


def _text(rendered: str | list[dict[str, Any]]) -> str:
    return rendered if isinstance(rendered, str) else msgspec.json.encode(rendered).decode()


def is_async_callable(fn: object) -> bool:
    """A coroutine function, or an object whose __call__ is one."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None))  # noqa: B004


class Context(msgspec.Struct, frozen=True, kw_only=True):
    """History ready to inject. `text` is the exact string to place after the system
    prompt (for `messages`, the JSON of `messages`)."""

    key: str
    format: str
    text: str
    messages: list[dict[str, Any]] | None
    tokens: int
    message_count: int
    omitted: int
    summarized: int
    from_version: int
    to_version: int
    counter: str
    memory_blocks: int = 0
    """Live memory blocks included (they are not counted in `message_count`)."""


def tail(store: ConversationStore, state: Conversation, page: int) -> Iterator[Recorded]:
    """The conversation's events newest first, one limited indexed query per page,
    never reading past the current epoch."""
    cid = conversation_id(state.key)
    upto: int | None = None
    while True:
        rows = store.recorded(cid, upto=upto, desc=True, limit=page)
        yield from rows
        if len(rows) < page:
            return
        upto = rows[-1].version - 1
        if upto <= max(state.epoch_start_version, state.compacted_to):
            return


class ContextBuilder:
    """Builds contexts from the store; a summary it makes is recorded by `writer`."""

    def __init__(self, writer: Writer, model: str | None = None,
                 memory_cap: int = DEFAULT_CAP):
        self.writer = writer
        self.store = writer.store
        self.model = model
        self.memory_cap = memory_cap
        self._overheads: dict[str, tuple[int, int]] = {}

    def count(self, text: str) -> int:
        """Tokens of `text` for this builder's model: counted once per text and
        vocabulary in this process (convlog.accounting.counted)."""
        return COUNTS.count(text, self.model)

    @property
    def counter(self) -> str:
        """Which tokenizer counts the budget (``o200k_base``...)."""
        return counter_label(self.model)

    def state(self, key: str) -> Conversation:
        state = self.store.load(conversation_id(key), key)
        if not state.started:
            raise UnknownConversation(key)
        return state

    def latest_summary(self, state: Conversation) -> SummaryRecorded | None:
        """The epoch's latest summary: one indexed read at the position the state names."""
        if not state.summary_version:
            return None
        rows = self.store.recorded(conversation_id(state.key), after=state.summary_version - 1,
                                   upto=state.summary_version)
        found = rows[0].event if rows else None
        if isinstance(found, HistoryCompacted):  # a compaction's summary, as a summary
            return as_summary(found)
        return found if isinstance(found, SummaryRecorded) else None

    def overheads(self, fmt: Format) -> tuple[int, int]:
        """(tokens of the empty wrapper, tokens the format adds around each message),
        measured once per format, so the window is chosen against what the formatted
        text will really cost and `finish` rarely has to drop anything."""
        found = self._overheads.get(fmt)
        if found is None:
            moment = datetime(2026, 1, 1, tzinfo=UTC)
            line = ContextMessage(version=1, at=moment, role="assistant", text="x", tokens=1)
            asked = msgspec.structs.replace(line, role="user")  # roles alternate, as in
            one = Window(messages=[asked], summary=None, omitted=0, from_version=1,
                         to_version=1, tokens=0)  # a conversation
            two = msgspec.structs.replace(one, messages=[asked, line])
            noted = msgspec.structs.replace(one, omitted=1)

            def cost(window: Window) -> int:
                return self.count(_text(render(fmt, "conversation:key", window)))

            per_message = max(1, cost(two) - cost(one) - 1)  # the line minus its text "x"
            note = max(0, cost(noted) - cost(one))  # "N earlier messages ... not included"
            wrapper = cost(one) - per_message - 1 + note + 12  # + a summary's own markup
            found = self._overheads[fmt] = (wrapper, per_message)
        return found

    def window(self, state: Conversation, budget: Budget, exclude: frozenset[str],
               fmt: Format = "xml") -> Window:
        wrapper, per_message = self.overheads(fmt)
        return select(
            tail(self.store, state, page=min(budget.messages + 16, 256)), budget,
            self.count, epoch_messages=state.message_count - state.epoch_start_message_count,
            summary=self.latest_summary(state), exclude=exclude, overhead_tokens=wrapper,
            per_message_tokens=per_message, memory_cap=state.policy()[0],
            imported=lambda: self.imported(state), own_tokens=COUNTS.message,
            floor=state.compacted_to)

    def imported(self, state: Conversation) -> bool:
        """Whether the conversation came from an importer (its start says so): one
        indexed read, made only when a call in the window has no result."""
        rows = self.store.recorded(conversation_id(state.key), after=0, upto=1)
        start = rows[0].event if rows else None
        return isinstance(start, ConversationStarted) and imported(start)

    def to_summarize(self, state: Conversation, window: Window, exclude: frozenset[str]
                     ) -> tuple[int, list[ContextMessage]]:
        """The messages older than the window and not yet in the summary, oldest first."""
        start = window.summary.to_version if window.summary else state.epoch_start_version
        start = max(start, state.compacted_to)  # compacted: the summary stands for it
        end = window.messages[0].version - 1 if window.messages else state.version
        rows = self.store.recorded(conversation_id(state.key), after=start, upto=state.version)
        gone = exclude | {r.event.message_id for r in rows if isinstance(r.event, MessageRetracted)}
        left = abandoned(rows)
        picked = []
        for r in rows:
            if r.version > end:
                break
            if r.version in left:
                continue
            if isinstance(r.event, MessageAppended) and r.event.message_id not in gone \
                    and not is_record(r.event):
                text, truncated = render_for_context(r.event, 4 * 2_000)
                picked.append(ContextMessage(version=r.version, at=r.event.at,
                                             role=r.event.role, text=text, tokens=0,
                                             truncated=truncated))
        return end, picked

    def record_summary(self, state: Conversation, window: Window, end: int,
                       picked: list[ContextMessage], text: str, summarizer: str | None) -> None:
        if not text.strip():
            return
        previous = window.summary
        event = SummaryRecorded(
            at=datetime.now(UTC),  # the recording stamps its own time
            from_version=previous.from_version if previous else state.epoch_start_version + 1,
            to_version=end, message_count=(previous.message_count if previous else 0)
            + len(picked), text=text, tokens=self.count(text), summarizer=summarizer)
        self.writer.execute(state.key, [RecordFact(event=event)])

    def finish(self, state: Conversation, window: Window, budget: Budget, fmt: Format,
               summarized: int) -> Context:
        """Format, then make sure the whole formatted text fits the token budget."""
        header = SessionHeader(user=state.user, project=state.workspace,
                               status=status_of(state, self.store.clock.now(), PAUSED_AFTER),
                               started=state.created_at, last_active=state.last_active_at)
        while True:
            rendered = render(fmt, state.key, window, header)
            text = rendered if isinstance(rendered, str) else msgspec.json.encode(
                rendered).decode()
            tokens = self.count(text)
            if tokens <= budget.tokens:
                break
            if not window.messages:
                if window.summary is not None:  # the summary alone is too much: drop it
                    window = msgspec.structs.replace(
                        window, summary=None, omitted=window.omitted
                        + window.summary.message_count, tokens=0)
                    summarized = 0
                    continue
                # Not even the empty wrapper fits: inject nothing rather than overspend.
                rendered, text, tokens = ([] if fmt == "messages" else ""), "", 0
                break
            # Drop the oldest messages whose own cost covers the excess, then re-check.
            cut = front_cut(window.messages, tokens - budget.tokens)
            kept = window.messages[cut:]
            dropped = sum(1 for m in window.messages[:cut] if not m.is_block)
            window = msgspec.structs.replace(
                window, messages=kept, omitted=window.omitted + dropped,
                from_version=kept[0].version if kept else window.to_version,
                tokens=window.tokens - sum(m.tokens for m in window.messages[:cut]))
        return Context(
            key=state.key, format=fmt, text=text,
            messages=None if isinstance(rendered, str) else rendered, tokens=tokens,
            message_count=sum(1 for m in window.messages if not m.is_block),
            omitted=window.omitted, summarized=summarized,
            from_version=window.from_version, to_version=window.to_version,
            counter=counter_label(self.model),
            memory_blocks=sum(1 for m in window.messages if m.is_block))

    # -------------------------------------------------------------- entry points

    def prepare(self, key: str, budget: Budget, fmt: str, exclude: frozenset[str]
                ) -> tuple[Conversation, Window, Format]:
        form = check_format(fmt)
        state = self.state(key)
        return state, self.window(state, budget, exclude, form), form

    def summarized_then_rebuilt(
        self, state: Conversation, window: Window, budget: Budget, exclude: frozenset[str],
        end: int, picked: list[ContextMessage], text: str, summarizer_name: str | None,
        fmt: Format = "xml",
    ) -> tuple[Conversation, Window]:
        self.record_summary(state, window, end, picked, text, summarizer_name)
        state = self.state(state.key)
        return state, self.window(state, budget, exclude, fmt)

    def build(self, key: str, budget: Budget, fmt: str, exclude: frozenset[str],
              summarizer: Summarizer | None, summarizer_name: str | None) -> Context:
        state, window, form = self.prepare(key, budget, fmt, exclude)
        if window.omitted and summarizer is not None:
            end, picked = self.to_summarize(state, window, exclude)
            if picked:
                text = summarizer(window.summary.text if window.summary else None, picked)
                if inspect.isawaitable(text):
                    if inspect.iscoroutine(text):
                        text.close()
                    raise InvalidInput("the summarizer returned an awaitable: async "
                                       "summarizers need convlog.open_async()",
                                       field="summarizer")
                state, window = self.summarized_then_rebuilt(
                    state, window, budget, exclude, end, picked, text, summarizer_name, form)
        return self.finish(state, window, budget, form, _summarized(window))

    async def build_async(self, key: str, budget: Budget, fmt: str, exclude: frozenset[str],
                          summarizer: Summarizer | AsyncSummarizer | None,
                          summarizer_name: str | None) -> Context:
        import asyncio  # here, not at import time: a synchronous host never pays for it

        state, window, form = await asyncio.to_thread(self.prepare, key, budget, fmt, exclude)
        if window.omitted and summarizer is not None:
            end, picked = await asyncio.to_thread(self.to_summarize, state, window, exclude)
            if picked:
                previous = window.summary.text if window.summary else None
                if is_async_callable(summarizer):
                    text = await summarizer(previous, picked)  # type: ignore[misc]
                else:
                    text = await asyncio.to_thread(summarizer, previous, picked)
                if inspect.isawaitable(text):
                    text = await text
                state, window = await asyncio.to_thread(
                    self.summarized_then_rebuilt, state, window, budget, exclude, end, picked,
                    str(text), summarizer_name, form)
        return await asyncio.to_thread(self.finish, state, window, budget, form,
                                       _summarized(window))


def as_summary(event: HistoryCompacted) -> SummaryRecorded:
    """A compaction's summary as the context reads a summary: it covers the range."""
    return SummaryRecorded(at=event.at, from_version=event.from_version,
                           to_version=event.to_version, message_count=event.message_count,
                           text=event.text, tokens=event.tokens_after,
                           summarizer=event.summarizer)


def _summarized(window: Window) -> int:
    return window.summary.message_count if window.summary else 0
