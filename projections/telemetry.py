"""Resume telemetry facts: every resume attempt and outcome, every injection."""

from __future__ import annotations

from convlog.projections.views import Column, Table, View

# Stored format: resume outcomes of class version 1 kept latency in seconds
# (`latency_s`); version 2 in milliseconds (`latency_ms`). Mirrors the upcaster.
# `fresh` was added later as an optional field; when absent, a strategy named like
# "session/new" is fresh (the same rule as convlog.Tier).
_LATENCY_MS = "CASE WHEN v = 1 THEN e.latency_s * 1000 ELSE e.latency_ms END"

RESUME_EVENTS = Table(
    "resume_events",
    (
        Column("conversation_id", "VARCHAR"),
        Column("version", "BIGINT"),
        Column("position", "BIGINT"),
        Column("at", "TIMESTAMP"),
        Column("kind", "VARCHAR"),
        Column("strategy", "VARCHAR"),
        Column("native_session_id", "VARCHAR"),
        Column("reason", "VARCHAR"),
        Column("error", "VARCHAR"),
        Column("latency_ms", "DOUBLE"),
        Column("fresh", "BOOLEAN"),
    ),
    select=f"""
        SELECT conversation_id, version, position, "at", replace(topic, 'resume_', ''),
               e.strategy, e.native_session_id,
               CASE WHEN topic = 'resume_failed' THEN COALESCE(e.reason, 'error') END,
               e.error,
               CASE WHEN topic = 'resume_attempted' THEN NULL ELSE {_LATENCY_MS} END,
               CASE WHEN topic = 'resume_succeeded' THEN COALESCE(
                   e.fresh, regexp_matches(lower(e.strategy), '(^|[/:._ -])new$')) END
        FROM batch
        WHERE topic IN ('resume_attempted', 'resume_succeeded', 'resume_failed')""",
    doc="resume_attempted / resume_succeeded / resume_failed, one row each",
)

INJECTIONS = Table(
    "injections",
    (
        Column("conversation_id", "VARCHAR"),
        Column("version", "BIGINT"),
        Column("position", "BIGINT"),
        Column("at", "TIMESTAMP"),
        Column("native_session_id", "VARCHAR"),
        Column("from_version", "BIGINT"),
        Column("to_version", "BIGINT"),
        Column("message_count", "BIGINT"),
        Column("tokens", "BIGINT"),
        Column("format", "VARCHAR"),
    ),
    select="""
        SELECT conversation_id, version, position, "at", e.native_session_id, e.from_version,
               e.to_version, e.message_count, e.tokens, e.format
        FROM batch WHERE topic = 'history_injected'""",
    doc="history injected into fresh agent sessions: range, size, format",
)

TELEMETRY = View("telemetry", (RESUME_EVENTS, INJECTIONS), fields={
    "strategy": "VARCHAR", "native_session_id": "VARCHAR", "reason": "VARCHAR",
    "error": "VARCHAR", "latency_ms": "DOUBLE", "latency_s": "DOUBLE",
    "from_version": "BIGINT", "to_version": "BIGINT", "message_count": "BIGINT",
    "tokens": "BIGINT", "format": "VARCHAR", "fresh": "BOOLEAN"})
