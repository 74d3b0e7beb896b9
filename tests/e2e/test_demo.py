"""`make demo` is the main job: it must work end to end, in real processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import convlog
from convlog.domain.events import HistoryInjected, ResumeFailed, ResumeSucceeded


def run_demo(tmp_path: Path) -> str:
    env = {**os.environ, "CONVLOG_DEMO_DB": str(tmp_path / "demo.db")}
    env.pop("CONVLOG_URL", None)
    done = subprocess.run([sys.executable, "-m", "convlog.cli.demo"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_new_process_answers_from_injected_history(tmp_path: Path) -> None:
    out = run_demo(tmp_path)
    assert "session/resume  FAILED (not_found" in out
    assert "session/load    FAILED (not_found" in out
    assert "session/new     ok" in out
    assert "they rotate every 24h" in out  # only the history can answer this
    assert "I don't know" in out  # ...and without it, the same model cannot
    with convlog.open(f"sqlite:///{tmp_path / 'demo.db'}", create=False) as log:
        events = [r.event for r in log.events("demo:discord:thread:42")]
    injected = [e for e in events if isinstance(e, HistoryInjected)]
    assert len(injected) == 1
    assert "Rotation every 24h" in injected[0].text
    assert "Remind me" not in injected[0].text  # the question being sent is not history
    assert [e.strategy for e in events if isinstance(e, ResumeFailed)] == [
        "session/resume", "session/load"]
    assert [e.strategy for e in events if isinstance(e, ResumeSucceeded)] == ["session/new"]


def test_running_the_demo_twice_resumes_again_without_duplicating(tmp_path: Path) -> None:
    first = run_demo(tmp_path)
    assert "appending" not in first
    out = run_demo(tmp_path)
    assert "they rotate every 24h" in out
    # a second run says it adds to the first one's database (issue 29)
    assert f"appending to the demo conversation already in {tmp_path / 'demo.db'}" in out
    with convlog.open(f"sqlite:///{tmp_path / 'demo.db'}", create=False) as log:
        ids = [m.message_id for m in log.messages("demo:discord:thread:42")]
    assert len(ids) == len(set(ids)) == 8  # 4 scripted once + 2 questions and answers
