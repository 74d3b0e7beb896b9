"""What encryption at rest costs: appends and a 10,000-token context, encrypted vs not.

Run with ``.venv/bin/python -m bench.crypto [--quick]`` (``make bench`` runs it). Both
stores are SQLite files on the same disk, written and read by the same process in the
same run, one operation on each in turn (so a busy neighbour slows both alike):

- append: one `append_turn` of a user and an assistant message (~90 words each, token
  counts included, as a host records a turn), p50 and p95 per turn;
- context: `log.context(key, budget=Budget(tokens=10_000))` (the README's budget: at
  most 30 messages) on a conversation of 400 messages of ~330 tokens, so the newest
  ~30 fill the 10,000 tokens; every event read is decoded (decrypted, when
  encrypted), p50 per build;
- context of short messages, the worst case: `Budget(tokens=10_000, messages=200)`
  over 400 messages of ~120 tokens: ~85 messages fill the budget, and the builder
  reads pages of `messages + 16` = 216 events, each decrypted;
- messages(last=20): the page a UI shows, p50;
- the size of each database file at the end (sealing adds a key id, a nonce, a tag
  and base64 to every event with private fields).

Target: encrypted / unencrypted ≤ 1.3x on appends and on the context.
Results go to ``bench/results/crypto-<UTC date>[-quick].json``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import convlog
from bench import meta

RESULTS = Path(__file__).resolve().parent / "results"
WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "while",
         "agents", "keep", "their", "memory", "of", "every", "conversation", "across",
         "restarts", "and", "budgets"]


def text(i: int, words: int = 90) -> str:
    return " ".join(WORDS[(i + j) % len(WORDS)] for j in range(words)) + f" #{i}"


def turn(i: int, words: int = 90) -> list[convlog.Message]:
    return [convlog.user(text(i, words)),
            convlog.assistant(text(i + 1, words), model="gpt-4o",
                              usage=convlog.Usage(input_tokens=900, output_tokens=120))]


def quantile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def open_log(root: Path, encrypted: bool, key: str) -> convlog.ConversationLog:
    if encrypted:
        os.environ["CONVLOG_KEY"] = key
    else:
        os.environ.pop("CONVLOG_KEY", None)
    name = "encrypted" if encrypted else "plain"
    return convlog.open(f"sqlite:///{root / name}.db", views=str(root / f"{name}.duckdb"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    stamp = meta.begin("crypto", args.quick)
    rounds, appends, builds = (3, 150, 60) if args.quick else (5, 1000, 300)
    os.environ.pop("CONVLOG_KEY_FILE", None)
    key = convlog.generate_key()
    samples: dict[str, dict[str, list[float]]] = {
        mode: {"append": [], "context": [], "short": [], "last20": []}
        for mode in ("plain", "encrypted")}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        logs = {mode: open_log(root, mode == "encrypted", key) for mode in samples}
        for log in logs.values():  # the conversations the reads use, and a warm-up
            conv = log.conversation("history", user="alice")
            short = log.conversation("short", user="alice")
            for i in range(0, 400, 2):
                conv.append_turn(turn(i, 250))
                short.append_turn(turn(i))
            log.context("history", budget=convlog.Budget(tokens=10_000))
        convs = {mode: log.conversation(f"writes-{mode}", user="bob")
                 for mode, log in logs.items()}
        budget = convlog.Budget(tokens=10_000)
        wide = convlog.Budget(tokens=10_000, messages=200)
        for _ in range(rounds):  # each operation alternates between the two stores
            for _ in range(appends // rounds):
                for mode in samples:
                    messages = turn(len(samples[mode]["append"]) * 2)
                    start = time.perf_counter()
                    convs[mode].append_turn(messages)
                    samples[mode]["append"].append(time.perf_counter() - start)
            for _ in range(builds // rounds):
                for mode, log in logs.items():
                    start = time.perf_counter()
                    log.context("history", budget=budget)
                    samples[mode]["context"].append(time.perf_counter() - start)
                    start = time.perf_counter()
                    log.context("short", budget=wide)
                    samples[mode]["short"].append(time.perf_counter() - start)
                    start = time.perf_counter()
                    log.messages("history", last=20)
                    samples[mode]["last20"].append(time.perf_counter() - start)
        context = logs["encrypted"].context("history", budget=budget)
        wide_context = logs["encrypted"].context("short", budget=wide)
        for log in logs.values():
            log.close()
        sizes = {mode: (root / f"{mode}.db").stat().st_size for mode in samples}
    figures: dict[str, Any] = {}
    for mode, by_op in samples.items():
        figures[mode] = {f"{op}_p50_us": round(quantile(v, 0.5) * 1e6, 1)
                         for op, v in by_op.items()}
        figures[mode]["append_p95_us"] = round(quantile(by_op["append"], 0.95) * 1e6, 1)
    ratio = {op: round(figures["encrypted"][f"{op}_p50_us"] / figures["plain"][f"{op}_p50_us"],
                       3) for op in ("append", "context", "short", "last20")}
    print(f"encryption at rest (SQLite, {appends} appends and {builds} contexts each, "
          f"alternating; contexts: {context.message_count} messages / {context.tokens} "
          f"tokens, short: {wide_context.message_count} / {wide_context.tokens})")
    print(f"{'':30}{'plain':>12}{'encrypted':>12}{'ratio':>8}")
    for op, label in (("append", "append_turn p50 us"), ("context", "10k-token context p50 us"),
                      ("short", "10k of short msgs p50 us"),
                      ("last20", "messages(last=20) p50 us")):
        print(f"{label:30}{figures['plain'][f'{op}_p50_us']:>12}"
              f"{figures['encrypted'][f'{op}_p50_us']:>12}{ratio[op]:>8}")
    print(f"{'append_turn p95 us':30}{figures['plain']['append_p95_us']:>12}"
          f"{figures['encrypted']['append_p95_us']:>12}")
    print(f"database size: {sizes['plain'] / 2**20:.1f} MiB plain, "
          f"{sizes['encrypted'] / 2**20:.1f} MiB encrypted "
          f"({sizes['encrypted'] / sizes['plain']:.2f}x)")
    print("target: ratio <= 1.3 on appends and on the context: "
          + ("met" if ratio["append"] <= 1.3 and ratio["context"] <= 1.3 else "MISSED"))
    path = stamp.save({"figures": figures, "ratio": ratio,
                       "context_tokens": context.tokens,
                       "context_messages": context.message_count,
                       "short_context_messages": wide_context.message_count,
                       "db_bytes": sizes, "rounds": rounds, "quick": args.quick})
    print(f"saved {path}")


if __name__ == "__main__":
    main()
