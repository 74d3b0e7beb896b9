"""The blocks of the agent SDK stores: convlog's drop-in session stores against the
stores they replace (OpenAI Agents ``SQLiteSession``, the Claude Agent SDK's SQLite
reference store, ADK's ``DatabaseSessionService``), judged against issue 30's target.

Why: the three SDK benches share one form (convlog vs the SDK's store per operation, a
ratio, a verdict) and their JSON may grow new operations; these renderers follow the
operations the JSON holds.
"""

from __future__ import annotations

import re
from typing import Any

from bench.report.markdown import k, met, ms, num, ratio, table
from bench.report.results import Loader

# Labels of the operations the SDK benches time; an operation the JSON has and this table
# does not is shown under its key, so a new measurement never breaks the renderer.
# True: a target of issue 30 (<= 1.0x the SDK's own store).
OPENAI_OPS = {"add_turn_ms": ("add a turn (`add_items`)", True),
              "get_last_20_ms": ("`get_items(limit=20)`", True),
              "get_all_ms": ("`get_items()` (all)", True),
              "pop_and_restore_ms": ("`pop_item` + re-add", False),
              "pop_item_ms": ("`pop_item` alone", True)}
CLAUDE_OPS = {"load_ms": ("`load`", True), "append_1_ms": ("append 1 entry", True),
              "append_turn_ms": ("append a turn", True), "append_500_ms": ("append 500", True)}


def op_label(ops: dict[str, tuple[str, bool]], op: str) -> tuple[str, bool]:
    return ops.get(op, (f"`{op.removesuffix('_ms')}`", True))


def vs(ours: float, theirs: float, r: float) -> str:
    return f"{num(ours)} vs {num(theirs)} ms ({r:.2f}x)"


def verdict(checks: list[tuple[str, float]], what: str) -> str:
    ok = [c for c in checks if c[1] <= 1.0]
    bad = [f"{name} ({r:.2f}x)" for name, r in checks if r > 1.0]
    return (f"Targets (issue 30: each <= 1.0x {what}): **met on {len(ok)} of {len(checks)}**"
            + (f"; not met: {', '.join(bad)}." if bad else "."))


def side_by_side(rows: list[dict[str, Any]], size: str, peer: str,
                 ops: dict[str, tuple[str, bool]]) -> tuple[str, list[tuple[str, float]]]:
    """A table of convlog vs ``peer`` per size and operation (ms and ratio), and the
    ratios of the operations that have a target."""
    names = list(rows[0]["convlog"])
    body, checks = [], []
    for row in rows:
        cells = [f"{row[size]:,}"]
        for op in names:
            ours, theirs = row["convlog"][op], row[peer][op]
            cells.append(vs(ours, theirs, ours / theirs))
            label, target = op_label(ops, op)
            if target:
                checks.append((f"{label} @{k(row[size])}", ours / theirs))
        body.append(cells)
    return table([size, *(op_label(ops, op)[0] for op in names)], body), checks


def block_sdks(load: Loader) -> str:
    d = load("sdks")
    text, checks = side_by_side(d["rows"], "items", "sqlite_session", OPENAI_OPS)
    peak = d["peak_read_mib"]
    return (text
            + f"\n\nconvlog vs `SQLiteSession`, medians of {d['repeat']} calls (fewer whole reads: "
            + "see `bench/sdks.py`); ratio convlog / "
              f"SQLiteSession (below 1: convlog is faster). Peak Python memory (tracemalloc) "
              f"of one `get_items()` of {peak['items']:,} items: convlog "
              f"{peak['convlog']} MiB, SQLiteSession {peak['sqlite_session']} MiB.\n\n"
            + verdict(checks, "`SQLiteSession`"))


def block_sdks_claude(load: Loader) -> str:
    d = load("sdks-claude")
    text, checks = side_by_side(d["rows"], "entries", "sqlite_reference", CLAUDE_OPS)
    memory = [v for row in d["rows"] for v in row["in_memory"].values()]
    peak = d["peak_load_mib"]
    return (text
            + f"\n\nconvlog vs the SQLite reference store, medians of {d['repeat']} calls "
              f"(fewer for 500 entries and loads); ratio convlog / reference (below 1: convlog "
              f"is faster). The SDK's `InMemorySessionStore` takes {num(min(memory))}-"
              f"{num(max(memory))} ms for these calls (a list copy or extend). Peak memory "
              f"(tracemalloc) of one `load` of {peak['entries']:,} entries: convlog "
              f"{peak['convlog']} MiB, SQLite reference {peak['sqlite_reference']} MiB, "
              f"in-memory {peak['in_memory']} MiB.\n\n"
            + verdict(checks, "the SQLite reference store"))


def adk_label(op: str) -> str:
    """``list_sessions_5000_ms`` -> "`list_sessions`, 5,000 sessions"."""
    match = re.fullmatch(r"(?P<call>[a-z_]+?)(?:_(?P<n>\d+))?_ms", op)
    if not match:
        return f"`{op}`"
    unit = " events" if match["call"] == "get_session" else " sessions"
    return f"`{match['call']}`" + (f", {int(match['n']):,}{unit}" if match["n"] else "")


def block_sdks_adk(load: Loader) -> str:
    d = load("sdks-adk")
    ours, theirs = d["convlog"], d["database_session_service"]
    rows, checks = [], []
    for op in ours:
        r = ours[op] / theirs[op]
        rows.append([adk_label(op), ms(ours[op]), ms(theirs[op]), ratio(r), met(r <= 1.0)])
        checks.append((adk_label(op), r))
    return (table(["operation", "convlog", "ADK `DatabaseSessionService`", "ratio",
                   "<= 1.0x"], rows, right=[False, True, True, True, False])
            + "\n\nRatio: convlog / ADK (below 1: convlog is faster).\n\n"
            + verdict(checks, "`DatabaseSessionService` on SQLite"))
