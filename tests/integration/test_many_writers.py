"""Many writer processes, a follower that keeps the views current, and a PostgreSQL
restart in the middle of a write loop (on a private cluster, tests.pgcluster), all
against the real databases."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

import convlog
from tests.pgcluster import PrivateCluster

WRITER = textwrap.dedent("""
    import sys, time, convlog
    url, worker, turns, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    with convlog.open(url, views=sys.argv[5]) as log:
        for t in range(turns):
            key = "shared" if mode == "shared" or t % 2 else f"own-{worker}"
            turn = [convlog.user(f"w{worker} t{t}", id=f"w{worker}-{t}-q"),
                    convlog.assistant(f"r{t}", id=f"w{worker}-{t}-a"),
                    convlog.assistant(f"r{t}'", id=f"w{worker}-{t}-b")]
            while True:  # a host's own retry: the same ids, so never twice
                try:
                    log.append_turn(key, turn)
                    break
                except convlog.StorageError as exc:
                    print("retry:", exc, file=sys.stderr, flush=True)
                    time.sleep(0.2)
            print("ack", t, flush=True)
""")


def backend_url(name: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if name == "sqlite":
        return f"sqlite:///{tmp_path / 'c.db'}"
    return str(request.getfixturevalue("pg_url"))


def start_writer(url: str, worker: int, turns: int, mode: str, views: Path
                 ) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", WRITER, url, str(worker), str(turns), mode,
                             str(views)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def check_turns(log: convlog.ConversationLog, keys: list[str], expected: int) -> None:
    """Every message exactly once; the three messages of a turn adjacent and in order."""
    seen: list[str] = []
    for key in keys:
        ids = [m.message_id for m in log.messages(key)]
        for i in range(0, len(ids), 3):
            q, a, b = ids[i:i + 3]
            assert (q[-1], a, b) == ("q", q[:-1] + "a", q[:-1] + "b"), ids[i:i + 3]
        seen += ids
    assert len(seen) == len(set(seen)) == expected


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@pytest.mark.parametrize("mode", ["shared", "mixed"])
def test_writer_processes_lose_nothing_and_never_interleave(
        backend: str, mode: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    url = backend_url(backend, request, tmp_path)
    workers, turns = 4, 25
    procs = [start_writer(url, w, turns, mode, tmp_path / "v.duckdb") for w in range(workers)]
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
        assert out.count("ack") == turns
    keys = ["shared"] + ([f"own-{w}" for w in range(workers)] if mode == "mixed" else [])
    with convlog.open(url, views=str(tmp_path / "v.duckdb")) as log:
        check_turns(log, keys, workers * turns * 3)
        assert sum(r.message_count for r in log.conversations()) == workers * turns * 3


def run_follower(url: str, views: Path) -> subprocess.Popen[str]:
    exe = str(Path(sys.executable).parent / "convlog")
    env = {**os.environ, "CONVLOG_VIEWS": str(views)}
    return subprocess.Popen([exe, "views", "--follow", "--interval", "0.1", "--db", url],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def wait_for(predicate: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def view_count(url: str, views: Path) -> int:
    """The views' message count read straight from the DuckDB file, without catching
    up: what the follower itself applied."""
    import duckdb

    del url
    for _ in range(100):
        try:
            with duckdb.connect(str(views), read_only=True) as con:
                row = con.execute("SELECT count(*) FROM messages").fetchone()
                return int(row[0]) if row else 0
        except duckdb.Error:
            time.sleep(0.05)  # the follower holds the file for a moment
    raise AssertionError("views file stayed locked")


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_views_follow_keeps_up_stops_cleanly_and_resumes(
        backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    url = backend_url(backend, request, tmp_path)
    views = tmp_path / "follow.duckdb"
    with convlog.open(url, views=str(views)) as log:
        log.append("k", convlog.user("first", id="m0"))
    follower = run_follower(url, views)
    try:
        wait_for(lambda: views.exists() and view_count(url, views) == 1)
        with convlog.open(url, views=str(tmp_path / "other.duckdb")) as log:
            for i in range(1, 6):
                log.append("k", convlog.user(f"m{i}", id=f"m{i}"))
        wait_for(lambda: view_count(url, views) == 6)  # no query of ours caught it up
    finally:
        follower.send_signal(signal.SIGTERM)
        _, err = follower.communicate(timeout=30)
    assert follower.returncode == 0, err
    assert "stopped after" in err
    with convlog.open(url, views=str(tmp_path / "other.duckdb")) as log:
        log.append("k", convlog.user("while stopped", id="m6"))
    follower = run_follower(url, views)
    try:
        wait_for(lambda: view_count(url, views) == 7)
    finally:
        follower.send_signal(signal.SIGINT)
        follower.communicate(timeout=30)
    assert follower.returncode == 0


def test_writes_resume_after_a_postgres_restart(private_pg: PrivateCluster,
                                                 tmp_path: Path) -> None:
    """On a private cluster: restarting the shared one broke every test running."""
    url, turns = private_pg.url(), 60
    writer = start_writer(url, 0, turns, "shared", tmp_path / "v.duckdb")
    assert writer.stdout is not None
    acked = []
    for line in writer.stdout:
        acked.append(int(line.split()[1]))
        if len(acked) == 15:
            private_pg.restart()  # mid-loop: some turns are in flight
        if len(acked) == turns:
            break
    _, err = writer.communicate(timeout=180)
    assert writer.returncode == 0, err
    assert acked == list(range(turns))
    with convlog.open(url, views=str(tmp_path / "v.duckdb")) as log:
        check_turns(log, ["shared"], turns * 3)  # every acknowledged turn, exactly once


def test_views_follow_outlives_a_postgres_outage(private_pg: PrivateCluster,
                                                 tmp_path: Path) -> None:
    """The follower keeps following through an outage longer than the bounded wait
    for a connection (2 s): it retries, then catches up with what came after."""
    url, views = private_pg.url(), tmp_path / "follow.duckdb"
    with convlog.open(url, views=str(tmp_path / "other.duckdb")) as log:
        log.append("k", convlog.user("before", id="m0"))
    follower = run_follower(url, views)
    try:
        wait_for(lambda: views.exists() and view_count(url, views) == 1)
        private_pg.stop()
        time.sleep(4)
        private_pg.start()
        with convlog.open(url, views=str(tmp_path / "other.duckdb")) as log:
            log.append("k", convlog.user("after", id="m1"))
        wait_for(lambda: follower.poll() is not None or view_count(url, views) == 2, 30)
        assert follower.poll() is None, follower.communicate()[1]
    finally:
        follower.send_signal(signal.SIGTERM)
        _, err = follower.communicate(timeout=30)
    assert follower.returncode == 0, err
