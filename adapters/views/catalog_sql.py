"""The session catalog's one SQL statement, built from its filters.

Apart from `analytics` so that the benchmark of its growth (bench.catalog_scale) runs
the very statement `log.conversations()` runs, on catalogs far larger than it can
write through the log in a run.

The page is cut first, from the `sessions` table alone (the order is its own
columns), and only that page is joined with usage and agents. Joining every selected
conversation before the cut made the first page grow with the catalog: 11 / 26 / 142
ms at 1k / 10k / 100k conversations, 4.5 s at 1M (issue 45). The cut is
MATERIALIZED: it is read three times, and must be computed once.
"""

from __future__ import annotations

from datetime import UTC, datetime

from convlog.projections.catalog import STATE_CHANNELS

_STATE_CHANNELS = ", ".join(f"'{c}'" for c in STATE_CHANNELS)
ORDER = "ORDER BY s.last_active_at DESC NULLS LAST, s.key"
"""Most recently active first; the key breaks ties, so pages never overlap."""


def catalog_query(*, user: str | None = None, agent: str | None = None,
                  include_archived: bool = False, idle_before: datetime | None = None,
                  limit: int | None = None, workspace: str | None = None,
                  key: str | None = None) -> tuple[str, list[object]]:
    """(SQL, parameters) of the catalog rows that match, newest activity first."""
    # a surface's own state (ADK's adk-state: scopes) is no conversation
    where: list[str] = [f"(s.channel IS NULL OR s.channel NOT IN ({_STATE_CHANNELS}))"]
    params: list[object] = []
    if key is not None:  # one conversation's row (a summary)
        where.append("s.key = ?")
        params.append(key)
    if user is not None:
        where.append('s."user" = ?')
        params.append(user)
    if workspace is not None:
        where.append("s.workspace = ?")
        params.append(workspace)
    if agent is not None:
        where.append("s.agent = ?")
        params.append(agent)
    if not include_archived:
        where.append("s.status = 'active'")
    if idle_before is not None:
        where.append("s.last_active_at < ?")
        params.append(idle_before.astimezone(UTC).replace(tzinfo=None))
    page = f"{ORDER} LIMIT {int(limit)}" if limit else ""
    sql = f"""
        WITH s AS MATERIALIZED (SELECT * FROM sessions s WHERE {' AND '.join(where)} {page}),
        -- Semi-joins: only the page's rows are joined.
        u AS (SELECT * FROM conversation_usage
              WHERE conversation_id IN (SELECT conversation_id FROM s)),
        agents AS (
            SELECT conversation_id, list(agent ORDER BY messages DESC, agent)[1:5] AS top
            FROM conversation_agents WHERE conversation_id IN (SELECT conversation_id FROM s)
            GROUP BY conversation_id),
        kids AS (  -- the page's forks: one column of the table scanned
            SELECT parent AS key, list(key ORDER BY key) AS children FROM sessions
            WHERE parent IN (SELECT key FROM s) GROUP BY parent)
        SELECT s.key, s."user", s.agent, s.channel, s.title, s.workspace, s.status,
               s.created_at, s.last_active_at, s.message_count, s.content_tokens,
               COALESCE(u.input_tokens, 0) AS input_tokens,
               COALESCE(u.output_tokens, 0) AS output_tokens,
               COALESCE(u.cache_read_tokens, 0) AS cache_read_tokens,
               COALESCE(u.cache_write_tokens, 0) AS cache_write_tokens,
               u.cost_usd, COALESCE(u.cost_unknown, FALSE) AS cost_incomplete,
               COALESCE(a.top, []) AS top_agents, s.version, s.native_session_id,
               COALESCE(s.forgotten, FALSE) AS forgotten, s.parent, s.fork_at,
               COALESCE(k.children, []) AS children
        FROM s LEFT JOIN u USING (conversation_id)
               LEFT JOIN agents a USING (conversation_id)
               LEFT JOIN kids k ON k.key = s.key
        {ORDER}"""
    return sql, params
