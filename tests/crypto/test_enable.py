"""`convlog keys enable` on an existing store: atomic per conversation, resumable.

A real `convlog keys enable` process is killed (SIGKILL) in the middle of the
migration: every conversation is then wholly encrypted or wholly plain, the store
reads back entirely with the key (mixed rows are fine), and running the command
again finishes the job, leaving no plaintext in any file.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import convlog
from convlog.domain.conversation import conversation_id
from convlog.storage.sealed import sealed_at
from tests.crypto.helpers import found_in_files, no_key, use_key

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs SIGKILL")
CONVERSATIONS = 600


def _sealed_by_stream(db: Path) -> dict[str, list[bool]]:
    out: dict[str, list[bool]] = {}
    with sqlite3.connect(db) as conn:
        for stream, topic, state in conn.execute(
                "SELECT originator_id, topic, state FROM stored_events ORDER BY rowid"):
            if topic != "session_started" or b"title" in state or b"$sealed" in state:
                out.setdefault(stream, []).append(sealed_at(bytes(state)) >= 0)
    return out


def _enable(url: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "convlog.cli.main", "--db", url,
                             "keys", "enable"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_a_killed_migration_is_atomic_per_conversation_and_resumes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    no_key(monkeypatch)
    url = f"sqlite:///{tmp_path / 'c.db'}"
    with convlog.open(url, preload_tokenizer=False) as log:
        for i in range(CONVERSATIONS):
            log.conversation(f"c{i}", user=f"u{i % 7}", title=f"TITLE-CANARY-{i}").append_turn(
                [convlog.user(f"TEXT-CANARY-{i}", tokens=1),
                 convlog.assistant(f"REPLY-CANARY-{i}", tokens=1)])
    use_key(monkeypatch)

    proc = _enable(url)
    assert proc.stdout is not None
    reported = []
    for line in proc.stdout:
        reported.append(line.split(":")[0])
        if len(reported) == 50:
            os.kill(proc.pid, signal.SIGKILL)
            break
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL

    with sqlite3.connect(tmp_path / "c.db") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    sealed = _sealed_by_stream(tmp_path / "c.db")
    mixed = [s for s, flags in sealed.items() if len(set(flags)) > 1]
    assert mixed == [], "a conversation was half migrated"
    done = {s for s, flags in sealed.items() if all(flags)}
    assert {conversation_id(k).hex for k in reported} <= done
    assert 50 <= len(done) < CONVERSATIONS, "the kill did not land mid-way"

    with convlog.open(url, preload_tokenizer=False) as log:  # mixed store: all readable
        for i in (0, 49, 300, CONVERSATIONS - 1):
            assert log.messages(f"c{i}")[0].content == f"TEXT-CANARY-{i}"

    again = _enable(url)
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert "store encrypted" in out
    assert all(all(flags) for flags in _sealed_by_stream(tmp_path / "c.db").values())
    assert found_in_files(tmp_path, [b"TEXT-CANARY-", b"REPLY-CANARY-", b"TITLE-CANARY-"]) == []
    with convlog.open(url, preload_tokenizer=False) as log:
        assert log.info("c7").title == "TITLE-CANARY-7"
        assert log.messages(f"c{CONVERSATIONS - 1}")[1].content == (
            f"REPLY-CANARY-{CONVERSATIONS - 1}")
