"""Contention: another process holds SQLite's write lock.

The storage docs promise: "`timeout` (default 5 s) is how long a writer waits for
another process's lock before `StorageError` says the database is locked and which
timeout it waited." So a lock held past the timeout gives a `StorageError` naming the
lock, the timeout and the URL option, and writes nothing; a lock released in time is
waited out; and once the lock is gone the same append succeeds, with nothing lost or
duplicated.

The lock holder is a separate process (plain `sqlite3`, no convlog) that runs
`BEGIN IMMEDIATE` and keeps the transaction open until told to roll back.
"""

from __future__ import annotations

import io
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

import convlog
from convlog.cli.main import main
from convlog.services.log import application

HOLDER = textwrap.dedent("""
    import sqlite3, sys
    con = sqlite3.connect(sys.argv[1], isolation_level=None)
    if sys.argv[2] == "on-demand":
        sys.stdin.readline()
    con.execute("BEGIN IMMEDIATE")
    print("locked", flush=True)
    sys.stdin.readline()
    con.execute("ROLLBACK")
    print("released", flush=True)
""")


class LockHolder:
    """Another process holding the database's write lock (BEGIN IMMEDIATE)."""

    def __init__(self, path: Path, *, on_demand: bool = False):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(path), "on-demand" if on_demand else "now"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.locked = False
        self.releases = 0
        """How many times the holder was told to let go (counted before telling it)."""
        if not on_demand:
            self._expect("locked")
            self.locked = True

    def _send(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()

    def _expect(self, word: str) -> None:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        assert line == word, line

    def lock(self) -> None:
        self._send()
        self._expect("locked")
        self.locked = True

    def release(self) -> None:
        if self.locked:
            self.releases += 1
            self._send()
            self._expect("released")
            self.locked = False

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@contextmanager
def write_lock_held(path: Path, *, on_demand: bool = False) -> Iterator[LockHolder]:
    holder = LockHolder(path, on_demand=on_demand)
    try:
        yield holder
    finally:
        holder.stop()


def turn(n: int, size: int = 3) -> list[convlog.Message]:
    return [convlog.user(f"turn {n} message {i}", id=f"t{n}-m{i}") for i in range(size)]


def stored_rows(path: Path) -> tuple[int, int]:
    """(events, message-id index rows) in the file, read with plain sqlite3."""
    con = sqlite3.connect(path)
    try:
        events = con.execute("SELECT count(*) FROM stored_events").fetchone()[0]
        ids = con.execute("SELECT count(*) FROM convlog_stream_message_ids").fetchone()[0]
        assert [r[0] for r in con.execute("PRAGMA integrity_check")] == ["ok"]
    finally:
        con.close()
    return int(events), int(ids)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "locked.db"
    with convlog.open(str(path)) as log:
        log.conversation("k", user="u1").append_turn(turn(0))
    return path


def assert_locked_error(exc: BaseException, timeout: float) -> None:
    """The error names the lock, the timeout in effect (the URL's, or the default)
    and the option that waits longer. That a writer waits at all rather than failing
    at once is shown by order, not by a clock: a lock released while the append waits
    is waited out (test_a_lock_released_within_the_timeout_is_waited_out)."""
    assert type(exc) is convlog.StorageError, repr(exc)
    message = str(exc)
    assert "database is locked" in message, message
    assert f"past the {timeout:g} s timeout" in message, message
    assert "?timeout=SECONDS" in message, message  # names the option that waits longer


def test_a_lock_held_past_the_timeout_is_a_clear_error_and_writes_nothing(db: Path) -> None:
    with convlog.open(f"sqlite:///{db}?timeout=1") as log:
        before = stored_rows(db)
        with write_lock_held(db) as holder:
            with pytest.raises(convlog.StorageError) as caught:
                log.append_turn("k", turn(1))
            assert_locked_error(caught.value, timeout=1)
            # Nothing was written, and reads still work while the lock is held (WAL).
            assert [m.message_id for m in log.messages("k")] == [f"t0-m{i}" for i in range(3)]
            holder.release()
        assert stored_rows(db) == before
        # Once the lock is gone the very same append succeeds, exactly once.
        result = log.append_turn("k", turn(1))
        assert (result.appended, result.skipped) == ([f"t1-m{i}" for i in range(3)], [])
        assert log.append_turn("k", turn(1)).skipped == [f"t1-m{i}" for i in range(3)]
        ids = [m.message_id for m in log.messages("k")]
    assert ids == [f"t{t}-m{i}" for t in range(2) for i in range(3)]
    assert stored_rows(db) == (before[0] + 3, before[1] + 3)


def test_starting_a_conversation_under_a_lock_fails_cleanly(db: Path) -> None:
    with convlog.open(f"sqlite:///{db}?timeout=1") as log, write_lock_held(db) as holder:
        with pytest.raises(convlog.StorageError) as caught:
            log.conversation("new", user="u2")
        assert_locked_error(caught.value, timeout=1)
        assert not log.exists("new")
        holder.release()
        log.conversation("new", user="u2").append_turn(turn(0))
        assert log.info("new").message_count == 3


def test_a_lock_released_within_the_timeout_is_waited_out(db: Path) -> None:
    # The lock is released while the append waits: the append succeeds, and only
    # after the release (ordering, not timing: a writer that did not wait would fail).
    with convlog.open(f"sqlite:///{db}?timeout=30") as log, write_lock_held(db) as holder:
        timer = _release_later(holder, after=0.5)
        result = log.append_turn("k", turn(1))
        assert holder.releases == 1, "the append returned before the lock was let go"
        timer.join()
    assert result.appended == [f"t1-m{i}" for i in range(3)]


def _release_later(holder: LockHolder, after: float) -> Any:
    import threading

    def release() -> None:
        time.sleep(after)
        holder.release()

    thread = threading.Thread(target=release)
    thread.start()
    return thread


def test_the_default_timeout_is_five_seconds(db: Path) -> None:
    """The README's documented default: a writer waits 5 s, then StorageError."""
    with convlog.open(f"sqlite:///{db}") as log, write_lock_held(db):
        with pytest.raises(convlog.StorageError) as caught:
            log.append_turn("k", turn(1))
        assert_locked_error(caught.value, timeout=5)
    with convlog.open(f"sqlite:///{db}") as log:
        assert log.info("k").message_count == 3


def test_the_cli_reports_a_lock_in_one_line(db: Path, tmp_path: Path) -> None:
    batch = tmp_path / "batch.jsonl"
    batch.write_text('{"type": "message", "role": "user", "content": "hi", "id": "cli-1"}\n')
    err, out = io.StringIO(), io.StringIO()
    with write_lock_held(db), redirect_stderr(err), redirect_stdout(out), \
            pytest.raises(SystemExit) as exited:
        main(["record", "k", str(batch), "--db", f"sqlite:///{db}?timeout=1"])
    assert exited.value.code == 1
    lines = err.getvalue().splitlines()
    assert len(lines) == 1, err.getvalue()
    assert lines[0].startswith("convlog: error: the database is locked"), lines[0]
    assert "past the 1 s timeout" in lines[0] and "?timeout=SECONDS" in lines[0], lines[0]
    assert out.getvalue() == ""
    with convlog.open(str(db)) as log:
        assert "cli-1" not in [m.message_id for m in log.messages("k")]


def test_a_lock_taken_between_the_commit_and_the_snapshot_does_not_fail_the_turn(
        tmp_path: Path) -> None:
    """Another writer grabs the lock right after our turn commits, while convlog writes
    the snapshot due every 500 events. The turn is recorded: the snapshot is only an
    optimisation, so the append must not fail (and never with a foreign error type)."""
    path = tmp_path / "snap.db"
    with convlog.open(f"sqlite:///{path}?timeout=1") as log:
        conv = log.conversation("k")
        conv.append_turn([convlog.user(f"m{i}", id=f"m{i}") for i in range(497)])
        assert conv.state.version == 498
        with write_lock_held(path, on_demand=True) as holder:
            recorder: Any = application(log).store.recorder
            insert = recorder.insert_rows  # what a SQLite save writes with (issue 30)

            raced: list[bool] = []

            def insert_then_another_process_locks(*args: Any, **kwargs: Any) -> Any:
                result = insert(*args, **kwargs)
                holder.lock()  # the race: another process takes the lock right now
                raced.append(True)
                return result

            recorder.insert_rows = insert_then_another_process_locks
            try:
                error: BaseException | None = None
                try:
                    conv.append_turn([convlog.user("x", id="x"), convlog.user("y", id="y")])
                except Exception as exc:
                    error = exc
            finally:
                recorder.insert_rows = insert
                holder.release()
        assert raced, "the write did not go through the hooked insert"
        assert [m.message_id for m in conv.messages(last=2)] == ["x", "y"]  # committed
        assert error is None, f"{type(error).__module__}.{type(error).__name__}: {error}"
