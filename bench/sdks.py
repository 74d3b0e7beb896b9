"""What switching an OpenAI Agents SDK app to convlog costs or saves: convlog's
`ConvlogSession` against the SDK's own `SQLiteSession`, same workload, one run.

Run with ``.venv/bin/python -m bench.sdks [--quick]`` (``make bench`` runs it). Both
sessions write to a SQLite file in the same temporary folder. For each history size
N (items already in the session), medians over many calls of:

- ``add_items`` of one turn (a user item and an assistant output message: what
  `Runner.run` adds per turn without tools); convlog also counts each item's tokens
  and keeps the item verbatim next to a readable message;
- ``get_items(limit=20)``: what a run with a session limit reads before each turn;
- ``get_items()``: the whole history (the SDK's default, no limit);
- ``pop_item`` followed by re-adding the item (a compensating event in convlog,
  a DELETE in SQLite).

Before timing, each session gets the same settling: a full garbage collection after
the prefill (convlog's tokenizer vocabulary is ~40 MiB of objects; the first
collections after loading it would otherwise land in the first timed calls, a cost a
long-running host pays once) and a few untimed reads.

Ratios are convlog / SQLiteSession (below 1: convlog is faster).
Results go to ``bench/results/sdks-<UTC date>[-quick].json``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agents import SQLiteSession

from convlog.integrations.openai_agents import ConvlogSession

RESULTS = Path(__file__).resolve().parent / "results"
WORDS = ("session", "token", "budget", "resume", "agent", "history", "restart", "cost")


def turn(i: int) -> list[Any]:
    text = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(40))
    return [{"role": "user", "content": f"question {i}: {text[:200]}"},
            {"id": f"msg_{i}", "type": "message", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": f"answer {i}: {text}",
                          "annotations": []}]}]


async def median_ms(call: Callable[[], Awaitable[Any]], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - started)
    return round(statistics.median(samples) * 1000, 3)


async def measure(session: Any, size: int, repeat: int) -> dict[str, float]:
    batch: list[Any] = []
    for i in range(size // 2):  # prefill N items, 500 at a time
        batch.extend(turn(i))
        if len(batch) >= 500:
            await session.add_items(batch)
            batch = []
    if batch:
        await session.add_items(batch)
    # The same settling for both: one full collection, so the first timed calls do not
    # pay for collecting the objects the prefill (and convlog's tokenizer) just made.
    gc.collect()
    for _ in range(3):
        await session.get_items(limit=20)
    counter = iter(range(size, 10**9))

    async def add() -> None:
        await session.add_items(turn(next(counter)))

    async def pop_and_restore() -> None:
        item = await session.pop_item()
        await session.add_items([item])

    return {"add_turn_ms": await median_ms(add, repeat),
            "get_last_20_ms": await median_ms(lambda: session.get_items(limit=20), repeat),
            "get_all_ms": await median_ms(session.get_items, max(5, repeat // 10)),
            "pop_and_restore_ms": await median_ms(pop_and_restore, repeat)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller histories, fewer calls")
    args = parser.parse_args()
    sizes, repeat = ((100, 1_000), 50) if args.quick else ((100, 1_000, 10_000), 200)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            ours = ConvlogSession(f"bench-{size}", f"sqlite:///{tmp}/convlog-{size}.db",
                                  model="gpt-4o")
            theirs = SQLiteSession(f"bench-{size}", Path(tmp) / f"sdk-{size}.db")
            convlog_ms = asyncio.run(measure(ours, size, repeat))
            sqlite_ms = asyncio.run(measure(theirs, size, repeat))
            ours.close()
            theirs.close()
            rows.append({"items": size, "convlog": convlog_ms, "sqlite_session": sqlite_ms,
                         "ratio": {k: round(convlog_ms[k] / sqlite_ms[k], 2)
                                   for k in convlog_ms}})
    print(f"ConvlogSession vs the Agents SDK's SQLiteSession (medians, ms; {repeat} calls)")
    print(f"{'items':>7} {'operation':<20}{'convlog':>10}{'SQLite':>10}{'ratio':>8}")
    for row in rows:
        for name in row["convlog"]:
            print(f"{row['items']:>7} {name.removesuffix('_ms'):<20}{row['convlog'][name]:>10}"
                  f"{row['sqlite_session'][name]:>10}{row['ratio'][name]:>8}")
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d")
    path = RESULTS / f"sdks-{stamp}{'-quick' if args.quick else ''}.json"
    path.write_text(json.dumps({"repeat": repeat, "rows": rows}, indent=2) + "\n")
    print(f"saved {path}")


if __name__ == "__main__":
    main()
