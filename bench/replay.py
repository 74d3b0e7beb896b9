"""The two views at size: the walks behind `view("user")`, `view("agent")` and
`diff()`, against reading the events they walk.

Run with ``.venv/bin/python -m bench.replay [--quick]`` (``make bench`` runs it). For
conversations of 10,000 and 100,000 messages (quick: 2,000 and 20,000) on SQLite, with
a restart every 1,000 messages (a failed native resume, then a fresh session that gets
history injected), it measures the median time of reading the events (`log.events`), of each
projection over events already read, and of `log.view("agent")` end to end. The
walks must grow linearly with the conversation (the growth from the small to the
large one about the size ratio, never more); the read is storage's share. Results go to
``bench/results/replay-<UTC date>[-quick].json``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import convlog
from bench import meta
from convlog.projections.replay_views import agent_view, user_view
from convlog.projections.view_diff import diff

RESTART_EVERY = 1_000


def forgot(call: convlog.TierCall) -> str:
    raise convlog.TierFailed("not_found", "the agent forgot its sessions")


def new_session(name: str) -> Callable[[convlog.TierCall], str]:
    return lambda call: name


def build(log: convlog.ConversationLog, messages: int) -> int:
    conv = log.conversation("long", user="u", agent="copilot")
    conv.bind_native_session("s0")
    restarts = 0
    for start in range(0, messages, 500):
        conv.append_turn([
            (convlog.user if i % 2 == 0 else convlog.assistant)(
                f"message {i}: " + "lorem ipsum dolor " * 10, tokens=30)
            for i in range(start, min(start + 500, messages))])
        if (start + 500) % RESTART_EVERY == 0:
            restarts += 1
            name = f"s{restarts}"
            conv.resume([convlog.Tier("session/resume", forgot),
                         convlog.Tier("session/new", new_session(name))],
                        budget=convlog.Budget(tokens=2_000, messages=20))
    return conv.state.version


def median_time(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        gc.collect()  # each run starts from the same heap, not from the last run's garbage
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure(directory: Path, messages: int, repeats: int) -> dict[str, float]:
    with convlog.open(f"sqlite:///{directory / f'{messages}.db'}",
                      preload_tokenizer=False) as log:
        events = build(log, messages)
        recorded = log.events("long")
        reads: dict[str, Callable[[], object]] = {
            "read_events": lambda: log.events("long"),
            "user_walk": lambda: user_view("long", recorded),
            "agent_walk": lambda: agent_view("long", recorded),
            "diff_walk": lambda: diff("long", recorded),
            "agent_view": lambda: log.view("long", "agent"),
        }
        out: dict[str, float] = {"events": float(events)}
        for name, fn in reads.items():
            out[name + "_s"] = median_time(fn, repeats)
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (< 1 minute)")
    args = parser.parse_args()
    stamp = meta.begin("replay", args.quick)
    sizes, repeats = ((2_000, 20_000), 3) if args.quick else ((10_000, 100_000), 5)
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            results[str(size)] = measure(Path(tmp), size, repeats)
    reads = ("read_events", "user_walk", "agent_walk", "diff_walk", "agent_view")
    print(f"The two views: medians of {repeats} runs over the whole conversation (SQLite),"
          f" a restart with injected history every {RESTART_EVERY:,} messages.\n"
          "read_events: log.events(); *_walk: the projection over events already read;"
          " agent_view: log.view('agent'), both together\n")
    print(f"{'messages':>9} | {'events':>8} | " + " | ".join(f"{r:>11}" for r in reads)
          + " | walk/read")
    for size in sizes:
        r = results[str(size)]
        print(f"{size:>9,} | {int(r['events']):>8,} | "
              + " | ".join(f"{r[k + '_s'] * 1000:>8.0f} ms" for k in reads)
              + f" | {r['agent_walk_s'] / r['read_events_s']:>8.2f}x")
    small, large = (results[str(s)] for s in sizes)
    growth = {k: large[k + "_s"] / small[k + "_s"] for k in reads}
    print(f"\ngrowth {sizes[1]:,} / {sizes[0]:,} messages ({sizes[1] // sizes[0]}x): " +
          ", ".join(f"{k} {v:.1f}x" for k, v in growth.items()))
    linear = growth["agent_walk"] <= 1.5 * sizes[1] / sizes[0]
    print(f"target: the agent view's walk grows linearly with the conversation: "
          f"{'met' if linear else 'MISSED'}")
    path = stamp.save({"sizes": sizes, "repeats": repeats, "results": results,
                       "growth": growth})
    print(f"saved {path}")


if __name__ == "__main__":
    main()
