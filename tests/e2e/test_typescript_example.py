"""examples/client.ts, type-checked by tsc (strict) and run by this machine's Node.js
against a real `convlog serve`: a host in another language, end to end.

TypeScript comes from npm at the version examples/package-lock.json pins, installed
once into the venv (`npm ci`); Node.js 20 cannot run .ts itself (no type stripping
before 22.6), so the example is compiled, never rewritten by hand."""

from __future__ import annotations

import filecmp
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import convlog
from tests.httpserver import ADMIN_TOKEN, spawn_serve

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def typescript() -> Path:
    """tsc from examples/package-lock.json, installed in the venv once."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Node.js and npm are not installed on this machine")
    home = Path(sys.prefix) / "node-examples"
    tsc = home / "node_modules" / ".bin" / "tsc"
    lock = home / "package-lock.json"
    if not tsc.exists() or not lock.exists() or not filecmp.cmp(lock, EXAMPLES /
                                                                "package-lock.json"):
        home.mkdir(exist_ok=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copy(EXAMPLES / name, home / name)
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--silent"], cwd=home,
                       check=True, timeout=300)
    return tsc


def test_the_typescript_example_runs_against_a_real_server(tmp_path: Path) -> None:
    tsc = typescript()
    out = tmp_path / "dist"
    compiled = subprocess.run([str(tsc), "-p", str(EXAMPLES), "--outDir", str(out)],
                              capture_output=True, text=True, timeout=300)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    db = f"sqlite:///{tmp_path / 'c.db'}"
    with spawn_serve(db, tmp_path, env={"CONVLOG_TOKEN": ADMIN_TOKEN}) as (url, _):
        ran = subprocess.run(["node", str(out / "client.js"), url, "electron/window 1"],
                             capture_output=True, text=True, timeout=120,
                             env={"CONVLOG_TOKEN": ADMIN_TOKEN, "PATH": "/usr/bin:/bin"})
        assert ran.returncode == 0, ran.stdout + ran.stderr
        lines = ran.stdout.splitlines()
        assert json.loads(lines[0]) == {"appended": ["turn-1#0", "turn-1#1"],
                                        "retried": ["turn-1#0", "turn-1#1"]}
        assert json.loads(lines[1]) == {"last": "turn-1#1", "role": "assistant"}
        injected = json.loads(lines[2])
        assert injected["injected"] is True and injected["again"] is True
        assert "JWT with rotating keys." in ran.stdout
        assert json.loads(lines[-1]) == {"status": 422, "field": "messages[0].role"}
        with convlog.Client(url, token=ADMIN_TOKEN) as client:
            conv = client.get("electron/window 1")
            assert [m.message_id for m in conv.messages()] == ["turn-1#0", "turn-1#1"]
            rows = {r.group: r for r in client.telemetry()}
            assert rows["session/resume"].failed == 1 and rows["session/new"].succeeded == 1
