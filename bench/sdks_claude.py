"""What switching a Claude Agent SDK app's `SessionStore` to convlog costs or saves:
convlog's `ConvlogSessionStore` against the SDK's own reference stores, same
transcript, one run (the Claude section of `bench.sdks`; alone:
``.venv/bin/python -m bench.sdks_claude [--quick]``).

The SDK ships one store, `InMemorySessionStore` (a dict of lists: a floor, not a
database). Its repository's durable reference adapters are examples for Postgres
(asyncpg) and S3 (boto3); `ReferenceSQLiteStore` below is the Postgres example's
design on SQLite, written as those examples are: one row per entry (``seq`` orders
them), one multi-row INSERT per `append` (json.dumps per entry, no dedupe),
``SELECT entry ... ORDER BY seq`` + json.loads per row for `load`, the driver's
blocking calls in `anyio.to_thread.run_sync` as the S3 example wraps boto3, and
convlog's durability (WAL, synchronous=NORMAL).

How the SDK calls `append` (claude_agent_sdk/_internal/transcript_mirror_batcher.py
and session_import.py), so the batch shapes timed:
- ``append_turn`` (4 entries: prompt, tool_use, tool_result, answer): the default
  "batched" flush mode appends a turn's entries once, when its `result` arrives;
- ``append_1``: the "eager" mode flushes after every mirror frame (one entry);
- ``append_500``: a long turn overflowing the batcher (MAX_PENDING_ENTRIES = 500)
  and `import_session_to_store` (batch_size 500) append 500 entries at a time;
- ``load``: the whole transcript, what a resume reads before spawning the CLI;
- peak Python memory (tracemalloc) of one `load` at the largest size.

Entries are Claude Code transcript lines (~250 characters of text each, plus the
fields the CLI writes). Sizes: 1k, 10k and 100k entries (``--quick``: 100 and 1k).
Ratios are convlog / the reference (below 1: convlog is faster).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sqlite3
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import anyio
from claude_agent_sdk import InMemorySessionStore

from bench import meta
from convlog.integrations.claude_agent_sdk import ConvlogSessionStore

RESULTS = Path(__file__).resolve().parent / "results"
WORDS = ("session", "token", "budget", "resume", "agent", "history", "restart", "cost")
SESSION = "5f0c6a4e-0000-4000-8000-00000000beef"
KEY: Any = {"project_key": "-home-me-api", "session_id": SESSION}
USAGE = {"input_tokens": 4, "cache_creation_input_tokens": 310, "cache_read_input_tokens": 18_000,
         "output_tokens": 120, "service_tier": "standard"}


class ReferenceSQLiteStore:
    """The SDK repository's Postgres reference adapter, on SQLite (see the module doc)."""

    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")  # convlog's durability: WAL, NORMAL
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS claude_session_store (project_key TEXT NOT NULL, "
            "session_id TEXT NOT NULL, subpath TEXT NOT NULL DEFAULT '', "
            "seq INTEGER PRIMARY KEY AUTOINCREMENT, entry TEXT NOT NULL, mtime INTEGER NOT NULL)")
        self._db.execute("CREATE INDEX IF NOT EXISTS claude_session_store_key_idx "
                         "ON claude_session_store (project_key, session_id, subpath, seq)")

    def _append(self, key: Any, entries: list[Any]) -> None:
        mtime, subpath = int(time.time() * 1000), key.get("subpath") or ""
        with self._db:
            self._db.execute("BEGIN")
            self._db.executemany(
                "INSERT INTO claude_session_store (project_key, session_id, subpath, entry, "
                "mtime) VALUES (?, ?, ?, ?, ?)",
                [(key["project_key"], key["session_id"], subpath, json.dumps(e), mtime)
                 for e in entries])

    def _load(self, key: Any) -> list[Any] | None:
        rows = self._db.execute(
            "SELECT entry FROM claude_session_store WHERE project_key = ? AND session_id = ? "
            "AND subpath = ? ORDER BY seq",
            (key["project_key"], key["session_id"], key.get("subpath") or "")).fetchall()
        return [json.loads(entry) for (entry,) in rows] or None

    async def append(self, key: Any, entries: list[Any]) -> None:
        if entries:
            await anyio.to_thread.run_sync(self._append, key, entries)

    async def load(self, key: Any) -> list[Any] | None:
        return await anyio.to_thread.run_sync(self._load, key)

    def close(self) -> None:
        self._db.close()


def _base(uuid: str, parent: str | None, kind: str, i: int) -> dict[str, Any]:
    return {"parentUuid": parent, "isSidechain": False, "userType": "external",
            "cwd": "/home/me/api", "sessionId": SESSION, "version": "2.0.14",
            "gitBranch": "main", "type": kind, "uuid": uuid,
            "timestamp": f"2026-11-25T10:{i // 6000 % 60:02d}:{i // 100 % 60:02d}.{i % 1000:03d}Z"}


def turn(i: int, parent: str | None) -> list[dict[str, Any]]:
    """One turn of a Claude Code transcript: a prompt, a tool call, its result, an answer."""
    text = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(40))[:250]
    ids = [f"{i:08d}-{n:04d}-4000-8000-000000000000" for n in range(4)]
    prompt = _base(ids[0], parent, "user", i) | {
        "message": {"role": "user", "content": f"question {i}: {text}"}}
    call = _base(ids[1], ids[0], "assistant", i) | {"requestId": f"req_{i:020d}", "message": {
        "id": f"msg_{i:020d}", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5", "stop_reason": None, "stop_sequence": None,
        "content": [{"type": "tool_use", "id": f"toolu_{i:020d}", "name": "Grep",
                     "input": {"pattern": WORDS[i % len(WORDS)], "path": "src"}}],
        "usage": USAGE}}
    result = _base(ids[2], ids[1], "user", i) | {
        "message": {"role": "user", "content": [
            {"tool_use_id": f"toolu_{i:020d}", "type": "tool_result",
             "content": f"src/{WORDS[i % len(WORDS)]}.py:{i % 300}: {text}"}]},
        "toolUseResult": {"mode": "content", "numFiles": 1, "numLines": 1}}
    answer = _base(ids[3], ids[2], "assistant", i) | {"requestId": f"req_{i:020d}b",
                                                       "message": {
        "id": f"msg_{i:020d}b", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5", "stop_reason": "end_turn", "stop_sequence": None,
        "content": [{"type": "text", "text": f"answer {i}: {text}"}], "usage": USAGE}}
    return [prompt, call, result, answer]


class Transcript:
    """Entries in the CLI's order, chained by parentUuid, never repeating a uuid."""

    def __init__(self) -> None:
        self.turns, self.parent, self.pending = 0, None, list[dict[str, Any]]()

    def take(self, n: int) -> list[dict[str, Any]]:
        while len(self.pending) < n:
            made = turn(self.turns, self.parent)
            self.turns += 1
            self.parent = made[-1]["uuid"]
            self.pending.extend(made)
        taken, self.pending = self.pending[:n], self.pending[n:]
        return taken


async def measure(stores: dict[str, Any], size: int, repeat: int
                  ) -> dict[str, dict[str, float]]:
    """Each operation's median per store. The stores take turns call by call, so a
    busy machine slows them alike and the ratios hold (the medians are what it was).
    Between calls, untimed: the result is freed and a young-generation collection runs
    in the worker thread, so a store's call never pays for the previous store's garbage
    (freeing 1,000 entries decoded by json.loads was ~0.5 ms charged to the next store)."""
    transcripts = {name: Transcript() for name in stores}
    for name, store in stores.items():
        for done in range(0, size, 500):  # prefill N entries, 500 at a time (an import)
            await store.append(KEY, transcripts[name].take(min(500, size - done)))
        loaded = await store.load(KEY)
        assert loaded is not None and len(loaded) == size, (name, size)
    gc.collect()  # the same settling for every store: nothing left to collect
    loads = max(3, min(repeat // 10, 2_000_000 // size))  # ~100k entries: 20 calls
    plan: list[tuple[str, int, int]] = [("load_ms", loads, 0), ("append_1_ms", repeat, 1),
                                        ("append_turn_ms", repeat, 4),
                                        ("append_500_ms", max(3, repeat // 20), 500)]
    result: dict[str, dict[str, float]] = {name: {} for name in stores}
    order = list(stores.items())
    for op, calls, batch in plan:
        samples: dict[str, list[float]] = {name: [] for name in stores}
        for round_ in range(calls):  # the first of each round alternates
            for name, store in (order if round_ % 2 == 0 else order[::-1]):
                entries = transcripts[name].take(batch)  # taken before the clock starts
                started = time.perf_counter()
                got = await (store.append(KEY, entries) if batch else store.load(KEY))
                samples[name].append(time.perf_counter() - started)
                # Outside the clock: the result is freed here, and an idle hop makes
                # the worker thread drop its hold on it, so no store pays for freeing
                # the previous store's 1,000s of entries inside its own call.
                del got, entries
                await anyio.to_thread.run_sync(gc.collect, 0)
        for name in stores:
            result[name][op] = round(statistics.median(samples[name]) * 1000, 3)
    return result


async def peak_load_mib(store: Any) -> float:
    """Peak Python memory (tracemalloc) of one `load`: what a resume costs the host
    beyond the entries it gets back."""
    gc.collect()
    tracemalloc.start()
    try:
        await store.load(KEY)
        return round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
    finally:
        tracemalloc.stop()


STORES = ("convlog", "sqlite_reference", "in_memory")


def run(quick: bool) -> dict[str, Any]:
    """Time the three stores side by side at each size; print and return the figures."""
    sizes, repeat = ((100, 1_000), 50) if quick else ((1_000, 10_000, 100_000), 200)
    rows: list[dict[str, Any]] = []
    peaks: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            stores: dict[str, Any] = {
                "convlog": ConvlogSessionStore(f"sqlite:///{tmp}/convlog-{size}.db"),
                "sqlite_reference": ReferenceSQLiteStore(Path(tmp) / f"ref-{size}.db"),
                "in_memory": InMemorySessionStore()}
            row: dict[str, Any] = {"entries": size, **asyncio.run(measure(stores, size, repeat))}
            if size == sizes[-1]:
                peaks = {name: asyncio.run(peak_load_mib(store))
                         for name, store in stores.items()}
            for name in ("convlog", "sqlite_reference"):
                stores[name].close()
            row["ratio"] = {ref: {k: round(row["convlog"][k] / row[ref][k], 2)
                                  for k in row["convlog"]} for ref in STORES[1:]}
            rows.append(row)
    print(f"ConvlogSessionStore vs the Claude Agent SDK's reference stores "
          f"(medians, ms; {repeat} appends of 1 entry / a turn, fewer of 500, and loads)")
    print(f"peak memory of one load() of {sizes[-1]} entries (MiB, tracemalloc): "
          + ", ".join(f"{name} {peaks[name]}" for name in STORES))
    print(f"{'entries':>7} {'operation':<12}{'convlog':>10}{'SQLite ref':>11}{'ratio':>7}"
          f"{'memory':>10}{'ratio':>8}")
    for row in rows:
        for op in row["convlog"]:
            print(f"{row['entries']:>7} {op.removesuffix('_ms'):<12}{row['convlog'][op]:>10}"
                  f"{row['sqlite_reference'][op]:>11}{row['ratio']['sqlite_reference'][op]:>7}"
                  f"{row['in_memory'][op]:>10}{row['ratio']['in_memory'][op]:>8}")
    return {"repeat": repeat, "rows": rows, "peak_load_mib": {"entries": sizes[-1], **peaks}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sessions, fewer calls")
    args = parser.parse_args()
    stamp = meta.begin("sdks-claude", args.quick)
    print(f"saved {stamp.save(run(args.quick))}")


if __name__ == "__main__":
    main()
