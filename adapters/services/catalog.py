"""The host API's analytics half: the session catalog, costs, telemetry, SQL and
Parquet over the DuckDB read models. A part of `ConversationLog` (which mixes it in);
kept apart because it reads the views, never the event stream, and never writes to
the log. The views themselves and their upkeep are the application's `Catalog`
(convlog.services.application)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convlog.domain.renamed import old_method
from convlog.views.analytics import CatalogRow, CostRow
from convlog.views.telemetry import TelemetryRow

if TYPE_CHECKING:
    from convlog.services.application import Application


class CatalogQueries:
    """Catalog, costs, telemetry, SQL and Parquet, for `ConversationLog`."""

    _app: Application

    def conversations(self, *, user: str | None = None, agent: str | None = None,
                      include_archived: bool = False, limit: int | None = None
                      ) -> list[CatalogRow]:
        """The catalog: resumable (active) conversations, most recently active first,
        with message, token and cost totals. Reads its own writes."""
        return self._app.analytics.sessions(user=user, agent=agent,
                                            include_archived=include_archived, limit=limit)

    sessions = old_method(conversations, "sessions", "ConversationLog")

    def costs(self, *, by: str = "model", since: date | datetime | None = None
              ) -> list[CostRow]:
        """Tokens and USD grouped by conversation, user, agent, model or day."""
        return self._app.analytics.costs(by=by, since=since)

    def telemetry(self, *, by: str = "strategy", since: date | datetime | None = None
                  ) -> list[TelemetryRow]:
        """Resume-success telemetry grouped by strategy, agent, client, day or reason:
        success rate per tier, fallback rate, latency p50/p95, injected tokens per
        fallback, and how many resumes lost the conversation's memory."""
        return self._app.analytics.telemetry(by=by, since=since)

    def sql(self, query: str, params: Sequence[object] = ()) -> tuple[list[str], list[Any]]:
        """(column names, rows) of any SQL over the views (see docs/analytics.md for them)."""
        return self._app.analytics.sql(query, params)

    def export_parquet(self, directory: str | Path) -> list[Path]:
        """Every view to Parquet files in `directory`, for any analytics tool."""
        return self._app.analytics.export_parquet(Path(directory))

    def can_resume(self, key: str) -> bool:
        """True for a conversation that exists and is not archived."""
        return self._app.reads.can_resume(key)
