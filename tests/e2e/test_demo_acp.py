"""`make demo-acp`: the restart story over ACP, in real processes, must work end to end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import convlog


def test_the_new_agent_process_answers_from_the_history_the_proxy_injected(
        tmp_path: Path) -> None:
    env = {**os.environ, "CONVLOG_DEMO_DB": str(tmp_path / "demo.db")}
    done = subprocess.run([sys.executable, "-m", "convlog.cli.demo_acp"], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "resume_failed     strategy=session/resume reason=not_found" in out
    assert "resume_failed     strategy=session/load reason=not_found" in out
    assert "resume_succeeded  strategy=session/new" in out
    assert "they rotate every 24h" in out  # only the injected history can answer this
    replay = out.split("== session/load", 1)[1].split("== resume outcomes", 1)[0]
    assert replay.count("| OK, JWT it is. Rotation every 24h, please.") == 1
    key = "acp:" + (tmp_path / "demo.session").read_text()
    with convlog.open(f"sqlite:///{tmp_path / 'demo.db'}", create=False) as log:
        assert [m.role for m in log.messages(key)] == ["user", "assistant"] * 3
        (row,) = [r for r in log.telemetry(by="agent")]
        assert (row.group, row.fallbacks, row.memory_lost) == ("demo-agent", 1, 0)
