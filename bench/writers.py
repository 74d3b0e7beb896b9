"""Many writers: messages/s with 1, 2 and 4 writer processes, SQLite and PostgreSQL.

Run with ``.venv/bin/python -m bench.writers [--quick]`` (``make bench`` runs it).
Each writer process appends turns of 3 messages, half into a conversation all the
writers share (so they contend for the same stream and retry), half into its own.
The figure is total messages / wall time from the moment every writer is ready.
PostgreSQL is this machine's server (127.0.0.1:5432, database ``test``), on a fresh
schema dropped afterwards; its commits are durable by the server's own settings
(synchronous_commit as configured), SQLite runs in WAL with synchronous=NORMAL.
Results go to ``bench/results/writers-<UTC date>[-quick].json``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import psycopg

from bench import meta

PG_ADMIN = "host=127.0.0.1 port=5432 dbname=test user=postgres"

WRITER = textwrap.dedent("""
    import sys, time, convlog
    url, worker, turns, views = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    with convlog.open(url, views=views) as log:
        log.append(f"own-{worker}", convlog.user("warm-up", id=f"warm-{worker}"))
        print("ready", flush=True)
        sys.stdin.readline()
        started = time.perf_counter()
        for t in range(turns):
            key = "shared" if t % 2 else f"own-{worker}"
            log.append_turn(key, [
                convlog.user(f"question {t} from writer {worker}", id=f"{worker}-{t}-q"),
                convlog.assistant(f"answer {t}", id=f"{worker}-{t}-a", model="gpt-4o"),
                convlog.assistant(f"more {t}", id=f"{worker}-{t}-b", model="gpt-4o")])
        print("done", time.perf_counter() - started, flush=True)
""")


def run(url: str, writers: int, turns: int, views: Path) -> float:
    """Messages per second over all writers, from the common start to the last finish."""
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, url, str(w), str(turns),
                               str(views)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True) for w in range(writers)]
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    started = time.perf_counter()
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    for p in procs:
        p.communicate(timeout=600)
        if p.returncode != 0:
            raise SystemExit(f"writer failed with {p.returncode}")
    return writers * turns * 3 / (time.perf_counter() - started)


def fresh_pg_schema() -> str:
    schema = f"convlog_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
    return schema


def drop_pg_schema(schema: str) -> None:
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'DROP SCHEMA "{schema}" CASCADE')


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    stamp = meta.begin("writers", args.quick)
    turns = {"sqlite": 150 if args.quick else 600, "postgres": 40 if args.quick else 150}
    repeats = 1 if args.quick else 3
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for backend in ("sqlite", "postgres"):
            results[backend] = {}
            for writers in (1, 2, 4):
                rates = []
                for r in range(repeats):
                    views = Path(tmp) / f"v-{backend}-{writers}-{r}.duckdb"
                    if backend == "sqlite":
                        rates.append(run(f"sqlite:///{tmp}/w-{writers}-{r}.db", writers,
                                         turns[backend], views))
                        continue
                    schema = fresh_pg_schema()
                    try:
                        rates.append(run(
                            f"postgresql://postgres@127.0.0.1:5432/test?schema={schema}",
                            writers, turns[backend], views))
                    finally:
                        drop_pg_schema(schema)
                results[backend][str(writers)] = statistics.median(rates)
    print(f"many writers ({'quick' if args.quick else 'full'}): messages/s, median of "
          f"{repeats}; turns of 3 messages, half into one shared conversation")
    print(f"{'backend':<10} | {'1 writer':>10} | {'2 writers':>10} | {'4 writers':>10} | "
          f"{'4 vs 1':>7}")
    for backend, by_count in results.items():
        print(f"{backend:<10} | {by_count['1']:>10,.0f} | {by_count['2']:>10,.0f} | "
              f"{by_count['4']:>10,.0f} | {by_count['4'] / by_count['1']:>6.2f}x")
    path = stamp.save({"date": f"{datetime.now(UTC):%Y-%m-%d}", "quick": args.quick,
                       "turns": turns, "repeats": repeats, "messages_per_s": results})
    print(f"saved {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
