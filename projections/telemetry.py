"""Resume telemetry facts: every resume attempt and outcome, every injection."""

from __future__ import annotations

from convlog.domain.events import FRESH_STRATEGY
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
                   e.fresh, regexp_matches(lower(e.strategy), '{FRESH_STRATEGY}')) END
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

CONTEXT_WINDOWS = Table(
    "context_windows",
    (
        Column("conversation_id", "VARCHAR"),
        Column("version", "BIGINT"),
        Column("position", "BIGINT"),
        Column("at", "TIMESTAMP"),
        Column("used", "BIGINT"),
        Column("size", "BIGINT"),
        Column("message_id", "VARCHAR"),
        Column("native_session_id", "VARCHAR"),
    ),
    select="""
        SELECT conversation_id, version, position, "at", e.used, e.size, e.message_id,
               e.native_session_id
        FROM batch WHERE topic = 'context_window_reported'""",
    doc="how full the agent's context window was after each turn (ACP usage_update)",
)

_TOUCHED = "conversation_id IN (SELECT conversation_id FROM touched)"

RESUME_ATTEMPTS = Table(
    "resume_attempts",
    (
        Column("conversation_id", "VARCHAR"),
        Column("key", "VARCHAR"),
        Column("user", "VARCHAR"),
        Column("agent", "VARCHAR"),
        Column("client", "VARCHAR"),
        Column("strategy", "VARCHAR"),
        Column("outcome", "VARCHAR"),
        Column("reason", "VARCHAR"),
        Column("error", "VARCHAR"),
        Column("latency_ms", "DOUBLE"),
        Column("fresh", "BOOLEAN"),
        Column("native_session_id", "VARCHAR"),
        Column("at", "TIMESTAMP"),
        Column("version", "BIGINT"),
        Column("window_used", "BIGINT"),
        Column("window_size", "BIGINT"),
    ),
    select=f"""
        WITH x AS (
            SELECT *, lead(kind) OVER w AS next_kind, lead(strategy) OVER w AS next_strategy
            FROM resume_events WHERE {_TOUCHED}
            WINDOW w AS (PARTITION BY conversation_id ORDER BY version))
        SELECT x.conversation_id, s.key, s."user", s.agent, s.client, x.strategy,
               CASE WHEN x.kind = 'attempted' THEN 'abandoned' ELSE x.kind END,
               x.reason, x.error, x.latency_ms, x.fresh, x.native_session_id, x."at",
               x.version,
               (SELECT arg_max(w.used, w.version) FROM context_windows w
                WHERE w.conversation_id = x.conversation_id AND w.version < x.version),
               (SELECT arg_max(w.size, w.version) FROM context_windows w
                WHERE w.conversation_id = x.conversation_id AND w.version < x.version)
        FROM x LEFT JOIN sessions s USING (conversation_id)
        WHERE x.kind <> 'attempted'
           OR NOT COALESCE(next_kind IN ('succeeded', 'failed')
                           AND next_strategy = x.strategy, FALSE)""",
    doc="one row per tier tried: succeeded, failed, or abandoned (attempted, but the host "
        "died before recording an outcome); window_used/window_size: how full the agent's "
        "context window was at its last report before the attempt",
    derived=True,
    touched_by=("resume_attempted", "resume_succeeded", "resume_failed"),
)

RESUMES = Table(
    "resumes",
    (
        Column("conversation_id", "VARCHAR"),
        Column("resume_seq", "BIGINT"),
        Column("key", "VARCHAR"),
        Column("user", "VARCHAR"),
        Column("agent", "VARCHAR"),
        Column("client", "VARCHAR"),
        Column("started_at", "TIMESTAMP"),
        Column("tries", "BIGINT"),
        Column("total_latency_ms", "DOUBLE"),
        Column("first_strategy", "VARCHAR"),
        Column("first_failure_reason", "VARCHAR"),
        Column("worked_strategy", "VARCHAR"),
        Column("succeeded", "BOOLEAN"),
        Column("fresh", "BOOLEAN"),
        Column("injected", "BOOLEAN"),
        Column("injected_tokens", "BIGINT"),
        Column("injected_messages", "BIGINT"),
        Column("memory_lost", "BOOLEAN"),
    ),
    select=f"""
        WITH a AS (
            SELECT *, COALESCE(sum(CASE WHEN outcome = 'succeeded' THEN 1 ELSE 0 END) OVER (
                       PARTITION BY conversation_id ORDER BY version
                       ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS resume_seq
            FROM resume_attempts WHERE {_TOUCHED}),
        r AS (
            SELECT conversation_id, resume_seq, any_value(key) AS key,
                   any_value("user") AS "user", any_value(agent) AS agent,
                   any_value(client) AS client, min("at") AS started_at,
                   min(version) AS start_version, max(version) AS end_version,
                   count(*) AS tries, sum(latency_ms) AS total_latency_ms,
                   arg_min(strategy, version) AS first_strategy,
                   arg_min(reason, version) FILTER (WHERE outcome = 'failed')
                       AS first_failure_reason,
                   arg_max(strategy, version) FILTER (WHERE outcome = 'succeeded')
                       AS worked_strategy,
                   bool_or(outcome = 'succeeded') AS succeeded,
                   COALESCE(bool_or(fresh) FILTER (WHERE outcome = 'succeeded'), FALSE)
                       AS fresh
            FROM a GROUP BY conversation_id, resume_seq),
        bounded AS (
            SELECT *, lead(start_version) OVER (PARTITION BY conversation_id
                                                ORDER BY resume_seq) AS next_start
            FROM r),
        injected AS (
            SELECT b.conversation_id, b.resume_seq, sum(i.tokens) AS tokens,
                   sum(i.message_count) AS messages
            FROM bounded b JOIN injections i ON i.conversation_id = b.conversation_id
             AND i.version > b.end_version
             AND (b.next_start IS NULL OR i.version < b.next_start)
            GROUP BY ALL),
        first_message AS (
            SELECT conversation_id, min(version) AS version FROM messages
            WHERE {_TOUCHED} GROUP BY ALL)
        SELECT b.conversation_id, b.resume_seq, b.key, b."user", b.agent, b.client,
               b.started_at, b.tries, b.total_latency_ms, b.first_strategy,
               b.first_failure_reason, b.worked_strategy, b.succeeded, b.fresh,
               j.tokens IS NOT NULL, j.tokens, j.messages,
               (b.fresh AND j.tokens IS NULL AND COALESCE(f.version < b.start_version, FALSE))
        FROM bounded b LEFT JOIN injected j USING (conversation_id, resume_seq)
                       LEFT JOIN first_message f USING (conversation_id)""",
    doc="one row per resume (attempts up to a conversation's next success): tries, the "
        "tier that worked, latency, injection, memory_lost",
    derived=True,
    # memory_lost also reads the conversation's first message, which precedes any
    # resume that counts: a later message cannot change a resume row.
    touched_by=("resume_attempted", "resume_succeeded", "resume_failed", "history_injected"),
)

RETENTION_ACTIONS = Table(
    "retention_actions",
    (
        Column("conversation_id", "VARCHAR"),
        Column("version", "BIGINT"),
        Column("position", "BIGINT"),
        Column("at", "TIMESTAMP"),
        Column("action", "VARCHAR"),
        Column("source", "VARCHAR"),
        Column("idle_days", "DOUBLE"),
        Column("cap", "VARCHAR"),
    ),
    select="""
        SELECT conversation_id, version, position, "at",
               CASE topic WHEN 'session_archived' THEN 'archive'
                          WHEN 'conversation_erased' THEN 'erase'
                          WHEN 'retention_cap_reached' THEN 'cap_reached'
                          ELSE 'policy_set' END,
               CASE WHEN topic = 'retention_cap_reached' THEN e.source
                    WHEN topic = 'retention_policy_set' THEN NULL
                    ELSE e.retention.source END,
               e.retention.idle_days,
               CASE WHEN topic = 'retention_cap_reached' THEN e."limit" END
        FROM batch
        WHERE topic IN ('conversation_erased', 'retention_cap_reached', 'retention_policy_set')
           OR (topic = 'session_archived' AND e.retention IS NOT NULL)""",
    doc="what retention did (archive, erase), a turn refused at a cap, a policy set "
        "(in a conversation, or the store's settings stream): one row each",
)

TELEMETRY = View("telemetry", (RESUME_EVENTS, INJECTIONS, CONTEXT_WINDOWS, RESUME_ATTEMPTS,
                               RESUMES, RETENTION_ACTIONS), fields={
    "retention": {"source": "VARCHAR", "idle_days": "DOUBLE"}, "source": "VARCHAR",
    "limit": "VARCHAR",
    "strategy": "VARCHAR", "native_session_id": "VARCHAR", "reason": "VARCHAR",
    "error": "VARCHAR", "latency_ms": "DOUBLE", "latency_s": "DOUBLE",
    "from_version": "BIGINT", "to_version": "BIGINT", "message_count": "BIGINT",
    "tokens": "BIGINT", "format": "VARCHAR", "fresh": "BOOLEAN", "used": "BIGINT",
    "size": "BIGINT", "message_id": "VARCHAR"})
