"""What switching an OpenAI Agents SDK app to convlog costs or saves: convlog's
`ConvlogSession` against the SDK's own `SQLiteSession`, same workload, one run.

Run with ``.venv/bin/python -m bench.sdks [--quick]`` (``make bench`` runs it). Both
sessions write to a SQLite file in the same temporary folder. For each history size
N (items already in the session), medians over many calls of (the two sessions take
turns call by call, so load on the machine, a collection or a WAL checkpoint falls
on both alike; each run in its own stretch put ratios of 1.1x and 3.2x on the same
code):

- ``add_items`` of one turn (a user item and an assistant output message: what
  `Runner.run` adds per turn without tools); convlog also counts each item's tokens
  and keeps the item verbatim next to a readable message;
- ``get_items(limit=20)``: what a run with a session limit reads before each turn;
- ``get_items()``: the whole history (the SDK's default, no limit);
- ``pop_item`` followed by re-adding the item (a compensating event in convlog,
  a DELETE in SQLite), and ``pop_item`` alone (timed within the same calls);
- peak Python memory (tracemalloc) of one ``get_items()`` at the largest size.

Sizes: 1k, 10k and 100k items (``--quick``: 100 and 1k).

Before timing, both sessions are filled, then get the same settling: one full
garbage collection (convlog's tokenizer vocabulary is ~40 MiB of objects; the first
collections after loading it would otherwise land in the first timed calls, a cost a
long-running host pays once) and a few untimed reads of each kind.

Ratios are convlog / SQLiteSession (below 1: convlog is faster); ``cpu_ratio`` the
same of the medians of CPU time per call (``cpu_ms``: the whole process's
`time.process_time`, worker threads included).
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


async def prefill(session: Any, size: int) -> None:
    """N items, 500 at a time (an import, or a long-lived session)."""
    batch: list[Any] = []
    for i in range(size // 2):
        batch.extend(turn(i))
        if len(batch) >= 500:
            await session.add_items(batch)
            batch = []
    if batch:
        await session.add_items(batch)


def _median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 3)


async def measure(sessions: dict[str, Any], size: int, repeat: int
                  ) -> dict[str, dict[str, dict[str, float]]]:
    """Each operation's median per session, wall time (``ms``) and CPU time of the
    whole process (``cpu_ms``: `time.process_time`, so the worker thread each call
    runs in counts). The sessions take turns call by call, the first of each round
    alternating, so a busy machine, a collection or a checkpoint slows them alike and
    the ratios hold (the medians are what it was)."""
    for session in sessions.values():
        await prefill(session, size)
    # The same settling for both, before any timed call: one full collection, so no
    # timed call pays for collecting what the prefill (and convlog's tokenizer) made,
    # and a few untimed reads of each kind.
    gc.collect()
    for session in sessions.values():
        await session.get_items()
        for _ in range(3):
            await session.get_items(limit=20)
    counters = {name: iter(range(size, 10**9)) for name in sessions}
    pops: dict[str, list[float]] = {name: [] for name in sessions}

    async def add(name: str, session: Any) -> None:
        await session.add_items(turn(next(counters[name])))

    async def pop_and_restore(name: str, session: Any) -> None:
        started = time.perf_counter()
        item = await session.pop_item()
        pops[name].append(time.perf_counter() - started)
        await session.add_items([item])

    # Whole reads: a full collection lands in about one call in four at 10k items
    # (~100 ms on ~35), so the per-call times are bimodal and a median of 20 flipped
    # between 0.85x and 1.22x for the same code; 100 calls (40 at 100k) hold it.
    all_repeat = max(3, min(repeat // 2, 4_000_000 // size))
    plan: list[tuple[str, int, Callable[[str, Any], Awaitable[Any]]]] = [
        ("add_turn_ms", repeat, add),
        ("get_last_20_ms", repeat, lambda _, s: s.get_items(limit=20)),
        ("get_all_ms", all_repeat, lambda _, s: s.get_items()),
        ("pop_and_restore_ms", repeat, pop_and_restore)]
    names = list(sessions)
    wall: dict[str, dict[str, float]] = {name: {} for name in names}
    cpu: dict[str, dict[str, float]] = {name: {} for name in names}
    for op, calls, call in plan:
        samples: dict[str, list[float]] = {name: [] for name in names}
        cpu_samples: dict[str, list[float]] = {name: [] for name in names}
        for n in range(calls):
            for name in names if n % 2 == 0 else names[::-1]:
                c0, started = time.process_time(), time.perf_counter()
                await call(name, sessions[name])
                samples[name].append(time.perf_counter() - started)
                cpu_samples[name].append(time.process_time() - c0)
        for name in names:
            wall[name][op] = _median_ms(samples[name])
            cpu[name][op] = _median_ms(cpu_samples[name])
    for name in names:
        wall[name]["pop_item_ms"] = _median_ms(pops[name])
    return {"ms": wall, "cpu_ms": cpu}


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


def openai_run(sizes: tuple[int, ...], repeat: int) -> dict[str, Any]:
    """Time both sessions side by side at each size; print and return the figures."""
    rows: list[dict[str, Any]] = []
    peaks: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            ours = ConvlogSession(f"bench-{size}", f"sqlite:///{tmp}/convlog-{size}.db",
                                  model="gpt-4o")
            theirs = SQLiteSession(f"bench-{size}", Path(tmp) / f"sdk-{size}.db")
            timed = asyncio.run(measure({"convlog": ours, "sqlite_session": theirs},
                                        size, repeat))
            if size == sizes[-1]:
                peaks = {"convlog": asyncio.run(peak_read_mib(ours)),
                         "sqlite_session": asyncio.run(peak_read_mib(theirs))}
            ours.close()
            theirs.close()
            convlog_ms, sqlite_ms = timed["ms"]["convlog"], timed["ms"]["sqlite_session"]
            cpu = timed["cpu_ms"]
            rows.append({"items": size, "convlog": convlog_ms, "sqlite_session": sqlite_ms,
                         "ratio": {k: round(convlog_ms[k] / sqlite_ms[k], 2)
                                   for k in convlog_ms},
                         "cpu_ms": cpu,
                         "cpu_ratio": {k: round(cpu["convlog"][k] / cpu["sqlite_session"][k], 2)
                                       for k in cpu["convlog"] if cpu["sqlite_session"][k]}})
    print(f"ConvlogSession vs the Agents SDK's SQLiteSession (medians, ms; {repeat} calls, "
          "taking turns call by call; cpu: process CPU time per call)")
    print(f"peak memory of one get_items() of {sizes[-1]} items (MiB, tracemalloc): "
          f"convlog {peaks['convlog']}, SQLiteSession {peaks['sqlite_session']}")
    print(f"{'items':>7} {'operation':<20}{'convlog':>10}{'SQLite':>10}{'ratio':>8}"
          f"{'cpu ratio':>10}")
    for row in rows:
        for name in row["convlog"]:
            print(f"{row['items']:>7} {name.removesuffix('_ms'):<20}{row['convlog'][name]:>10}"
                  f"{row['sqlite_session'][name]:>10}{row['ratio'][name]:>8}"
                  f"{row['cpu_ratio'].get(name, ''):>10}")
    return {"repeat": repeat, "rows": rows, "peak_read_mib": {"items": sizes[-1], **peaks}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller histories, fewer calls")
    parser.add_argument("--sdk", choices=("openai", "adk", "all"), default="openai",
                        help="which SDK's session store (adk needs .venv-bench)")
    parser.add_argument("--sizes", help="e.g. 1000,10000: the OpenAI section at these "
                        "sizes only, printed and not saved (an A/B while working)")
    parser.add_argument("--repeat", type=int, help="calls per operation (with --sizes)")
    args = parser.parse_args()
    if args.sizes:
        openai_run(tuple(int(n) for n in args.sizes.split(",")), args.repeat or 200)
        return
    if args.sdk in ("adk", "all"):
        adk_section(args.quick)
    if args.sdk == "adk":
        return
    stamp = meta.begin("sdks", args.quick)
    sizes, repeat = ((100, 1_000), 50) if args.quick else ((1_000, 10_000, 100_000), 200)
    saved = openai_run(sizes, repeat)
    from bench import sdks_claude  # here: .venv-bench (the ADK section) has no Claude SDK

    saved["claude_agent_sdk"] = sdks_claude.run(args.quick)
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
