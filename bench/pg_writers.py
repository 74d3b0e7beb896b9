"""PostgreSQL writers: appends/s with 1, 8 and 32 concurrent writer processes, convlog
against raw psycopg inserts of the same rows, in ONE run (issue 45).

Run with ``.venv/bin/python -m bench.pg_writers [--quick]`` (``make bench`` runs it);
results go to ``bench/results/pg-writers-<UTC date>[-quick].json`` and
``python -m bench.report`` renders them into docs/scale-out.md.

Each writer is a process of its own appending ONE message at a time (~250 characters
of text, as bench.peers) to a conversation of its own, for a fixed time, from the moment
every writer of the point is ready:

* convlog: ``conv.append(convlog.user(text, id=...))`` on
  ``postgresql://...?schema=<fresh>&pool_size=1&max_overflow=1`` (a writer appends from
  one thread: the default pool of 5 would take 6 x 32 = 192 of the server's 100
  connections at 32 writers), no token count (counts are derived data).
* raw psycopg: one autocommit connection per writer, ``INSERT INTO raw_messages
  (conversation, seq, message) VALUES (%s, %s, %s)`` of the message as JSON (id, role,
  content), into a table keyed by (conversation, seq): the floor a hand-written store
  on the same server reaches.

Both on this machine's PostgreSQL (127.0.0.1:5432, database ``test``), each point on a
fresh schema dropped after it, with the server's own durability for both
(``synchronous_commit`` and ``fsync`` as configured: one WAL flush per commit). The
systems alternate which goes first, round by round; the figure per point is the median
round, and the ratio convlog / raw the median of each round's ratio. The machine has 2
cores shared with the server and other work: absolute rates are low, compare ratios.

Target (issue 45): >= 0.5x raw at 8 writers.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import textwrap
import uuid
from datetime import UTC, datetime
from typing import Any

import psycopg

from bench import meta

PG_ADMIN = "host=127.0.0.1 port=5432 dbname=test user=postgres"
PG_URL = "postgresql://postgres@127.0.0.1:5432/test?schema={schema}&pool_size=1&max_overflow=1"
COUNTS = (1, 8, 32)
TARGET_AT_8 = 0.5
SYSTEMS = ("convlog", "raw")

CONTENT = ("Can you check why the nightly export job skipped the eu-west shard again? The "
           "log shows a timeout after 30 s on the second page; last week we raised the limit "
           "to 60 s, so something else is off.")

# One writer process: ready, wait for "go", append for `seconds`, print the count.
WRITER = textwrap.dedent("""
    import json, sys, time
    system, target, worker, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    content = sys.argv[5]
    if system == "convlog":
        import convlog
        log = convlog.open(target)
        conv = log.conversation(f"writer-{worker}")
        conv.append(convlog.user("warm-up", id=f"{worker}-warm"))
        def append(i):
            conv.append(convlog.user(f"message {i}: {content}", id=f"{worker}-{i}"))
        close = log.close
    else:
        import psycopg
        con = psycopg.connect(target, autocommit=True)
        key = f"writer-{worker}"
        insert = "INSERT INTO raw_messages (conversation, seq, message) VALUES (%s, %s, %s)"
        con.execute(insert, (key, 0, json.dumps({"id": f"{worker}-warm", "role": "user",
                                                 "content": "warm-up"})))
        def append(i):
            con.execute(insert, (key, i, json.dumps(
                {"id": f"{worker}-{i}", "role": "user", "content": f"message {i}: {content}"})))
        close = con.close
    print("ready", flush=True)
    sys.stdin.readline()
    started = time.perf_counter()
    deadline = started + seconds
    i = 0
    while time.perf_counter() < deadline:
        i += 1
        append(i)
    elapsed = time.perf_counter() - started
    close()
    print("done", i, elapsed, flush=True)
""")


def fresh_schema(system: str) -> str:
    schema = f"convlog_pgw_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
        if system == "raw":
            admin.execute(f'CREATE TABLE "{schema}".raw_messages (conversation TEXT NOT NULL, '
                          "seq BIGINT NOT NULL, message TEXT NOT NULL, "
                          "PRIMARY KEY (conversation, seq))")
    return schema


def drop_schema(schema: str) -> None:
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'DROP SCHEMA "{schema}" CASCADE')


def point(system: str, writers: int, seconds: float) -> dict[str, Any]:
    """Appends/s of `writers` processes of `system` on a fresh schema."""
    schema = fresh_schema(system)
    target = (PG_URL.format(schema=schema) if system == "convlog"
              else f"{PG_ADMIN} options='-c search_path={schema}'")
    try:
        procs = [subprocess.Popen([sys.executable, "-c", WRITER, system, target, str(w),
                                   str(seconds), CONTENT], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True) for w in range(writers)]
        for p in procs:
            assert p.stdout is not None
            line = p.stdout.readline().strip()
            if line != "ready":
                raise SystemExit(f"{system} writer did not start: {line!r}")
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        appended, longest = 0, 0.0
        for p in procs:
            out, _ = p.communicate(timeout=seconds + 300)
            if p.returncode != 0:
                raise SystemExit(f"{system} writer failed with {p.returncode}")
            _, count, elapsed = out.split()
            appended, longest = appended + int(count), max(longest, float(elapsed))
    finally:
        drop_schema(schema)
    return {"appends": appended, "seconds": longest, "per_s": appended / longest}


def run(rounds: int, seconds: float) -> dict[str, Any]:
    rates: dict[str, dict[str, list[float]]] = {s: {str(n): [] for n in COUNTS} for s in SYSTEMS}
    ratios: dict[str, list[float]] = {str(n): [] for n in COUNTS}
    for n in COUNTS:
        for r in range(rounds):
            here: dict[str, float] = {}
            for system in (SYSTEMS if r % 2 == 0 else SYSTEMS[::-1]):
                here[system] = point(system, n, seconds)["per_s"]
                rates[system][str(n)].append(here[system])
            ratios[str(n)].append(here["convlog"] / here["raw"])
            print(f"  {n} writer(s), round {r + 1}/{rounds}: convlog {here['convlog']:,.0f}/s, "
                  f"raw {here['raw']:,.0f}/s ({ratios[str(n)][-1]:.2f}x)", flush=True)
    medians = {s: {n: statistics.median(v) for n, v in by.items()} for s, by in rates.items()}
    ratio = {n: statistics.median(v) for n, v in ratios.items()}
    return {"counts": list(COUNTS), "rounds": rounds, "seconds_per_point": seconds,
            "appends_per_s": medians, "rounds_per_s": rates, "ratio": ratio,
            "ratio_rounds": ratios, "target_at_8": TARGET_AT_8,
            "met_at_8": ratio["8"] >= TARGET_AT_8}


def server_settings() -> dict[str, str]:
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        return {name: str(admin.execute(f"SHOW {name}").fetchone()[0])  # type: ignore[index]
                for name in ("server_version", "synchronous_commit", "fsync", "wal_sync_method",
                             "max_connections")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="1 round of 3 s per point")
    args = parser.parse_args()
    stamp = meta.begin("pg-writers", args.quick)
    rounds, seconds = (1, 3.0) if args.quick else (3, 8.0)
    settings = server_settings()
    print(f"PostgreSQL writers ({'quick' if args.quick else 'full'}): {rounds} round(s) of "
          f"{seconds:g} s per point; server {settings}")
    result = run(rounds, seconds)
    print(f"\n{'writers':>8} | {'convlog':>12} | {'raw psycopg':>12} | {'convlog/raw':>11}")
    for n in COUNTS:
        print(f"{n:>8} | {result['appends_per_s']['convlog'][str(n)]:>10,.0f}/s | "
              f"{result['appends_per_s']['raw'][str(n)]:>10,.0f}/s | "
              f"{result['ratio'][str(n)]:>10.2f}x")
    print(f"target >= {TARGET_AT_8}x raw at 8 writers: "
          f"{'met' if result['met_at_8'] else 'MISSED'}")
    path = stamp.save({"date": f"{datetime.now(UTC):%Y-%m-%d}", "quick": args.quick,
                       "server": settings, **result})
    print(f"saved {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
