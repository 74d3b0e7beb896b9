"""Message facts for cost metadata: tokens and USD per message, append-only.

Pricing is injected (`Pricer`): the adapter supplies a price table, the projection
decides which figure wins. A cost the host reported itself wins over the table; a
model the table does not know gives a null cost and `cost_unknown`, never zero.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from convlog.domain.content import Usage
from convlog.domain.events import MessageAppended
from convlog.projections.views import Column, Notified, Rows, Table


class Quote(NamedTuple):
    usd: float
    version: str
    """Which price table (and version) produced the figure."""


Pricer = Callable[[str, Usage], Quote | None]

MESSAGES = Table("messages", (
    Column("conversation_id", "VARCHAR"),
    Column("version", "BIGINT"),
    Column("position", "BIGINT"),
    Column("at", "TIMESTAMP"),
    Column("message_id", "VARCHAR"),
    Column("role", "VARCHAR"),
    Column("model", "VARCHAR"),
    Column("agent", "VARCHAR"),
    Column("response_id", "VARCHAR"),
    Column("input_tokens", "BIGINT"),
    Column("output_tokens", "BIGINT"),
    Column("cache_read_tokens", "BIGINT"),
    Column("cache_write_tokens", "BIGINT"),
    Column("content_tokens", "BIGINT"),
    Column("cost_usd", "DOUBLE"),
    Column("cost_source", "VARCHAR"),
    Column("price_version", "VARCHAR"),
    Column("cost_unknown", "BOOLEAN"),
), doc="one row per message: role, model, agent, usage tokens, USD and where the USD came from")


class UsageView:
    tables = (MESSAGES,)

    def __init__(self, pricer: Pricer):
        self.pricer = pricer

    def rows(self, batch: Sequence[Notified]) -> Rows:
        out: list[tuple[object, ...]] = []
        for n in batch:
            e = n.event
            if not isinstance(e, MessageAppended):
                continue
            usage = e.usage
            cost, source, version, unknown = self.cost(e)
            out.append((
                str(n.conversation_id), n.version, n.position, e.at, e.message_id, e.role,
                e.model, e.agent, e.response_id,
                usage.input_tokens if usage else None, usage.output_tokens if usage else None,
                usage.cache_read_tokens if usage else None,
                usage.cache_write_tokens if usage else None,
                e.tokens, cost, source, version, unknown))
        return {MESSAGES.name: out}

    def cost(self, e: MessageAppended) -> tuple[float | None, str | None, str | None, bool]:
        if e.cost_usd is not None:
            return float(e.cost_usd), "host", None, False
        if e.usage is None:
            return None, None, None, False  # nothing was spent on this message
        quote = self.pricer(e.model, e.usage) if e.model else None
        if quote is None:
            return None, None, None, True
        return quote.usd, "table", quote.version, False
