"""Tokens and USD of an import: what the summary reports for the messages it added.

Each provider response is counted once (the first record that carries it, as in the
views), and only for messages this run added: a re-import adds no tokens and no cost.
USD comes from the log's price table (host overrides first), base tier, like the views.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from convlog.accounting.prices import PriceTable
from convlog.services.importing import ImportedConversation

if TYPE_CHECKING:
    from convlog.services.import_run import ImportSummary


def count_usage(conv: ImportedConversation, appended: Iterable[str], summary: ImportSummary,
                 prices: PriceTable, unpriced: set[str]) -> None:
    """Tokens and USD of the messages added now, each provider response once (the
    first record that carries it, as in the views)."""
    new = set(appended)
    seen: set[str] = set()
    for message in conv.messages:
        response = message.response_id
        first = response is None or response not in seen
        if response is not None:
            seen.add(response)
        usage = message.usage
        if usage is None or not first or message.id not in new:
            continue
        summary.input_tokens += usage.input_tokens
        summary.output_tokens += usage.output_tokens
        summary.cache_read_tokens += usage.cache_read_tokens
        summary.cache_write_tokens += usage.cache_write_tokens
        if message.cost_usd is not None:
            summary.cost_usd += float(message.cost_usd)
            continue
        if not any(getattr(usage, name) for name in usage.__struct_fields__):
            continue  # e.g. Claude Code's "<synthetic>" error messages: nothing to price
        found = prices.rates(message.model) if message.model else None
        if found is None:
            unpriced.add(message.model or "(no model)")
            continue
        rate = found[0]
        summary.cost_usd += (
            usage.input_tokens * rate.input_per_mtok
            + usage.output_tokens * rate.output_per_mtok
            + usage.cache_read_tokens * _or(rate.cache_read_per_mtok, rate.input_per_mtok)
            + usage.cache_write_tokens * _or(rate.cache_write_per_mtok, rate.input_per_mtok)
        ) / 1e6


def _or(rate: float | None, default: float) -> float:
    return default if rate is None else rate
