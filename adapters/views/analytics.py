"""Queries over the DuckDB views: the session catalog and cost metadata.

Every query first catches the views up with the event log (read-your-writes: a host
that just appended sees its write), then runs one SQL statement. Usage that a
provider repeated across several records of one response (same `response_id`)
counts once: the `message_costs` view marks the first record of each response.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import msgspec

from convlog.accounting.prices import PriceTable
from convlog.accounting.tokens import count_tokens
from convlog.domain.errors import InvalidInput
from convlog.projections.adk_sessions import ADK
from convlog.projections.catalog import CATALOG, ConversationFacts
from convlog.projections.repair_counts import REPAIRS, TOOL_REPAIR_COUNTS
from convlog.projections.telemetry import TELEMETRY
from convlog.projections.usage import USAGE
from convlog.projections.views import View
from convlog.storage.application import ConversationStore
from convlog.views.adk import fill_adk_sessions
from convlog.views.catalog_sql import catalog_query
from convlog.views.pricing import ViewPrices
from convlog.views.readonly import check_read_only
from convlog.views.repairs import fill_repairs
from convlog.views.telemetry import TelemetryRow, telemetry_sql, to_rows
from convlog.views.token_counts import CounterNeeded, fill_token_counts

if TYPE_CHECKING:  # DuckDB is imported when the views are first used, not by `import convlog`
    import duckdb

    from convlog.views.duckdb import ViewStore

CostGroup = Literal["conversation", "user", "agent", "model", "day"]
COST_GROUPS: tuple[str, ...] = ("conversation", "user", "agent", "model", "day")

# Analyst-facing SQL views, created with the store (documented in docs/analytics.md).
SQL_VIEWS = {
    "message_costs": """
        SELECT m.*, s.key, s.user, COALESCE(m.agent, s.agent) AS agent_name,
               CAST(m.at AS DATE) AS day
        FROM messages m JOIN sessions s USING (conversation_id)""",
    "tool_repair_counts": TOOL_REPAIR_COUNTS,
}

_USAGE_SUMS = """
    count(*) AS messages,
    count(*) FILTER (WHERE role = 'assistant') AS agent_interactions,
    COALESCE(sum(input_tokens) FILTER (WHERE counted), 0) AS input_tokens,
    COALESCE(sum(output_tokens) FILTER (WHERE counted), 0) AS output_tokens,
    COALESCE(sum(cache_read_tokens) FILTER (WHERE counted), 0) AS cache_read_tokens,
    COALESCE(sum(cache_write_tokens) FILTER (WHERE counted), 0) AS cache_write_tokens,
    sum(cost_usd) FILTER (WHERE counted) AS cost_usd,
    COALESCE(bool_or(cost_unknown AND counted), FALSE) AS cost_incomplete,
    list_sort(COALESCE(list(DISTINCT price_version) FILTER (
        WHERE price_version IS NOT NULL), [])) AS price_versions
"""



class CatalogRow(ConversationFacts, frozen=True, kw_only=True):
    """A conversation of the session catalog, with its token and cost totals."""

    content_tokens: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float | None
    cost_incomplete: bool
    top_agents: list[str]
    """The five agents that answered most in this conversation, most active first."""
    version: int
    """Position of the conversation's latest event."""
    native_session_id: str | None
    forgotten: bool = False
    """Its user was forgotten: titles and content are erased, the figures stay."""
    children: list[str] = msgspec.field(default_factory=list)
    """The keys of its forks (`conv.fork`), in key order."""


class CostRow(msgspec.Struct, frozen=True, kw_only=True):
    group: str | None
    messages: int
    agent_interactions: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float | None
    cost_incomplete: bool
    """Some priced usage had no known price: `cost_usd` is a lower bound."""
    price_versions: list[str]


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")


def _utc(value: Any) -> Any:
    return value.replace(tzinfo=UTC) if isinstance(value, datetime) else value


class Analytics:
    def __init__(self, store: ConversationStore, views: ViewStore, prices: PriceTable):
        self.store = store
        self.views = views
        self.prices = prices
        self.pricing = ViewPrices(prices)

    VIEWS: ClassVar[tuple[View, ...]] = (CATALOG, USAGE, TELEMETRY, REPAIRS, ADK)
    SQL_VIEWS: ClassVar[dict[str, str]] = SQL_VIEWS

    def refresh(self, *, progress: bool | None = None) -> int:
        """Catch up with the log; figures computed with another price table are
        repriced first (convlog.views.pricing). A catch-up that must count tokens
        (issue 45) and finds the vocabulary not loaded lets the views' file go, loads
        it, and catches up again: other processes never wait on the file for a load
        (~0.3 s, seconds on a busy host). Inside another use of the file (nested)
        it loads in place."""
        if self.views.in_use:
            return self._catch_up(progress, defer=False)
        try:
            return self._catch_up(progress, defer=True)
        except CounterNeeded as needed:  # the batch rolled back, the file let go
            for model in needed.models:
                count_tokens("", model)  # loads the model's vocabulary
            return self._catch_up(progress, defer=False)

    def _catch_up(self, progress: bool | None, *, defer: bool) -> int:
        self.prices.reload_if_changed()
        prices, repairs = self.pricing.before_batch(), fill_repairs(self.store)
        adk = fill_adk_sessions(self.store)
        tokens = fill_token_counts(self.store, defer=defer)

        def before_batch(con: duckdb.DuckDBPyConnection) -> None:
            tokens(con)  # first: the tables' SELECTs read the batch's `tokens`
            prices(con)
            repairs(con)
            adk(con)

        with self.views.connect() as con:
            self.pricing.reprice_if_changed(con)
            return self.views.catch_up(self.store.index, before_batch=before_batch,
                                       progress=progress)

    def _rows(self, sql: str, params: list[object]) -> list[dict[str, Any]]:
        self.refresh()  # the file then stays open for the query (ViewStore.connect)
        with self.views.connect():
            names, rows = self.views.query(sql, params)
        return [{n: _utc(v) for n, v in zip(names, row, strict=True)} for row in rows]

    def sessions(self, *, user: str | None = None, agent: str | None = None,
                 include_archived: bool = False, idle_before: datetime | None = None,
                 limit: int | None = None, workspace: str | None = None,
                 key: str | None = None) -> list[CatalogRow]:
        sql, params = catalog_query(user=user, agent=agent, include_archived=include_archived,
                                    idle_before=idle_before, limit=limit,
                                    workspace=workspace, key=key)
        return [msgspec.convert(r, CatalogRow) for r in self._rows(sql, params)]

    def agent_activity(self, keys: Sequence[str]) -> list[tuple[str | None, int]]:
        """(agent, assistant messages) over the conversations `keys`, most used first:
        the same count as `costs(by=...)`'s agent_interactions."""
        if not keys:
            return []
        rows = self._rows(f"""
            SELECT agent_name AS agent, count(*) AS n FROM message_costs
            WHERE key IN ({', '.join('?' * len(keys))}) AND role = 'assistant'
            GROUP BY 1 ORDER BY n DESC, agent NULLS LAST""", list(keys))
        return [(r["agent"], int(r["n"])) for r in rows]

    def telemetry(self, *, by: str = "strategy", since: date | datetime | None = None
                  ) -> list[TelemetryRow]:
        sql, params = telemetry_sql(by, since)
        return to_rows(self._rows(sql, params))

    def sql(self, query: str, params: Sequence[object] = ()) -> tuple[list[str], list[Any]]:
        """Any SQL over the views, after a catch-up. It runs in a transaction that is
        rolled back: the views are a cache of the log, not a place to store data. Only
        one read-only statement is accepted (see `readonly`)."""
        import duckdb  # loaded already: the views are open

        with self.views.connect() as con:
            check_read_only(con, query)  # before anything is caught up or counted
        self.refresh()
        with self.views.connect() as con:
            con.begin()
            try:
                cursor = con.execute(query, list(params))
                names = [d[0] for d in cursor.description or []]
                return names, [tuple(_utc(v) for v in row) for row in cursor.fetchall()]
            except duckdb.Error as exc:
                self.views.raise_if_corrupt(exc)
                raise InvalidInput(str(exc).splitlines()[0], field="sql") from None
            finally:
                con.rollback()

    def export_parquet(self, directory: Path) -> list[Path]:
        """Every table and view to ``DIRECTORY/<name>.parquet``; each file is written
        under a temporary name and renamed, so a reader never sees half a file."""
        directory.mkdir(parents=True, exist_ok=True)
        written = []
        self.refresh()
        with self.views.connect() as con:
            for name in self.view_names():
                final = directory / f"{name}.parquet"
                partial = directory / f".{name}.parquet.partial"
                con.execute(f"COPY (SELECT * FROM \"{name}\") TO '{_sql_path(partial)}' "
                            "(FORMAT parquet)")
                partial.replace(final)
                written.append(final)
        return written

    def view_names(self) -> list[str]:
        """Every table and SQL view analysts can query by name."""
        tables = [t.name for v in self.VIEWS for t in v.tables]
        return [*tables, *SQL_VIEWS]

    def costs(self, *, by: str = "model", since: date | datetime | None = None
              ) -> list[CostRow]:
        if by not in COST_GROUPS:
            raise InvalidInput(f"cannot group costs by {by!r}; expected one of "
                               f"{', '.join(COST_GROUPS)}", field="by")
        group = {"conversation": "key", "user": '"user"', "agent": "agent_name",
                 "model": "model", "day": "CAST(day AS VARCHAR)"}[by]
        where = "TRUE"
        params: list[object] = []
        if since is not None:
            moment = since if isinstance(since, datetime) else datetime(
                since.year, since.month, since.day, tzinfo=UTC)
            where = "\"at\" >= ?"
            params.append(moment.astimezone(UTC).replace(tzinfo=None))
        sql = f"""
            SELECT {group} AS "group", {_USAGE_SUMS}
            FROM message_costs WHERE {where}
            GROUP BY 1 ORDER BY cost_usd DESC NULLS LAST, messages DESC, 1"""
        return [msgspec.convert(r, CostRow) for r in self._rows(sql, params)]
