"""`convlog watch`, end to end: the real console script following real folders while
this test writes, rotates and deletes transcripts; killed with SIGKILL mid-import and
started again. The log must end up with every line's message exactly once.

Waiting is for a condition (every expected id recorded), with a generous deadline:
nothing here asserts how fast the watcher is (bench.watch measures that)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import convlog
from tests.transcripts import claude_ids, claude_lines, codex_ids, codex_lines

CONVLOG = Path(sys.executable).parent / "convlog"
DEADLINE = 180.0


class Watch:
    """A `convlog watch` process, its stderr in a file."""

    def __init__(self, tmp: Path, db: Path, fmt: str, folder: Path, *extra: str):
        self.err = tmp / f"watch-{time.monotonic_ns()}.err"
        self.proc = subprocess.Popen(
            [str(CONVLOG), "--db", f"sqlite:///{db}", "--json", "watch", fmt, str(folder),
             "--settle", "0.2", "--hold", "1", *extra],
            stdout=subprocess.PIPE, stderr=self.err.open("wb"), text=True)

    def stderr(self) -> str:
        return self.err.read_text()

    def stop(self) -> dict[str, object]:
        self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=60)
        assert self.proc.returncode == 0, self.stderr()
        result: dict[str, object] = json.loads(out)
        return result

    def kill(self) -> None:
        self.proc.kill()  # SIGKILL: no cleanup of any kind
        self.proc.wait(timeout=30)


@pytest.fixture
def watches() -> Iterator[list[Watch]]:
    started: list[Watch] = []
    yield started
    for w in started:
        if w.proc.poll() is None:
            w.kill()


def wait_for(check: Callable[[], bool], watch: Watch, what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not check():
        assert watch.proc.poll() is None, f"the watcher died: {watch.stderr()}"
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {DEADLINE:g}s\n{watch.stderr()}")
        time.sleep(0.1)


def ids(log: convlog.ConversationLog, key: str) -> list[str]:
    """Every recorded message id of `key`, duplicates kept (an empty list if none)."""
    return [m.message_id for m in log.messages(key)] if log.exists(key) else []


def append(path: Path, lines: list[str]) -> None:
    with path.open("a") as f:
        f.write("".join(line + "\n" for line in lines))


def test_a_watcher_follows_appends_rotations_and_deletions(tmp_path: Path, watches) -> None:
    folder, db = tmp_path / "projects", tmp_path / "log.db"
    (folder / "p1").mkdir(parents=True)
    a = folder / "p1" / "a.jsonl"
    append(a, claude_lines("a", 3))  # there before the watcher starts
    watch = Watch(tmp_path, db, "claude-code", folder)
    watches.append(watch)
    wait_for(db.exists, watch, "the log is created")
    log = convlog.open(f"sqlite:///{db}", create=False, preload_tokenizer=False)
    expected: dict[str, set[str]] = {"claude-code:a": claude_ids("a", 3)}

    def complete() -> bool:
        return all(set(ids(log, key)) == want for key, want in expected.items())

    wait_for(complete, watch, "the first lines")

    # A line written in two parts, the watcher reading in between.
    more = claude_lines("a", 2, start=3)
    with a.open("a") as f:
        f.write(more[0][:40])
        f.flush()
        time.sleep(1.0)
        f.write(more[0][40:] + "\n")
    append(a, more[1:])
    # A new project folder, a FIFO named like a transcript, a bad line between good ones.
    (folder / "p2").mkdir()
    os.mkfifo(folder / "p2" / "trap.jsonl")
    b = folder / "p2" / "b.jsonl"
    good = claude_lines("b", 2)
    append(b, [good[0], '{"type": "assistant", "message": [', *good[1:]])
    expected["claude-code:a"] |= claude_ids("a", 2, start=3)
    expected["claude-code:b"] = claude_ids("b", 2)
    wait_for(complete, watch, "appends, a new folder, a bad line")
    # reported at file:line, the rest read (the report may follow the lines' commit)
    wait_for(lambda: f"{b}:2" in watch.stderr(), watch, "the bad line reported")

    # Rotation: lines appended, then the file renamed out of the pattern at once; a
    # new transcript takes its name. Another is renamed within the pattern, then grows.
    append(a, claude_lines("a", 2, start=5))
    a.rename(a.with_name("a.jsonl.1"))
    append(a, claude_lines("a2", 2))
    b.rename(b.with_name("b-archived.jsonl"))
    append(b.with_name("b-archived.jsonl"), claude_lines("b", 1, start=2))
    expected["claude-code:a"] |= claude_ids("a", 2, start=5)
    expected["claude-code:a2"] = claude_ids("a2", 2)
    expected["claude-code:b"] |= claude_ids("b", 1, start=2)
    wait_for(complete, watch, "rotated and renamed files")

    # Deletion (Claude Code's cleanup): nothing recorded goes away.
    a.with_name("a.jsonl.1").unlink()
    b.with_name("b-archived.jsonl").unlink()
    time.sleep(1.0)
    assert complete()

    stats = watch.stop()
    for key, want in expected.items():
        got = ids(log, key)
        assert sorted(got) == sorted(want), key  # every line once: nothing lost or twice
    assert stats["messages"] == sum(len(w) for w in expected.values())
    assert stats["failures"] == 1 and stats["files"] == 1  # only the new a.jsonl is left
    log.close()


@pytest.mark.slow
def test_kill_9_mid_import_then_restart_loses_nothing_and_records_nothing_twice(
        tmp_path: Path, watches) -> None:
    folder, db = tmp_path / "sessions" / "2026" / "01" / "05", tmp_path / "log.db"
    folder.mkdir(parents=True)
    files, turns = 40, 400
    for n in range(files):
        append(folder / f"rollout-2026-01-05T09-00-00-s{n}.jsonl", codex_lines(f"s{n}", turns))
    keys = [f"codex:s{n}" for n in range(files)]
    total = files * 2 * turns
    watch = Watch(tmp_path, db, "codex", tmp_path / "sessions")
    watches.append(watch)
    wait_for(db.exists, watch, "the log is created")
    log = convlog.open(f"sqlite:///{db}", create=False, preload_tokenizer=False)

    def recorded() -> int:
        return sum(len(ids(log, key)) for key in keys)

    wait_for(lambda: recorded() > 0, watch, "a first conversation")
    watch.kill()
    at_kill = recorded()
    assert 0 < at_kill < total  # it died mid-import

    # Written while no watcher runs: read on restart.
    for n in range(0, files, 4):
        append(folder / f"rollout-2026-01-05T09-00-00-s{n}.jsonl",
               codex_lines(f"s{n}", 5, start=turns))
    grown = {f"codex:s{n}" for n in range(0, files, 4)}
    watch = Watch(tmp_path, db, "codex", tmp_path / "sessions")
    watches.append(watch)
    expected = {key: codex_ids(turns + 5 if key in grown else turns) for key in keys}
    wait_for(lambda: all(set(ids(log, k)) == want for k, want in expected.items()), watch,
             "every rollout after the restart")
    watch.stop()
    for key, want in expected.items():
        got = ids(log, key)
        assert len(got) == len(want) and set(got) == want, key
    usage = log.costs(by="model")
    assert sum(r.input_tokens for r in usage) == 30 * sum(len(w) // 2 for w in expected.values())
    log.close()


def test_thousands_of_files_are_followed_without_holding_them_open(tmp_path: Path,
                                                                   watches) -> None:
    folder, db = tmp_path / "projects", tmp_path / "log.db"
    count = 1500
    for n in range(count):
        project = folder / f"p{n % 30}"
        project.mkdir(parents=True, exist_ok=True)
        append(project / f"s{n}.jsonl", claude_lines(f"s{n}", 1))
    watch = Watch(tmp_path, db, "claude-code", folder)
    watches.append(watch)
    wait_for(db.exists, watch, "the log is created")
    log = convlog.open(f"sqlite:///{db}", create=False, preload_tokenizer=False)
    wait_for(lambda: len(ids(log, f"claude-code:s{count - 1}")) == 2, watch, "the catch-up")
    append(folder / "p0" / "s0.jsonl", claude_lines("s0", 1, start=1))
    wait_for(lambda: len(ids(log, "claude-code:s0")) == 4, watch, "a later append")
    descriptors = len(os.listdir(f"/proc/{watch.proc.pid}/fd"))
    assert descriptors < 64, descriptors  # no file is kept open between reads
    stats = watch.stop()
    assert stats["files"] == count and stats["messages"] == 2 * count + 2
    log.close()


def test_watch_usage_errors(tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(CONVLOG), "--db", f"sqlite:///{tmp_path / 'x.db'}",
                               "watch", *args], capture_output=True, text=True, timeout=60)

    bad = run("openai", str(tmp_path))
    assert bad.returncode == 2 and "invalid choice" in bad.stderr
    missing = run("codex", str(tmp_path / "nowhere"))
    assert missing.returncode == 1
    assert missing.stderr.startswith("convlog: error: cannot watch:")
    assert "nowhere" in missing.stderr and "Traceback" not in missing.stderr


def test_on_a_terminal_a_status_line_says_what_was_captured(tmp_path: Path) -> None:
    folder, db = tmp_path / "projects", tmp_path / "log.db"
    folder.mkdir()
    append(folder / "s.jsonl", claude_lines("s", 2))
    controller, terminal = os.openpty()
    proc = subprocess.Popen(
        [str(CONVLOG), "--db", f"sqlite:///{db}", "watch", "claude-code", str(folder)],
        stdin=terminal, stdout=terminal, stderr=terminal, env={**os.environ, "COLUMNS": "250"})
    os.close(terminal)
    seen = b""
    deadline = time.monotonic() + DEADLINE
    try:
        while b"4 messages captured" not in seen:
            assert time.monotonic() < deadline, seen.decode(errors="replace")
            try:
                seen += os.read(controller, 4096)
            except OSError:  # the terminal closed: the process ended
                raise AssertionError(seen.decode(errors="replace")) from None
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        os.close(controller)
    text = seen.decode(errors="replace")
    assert "1 files followed" in text and "1 conversations" in text
