"""Memory blocks and the context across a user's conversations, at size.

Run with ``.venv/bin/python -m bench.memory [--quick]`` (``make bench`` runs it). For
conversations of 1,000 and 100,000 messages (quick: 1,000 and 10,000) it measures, in
one run:

1. ``conv.context()`` of a conversation whose tail holds 3 live memory blocks
   (default cap 3), against the same call on a twin conversation with no blocks
   (same size, same messages): what the blocks cost;
2. ``log.resumption_context(user=..., conversations=3)``: one context over the
   user's three conversations of that size, views caught up first (as a serving host
   keeps them; the catch-up of a fresh write is ``bench.views``' subject).

Workload: per size one SQLite file (WAL); a user with three conversations of N
messages each, written in turns of 1,000 messages (host-given token counts, so the
fill does not wait for the tokenizer), a memory block injected after every turn
(fresh memory ids), and then the same ending everywhere: three blocks, each followed
by a user question and an answer. So the newest messages and blocks are identical at
every size, and only the length differs. Calls are interleaved across sizes, round
by round; figures are medians. The target: a call at the largest size takes at most
1.5x what it takes at 1,000 messages (flat in length).
Results go to ``bench/results/memory-<UTC date>[-quick].json``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import convlog
from bench import meta
from convlog.services.log import application

TURN = 1_000
GROWTH_TARGET = 1.5
TEXT = "we should retry the export job with a smaller shard and a longer timeout " * 3


def _message(i: int) -> convlog.Message:
    make = convlog.user if i % 2 == 0 else convlog.assistant
    return make(f"message {i}: {TEXT}", tokens=50)


def fill(log: convlog.ConversationLog, key: str, size: int, blocks: bool) -> None:
    conv = log.conversation(key, user="u" if blocks else "twin", agent="copilot",
                            title=key)
    body = size - 6  # the common ending adds six messages
    for start in range(0, body, TURN):
        conv.append_turn([_message(i) for i in range(start, min(start + TURN, body))])
        if blocks:
            conv.inject_memory(f"memory of turn {start}", memory_ids=[f"{key}-{start}"])
    for j in range(3):
        if blocks:
            conv.inject_memory(f"the user prefers small shards ({j})",
                               memory_ids=[f"{key}-end-{j}"])
        conv.append_turn([convlog.user(f"follow-up {j}: {TEXT}", tokens=50),
                          convlog.assistant(f"answer {j}: {TEXT}", tokens=50)])


def build(directory: Path, size: int) -> convlog.ConversationLog:
    log = convlog.open(f"sqlite:///{directory / f'{size}.db'}")
    for c in range(3):
        fill(log, f"conv-{c}", size, blocks=True)
    fill(log, "twin", size, blocks=False)
    application(log).catalog.refresh()
    return log


def timed(call: Callable[[], object], repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        out.append(time.perf_counter() - started)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1k and 10k messages (< 1 min)")
    args = parser.parse_args()
    stamp = meta.begin("memory", args.quick)
    sizes = (1_000, 10_000) if args.quick else (1_000, 100_000)
    rounds, batch = (15, 4) if args.quick else (40, 5)
    samples: dict[str, dict[int, list[float]]] = {
        "blocks": {s: [] for s in sizes}, "twin": {s: [] for s in sizes},
        "user": {s: [] for s in sizes}}
    with tempfile.TemporaryDirectory() as tmp:
        logs = {}
        for size in sizes:
            started = time.perf_counter()
            logs[size] = build(Path(tmp), size)
            print(f"wrote 4 x {size:,} messages in {time.perf_counter() - started:.1f} s")
        checks = {s: logs[s].context("conv-2") for s in sizes}
        assert all(c.memory_blocks == 3 for c in checks.values()), checks
        for r in range(rounds):  # interleaved: the host's speed swings hit every size
            for size in (sizes if r % 2 == 0 else sizes[::-1]):
                log = logs[size]
                samples["blocks"][size] += timed(partial(log.context, "conv-2"), batch)
                samples["twin"][size] += timed(partial(log.context, "twin"), batch)
                samples["user"][size] += timed(
                    partial(log.resumption_context, user="u", conversations=3), batch)
        spans = {s: logs[s].resumption_context(user="u", conversations=3) for s in sizes}
        for log in logs.values():
            log.close()
    med = {k: {s: statistics.median(v[s]) for s in sizes} for k, v in samples.items()}
    small, large = sizes
    print(f"\nmedians of {rounds * batch} calls each (default budget: 10,000 tokens)\n")
    print(f"{'messages':>9} | {'context, 3 live blocks':>22} | {'no blocks':>9} | "
          f"{'block cost':>10} | {'user context, 3 conv.':>21}")
    for size in sizes:
        print(f"{size:>9,} | {med['blocks'][size] * 1000:>19.2f} ms | "
              f"{med['twin'][size] * 1000:>6.2f} ms | "
              f"{med['blocks'][size] / med['twin'][size]:>9.2f}x | "
              f"{med['user'][size] * 1000:>18.2f} ms")
    growth = {k: med[k][large] / med[k][small] for k in med}
    print(f"\ngrowth {large:,} / {small:,} messages: " + ", ".join(
        f"{k} {v:.2f}x" for k, v in growth.items()))
    flat = growth["blocks"] <= GROWTH_TARGET and growth["user"] <= GROWTH_TARGET
    print(f"target: flat in length (<= {GROWTH_TARGET}x): {'met' if flat else 'MISSED'}")
    span = spans[large]
    print(f"user context at {large:,}: {span.tokens} tokens, {span.message_count} messages "
          f"of {span.conversation_count} conversations")
    path = stamp.save({
        "sizes": sizes, "calls": rounds * batch, "median_s": {
            k: {str(s): v for s, v in m.items()} for k, m in med.items()},
        "growth": growth, "target_met": flat,
        "user_context": {"tokens": span.tokens, "messages": span.message_count}})
    print(f"saved {path}")


if __name__ == "__main__":
    main()
