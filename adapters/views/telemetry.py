"""Resume-success telemetry: how often each resume tier works, and what fallback costs.

Analyst-facing SQL views (created in the DuckDB store; `convlog sql` sees them):

- ``resume_attempts``: one row per tier tried: outcome ``succeeded``, ``failed`` or
  ``abandoned`` (attempted, but no outcome was ever recorded: the host died).
- ``resumes``: one row per resume: the tries up to and including the first success
  of a conversation's run of attempts, which tier finally worked, total latency,
  whether history was injected, and ``memory_lost``: a fresh (empty) session that got
  no injected history although the conversation had messages before.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import msgspec

from convlog.domain.errors import InvalidInput

TELEMETRY_GROUPS: tuple[str, ...] = ("strategy", "agent", "client", "day", "reason")

class TelemetryRow(msgspec.Struct, frozen=True, kw_only=True):
    """Attempt-level figures for the group (`attempts`..`p95_latency_ms`) and
    resume-level ones (`resumes`..`memory_lost`). By strategy, a resume counts under
    the tier that finally worked; by reason, under its first failure's reason."""

    group: str | None
    attempts: int
    succeeded: int
    failed: int
    abandoned: int
    success_rate: float | None
    p50_latency_ms: float | None
    p95_latency_ms: float | None
    resumes: int
    fallbacks: int
    """Resumes that ended on a fresh (empty) agent session."""
    fallback_rate: float | None
    injected_tokens_per_fallback: float | None
    memory_lost: int


_ATTEMPT_GROUP = {"strategy": "strategy", "agent": "agent", "client": "client",
                  "day": 'CAST(CAST("at" AS DATE) AS VARCHAR)',
                  "reason": "COALESCE(reason, outcome)"}
_RESUME_GROUP = {"strategy": "COALESCE(worked_strategy, 'none worked')", "agent": "agent",
                 "client": "client", "day": "CAST(CAST(started_at AS DATE) AS VARCHAR)",
                 "reason": "COALESCE(first_failure_reason, 'none failed')"}


def telemetry_sql(by: str, since: date | datetime | None) -> tuple[str, list[object]]:
    if by not in TELEMETRY_GROUPS:
        raise InvalidInput(f"cannot group telemetry by {by!r}; expected one of "
                           f"{', '.join(TELEMETRY_GROUPS)}", field="by")
    params: list[object] = []
    attempts_where = resumes_where = "TRUE"
    if since is not None:
        moment = since if isinstance(since, datetime) else datetime(
            since.year, since.month, since.day, tzinfo=UTC)
        naive = moment.astimezone(UTC).replace(tzinfo=None)
        attempts_where, resumes_where = '"at" >= ?', "started_at >= ?"
        params = [naive, naive]
    sql = f"""
        WITH a AS (
            SELECT {_ATTEMPT_GROUP[by]} AS g, count(*) AS attempts,
                   count(*) FILTER (WHERE outcome = 'succeeded') AS succeeded,
                   count(*) FILTER (WHERE outcome = 'failed') AS failed,
                   count(*) FILTER (WHERE outcome = 'abandoned') AS abandoned,
                   quantile_cont(latency_ms, 0.5) AS p50, quantile_cont(latency_ms, 0.95) AS p95
            FROM resume_attempts WHERE {attempts_where} GROUP BY 1),
        r AS (
            SELECT {_RESUME_GROUP[by]} AS g, count(*) AS resumes,
                   count(*) FILTER (WHERE fresh) AS fallbacks,
                   sum(injected_tokens) FILTER (WHERE fresh) AS fallback_tokens,
                   count(*) FILTER (WHERE memory_lost) AS memory_lost
            FROM resumes WHERE {resumes_where} GROUP BY 1)
        SELECT COALESCE(a.g, r.g) AS "group",
               COALESCE(a.attempts, 0) AS attempts, COALESCE(a.succeeded, 0) AS succeeded,
               COALESCE(a.failed, 0) AS failed, COALESCE(a.abandoned, 0) AS abandoned,
               a.succeeded / NULLIF(a.attempts, 0) AS success_rate,
               a.p50 AS p50_latency_ms, a.p95 AS p95_latency_ms,
               COALESCE(r.resumes, 0) AS resumes, COALESCE(r.fallbacks, 0) AS fallbacks,
               r.fallbacks / NULLIF(r.resumes, 0) AS fallback_rate,
               r.fallback_tokens / NULLIF(r.fallbacks, 0) AS injected_tokens_per_fallback,
               COALESCE(r.memory_lost, 0) AS memory_lost
        FROM a FULL OUTER JOIN r ON a.g IS NOT DISTINCT FROM r.g
        ORDER BY attempts DESC, resumes DESC, 1"""
    return sql, params


def to_rows(dicts: list[dict[str, Any]]) -> list[TelemetryRow]:
    return [msgspec.convert(d, TelemetryRow) for d in dicts]
