"""An interrupted `forget` is never half-true (issue 42, item 7).

`convlog forget --user U` killed part-way used to leave conversations marked
"FORGOTTEN: content erased" whose content every reader still showed, `context` still
injecting it. The design now (docs/encryption.md): the user's data keys are destroyed
FIRST, in one transaction, so from that instant no reader can open any of the user's
content; the `user_forgotten` marks follow, and a re-run finishes them. So at any
interruption either nothing was destroyed (every reader shows the content, nothing says
it was erased) or no reader can read it. Checked with an interruption after the k-th
mark in this process (SQLite and PostgreSQL) and with a real `convlog forget` process
killed with SIGKILL once it has marked a conversation.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import convlog
from convlog.domain.conversation import Forget
from convlog.services import privacy
from convlog.services.log import application
from convlog.services.writer import Writer
from tests.crypto.helpers import use_key

SECRET = "SECRET-PLAN-{}"


class Interrupted(Exception):
    pass


class StopsAfter:
    """The log's real writer, stopped (as a kill would) after `marks` Forget writes."""

    def __init__(self, writer: Writer, marks: int):
        self.inner, self.left = writer, marks

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def execute(self, key: str, commands: Any, origins: Any = None) -> Any:
        if any(isinstance(c, Forget) for c in commands):
            if self.left == 0:
                raise Interrupted(key)
            self.left -= 1
        return self.inner.execute(key, commands, origins)


def seed(log: convlog.ConversationLog, count: int) -> list[str]:
    keys = [f"alice:{i}" for i in range(count)]
    for i, key in enumerate(keys):
        log.conversation(key, user="alice", title=f"title {i}")
        log.append_turn(key, [convlog.user(SECRET.format(i)), convlog.assistant("noted")])
    log.conversation("bob:0", user="bob").append(convlog.user("bob's own text"))
    return keys


def readable(log: convlog.ConversationLog, key: str, i: int) -> dict[str, bool]:
    """Which readers can still show conversation `key`'s content."""
    secret = SECRET.format(i)
    return {
        "messages": any(m.content == secret for m in log.messages(key)),
        "transcript": any(line.text == secret for line in log.transcript(key)),
        "context": secret in log.context(key).text,
        "replay": secret in str(log.view(key, "user")),
    }


def assert_never_half_true(log: convlog.ConversationLog, keys: list[str]) -> None:
    marked = [log.info(k).forgotten for k in keys]
    shown = [readable(log, k, i) for i, k in enumerate(keys)]
    if any(any(r.values()) for r in shown):  # someone can read: then all can, unmarked
        assert all(all(r.values()) for r in shown), shown
        assert not any(marked), "marked forgotten while its content is readable"
        assert not any(r.forgotten for r in log.conversations(user="alice", include_archived=True))
    assert [m.content for m in log.messages("bob:0")] == ["bob's own text"]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@pytest.mark.parametrize("marks", [0, 3])
def test_an_interrupted_forget_is_never_half_true_and_a_rerun_finishes(
        backend: str, marks: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        request: pytest.FixtureRequest) -> None:
    use_key(monkeypatch)
    url = (f"sqlite:///{tmp_path / 'c.db'}" if backend == "sqlite"
           else request.getfixturevalue("pg_url"))
    with convlog.open(url, views=tmp_path / "v.duckdb", preload_tokenizer=False) as log:
        keys = seed(log, 6)
        with pytest.raises(Interrupted):
            privacy.forget(StopsAfter(application(log).writer, marks), "alice")  # type: ignore[arg-type]
        assert_never_half_true(log, keys)
        assert not any(any(readable(log, k, i).values()) for i, k in enumerate(keys))
        done = log.forget(user="alice")  # the re-run finishes
        assert sorted(done.conversations) == sorted(keys)
        assert all(log.info(k).forgotten for k in keys)
        assert_never_half_true(log, keys)


def _forgotten_marks(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            row = conn.execute("SELECT count(*) FROM stored_events WHERE topic LIKE "
                               "'user_forgotten%'").fetchone()
    except sqlite3.OperationalError:  # a write holds the file for a moment
        return 0
    return int(row[0])


def test_a_forget_process_killed_midway_is_never_half_true(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = use_key(monkeypatch)
    db = tmp_path / "c.db"
    with convlog.open(f"sqlite:///{db}", views=tmp_path / "v.duckdb",
                      preload_tokenizer=False) as log:
        keys = seed(log, 300)
    proc = subprocess.Popen(
        [sys.executable, "-m", "convlog.cli.main", "forget", "--db", f"sqlite:///{db}",
         "--user", "alice"], env={**os.environ, "CONVLOG_KEY": key},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while proc.poll() is None and _forgotten_marks(db) == 0:
            time.sleep(0.005)  # a condition polled for, not a time asserted
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(30)
    with convlog.open(f"sqlite:///{db}", views=tmp_path / "v2.duckdb",
                      preload_tokenizer=False) as log:
        assert_never_half_true(log, keys)
        log.forget(user="alice")
        assert all(log.info(k).forgotten for k in keys)
        assert not any(any(readable(log, k, i).values()) for i, k in enumerate(keys))
