"""Endpoints across conversations: the catalog, costs, telemetry and read-only SQL.

They read the DuckDB views (caught up with the log on each call). Costs, telemetry
and SQL span every user, so they need the admin token; the catalog is filtered to a
user token's own conversations. SQL is one SELECT, checked by DuckDB's own parser
(`json_serialize_sql` only serializes SELECT statements), with no table functions
and only plain names in FROM, since both can read files (`read_text('...')`,
`FROM 'x.csv'`): over HTTP the views are the only
data a query may see. It also runs in a rolled-back transaction (the library's rule).
"""

from __future__ import annotations

import json
import re
from typing import Any, get_args

import convlog
from convlog.domain.errors import InvalidInput
from convlog.http.endpoint import Call, Endpoint, Param
from convlog.http.problems import ProblemError
from convlog.http.schema import CostGroup, SqlIn, SqlOut, TelemetryGroup

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
COST_GROUPS: tuple[str, ...] = get_args(CostGroup)
TELEMETRY_GROUPS: tuple[str, ...] = get_args(TelemetryGroup)


async def catalog(call: Call) -> list[convlog.CatalogRow]:
    user = call.q_str("user")
    if not call.principal.admin:
        if user is not None and user != call.principal.user:
            raise ProblemError(403, "forbidden", "a user token lists its own conversations "
                               "only", field="user")
        user = call.principal.user
    return await call.run(call.log.conversations, user=user, agent=call.q_str("agent"),
                          include_archived=call.q_bool("include_archived"),
                          limit=call.q_int("limit"))


async def costs(call: Call) -> list[convlog.CostRow]:
    call.principal.require_admin("costs")
    return await call.run(call.log.costs, by=call.q_str("by", "model", COST_GROUPS) or "model",
                          since=call.q_time("since"))


async def telemetry(call: Call) -> list[convlog.TelemetryRow]:
    call.principal.require_admin("telemetry")
    by = call.q_str("by", "strategy", TELEMETRY_GROUPS) or "strategy"
    return await call.run(call.log.telemetry, by=by, since=call.q_time("since"))


def _walk(node: Any) -> Any:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def check_select(query: str) -> None:
    """One SELECT without table functions, else InvalidInput naming `query`."""
    import duckdb  # the views need it anyway; loaded here, on first use

    if "\x00" in query:
        raise InvalidInput("contains a NUL character", field="query")
    with duckdb.connect(":memory:") as con:
        row = con.execute("SELECT json_serialize_sql(?::VARCHAR)", [query]).fetchall()[0]
    tree = json.loads(row[0])
    if tree.get("error"):
        message = str(tree.get("error_message") or "not a SELECT statement")
        raise InvalidInput(message.splitlines()[0], field="query")
    if len(tree.get("statements", [])) != 1:
        raise InvalidInput("give exactly one SELECT statement", field="query")
    for node in _walk(tree):
        if node.get("type") == "TABLE_FUNCTION":
            raise InvalidInput("table functions are not allowed over HTTP (they can read "
                               "files); query the views", field="query")
        if node.get("type") == "BASE_TABLE" and not _NAME.fullmatch(
                str(node.get("table_name", ""))):  # 'x.csv' would be read as a file
            raise InvalidInput(f"not a view name: {node.get('table_name')!r}", field="query")


async def sql(call: Call) -> SqlOut:
    call.principal.require_admin("SQL")
    body = await call.body(SqlIn)
    await call.run(check_select, body.query)
    try:
        names, rows = await call.run(call.log.sql, body.query, body.params)
    except InvalidInput as exc:  # DuckDB's own error (no such view, wrong type...)
        raise InvalidInput(exc.reason, field="query") from None
    return SqlOut(columns=names, rows=[list(r) for r in rows])


ENDPOINTS = [
    Endpoint("GET", "/v1/conversations", catalog,
             "The session catalog: resumable conversations, most recently active first",
             operation_id="listConversations",
             answer=list[convlog.CatalogRow], tag="analytics", query=(
                 Param("user", {"type": "string"}, "only this user's conversations"),
                 Param("agent", {"type": "string"}, "only this agent's conversations"),
                 Param("include_archived", {"type": "boolean"}, "archived ones too"),
                 Param("limit", {"type": "integer", "minimum": 1}, "at most N rows"))),
    Endpoint("GET", "/v1/costs", costs, "Tokens and USD, grouped",
             operation_id="getCosts",
             answer=list[convlog.CostRow], admin=True, tag="analytics", query=(
                 Param("by", {"type": "string", "enum": list(COST_GROUPS)}, "grouping"),
                 Param("since", {"type": "string", "format": "date-time"},
                       "only from this day or time on (UTC unless it has an offset)"))),
    Endpoint("GET", "/v1/telemetry", telemetry,
             "Resume success per tier, fallback rate and cost, memory lost",
             operation_id="getTelemetry",
             answer=list[convlog.TelemetryRow], admin=True, tag="analytics", query=(
                 Param("by", {"type": "string", "enum": list(TELEMETRY_GROUPS)}, "grouping"),
                 Param("since", {"type": "string", "format": "date-time"},
                       "only from this day or time on"))),
    Endpoint("POST", "/v1/sql", sql, "One read-only SELECT over the analytics views",
             operation_id="runSql",
             body=SqlIn, answer=SqlOut, admin=True, tag="analytics"),
]
