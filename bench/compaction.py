"""What a compaction does to the cost of reads (issue 47): the context and the OpenAI
Agents session's `get_items` before and after `conv.compact`, at 10k and 100k messages.

Run with ``.venv/bin/python -m bench.compaction`` (10k and 100k messages, a few
minutes) or ``--quick`` (1k and 10k). A measurement, not a test: it prints the figures
and writes them to ``bench/results/compaction-<UTC date>[-quick].json``.

Workload. One conversation per size, each in its own SQLite file, written through the
SDK session (`ConvlogSession.add_items`, 1,000 items a call) as alternating user and
assistant message items of 100-600 characters (seeded). Measured, median of `runs`
calls each: ``log.context(key)`` (default budget, xml), ``session.get_items()`` (the
whole live history, as the SDK's Runner reads it without a limit) and
``get_items(limit=20)``; then ``conv.compact(summarizer, keep_last=30)`` once (timed:
reading the range and recording it; the summarizer is a constant, so the host's own
LLM call is not in it), then the same reads again. After a compaction the OpenAI
session keeps the user messages of the range (as OpenAI's own compaction does), so
`get_items()` still reads about half the items; the context stops at the range.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import convlog

RESULTS = Path(__file__).parent / "results"


def _text(rng: random.Random) -> str:
    words = ["auth", "token", "deploy", "key", "rotate", "main", "staging", "notes", "the",
             "a", "we", "decided", "JWT", "with", "on", "and", "log", "user", "agent"]
    size = rng.randint(100, 600)
    out: list[str] = []
    while sum(map(len, out)) + len(out) < size:
        out.append(rng.choice(words))
    return " ".join(out)


def _median_ms(fn: Callable[[], Any], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000.0)
    return round(statistics.median(times), 3)


def measure(size: int, runs: int, folder: Path) -> dict[str, Any]:
    from convlog.integrations.openai_agents import ConvlogSession

    rng = random.Random(size)
    log = convlog.open(f"sqlite:///{folder / f'c{size}.db'}")
    session = ConvlogSession("k", log)
    items: list[Any] = [{"role": "user" if i % 2 == 0 else "assistant", "content": _text(rng)}
                        for i in range(size)]
    loop = asyncio.new_event_loop()  # one loop: a new one per call costs milliseconds
    for start in range(0, size, 1_000):
        loop.run_until_complete(session.add_items(items[start:start + 1_000]))

    def reads() -> dict[str, float]:
        return {"context_ms": _median_ms(lambda: log.context("k"), runs),
                "get_items_ms": _median_ms(
                    lambda: loop.run_until_complete(session.get_items()), runs),
                "get_items_20_ms": _median_ms(
                    lambda: loop.run_until_complete(session.get_items(limit=20)), runs)}

    before = reads()
    began = time.perf_counter()
    done = log.compact("k", lambda previous, messages: "A constant summary.", keep_last=30)
    compact_ms = round((time.perf_counter() - began) * 1000.0, 3)
    assert done is not None
    after = reads()
    counts = {"items_before": size,
              "items_after": len(loop.run_until_complete(session.get_items())),
              "tokens_before": done.tokens_before, "tokens_after": done.tokens_after}
    loop.close()
    log.close()
    return {"messages": size, "before": before, "after": after, "compact_ms": compact_ms,
            **counts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1k and 10k messages")
    args = parser.parse_args()
    sizes, runs = ((1_000, 10_000), 5) if args.quick else ((10_000, 100_000), 7)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for size in sizes:
            row = measure(size, runs, Path(folder))
            rows.append(row)
            print(f"{size:>7} messages: context {row['before']['context_ms']} -> "
                  f"{row['after']['context_ms']} ms, get_items() "
                  f"{row['before']['get_items_ms']} -> {row['after']['get_items_ms']} ms "
                  f"({row['items_before']} -> {row['items_after']} items), "
                  f"get_items(20) {row['before']['get_items_20_ms']} -> "
                  f"{row['after']['get_items_20_ms']} ms, compact {row['compact_ms']} ms")
    day = datetime.now(UTC).strftime("%Y-%m-%d")
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"compaction-{day}{'-quick' if args.quick else ''}.json"
    path.write_text(json.dumps({"mode": "quick" if args.quick else "full", "runs": runs,
                                "sizes": rows}, indent=2) + "\n")
    print(f"saved {path}")


if __name__ == "__main__":
    main()
