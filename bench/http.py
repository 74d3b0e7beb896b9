"""HTTP: appends/s and p50/p99 latency of `convlog serve`, against the in-process figure.

Run with ``.venv/bin/python -m bench.http [--quick]`` (``make bench`` runs it). Needs
``wrk`` (Debian: ``apt-get install wrk``).

The load generator is wrk, not a Python loop: on this 2-core machine the generator
shares the CPU with the server, and wrk (C, one event loop per thread, LuaJIT for
per-request bodies) pushes tens of thousands of requests/s from a fraction of a
core, where a Python generator (locust, httpx/aiohttp) would need a core of its own
to reach 5,000/s and would measure mostly itself. Its latency percentiles come from
its HdrHistogram (`latency:percentile`).

Workloads, each with 1, 8 and 32 concurrent connections against one `convlog serve`
process on a fresh SQLite file (WAL, synchronous=NORMAL, as the library):
- append: POST /v1/conversations/{key}/turns, turns of 2 messages (a user question and
  an assistant answer with model and usage), unique message ids, over 64 conversations;
- context: GET the 10,000-token context (XML, up to 1,000 messages) of a conversation
  holding ~40,000 tokens of history.
In-process: the same turns with `log.append_turn` and the same `log.context` call, one
thread, in this process. Then what other users see while one user is hostile (one
huge writer; many streams): `bench.http_others`. Results go to
``bench/results/http-<UTC date>[-quick].json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import httpx

import convlog
from bench import http_others, meta

CONCURRENCY = (1, 8, 32)
CONTEXT_QUERY = "tokens=10000&messages=1000"
HISTORY_MESSAGES = 600  # ~65 tokens each: ~40,000 tokens, four times the budget

APPEND_LUA = r"""
local counter = 0
local tid = 0
local threads = {}
function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end
function init(args)
  tid = wrk.thread:get("tid")
end
function request()
  counter = counter + 1
  local id = tid .. "-" .. counter
  local body = '{"messages":[{"type": "message", "role":"user","id":"' .. id .. '-q","content":' ..
    '"What did we decide about auth for the mobile client, request ' .. id .. '?"},' ..
    '{"type": "message", "role":"assistant","id":"' .. id .. '-a","model":"gpt-4o","content":' ..
    '"JWT with rotating keys, rotated every 24 hours.",' ..
    '"usage":{"input_tokens":812,"output_tokens":12}}]}'
  local path = "/v1/conversations/bench-" .. tid .. "-" .. (counter % 32) .. "/turns"
  return wrk.format("POST", path, {["Content-Type"] = "application/json"}, body)
end
"""

REPORT_LUA = r"""
function done(summary, latency, requests)
  local bad = summary.errors.status + summary.errors.connect + summary.errors.read +
    summary.errors.write + summary.errors.timeout
  io.write(string.format(
    'WRK {"requests": %d, "bad": %d, "seconds": %f, "p50_us": %d, "p99_us": %d}\n',
    summary.requests, bad, summary.duration / 1e6, latency:percentile(50),
    latency:percentile(99)))
end
"""


class WrkRun(NamedTuple):
    proc: subprocess.Popen[str]
    script: str
    connections: int


def wrk_start(url: str, connections: int, seconds: float, script: str) -> WrkRun:
    """wrk, running: `wrk_finish` waits for its figures."""
    threads = min(2, connections)
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(script + REPORT_LUA)
    return WrkRun(subprocess.Popen(
        ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds:g}s", "--timeout", "10s",
         "-s", f.name, url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True),
        f.name, connections)


def wrk_finish(run: WrkRun) -> dict[str, Any]:
    proc, connections = run.proc, run.connections
    try:
        stdout, stderr = proc.communicate(timeout=600)
    finally:
        os.unlink(run.script)
    found = re.search(r"^WRK (\{.*\})$", stdout, re.M)
    if proc.returncode != 0 or not found:
        raise SystemExit(f"wrk failed: {stdout}\n{stderr}")
    result: dict[str, Any] = json.loads(found.group(1))
    if result["bad"]:
        raise SystemExit(f"wrk saw {result['bad']} failed requests at c={connections}")
    return result


def wrk(url: str, connections: int, seconds: float, script: str) -> dict[str, Any]:
    return wrk_finish(wrk_start(url, connections, seconds, script))


def start_server(db: str, cwd: Path, options: list[str] | None = None
                 ) -> tuple[subprocess.Popen[str], str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CONVLOG_URL", "CONVLOG_TOKEN")}
    proc = subprocess.Popen([sys.executable, "-m", "convlog.cli.main", "serve", "--db", db,
                             "--port", "0", *(options or [])], cwd=cwd, env=env,
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    assert proc.stderr is not None
    found = re.search(r"listening on (http://\S+)", proc.stderr.readline())
    if not found:
        proc.kill()
        raise SystemExit("convlog serve did not start")
    threading.Thread(target=proc.stderr.read, daemon=True).start()  # never let it block
    return proc, found.group(1)


def history(n: int) -> list[convlog.Message]:
    text = ("the deploy needs a rollback plan, a canary stage, and an owner on call for the "
            "first hour; the database migration runs before the app rolls out, and "
            "feature flags guard the new checkout flow for ten percent of users")
    words = text.split(" ")
    return [(convlog.user if i % 2 == 0 else convlog.assistant)(
        f"{i}: " + " ".join(words[(i + k) % len(words)] for k in range(48)), id=f"h{i}")
        for i in range(n)]


def in_process(tmp: Path, turns: int, contexts: int) -> dict[str, float]:
    """The same work without HTTP: one thread calling the library."""
    with convlog.open(f"sqlite:///{tmp / 'inproc.db'}") as log:
        log.append_turn("warm", [convlog.user("warm-up")])
        latencies = []
        started = time.perf_counter()
        for t in range(turns):
            begin = time.perf_counter()
            log.append_turn(f"bench-{t % 64}", [
                convlog.user(f"What did we decide about auth for the mobile client, "
                             f"request {t}?", id=f"{t}-q"),
                convlog.assistant("JWT with rotating keys, rotated every 24 hours.",
                                  id=f"{t}-a", model="gpt-4o",
                                  usage=convlog.Usage(input_tokens=812, output_tokens=12))])
            latencies.append(time.perf_counter() - begin)
        elapsed = time.perf_counter() - started
        log.append_turn("ctx", history(HISTORY_MESSAGES))
        budget = convlog.Budget(tokens=10_000, messages=1_000)
        log.context("ctx", budget=budget)
        ctx = []
        for _ in range(contexts):
            begin = time.perf_counter()
            log.context("ctx", budget=budget)
            ctx.append(time.perf_counter() - begin)
    return {"messages_per_s": 2 * turns / elapsed,
            "append_p50_ms": 1000 * statistics.median(latencies),
            "append_p99_ms": 1000 * statistics.quantiles(latencies, n=100)[98],
            "context_per_s": contexts / sum(ctx),
            "context_p50_ms": 1000 * statistics.median(ctx),
            "context_p99_ms": 1000 * statistics.quantiles(ctx, n=100)[98]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    stamp = meta.begin("http", args.quick)
    if shutil.which("wrk") is None:
        raise SystemExit("bench.http needs wrk: apt-get install wrk")
    seconds = 3.0 if args.quick else 10.0
    results: dict[str, Any] = {"append": {}, "context": {}}
    with tempfile.TemporaryDirectory() as tmp:
        base = in_process(Path(tmp), 2_000 if args.quick else 10_000, 50 if args.quick else 200)
        proc, url = start_server(f"sqlite:///{tmp}/served.db", Path(tmp))
        try:
            with httpx.Client(base_url=url, timeout=60) as client:  # warm up, seed history
                client.post("/v1/conversations/warm/turns", json={"messages": [
                    {"type": "message", "role": "user", "content": "warm-up"}]}).raise_for_status()
                client.post("/v1/conversations/ctx/turns", json={"messages": [
                    {"type": "message", "role": m.role, "content": m.content, "id": m.id}
                    for m in history(HISTORY_MESSAGES)]}).raise_for_status()
                tokens = client.get(f"/v1/conversations/ctx/context?{CONTEXT_QUERY}"
                                    ).json()["tokens"]
            for c in CONCURRENCY:
                r = wrk(url, c, seconds, APPEND_LUA)
                results["append"][str(c)] = {
                    "messages_per_s": 2 * r["requests"] / r["seconds"],
                    "p50_ms": r["p50_us"] / 1000, "p99_ms": r["p99_us"] / 1000}
                r = wrk(f"{url}/v1/conversations/ctx/context?{CONTEXT_QUERY}", c, seconds, "")
                results["context"][str(c)] = {
                    "per_s": r["requests"] / r["seconds"],
                    "p50_ms": r["p50_us"] / 1000, "p99_ms": r["p99_us"] / 1000}
        finally:
            proc.terminate()
            proc.wait(30)
    http_others.check_fds(http_others.QUICK_STREAMS if args.quick else http_others.STREAMS)
    others = http_others.run(start_server, wrk_start, wrk_finish, APPEND_LUA, seconds,
                             args.quick)
    print(f"HTTP ({'quick' if args.quick else 'full'}, {seconds:g} s per point, wrk): one "
          f"`convlog serve` process on SQLite; turns of 2 messages; the context is "
          f"{tokens:,} tokens")
    print(f"{'':<22} | {'msg/s':>9} | {'p50 ms':>7} | {'p99 ms':>7} | {'ctx/s':>7} | "
          f"{'p50 ms':>7} | {'p99 ms':>7}")
    print(f"{'in-process, 1 thread':<22} | {base['messages_per_s']:>9,.0f} | "
          f"{base['append_p50_ms']:>7.2f} | {base['append_p99_ms']:>7.2f} | "
          f"{base['context_per_s']:>7,.0f} | {base['context_p50_ms']:>7.2f} | "
          f"{base['context_p99_ms']:>7.2f}")
    for c in CONCURRENCY:
        a, x = results["append"][str(c)], results["context"][str(c)]
        print(f"{f'HTTP, {c} clients':<22} | {a['messages_per_s']:>9,.0f} | "
              f"{a['p50_ms']:>7.2f} | {a['p99_ms']:>7.2f} | {x['per_s']:>7,.0f} | "
              f"{x['p50_ms']:>7.2f} | {x['p99_ms']:>7.2f}")
    best = results["append"]["32"]["messages_per_s"]
    print(f"32 clients vs in-process: appends {best / base['messages_per_s']:.2f}x, "
          f"context {results['context']['32']['per_s'] / base['context_per_s']:.2f}x; "
          f"target >= 5,000 messages/s with 32 clients: {'met' if best >= 5000 else 'MISSED'}")
    http_others.report(others)
    path = stamp.save({"date": f"{datetime.now(UTC):%Y-%m-%d}", "quick": args.quick,
                       "seconds": seconds, "context_tokens": tokens, "in_process": base,
                       "http": results, "others": others})
    print(f"saved {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
