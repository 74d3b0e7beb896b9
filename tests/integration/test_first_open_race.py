"""Issue 26: several processes opening one brand-new SQLite file at the same moment once
failed with "database is locked" (seen in test_many_writers under load). Eight
processes, started once, open a new file together in each of 50 rounds (a barrier
lines them up), write one message each, and close: not one failure."""

from __future__ import annotations

import contextlib
import multiprocessing
import sqlite3
import traceback
from pathlib import Path
from typing import Any

ROUNDS = 50
PROCESSES = 8


def _opener(worker: int, directory: str, barrier: Any, failures: Any) -> None:
    import convlog

    for round_ in range(ROUNDS):
        try:
            barrier.wait(timeout=60)
        except Exception:  # another process broke the barrier: it reported why
            return
        try:
            with convlog.open(f"sqlite:///{directory}/r{round_}.db",
                              preload_tokenizer=False) as log:
                log.append(f"w{worker}", convlog.user("hi", id=f"m{worker}"))
        except Exception:
            failures.put(f"round {round_}, process {worker}: {traceback.format_exc()}")


def test_eight_processes_opening_one_new_file_never_fail(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(PROCESSES)
    failures = ctx.Queue()
    procs = [ctx.Process(target=_opener, args=(w, str(tmp_path), barrier, failures))
             for w in range(PROCESSES)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    errors = []
    while not failures.empty():
        errors.append(failures.get())
    assert [p.exitcode for p in procs] == [0] * PROCESSES
    assert errors == [], f"{len(errors)} failed opens; first: {errors[0]}"
    for round_ in range(ROUNDS):  # and every process's conversation is there
        with contextlib.closing(sqlite3.connect(tmp_path / f"r{round_}.db")) as db:
            streams = db.execute("SELECT count(DISTINCT originator_id) FROM stored_events"
                                 ).fetchone()
        assert streams == (PROCESSES,)
