"""The catalog's first page as the catalog grows: 1k to 1M conversations (bench.views,
section 3; alone: ``.venv/bin/python -m bench.catalog_scale [--quick]``, printed only).

Why a section of its own: a million conversations written through the log take
~10 minutes here (bench.views writes ~1.8k conversations/s), so these catalogs are
filled straight into the views' own tables (``sessions``, ``conversation_usage``,
``conversation_agents``, created by the `ViewStore` with the schema the catch-up
writes) with one DuckDB ``INSERT ... SELECT FROM range(n)`` each: a million rows in
seconds. What is timed is the very statement `log.conversations()` runs
(`convlog.views.catalog_sql.catalog_query`) on an open connection, and the rows'
conversion to `CatalogRow`: the catch-up check before it is measured on the real
store by section 1 of bench.views.

The rows: users u0..u999 (n/1000 conversations each), 4 agents, 5% archived, the
conversations' last activity spread over time in the order they were written (as a
log writes them: the newest conversations last), with usage and one agent row each.
Three pages of 20, medians: all conversations, one user's, one agent's.

Targets (issue 45): each first page <= 20 ms at 100k conversations, and growing
<= 2x from 1k to 1M.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

from convlog.views.analytics import Analytics, CatalogRow
from convlog.views.catalog_sql import catalog_query
from convlog.views.duckdb import ViewStore

FULL_SIZES = (1_000, 10_000, 100_000, 1_000_000)
QUICK_SIZES = (1_000, 10_000, 100_000)
PAGE = 20
TARGET_MS = 20.0  # each first page at 100k conversations
GROWTH_TARGET = 2.0  # the first page at 1M / at 1k
PAGES: dict[str, dict[str, Any]] = {"all": {}, "user": {"user": "u42"},
                                    "agent": {"agent": "agent1"}}


def fill(con: Any, n: int) -> None:
    """`n` conversations into the catalog's tables (see the module doc)."""
    con.execute("SET enable_progress_bar = false")
    con.execute(f"""
        INSERT INTO sessions SELECT
            'c' || i, 'bench:catalog:' || i, 'u' || (i % 1000), 'agent' || (i % 4),
            'client' || (i % 4), NULL, NULL, 'client' || (i % 4),
            CASE WHEN i % 20 = 0 THEN 'archived' ELSE 'active' END,
            TIMESTAMP '2026-09-01' + to_seconds(i * 5),
            TIMESTAMP '2026-09-01' + to_seconds(i * 5 + (i * 7919) % 5000),
            TIMESTAMP '2026-09-01' + to_seconds(i * 5 + 3), 4, 200, 0, 9, NULL, FALSE
        FROM range({n}) t(i)""")
    con.execute(f"INSERT INTO conversation_usage SELECT 'c' || i, 100, 50, 0, 0, 0.001, "
                f"FALSE, 2 FROM range({n}) t(i)")
    con.execute(f"INSERT INTO conversation_agents SELECT 'c' || i, 'agent' || (i % 4), 2 "
                f"FROM range({n}) t(i)")


def first_page(views: ViewStore, filters: dict[str, Any]) -> list[CatalogRow]:
    """The page as `log.conversations(limit=PAGE, ...)` reads it, catch-up aside."""
    sql, params = catalog_query(limit=PAGE, **filters)
    names, rows = views.query(sql, params)
    return [msgspec.convert(dict(zip(names, row, strict=True)), CatalogRow) for row in rows]


def measure(sizes: tuple[int, ...], runs: int = 15) -> dict[str, Any]:
    """Median ms of each page at each size, and the growth from the smallest to the
    largest size. Every catalog stays open and the calls go round-robin over sizes
    and pages, so the host's load swings hit every size alike (one size after the
    other put 1k at 12 ms and 30 ms in the same run on a loaded host)."""
    samples: dict[str, dict[str, list[int]]] = {
        str(n): {name: [] for name in PAGES} for n in sizes}
    with tempfile.TemporaryDirectory(prefix="convlog-catalog-scale-") as tmp, \
            contextlib.ExitStack() as stack:
        stores: dict[str, ViewStore] = {}
        for n in sizes:
            views = ViewStore(Path(tmp) / f"catalog-{n}.duckdb", Analytics.VIEWS,
                              sql_views=Analytics.SQL_VIEWS)
            stack.callback(views.close)
            fill(stack.enter_context(views.connect()), n)
            for name, filters in PAGES.items():
                assert first_page(views, filters), (n, name)  # warm-up
            stores[str(n)] = views
        order = [(size, name) for size in stores for name in PAGES]
        for r in range(runs):
            for size, name in order[r % len(order):] + order[:r % len(order)]:
                gc.collect()
                start = time.perf_counter_ns()
                first_page(stores[size], PAGES[name])
                samples[size][name].append(time.perf_counter_ns() - start)
    medians = {size: {name: statistics.median(v) / 1e6 for name, v in by.items()}
               for size, by in samples.items()}
    for size, here in medians.items():
        print(f"    catalog first page @{int(size):,}: " + ", ".join(
            f"{k} {v:.1f} ms" for k, v in here.items()), flush=True)
    small, large = str(sizes[0]), str(sizes[-1])
    growth = {k: medians[large][k] / medians[small][k] for k in PAGES}
    return {"sizes": list(sizes), "page": PAGE, "runs": runs, "median_ms": medians,
            "growth": growth, "growth_from_to": [sizes[0], sizes[-1]],
            "target_ms": TARGET_MS, "growth_target": GROWTH_TARGET}


def rows(result: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(workload, figure, target, met?) rows for bench.views' table."""
    out = []
    at = result["median_ms"]
    for name in PAGES:
        for n in result["sizes"]:
            target = f"<= {TARGET_MS:g} ms" if n == 100_000 else ""
            met = ("yes" if at[str(n)][name] <= TARGET_MS else "NO") if target else ""
            out.append((f"catalog first page ({name}) @{n // 1000}k conversations "
                        "(filled directly)", f"{at[str(n)][name]:.1f} ms", target, met))
        lo, hi = result["growth_from_to"]
        full = hi >= 1_000_000
        growth = result["growth"][name]
        out.append((f"  growth of that page, {lo // 1000}k -> {hi // 1000}k",
                    f"{growth:.2f}x", f"<= {GROWTH_TARGET:g}x (1k -> 1M)" if full else "",
                    ("yes" if growth <= GROWTH_TARGET else "NO") if full else ""))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="up to 100k (seconds)")
    args = parser.parse_args()
    result = measure(QUICK_SIZES if args.quick else FULL_SIZES)
    for row in rows(result):
        print(" | ".join(row))


if __name__ == "__main__":
    main()
