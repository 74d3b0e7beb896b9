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
  a DELETE in SQLite), and ``pop_item`` alone (timed within the same calls);
- peak Python memory (tracemalloc) of one ``get_items()`` at the largest size.

Sizes: 1k, 10k and 100k items (``--quick``: 100 and 1k).

Before timing, each session gets the same settling: a full garbage collection after
the prefill (convlog's tokenizer vocabulary is ~40 MiB of objects; the first
collections after loading it would otherwise land in the first timed calls, a cost a
long-running host pays once) and a few untimed reads.

Ratios are convlog / SQLiteSession (below 1: convlog is faster).
Results go to ``bench/results/sdks-<UTC date>[-quick].json``.

Google ADK (``--sdk adk``, bench/adk_sessions.py): `ConvlogSessionService` against
ADK's `DatabaseSessionService` on SQLite: `get_session` of 3,000 events,
`list_sessions` of 5,000 and 10,000 sessions, `append_event`. It needs SQLAlchemy, a
benchmark peer, so it runs in .venv-bench (``make bench`` does); results go to
``bench/results/sdks-adk-<UTC date>[-quick].json``.

Then the Claude Agent SDK's `SessionStore` (bench.sdks_claude: `append` in the
batch shapes the SDK sends, `load`, against the SDK's reference stores), saved in
the same file under ``claude_agent_sdk``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agents import SQLiteSession

from bench import meta
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

    pops: list[float] = []

    async def pop_and_restore() -> None:
        started = time.perf_counter()
        item = await session.pop_item()
        pops.append(time.perf_counter() - started)
        await session.add_items([item])

    all_repeat = max(3, min(repeat // 10, 2_000_000 // size))  # ~100k items: 20 calls
    result = {"add_turn_ms": await median_ms(add, repeat),
              "get_last_20_ms": await median_ms(lambda: session.get_items(limit=20), repeat),
              "get_all_ms": await median_ms(session.get_items, all_repeat),
              "pop_and_restore_ms": await median_ms(pop_and_restore, repeat)}
    result["pop_item_ms"] = round(statistics.median(pops) * 1000, 3)
    return result


async def peak_read_mib(session: Any) -> float:
    """Peak Python memory (tracemalloc) of one `get_items()`: what reading the whole
    history costs a host beyond the items it gets back."""
    gc.collect()
    tracemalloc.start()
    try:
        await session.get_items()
        return round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
    finally:
        tracemalloc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller histories, fewer calls")
    parser.add_argument("--sdk", choices=("openai", "adk", "all"), default="openai",
                        help="which SDK's session store (adk needs .venv-bench)")
    args = parser.parse_args()
    if args.sdk in ("adk", "all"):
        adk_section(args.quick)
    if args.sdk == "adk":
        return
    stamp = meta.begin("sdks", args.quick)
    sizes, repeat = ((100, 1_000), 50) if args.quick else ((1_000, 10_000, 100_000), 200)
    rows: list[dict[str, Any]] = []
    peaks: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            ours = ConvlogSession(f"bench-{size}", f"sqlite:///{tmp}/convlog-{size}.db",
                                  model="gpt-4o")
            theirs = SQLiteSession(f"bench-{size}", Path(tmp) / f"sdk-{size}.db")
            convlog_ms = asyncio.run(measure(ours, size, repeat))
            sqlite_ms = asyncio.run(measure(theirs, size, repeat))
            if size == sizes[-1]:
                peaks = {"convlog": asyncio.run(peak_read_mib(ours)),
                         "sqlite_session": asyncio.run(peak_read_mib(theirs))}
            ours.close()
            theirs.close()
            rows.append({"items": size, "convlog": convlog_ms, "sqlite_session": sqlite_ms,
                         "ratio": {k: round(convlog_ms[k] / sqlite_ms[k], 2)
                                   for k in convlog_ms}})
    print(f"ConvlogSession vs the Agents SDK's SQLiteSession (medians, ms; {repeat} calls)")
    print(f"peak memory of one get_items() of {sizes[-1]} items (MiB, tracemalloc): "
          f"convlog {peaks['convlog']}, SQLiteSession {peaks['sqlite_session']}")
    print(f"{'items':>7} {'operation':<20}{'convlog':>10}{'SQLite':>10}{'ratio':>8}")
    for row in rows:
        for name in row["convlog"]:
            print(f"{row['items']:>7} {name.removesuffix('_ms'):<20}{row['convlog'][name]:>10}"
                  f"{row['sqlite_session'][name]:>10}{row['ratio'][name]:>8}")
    from bench import sdks_claude  # here: .venv-bench (the ADK section) has no Claude SDK

    saved = {"repeat": repeat, "rows": rows, "peak_read_mib": {"items": sizes[-1], **peaks},
             "claude_agent_sdk": sdks_claude.run(args.quick)}
    print(f"saved {stamp.save(saved)}")


def adk_section(quick: bool) -> None:
    from bench import adk_sessions

    stamp = meta.begin("sdks-adk", quick)
    with tempfile.TemporaryDirectory() as tmp:
        row = adk_sessions.run(tmp, quick)
    adk_sessions.report(row)
    print(f"saved {stamp.save(row)}")


if __name__ == "__main__":
    main()
