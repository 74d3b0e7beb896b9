"""Interleaved A/B of ADK `get_session` of one big session: convlog's
`ConvlogSessionService` against ADK's `DatabaseSessionService` on SQLite (issue 30).

`bench.sdks --sdk adk` timed each service in its own block, so a load change between
the blocks moved the ratio (1.34x and 0.72x in two runs; it now interleaves too).
Here too the two take turns in one process, and each call is timed in CPU time
(`time.process_time`: all threads, so aiosqlite's and anyio's worker threads count)
and wall time; medians and minimums.

    .venv-bench/bin/python -m bench.adk_get_ab [--events 3000] [--rounds 15]

The filled databases are kept in `--dir` (default /tmp/convlog-adk-ab-<events>) and
copied for each run, since filling ADK's takes a minute or more at 3,000 events.
Run it from .venv-bench (google-adk and SQLAlchemy are benchmark peers).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from google.adk.sessions import BaseSessionService

from bench.adk_sessions import APP, fill_session


async def _filled(directory: Path, events: int) -> None:
    from google.adk.sessions import DatabaseSessionService

    from convlog.integrations.google_adk import ConvlogSessionService

    directory.mkdir(parents=True, exist_ok=True)
    ours = ConvlogSessionService(f"sqlite:///{directory}/adk-convlog.db")
    theirs = DatabaseSessionService(f"sqlite+aiosqlite:///{directory}/adk-db.db")
    try:
        await fill_session(ours, events)
        await fill_session(theirs, events)
    finally:
        await ours.close()
        await theirs.close()
    (directory / "filled").write_text(str(events))


class _Collections:
    """Full collections (generation 2) of the cycle collector, and the wall time they
    took: most of a 3,000-event read's spread, whichever service triggered them."""

    def __init__(self) -> None:
        self.full, self.ms, self._started = 0, 0.0, 0.0
        gc.callbacks.append(self._seen)

    def _seen(self, phase: str, info: dict[str, int]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.full += 1
            self.ms += (time.perf_counter() - self._started) * 1000


_GC = _Collections()


async def _time(call: Callable[[], Awaitable[Any]]) -> tuple[float, float, int, float]:
    full, ms = _GC.full, _GC.ms
    cpu, wall = time.process_time(), time.perf_counter()
    await call()
    return ((time.process_time() - cpu) * 1000, (time.perf_counter() - wall) * 1000,
            _GC.full - full, _GC.ms - ms)


async def ab(directory: Path, rounds: int) -> dict[str, dict[str, float]]:
    """Both services read the same session in turns; per service, median and min ms."""
    from google.adk.sessions import DatabaseSessionService

    from convlog.integrations.google_adk import ConvlogSessionService

    ours = ConvlogSessionService(f"sqlite:///{directory}/adk-convlog.db")
    theirs = DatabaseSessionService(f"sqlite+aiosqlite:///{directory}/adk-db.db")
    def reader(service: BaseSessionService) -> Callable[[], Awaitable[Any]]:
        return lambda: service.get_session(app_name=APP, user_id="u0", session_id="big")

    calls = {"convlog": reader(ours), "adk": reader(theirs)}
    samples: dict[str, list[tuple[float, float, int, float]]] = {name: [] for name in calls}
    try:
        for call in calls.values():  # warm: caches, first connection, imports
            await call()
        for n in range(rounds):
            order = list(calls) if n % 2 == 0 else list(calls)[::-1]
            for name in order:
                samples[name].append(await _time(calls[name]))
    finally:
        await ours.close()
        await theirs.close()
    out: dict[str, dict[str, float]] = {}
    for name, taken in samples.items():
        cpu, wall = [t[0] for t in taken], [t[1] for t in taken]
        out[name] = {"cpu_median": statistics.median(cpu), "cpu_mean": statistics.mean(cpu),
                     "cpu_min": min(cpu), "wall_median": statistics.median(wall),
                     "wall_min": min(wall),
                     "full_gc_per_call": sum(t[2] for t in taken) / len(taken),
                     "gc_ms_per_call": sum(t[3] for t in taken) / len(taken)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=3_000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    source = args.dir or Path(tempfile.gettempdir()) / f"convlog-adk-ab-{args.events}"
    if not (source / "filled").exists():
        shutil.rmtree(source, ignore_errors=True)
        asyncio.run(_filled(source, args.events))
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "db"
        shutil.copytree(source, copy)
        result = asyncio.run(ab(copy, args.rounds))
    print(f"get_session, {args.events} events, {args.rounds} interleaved rounds, ms")
    keys = ("cpu_median", "cpu_mean", "cpu_min", "wall_median", "wall_min",
            "full_gc_per_call", "gc_ms_per_call")
    print(f"{'':<10}" + "".join(f"{k:>17}" for k in keys))
    for name, row in result.items():
        print(f"{name:<10}" + "".join(f"{row[k]:>17.2f}" for k in keys))
    ratio = {k: result["convlog"][k] / (result["adk"][k] or float("nan")) for k in keys}
    print(f"{'ratio':<10}" + "".join(f"{ratio[k]:>17.2f}" for k in keys))


if __name__ == "__main__":
    main()
