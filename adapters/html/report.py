"""What the report's index page shows, as plain JSON-ready data.

Everything comes from the log's read models through the public API: the catalog
(`log.conversations`), costs (`log.costs`), telemetry (`log.telemetry`) and, for the
series over time and the list of memory-lost resumes, SQL over the documented views
(`resume_attempts`, `resumes`). The page's script draws the charts and runs the
filters from this data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import convlog
from convlog.projections.money import usd_text


def _iso(value: Any) -> str | None:
    return None if value is None else value.isoformat()


def catalog(log: convlog.ConversationLog, link: Callable[[str], str]) -> list[dict[str, Any]]:
    return [{
        "key": row.key, "href": link(row.key), "title": row.title, "user": row.user,
        "agent": row.agent, "status": row.status, "messages": row.message_count,
        "tokens": row.input_tokens + row.output_tokens + row.cache_read_tokens
        + row.cache_write_tokens, "cost": row.cost_usd, "cost_incomplete": row.cost_incomplete,
        "cost_text": usd_text(row.cost_usd, row.cost_incomplete),
        "last_active": _iso(row.last_active_at), "created": _iso(row.created_at),
    } for row in log.conversations(include_archived=True)]


def success_over_time(log: convlog.ConversationLog) -> dict[str, Any]:
    """Success rate of each strategy per day: {days: [...], series: {strategy: [...]}}."""
    _, rows = log.sql(
        "SELECT CAST(CAST(\"at\" AS DATE) AS VARCHAR) AS day, strategy,"
        " count(*) FILTER (WHERE outcome = 'succeeded') / count(*) AS rate"
        " FROM resume_attempts GROUP BY 1, 2 ORDER BY 1, 2")
    days = sorted({r[0] for r in rows})
    series: dict[str, list[float | None]] = {}
    for day, strategy, rate in rows:
        series.setdefault(strategy, [None] * len(days))[days.index(day)] = float(rate)
    return {"days": days, "series": series}


def per_day(log: convlog.ConversationLog) -> dict[str, Any]:
    rows = [r for r in log.telemetry(by="day") if r.group is not None]
    rows.sort(key=lambda r: r.group or "")
    return {"days": [r.group for r in rows],
            "fallback_rate": [r.fallback_rate for r in rows],
            "injected_tokens_per_fallback": [r.injected_tokens_per_fallback for r in rows]}


def memory_lost(log: convlog.ConversationLog, link: Callable[[str], str]
                ) -> list[dict[str, Any]]:
    _, rows = log.sql(
        "SELECT key, started_at, agent, worked_strategy FROM resumes WHERE memory_lost"
        " ORDER BY started_at DESC")
    return [{"key": key, "href": link(key), "at": _iso(at), "agent": agent,
             "strategy": strategy} for key, at, agent, strategy in rows]


def costs(log: convlog.ConversationLog, by: str) -> list[dict[str, Any]]:
    return [{"group": row.group or "(none)", "cost": row.cost_usd or 0.0,
             "input": row.input_tokens, "output": row.output_tokens,
             "incomplete": row.cost_incomplete} for row in log.costs(by=by)]


def report_data(log: convlog.ConversationLog, link: Callable[[str], str]) -> dict[str, Any]:
    strategies = [{
        "strategy": r.group, "attempts": r.attempts, "succeeded": r.succeeded,
        "success_rate": r.success_rate, "p50_ms": r.p50_latency_ms,
    } for r in log.telemetry(by="strategy")]
    overall = log.telemetry(by="client")
    resumes = sum(r.resumes for r in overall)
    fallbacks = sum(r.fallbacks for r in overall)
    return {
        "conversations": catalog(log, link),
        "strategies": strategies,
        "success_over_time": success_over_time(log),
        "per_day": per_day(log),
        "memory_lost": memory_lost(log, link),
        "cost_by_agent": costs(log, "agent"),
        "cost_by_model": costs(log, "model"),
        "resumes": resumes,
        "fallback_rate": fallbacks / resumes if resumes else None,
    }
