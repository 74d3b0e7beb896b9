"""The log's analytics half: the session catalog, costs, telemetry, SQL and Parquet
over the DuckDB read models, and keeping those views current. A part of
`ConversationLog` (which mixes it in); kept apart because it reads the views, never the
event stream, and never writes to the log."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any

from convlog.accounting.prices import ModelPrice, PriceTable
from convlog.domain.conversation import check_key, conversation_id
from convlog.domain.errors import InvalidInput
from convlog.domain.renamed import old_method
from convlog.storage.application import ConversationStore
from convlog.storage.errors import StorageUnavailable
from convlog.storage.urls import StorageConfig
from convlog.views.analytics import Analytics, CatalogRow, CostRow
from convlog.views.telemetry import TelemetryRow

_log = logging.getLogger("convlog")


class CatalogQueries:
    """Catalog, costs, telemetry and the views' upkeep, for `ConversationLog`."""

    config: StorageConfig
    _store: ConversationStore
    _prices: dict[str, ModelPrice] | None
    _views_path: Path | None
    _analytics: Analytics | None

    @property
    def analytics(self) -> Analytics:
        """The DuckDB read models (opened on first use, next to the event store)."""
        if self._analytics is None:
            option = self.config.options.get("views")
            from convlog.views.duckdb import ViewStore, default_path  # DuckDB loads on first use

            path = self._views_path or (Path(option) if option else None) or default_path(
                self.config.path, self.config.backend, self.config.url)
            store = ViewStore(path, Analytics.VIEWS, sql_views=Analytics.SQL_VIEWS)
            self._analytics = Analytics(self._store, store, PriceTable(self._prices))
        return self._analytics

    def conversations(self, *, user: str | None = None, agent: str | None = None,
                      include_archived: bool = False, limit: int | None = None
                      ) -> list[CatalogRow]:
        """The catalog: resumable (active) conversations, most recently active first,
        with message, token and cost totals. Reads its own writes."""
        return self.analytics.sessions(user=user, agent=agent,
                                       include_archived=include_archived, limit=limit)

    sessions = old_method(conversations, "sessions", "ConversationLog")

    def costs(self, *, by: str = "model", since: date | datetime | None = None
              ) -> list[CostRow]:
        """Tokens and USD grouped by conversation, user, agent, model or day."""
        return self.analytics.costs(by=by, since=since)

    def telemetry(self, *, by: str = "strategy", since: date | datetime | None = None
                  ) -> list[TelemetryRow]:
        """Resume-success telemetry grouped by strategy, agent, client, day or reason:
        success rate per tier, fallback rate, latency p50/p95, injected tokens per
        fallback, and how many resumes lost the conversation's memory."""
        return self.analytics.telemetry(by=by, since=since)

    def sql(self, query: str, params: Sequence[object] = ()) -> tuple[list[str], list[Any]]:
        """(column names, rows) of any SQL over the views (see docs/analytics.md for them)."""
        return self.analytics.sql(query, params)

    def export_parquet(self, directory: str | Path) -> list[Path]:
        """Every view to Parquet files in `directory`, for any analytics tool."""
        return self.analytics.export_parquet(Path(directory))

    def can_resume(self, key: str) -> bool:
        """True for a conversation that exists and is not archived."""
        state = self._store.load(conversation_id(key), check_key(key))
        return state.started and state.status == "active"

    def refresh_views(self, *, progress: bool | None = None) -> int:
        """Catch the views up with the log; returns how many events were applied."""
        return self.analytics.refresh(progress=progress)

    def follow_views(self, stop: threading.Event, *, interval: float = 0.5,
                     on_batch: Callable[[int], None] | None = None) -> int:
        """Keep the views current until `stop` is set: catch up, then wait for new
        events (PostgreSQL LISTEN/NOTIFY; SQLite polls every `interval` seconds).
        Every batch is atomic, so stopping anywhere resumes exactly where it was.
        A PostgreSQL outage is waited out (retried every `interval`), not an exit."""
        if not interval > 0:
            raise InvalidInput("must be a positive number of seconds", field="interval")
        total = 0
        self.analytics.views.keep_open = 0  # a follower must not sit on the file's lock
        while not stop.is_set():
            try:
                applied = self.refresh_views(progress=False)
            except StorageUnavailable as exc:  # the database is away: keep following
                _log.warning("views follow: %s; retrying", exc)
                stop.wait(interval)
                continue
            total += applied
            if applied and on_batch is not None:
                on_batch(applied)
            if not stop.is_set():
                self._store.wait_for_changes(interval)
        return total

    def rebuild_views(self, *, progress: bool | None = None) -> int:
        """Drop every view and rebuild it from the whole log."""
        self.analytics.views.rebuild()
        return self.analytics.refresh(progress=progress)
