"""`ConvlogSession`: the OpenAI Agents SDK's `Session` protocol on a convlog log.

    from agents import Agent, Runner
    from convlog.integrations.openai_agents import ConvlogSession

    session = ConvlogSession("user-42", "sqlite:///convlog.db", model="gpt-4o")
    await Runner.run(agent, "hi", session=session)      # instead of SQLiteSession(...)

How the protocol maps onto the log, and why:

- `add_items`: one `append_turn` (one transaction) of messages that keep each item
  verbatim as `raw`, so `get_items` gives back exactly what was added.
- `get_items(limit)`: the live messages of the current epoch; with a limit only
  about that many rows are read, like `SQLiteSession`.
- `pop_item`: a compensating `message_retracted` event; the item stays in the log, so
  a replay still shows what the agent saw before the pop.
- `clear_session`: a new epoch (`conversation_cleared`); history stays for the record.
- Usage: every method takes the SDK's optional `wrapper` (its run context), so the
  tokens a run used since the last write are recorded on the run's last model item,
  with the `model` given here; `log.costs()` then prices SDK runs like any other.
- Agent: the `agent` given here, else the name of the agent the SDK is running when
  it writes (its agent span, kept even with tracing disabled), so traces and views
  name the agent (issue 41).

The log is blocking (sqlite3, psycopg): each call runs in a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import convlog
from convlog.domain.conversation import AppendMessages, StartConversation
from convlog.domain.errors import UnknownConversation
from convlog.domain.events import ConversationStarted
from convlog.integrations.extras import require
from convlog.integrations.openai_items import (
    compaction_summary,
    from_message,
    is_user_item,
    paired_items,
    to_message,
)
from convlog.integrations.settled import write_in_thread
from convlog.projections.pair_causes import imported
from convlog.services.log import application

require("openai-agents", "agents", "convlog.integrations.openai_agents")

from agents.memory.session_settings import (  # noqa: E402  (after the extra's check)
    SessionSettings,
    coerce_session_settings,
    resolve_session_limit,
)
from agents.tracing import AgentSpanData, get_current_span  # noqa: E402

if TYPE_CHECKING:
    from agents.items import TResponseInputItem
    from agents.run_context import RunContextWrapper
    from agents.usage import Usage as RunUsage

CHANNEL = "openai-agents"
class ConvlogSession:
    """A conversation of a convlog log as an Agents SDK session (`session_id` is the
    conversation key unless `key` says otherwise). `log`: an open `ConversationLog`
    (shared, not closed here) or a URL (opened here, closed by `close()`)."""

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        session_id: str,
        log: convlog.ConversationLog | str | None = None,
        *,
        key: str | None = None,
        model: str | None = None,
        agent: str | None = None,
        user: str | None = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
    ) -> None:
        self.session_id = session_id
        self.key = key if key is not None else session_id
        self.model, self.agent, self.user = model, agent, user
        self.session_settings = (coerce_session_settings(session_settings)
                                 if session_settings is not None else SessionSettings())
        self._owns_log = not isinstance(log, convlog.ConversationLog)
        self.log = log if isinstance(log, convlog.ConversationLog) else convlog.open(log)
        self.app = application(self.log)
        """Its application (services.application): this store's writes."""
        self._usage_seen: tuple[RunUsage, int, int, int] | None = None  # (run, in, cached, out)

    # ---------------------------------------------------------------- protocol

    async def get_items(self, limit: int | None = None,
                        wrapper: RunContextWrapper[Any] | None = None
                        ) -> list[TResponseInputItem]:
        """The live items, oldest first; the newest `limit` when given (else the
        session settings' limit)."""
        last = resolve_session_limit(limit, self.session_settings)
        if last is not None and last < 0:  # SQLiteSession reads everything (LIMIT -1)
            last = None
        return await asyncio.to_thread(self._get_items, last)

    async def add_items(self, items: list[TResponseInputItem],
                        wrapper: RunContextWrapper[Any] | None = None) -> None:
        """Append `items` in one transaction (all or nothing)."""
        if not items:
            return
        usage = self._usage_delta(wrapper.usage) if wrapper is not None else None
        await write_in_thread(self._add_items, list(items), usage,
                              self.agent or _running_agent())

    async def pop_item(self, wrapper: RunContextWrapper[Any] | None = None
                       ) -> TResponseInputItem | None:
        """Retract the newest live item and return it (None when there is none)."""
        popped = await write_in_thread(self.log.retract_last, self.key, "pop_item")
        return None if popped is None else from_message(popped)  # type: ignore[return-value]

    async def clear_session(self, wrapper: RunContextWrapper[Any] | None = None) -> None:
        """Start a new epoch: no live items; earlier ones stay in the log."""
        await write_in_thread(self._clear)

    # ---------------------------------------------------------------- lifecycle

    def close(self) -> None:
        """Close the log when this session opened it."""
        if self._owns_log:
            self.log.close()

    # ------------------------------------------------------------------ helpers

    def _get_items(self, last: int | None) -> list[TResponseInputItem]:
        """The live items, read lean (`ConversationLog.live_items`, issue 30: messages
        that keep the SDK's item are decoded without usage, tokens, times), then
        paired as one list (issue 28)."""
        try:
            found = self.log.live_items(self.key, last=last, summarized=compaction_summary,
                                        kept=is_user_item)
        except UnknownConversation:
            return []
        # RawItem has every field pairing and from_message read (see its docstring)
        return paired_items(found, last, retracted=self._retracted,  # type: ignore[arg-type]
                            imported=self._imported,
                            whole=lambda: self.log.live_messages(self.key, last=last)
                            )  # type: ignore[return-value]

    def _retracted(self, since: str) -> list[Any]:
        """The messages retracted since message `since` (an output `pop_item` took
        back): read only when some output is lost, to say why."""
        return self.app.retracted_since(self.key, since)

    def _imported(self) -> bool:
        """Whether the conversation came from an importer (one read of its start),
        asked only when some output is lost."""
        start = self.log.events(self.key, upto=1)
        return bool(start) and isinstance(start[0].event, ConversationStarted) and imported(
            start[0].event)

    def _add_items(self, items: Sequence[TResponseInputItem],
                   usage: convlog.Usage | None, agent: str | None) -> None:
        # the run's tokens go on its last assistant item: one response, counted once
        carrier = max((i for i, item in enumerate(items)
                       if isinstance(item, dict) and item.get("role") != "user"
                       and item.get("type", "message") != "function_call_output"),
                      default=None)
        messages = [to_message(item, model=self.model, agent=agent,
                               usage=usage if i == carrier else None, field=f"items[{i}]")
                    for i, item in enumerate(items)]
        self.app.execute(self.key, [
            StartConversation(channel=CHANNEL, user=self.user, agent=self.agent),
            AppendMessages(messages=messages)])

    def _clear(self) -> None:
        if self.log.exists(self.key):
            self.log.clear(self.key, reason="clear_session")

    def _usage_delta(self, usage: RunUsage) -> convlog.Usage | None:
        """The run's tokens not yet recorded: the wrapper's usage is cumulative over
        a run, and one run writes to its session several times."""
        cached = usage.input_tokens_details.cached_tokens or 0
        now = (usage, usage.input_tokens, cached, usage.output_tokens)
        seen = self._usage_seen
        base = seen if seen is not None and seen[0] is usage else None
        self._usage_seen = now
        d_in, d_cached, d_out = (now[1] - base[1], now[2] - base[2], now[3] - base[3]
                                 ) if base else now[1:]
        if not (d_in or d_out):
            return None
        return convlog.Usage(input_tokens=max(0, d_in - d_cached), cache_read_tokens=d_cached,
                             output_tokens=d_out)


def _running_agent() -> str | None:
    """The name of the agent the SDK is running, when the host did not name one: a
    `Runner` writes a run's items inside that agent's span, which the SDK keeps even
    with tracing disabled (a no-op span still carries its data). None outside one
    (a run's input items are written before its agent starts)."""
    span = get_current_span()
    data = getattr(span, "span_data", None) if span is not None else None
    return data.name if isinstance(data, AgentSpanData) and data.name else None
