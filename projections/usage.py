"""Message facts for cost metadata: tokens and USD per message, append-only.

USD comes from ``model_prices`` (model, USD per million input/output/cache-read/
cache-write tokens, version), a table the adapter fills from its price table for
the models a batch names. A cost the host reported itself wins over the table; a
model the table does not know gives a null cost and `cost_unknown`, never zero;
a message without usage (a user's message) has no cost and is not "unknown".
"""

from __future__ import annotations

from convlog.projections.catalog import RECORD_FIELDS, RECORD_SQL
from convlog.projections.views import Column, Table, View

MODEL_PRICES = Table(
    "model_prices",
    (
        Column("model", "VARCHAR", "key"),
        Column("input_per_mtok", "DOUBLE"),
        Column("output_per_mtok", "DOUBLE"),
        Column("cache_read_per_mtok", "DOUBLE"),
        Column("cache_write_per_mtok", "DOUBLE"),
        Column("version", "VARCHAR"),
    ),
    select="",  # filled by the adapter from the price table, not from events
    doc="the price used for each model (null rates: the model has no known price)",
)

_USAGE = "CASE WHEN e.usage IS NOT NULL THEN COALESCE(e.usage.{0}, 0) END"  # 0s are omitted

MESSAGES = Table(
    "messages",
    (
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
        Column("counted", "BOOLEAN"),
    ),
    # Fields are pulled out of the event struct once, in `m`: joins then carry narrow
    # rows (measured 2x faster than passing `e` through them). Usage repeated on
    # several records of one response counts once: the first record, earlier batches
    # included. `prior` finds the earlier ones by probing the messages table with this
    # batch's response ids, rather than building a hash table of the whole table.
    select=f"""
        WITH m AS (
            SELECT conversation_id, version, position, "at", e.message_id, e.role, e.model,
                   e.agent, e.response_id, tokens, e.cost_usd,
                   {_USAGE.format('input_tokens')} AS i, {_USAGE.format('output_tokens')} AS o,
                   {_USAGE.format('cache_read_tokens')} AS cr,
                   {_USAGE.format('cache_write_tokens')} AS cw
            FROM batch WHERE topic = 'message_appended' AND NOT {RECORD_SQL}),
        prior AS (
            SELECT DISTINCT conversation_id, response_id FROM messages
            WHERE response_id IN (SELECT response_id FROM m WHERE response_id IS NOT NULL))
        SELECT m.conversation_id, m.version, m.position, m."at", m.message_id, m.role,
               m.model, m.agent, m.response_id, i, o, cr, cw, m.tokens,
               CASE WHEN m.cost_usd IS NOT NULL THEN m.cost_usd
                    WHEN i IS NULL OR p.input_per_mtok IS NULL THEN NULL
                    ELSE (i * p.input_per_mtok + o * p.output_per_mtok
                          + cr * COALESCE(p.cache_read_per_mtok, p.input_per_mtok)
                          + cw * COALESCE(p.cache_write_per_mtok, p.input_per_mtok)
                         ) / 1e6 END,
               CASE WHEN m.cost_usd IS NOT NULL THEN 'host'
                    WHEN i IS NOT NULL AND p.input_per_mtok IS NOT NULL THEN 'table' END,
               CASE WHEN m.cost_usd IS NULL AND i IS NOT NULL
                     AND p.input_per_mtok IS NOT NULL THEN p.version END,
               m.cost_usd IS NULL AND i IS NOT NULL AND p.input_per_mtok IS NULL,
               m.response_id IS NULL OR (
                   row_number() OVER (PARTITION BY m.conversation_id, m.response_id
                                      ORDER BY m.version) = 1
                   AND prior.response_id IS NULL)
        FROM m LEFT JOIN model_prices p ON p.model = m.model
             LEFT JOIN prior ON prior.conversation_id = m.conversation_id
                            AND prior.response_id = m.response_id""",
    doc="one row per message (records an SDK store keeps are none): role, model, agent, "
        "usage tokens, USD and where the USD came from",
)

_JUST_ADDED = """messages WHERE position BETWEEN (SELECT min(position) FROM batch)
                                     AND (SELECT max(position) FROM batch)"""

CONVERSATION_USAGE = Table(
    "conversation_usage",
    (
        Column("conversation_id", "VARCHAR", "key"),
        Column("input_tokens", "BIGINT", "sum"),
        Column("output_tokens", "BIGINT", "sum"),
        Column("cache_read_tokens", "BIGINT", "sum"),
        Column("cache_write_tokens", "BIGINT", "sum"),
        Column("cost_usd", "DOUBLE", "nullsum"),
        Column("cost_unknown", "BOOLEAN", "any"),
        Column("agent_interactions", "BIGINT", "sum"),
    ),
    select=f"""
        SELECT conversation_id,
               COALESCE(sum(input_tokens) FILTER (WHERE counted), 0),
               COALESCE(sum(output_tokens) FILTER (WHERE counted), 0),
               COALESCE(sum(cache_read_tokens) FILTER (WHERE counted), 0),
               COALESCE(sum(cache_write_tokens) FILTER (WHERE counted), 0),
               sum(cost_usd) FILTER (WHERE counted),
               COALESCE(bool_or(cost_unknown AND counted), FALSE),
               count(*) FILTER (WHERE role = 'assistant')
        FROM {_JUST_ADDED} GROUP BY conversation_id""",
    doc="usage and USD totals per conversation (a repeated response counted once)",
)

CONVERSATION_AGENTS = Table(
    "conversation_agents",
    (
        Column("conversation_id", "VARCHAR", "key"),
        Column("agent", "VARCHAR", "key"),
        Column("messages", "BIGINT", "sum"),
    ),
    select=f"""
        SELECT m.conversation_id, COALESCE(m.agent, s.agent) AS agent, count(*)
        FROM (SELECT * FROM {_JUST_ADDED}) m JOIN sessions s USING (conversation_id)
        WHERE m.role = 'assistant' AND COALESCE(m.agent, s.agent) IS NOT NULL
        GROUP BY ALL""",
    doc="assistant messages per agent per conversation (the conversation's agent unless "
        "the message names another)",
)

_PRICED = "p.input_per_mtok IS NOT NULL"

REPRICE = (
    # every figure the price table made, made again from ``model_prices`` (refilled
    # for every model): the same rule as MESSAGES' select; the host's own costs stay
    f"""
    UPDATE messages AS m SET
        cost_usd = CASE WHEN {_PRICED} THEN (
            m.input_tokens * p.input_per_mtok + m.output_tokens * p.output_per_mtok
            + m.cache_read_tokens * COALESCE(p.cache_read_per_mtok, p.input_per_mtok)
            + m.cache_write_tokens * COALESCE(p.cache_write_per_mtok, p.input_per_mtok)
            ) / 1e6 END,
        cost_source = CASE WHEN {_PRICED} THEN 'table' END,
        price_version = CASE WHEN {_PRICED} THEN p.version END,
        cost_unknown = NOT ({_PRICED})
    FROM model_prices p
    WHERE p.model = m.model AND m.input_tokens IS NOT NULL
      AND m.cost_source IS DISTINCT FROM 'host'""",
    """
    UPDATE conversation_usage AS u SET cost_usd = s.cost_usd, cost_unknown = s.unknown
    FROM (SELECT conversation_id, sum(cost_usd) FILTER (WHERE counted) AS cost_usd,
                 COALESCE(bool_or(cost_unknown AND counted), FALSE) AS unknown
          FROM messages GROUP BY conversation_id) s
    WHERE u.conversation_id = s.conversation_id""",
)

_TOKENS = "BIGINT"
USAGE = View("usage", (MODEL_PRICES, MESSAGES, CONVERSATION_USAGE, CONVERSATION_AGENTS),
             fields={
    "message_id": "VARCHAR", "role": "VARCHAR", "model": "VARCHAR", "agent": "VARCHAR",
    "response_id": "VARCHAR", "tokens": "BIGINT", "cost_usd": "DOUBLE",
    "usage": {"input_tokens": _TOKENS, "output_tokens": _TOKENS,
              "cache_read_tokens": _TOKENS, "cache_write_tokens": _TOKENS}, **RECORD_FIELDS})
