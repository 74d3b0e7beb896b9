"""Scale-out: 1, 2 and 4 `convlog serve` processes on one PostgreSQL, sticky or not.

Run with ``.venv/bin/python -m bench.scale [--quick]`` (``make bench`` runs it).

Real processes: N `convlog serve` servers on one PostgreSQL database (this machine's
server, 127.0.0.1:5432, database ``test``, a fresh schema dropped afterwards; commits
durable by the server's settings). The load is `USERS` simulated hosts, each driving
its own conversation one turn at a time (a user question and an assistant answer):
- sticky: a conversation always goes to the same server (user % N);
- round-robin: each successive turn of a conversation goes to the next server, as a
  load balancer without sticky sessions does: every server's cached state of the
  conversation is then stale on most turns, and the write conflicts and reloads.
Every point runs `--rounds` times (3), the rounds interleaved, and the median round is
reported (this machine is shared: a burst of other work then hits every point alike).
Reported per point: turns/s, p50/p99 latency of a turn, the servers' CPU per turn,
and the events-table lock: how many sessions were waiting for it on average
(`pg_locks` sampled every 10 ms: `granted = false` on the events table) and how often
one held it while idle (waiting for its client, which the server-side insert rules
out). Then one conversation, turns in sequence: all to one server, and alternating
between two servers (median and worst append of each).

The load generator is asyncio over raw keep-alive HTTP/1.1 (a few tens of
microseconds of CPU per request): it shares the 2 cores with the servers and
PostgreSQL, so absolute figures are this machine's; the ratios in one run are the
point. Results go to ``bench/results/scale-<UTC date>[-quick].json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from bench import meta
from bench.writers import PG_ADMIN, drop_pg_schema, fresh_pg_schema

USERS = 16
SERVERS = (1, 2, 4)
CLK_TCK = os.sysconf("SC_CLK_TCK")


def turn_body(user: int, turn: int) -> bytes:
    uid = f"u{user}-t{turn}"
    return json.dumps({"messages": [
        {"type": "message", "role": "user", "id": f"{uid}-q",
         "content": f"What did we decide about auth for the mobile client ({uid})?"},
        {"type": "message", "role": "assistant", "id": f"{uid}-a", "model": "gpt-4o",
         "content": "JWT with rotating keys, rotated every 24 hours.",
         "usage": {"input_tokens": 812, "output_tokens": 12}}]}).encode()


class Connection:
    """One keep-alive HTTP/1.1 connection: POST a body, read the status and body."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        assert self.reader is not None
        self.writer.write(  # Host: the bound address (serve refuses others, issue 25)
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
            .encode() + body)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        found = re.search(rb"(?i)content-length:\s*(\d+)", head)
        payload = await self.reader.readexactly(int(found.group(1))) if found else b""
        return status, payload

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


class Server:
    """One `convlog serve` process on the shared database."""

    def __init__(self, url: str, cwd: Path, index: int) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("CONVLOG_URL",
                                                               "CONVLOG_TOKEN")}
        db = f"{url}&views={cwd / f'views-{index}.duckdb'}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "convlog.cli.main", "serve", "--db", db, "--port", "0"],
            cwd=cwd, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        found = re.search(r"listening on http://[\d.]+:(\d+)", line)
        if not found:
            self.proc.kill()
            raise SystemExit(f"convlog serve did not start: {line}")
        self.port = int(found.group(1))
        self.errors: list[str] = []
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            if len(self.errors) < 20:
                self.errors.append(line.rstrip())

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class LockSampler:
    """Samples the events table's lock every 10 ms from a connection of its own."""

    QUERY = """
        SELECT count(*) FILTER (WHERE NOT l.granted),
               count(*) FILTER (WHERE l.granted AND a.state = 'idle in transaction')
        FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.relation = %s::regclass
    """

    def __init__(self, schema: str) -> None:
        self.table = f'"{schema}".stored_events'
        self.waiting: list[int] = []
        self.idle_holders = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with psycopg.connect(PG_ADMIN, autocommit=True) as con:
            while not self._stop.is_set():
                row = con.execute(self.QUERY, (self.table,)).fetchone()
                if row is not None:
                    self.waiting.append(int(row[0]))
                    self.idle_holders += int(row[1])
                time.sleep(0.01)

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        samples = len(self.waiting) or 1
        return {"lock_waiting_avg": sum(self.waiting) / samples,
                "lock_waiting_max": max(self.waiting, default=0),
                "lock_idle_holder_samples": self.idle_holders}


async def drive(ports: list[int], sticky: bool, seconds: float, tag: str
                ) -> tuple[int, list[float], int]:
    """USERS hosts, one conversation each, turns back to back for `seconds`."""
    latencies: list[float] = []
    failures = 0
    deadline = time.perf_counter() + seconds

    async def user(u: int) -> None:
        nonlocal failures
        conns = [Connection(p) for p in ports]
        path = f"/v1/conversations/{tag}-{u}/turns"
        t = 0
        try:
            while time.perf_counter() < deadline:
                server = u % len(ports) if sticky else (u + t) % len(ports)
                begin = time.perf_counter()
                status, payload = await conns[server].post(path, turn_body(u, t))
                latencies.append(time.perf_counter() - begin)
                if status != 200:
                    failures += 1
                    if failures == 1:
                        print(f"turn failed: {status} {payload[:300]!r}", file=sys.stderr)
                t += 1
        finally:
            for c in conns:
                c.close()

    await asyncio.gather(*(user(u) for u in range(USERS)))
    return len(latencies), latencies, failures


def throughput(servers: list[Server], schema: str, sticky: bool, seconds: float,
               round_tag: str) -> dict[str, Any]:
    ports = [s.port for s in servers]
    tag = f"{round_tag}-{'s' if sticky else 'rr'}{len(servers)}"
    asyncio.run(drive(ports, sticky, min(1.0, seconds / 3), tag + "-warm"))
    cpu0 = sum(s.cpu_seconds() for s in servers)
    sampler = LockSampler(schema)
    started = time.perf_counter()
    turns, latencies, failures = asyncio.run(drive(ports, sticky, seconds, tag))
    elapsed = time.perf_counter() - started
    locks = sampler.stop()
    cpu = sum(s.cpu_seconds() for s in servers) - cpu0
    if failures:
        raise SystemExit(f"{failures} turns failed ({tag}): {servers[0].errors[:5]}")
    return {"servers": len(servers), "sticky": sticky, "turns": turns,
            "turns_per_s": turns / elapsed,
            "p50_ms": 1000 * statistics.median(latencies),
            "p99_ms": 1000 * statistics.quantiles(latencies, n=100)[98],
            "server_cpu_ms_per_turn": 1000 * cpu / turns, **locks}


async def sequence(ports: list[int], turns: int, alternate: bool, tag: str) -> list[float]:
    """One conversation, one turn at a time: all on ports[0], or alternating."""
    conns = [Connection(p) for p in ports]
    latencies = []
    try:
        for t in range(turns):
            conn = conns[t % len(conns)] if alternate else conns[0]
            begin = time.perf_counter()
            status, payload = await conn.post(f"/v1/conversations/{tag}/turns",
                                              turn_body(0, t))
            latencies.append(time.perf_counter() - begin)
            if status != 200 or len(json.loads(payload)["appended"]) != 2:
                raise SystemExit(f"turn {t} of {tag}: {status} {payload[:200]!r}")
    finally:
        for c in conns:
            c.close()
    return latencies


def alternating(servers: list[Server], turns: int) -> dict[str, float]:
    ports = [s.port for s in servers[:2]]
    asyncio.run(sequence(ports, 20, True, "alt-warm"))
    one = asyncio.run(sequence(ports, turns, False, "one-host"))
    two = asyncio.run(sequence(ports, turns, True, "two-hosts"))
    return {"one_host_median_ms": 1000 * statistics.median(one),
            "one_host_max_ms": 1000 * max(one),
            "alternating_median_ms": 1000 * statistics.median(two),
            "alternating_max_ms": 1000 * max(two),
            "median_ratio": statistics.median(two) / statistics.median(one)}


def revision() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, cwd=Path(__file__).parent)
    return done.stdout.strip() or "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=None,
                        help="rounds of every point, interleaved (default 3; quick 1)")
    args = parser.parse_args()
    stamp = meta.begin("scale", args.quick)
    seconds, turns = (3.0, 100) if args.quick else (8.0, 400)
    args.rounds = args.rounds or (1 if args.quick else 3)
    schema = fresh_pg_schema()
    url = f"postgresql://postgres@127.0.0.1:5432/test?schema={schema}"
    points: list[dict[str, Any]] = []
    alt: dict[str, float] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            servers = [Server(url, Path(tmp), i) for i in range(max(SERVERS))]
            try:
                configs = [(n, sticky) for n in SERVERS for sticky in (True, False)
                           if n > 1 or sticky]  # one server: nothing to route
                rounds: dict[tuple[int, bool], list[dict[str, Any]]] = {}
                for r in range(args.rounds):  # interleaved: a burst of load elsewhere
                    for n, sticky in configs:  # on this machine hits every point alike
                        rounds.setdefault((n, sticky), []).append(
                            throughput(servers[:n], schema, sticky, seconds, f"r{r}"))
                for n, sticky in configs:
                    runs = sorted(rounds[(n, sticky)], key=lambda p: p["turns_per_s"])
                    point = {**runs[len(runs) // 2],  # the median round by turns/s
                             "turns_per_s_rounds": [p["turns_per_s"] for p in runs]}
                    points.append(point)
                    print(f"{n} server(s) {'sticky' if sticky else 'round-robin':>11}: "
                          f"{point['turns_per_s']:6.0f} turns/s  p50 "
                          f"{point['p50_ms']:6.1f} ms  p99 {point['p99_ms']:7.1f} ms  "
                          f"server CPU {point['server_cpu_ms_per_turn']:.2f} ms/turn  "
                          f"lock waiters {point['lock_waiting_avg']:.2f} "
                          f"(max {point['lock_waiting_max']}), idle holders "
                          f"{point['lock_idle_holder_samples']}  rounds "
                          f"{', '.join(f'{t:.0f}' for t in point['turns_per_s_rounds'])}",
                          flush=True)
                alt = alternating(servers, turns)
                print(f"one conversation, {turns} turns: one host median "
                      f"{alt['one_host_median_ms']:.1f} ms (max {alt['one_host_max_ms']:.1f}), "
                      f"alternating two hosts median {alt['alternating_median_ms']:.1f} ms "
                      f"(max {alt['alternating_max_ms']:.1f}): "
                      f"{alt['median_ratio']:.2f}x", flush=True)
            finally:
                for s in servers:
                    s.stop()
    finally:
        drop_pg_schema(schema)
    one = next(p for p in points if p["servers"] == 1)
    for p in points:
        p["vs_one_server"] = p["turns_per_s"] / one["turns_per_s"]
    for n in SERVERS[1:]:
        st = next(p for p in points if p["servers"] == n and p["sticky"])
        rr = next(p for p in points if p["servers"] == n and not p["sticky"])
        print(f"{n} servers: round-robin {rr['turns_per_s'] / st['turns_per_s']:.2f}x of "
              f"sticky; sticky {st['vs_one_server']:.2f}x, round-robin "
              f"{rr['vs_one_server']:.2f}x of one server")
    result = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "revision": revision(),
              "quick": args.quick, "seconds_per_point": seconds, "rounds": args.rounds,
              "users": USERS, "load_average": os.getloadavg(),
              "psycopg_impl": psycopg.pq.__impl__, "points": points, "alternating": alt}
    print(f"saved {stamp.save(result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
