"""The README's quick starts work as written (issue 29): the Python host runs in a fresh
interpreter in an empty folder, and the HTTP one runs in bash against a real
`convlog serve` (on a free port, so that parallel test runs do not collide; the
`pip install` line is the only line not run: convlog is installed already)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
BIN = Path(sys.executable).parent


def quick_start(number: int, language: str) -> str:
    section = README.split(f"## Quick start {number}:", 1)[1].split("\n## ", 1)[0]
    return section.split(f"```{language}\n", 1)[1].split("```", 1)[0]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def env() -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CONVLOG_")}
    clean["PATH"] = f"{BIN}{os.pathsep}{clean.get('PATH', '')}"
    return clean


def test_the_python_host_quick_start_runs(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", quick_start(1, "python")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env=env(),
                          check=False)
    assert done.returncode == 0, done.stderr
    assert '<conversation_history conversation="discord:thread:42" messages="2"' in done.stdout
    assert done.stdout.endswith(
        "user: What did we decide about auth?\nassistant: JWT with rotating keys.\n")
    shown = subprocess.run(["convlog", "--db", "sqlite:///quickstart.db", "show",
                            "discord:thread:42"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=60, env=env(), check=False)
    assert shown.returncode == 0 and "JWT with rotating keys." in shown.stdout


def test_the_http_quick_start_runs(tmp_path: Path) -> None:
    script = quick_start(3, "sh")
    assert script.startswith("pip install 'convlog[http]'\n")
    port = str(free_port())
    script = script.split("\n", 1)[1].replace("8765", port).replace(
        "convlog serve ", f"convlog serve --port {port} ", 1)
    script = f"set -e\n{script}\necho\nkill %1\nwait\n"
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env=env(), check=False)
    assert done.returncode in (0, 143), done.stderr
    started, appended, context = re.split(r"(?<=\})(?=\{)", done.stdout.strip())
    assert json.loads(started)["key"] == "ticket-7"
    assert json.loads(appended)["appended"] == ["m1", "m2"]
    body = json.loads(context)
    assert body["message_count"] == 2 and "Yes, on Monday." in body["text"]


def test_the_record_sample_records_as_written(tmp_path: Path) -> None:
    """docs/cli.md's sample of every `record` line is one valid batch (it once failed:
    its `from_version` ranges lay outside the log)."""
    page = (ROOT / "docs" / "cli.md").read_text()
    sample = page.split("### The `record` input format", 1)[1].split("```json\n", 1)[1]
    (tmp_path / "sample.jsonl").write_text(sample.split("```", 1)[0])
    done = subprocess.run(["convlog", "--db", "sqlite:///r.db", "record", "k", "sample.jsonl"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60, env=env(),
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "recorded 12 event(s) in 'k' (now at version 12)\n"


def test_the_http_pages_curl_examples_run(tmp_path: Path) -> None:
    """docs/http.md's curl example of every group of endpoints, run in bash against a
    real `convlog serve` with an admin token: each request must answer 2xx (curl -f)."""
    from tests.httpserver import ADMIN_TOKEN, spawn_serve

    page = (ROOT / "docs" / "http.md").read_text()
    section = page.split("### curl, one example per group of endpoints", 1)[1]
    script = section.split("```sh\n", 1)[1].split("```", 1)[0]
    with spawn_serve(f"sqlite:///{tmp_path / 'c.db'}", tmp_path,
                     env={"CONVLOG_TOKEN": ADMIN_TOKEN}) as (url, _):
        done = subprocess.run(["bash", "-c", f"set -e\n{script}"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120,
                              env={**env(), "URL": url, "TOKEN": ADMIN_TOKEN}, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    assert '"ok":true' in done.stdout.replace(" ", "")  # the last line: /health
    assert "Yes, on Monday." in done.stdout
