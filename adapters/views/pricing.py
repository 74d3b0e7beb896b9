"""The views' prices: every cost in them computed with the price table in force.

A message's USD is computed in SQL from ``model_prices`` (convlog.projections.usage).
That table is filled from the process's `PriceTable` (genai-prices plus the host's
overrides: ``prices=`` and ``$CONVLOG_PRICES``), and the views remember which table
filled it (its fingerprint). When a process opens the views with another table (a
new or edited price file, one unset, another genai-prices), every stored figure is
repriced first, in one transaction, before anything is read or added: a cost shown
is never one computed with a table no longer in force, and no `views rebuild` is
needed. Costs the host reported itself are kept as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from convlog.accounting.prices import PriceTable
from convlog.projections.usage import REPRICE

if TYPE_CHECKING:
    import duckdb

PRICES_META = "prices"


class ViewPrices:
    """Keeps ``model_prices`` (and the figures computed from it) on one price table."""

    def __init__(self, prices: PriceTable):
        self.prices = prices

    def reprice_if_changed(self, con: duckdb.DuckDBPyConnection) -> bool:
        """Reprice every stored figure when the views were priced with another table;
        True when it did. One transaction: a reader sees old or new figures, never a
        mix."""
        seen = con.execute("SELECT value FROM convlog_meta WHERE name = ?", [PRICES_META]
                           ).fetchone()
        if seen is not None and seen[0] == self.prices.fingerprint:
            return False
        con.begin()
        try:
            con.execute("DELETE FROM model_prices")
            models = [r[0] for r in con.execute(
                "SELECT DISTINCT model FROM messages WHERE model IS NOT NULL").fetchall()]
            self._add(con, models)
            for statement in REPRICE:
                con.execute(statement)
            self._mark(con)
            con.commit()
        except BaseException:
            con.rollback()
            raise
        return True

    def before_batch(self) -> Callable[[duckdb.DuckDBPyConnection], None]:
        """The catch-up's hook: prices for the models a batch names that the table has
        not resolved yet (inside the batch's transaction)."""
        def fill(con: duckdb.DuckDBPyConnection) -> None:
            seen = con.execute("SELECT value FROM convlog_meta WHERE name = ?",
                               [PRICES_META]).fetchone()
            if seen is None or seen[0] != self.prices.fingerprint:  # views just (re)built
                con.execute("DELETE FROM model_prices")
                self._mark(con)
            models = [r[0] for r in con.execute(
                "SELECT DISTINCT e.model FROM batch WHERE topic = 'message_appended' "
                "AND e.model IS NOT NULL AND e.model NOT IN (SELECT model FROM model_prices)"
            ).fetchall()]
            self._add(con, models)
        return fill

    def _mark(self, con: duckdb.DuckDBPyConnection) -> None:
        con.execute("INSERT OR REPLACE INTO convlog_meta VALUES (?, ?)",
                    [PRICES_META, self.prices.fingerprint])

    def _add(self, con: duckdb.DuckDBPyConnection, models: Iterable[str]) -> None:
        rows: list[tuple[object, ...]] = []
        for model in models:
            found = self.prices.rates(model)
            if found is None:
                rows.append((model, None, None, None, None, None))
            else:
                p, version = found
                rows.append((model, p.input_per_mtok, p.output_per_mtok,
                             p.cache_read_per_mtok, p.cache_write_per_mtok, version))
        if rows:
            appender = con.appender("model_prices")
            appender.append_rows(rows)
            appender.flush()
