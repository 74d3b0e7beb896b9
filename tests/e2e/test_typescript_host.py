"""A real TypeScript ACP host (tests/hosts/typescript, @agentclientprotocol/sdk run by
Node.js) in front of `convlog acp -- AGENT`, AGENT an agent that cannot load sessions
(tests/e2e/acp_agent.py --mode memory). All real processes, as a desktop app lives it:

1. a new session; first prompt [system prompt, "Remember the code word PELICAN"];
2. host, proxy and agent are killed (SIGKILL) and started again;
3. `session/load` of the same id replays the conversation to the host;
4. the first prompt of the new agent process, [system prompt, "What was the code
   word?"], reaches the agent as system prompt, history (with PELICAN), question, in
   that order, the history exactly once;
5. `convlog show` of the conversation has no system-prompt text;
6. an unknown id gets -32002, and the host falls back to `session/new`.

The npm packages come at the versions tests/hosts/typescript/package-lock.json pins,
installed once (`npm ci`) into a copy of the folder inside the venv; the work tree
gets no node_modules. Skipped, saying so, only where Node.js and npm are absent.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import convlog
from tests.e2e.acp_harness import agent_command, env, proxy_command, trace
from tests.node_packages import installed

ROOT = Path(__file__).resolve().parents[2]
HOST = ROOT / "tests" / "hosts" / "typescript"
SYSTEM = "You are Desk, ACME's assistant. Be brief. SYSTEM-PROMPT-MARKER 2026."


def built_host() -> Path:
    """tests/hosts/typescript with its locked node_modules, in the venv, compiled."""
    home = installed(HOST, "node-acp-host")
    compiled = subprocess.run([str(home / "node_modules" / ".bin" / "tsc"), "-p", str(home)],
                              capture_output=True, text=True, timeout=300)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    return home / "dist" / "host.js"


def test_a_typescript_host_restarts_everything_and_the_agent_gets_system_history_question(
        tmp_path: Path) -> None:
    host = built_host()
    db = f"sqlite:///{tmp_path / 'acp.db'}"
    command = proxy_command(db, agent_command("memory", tmp_path))

    # 1. a new session, the system prompt in its first prompt
    first = subprocess.Popen(["node", str(host), "first", SYSTEM, str(tmp_path), "--",
                              *command], stdout=subprocess.PIPE, text=True, env=env())
    started: dict[str, Any] = {}
    try:
        assert first.stdout is not None
        line = first.stdout.readline()
        assert line, "the host ended before its first answer"
        started = json.loads(line)
    finally:
        # 2. host, proxy and agent die at once, as when the machine goes down
        for pid in (first.pid, started.get("proxyPid")):
            if pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        for pid in {t["pid"] for t in trace(tmp_path)}:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        first.wait(30)
    session_id = started["sessionId"]
    assert "PELICAN" in started["answer"]

    # 2. ... started again; 3. load; 4. the question; 6. an unknown id
    again = subprocess.run(["node", str(host), "reopen", SYSTEM, str(tmp_path), session_id,
                            "--", *command], capture_output=True, text=True, timeout=120,
                           env=env())
    assert again.returncode == 0, again.stdout + again.stderr
    reopened, unknown, fallback = (json.loads(x) for x in again.stdout.splitlines())
    assert reopened["how"] == "load" and reopened["sessionId"] == session_id
    assert reopened["replayed"] == ["Remember the code word PELICAN"]  # 3. no system prompt
    assert unknown == {"unknown": f"no-such-session-{session_id}", "code": -32002}  # 6.
    assert fallback["how"] == "new" and fallback["sessionId"] != session_id

    prompts = trace(tmp_path)
    assert len({p["pid"] for p in prompts}) == 2  # a new agent process after the restart
    assert prompts[0]["texts"] == [SYSTEM, "Remember the code word PELICAN"]
    system, history, question = prompts[1]["texts"]  # 4. in this order, the history once
    assert system == SYSTEM
    assert "conversation_history" in history and "PELICAN" in history
    assert "SYSTEM-PROMPT-MARKER" not in history
    assert question == "What was the code word?"
    assert "given the history" in reopened["answer"]
    assert prompts[2]["texts"] == [SYSTEM, "Hello, new session"]  # a fresh one: no history
    assert all("conversation_history" not in t for p in prompts[2:] for t in p["texts"])

    # 5. the log holds the dialogue, never the system prompt
    shown = subprocess.run([sys.executable, "-m", "convlog.cli.main", "--db", db, "show",
                            f"acp:{session_id}"], capture_output=True, text=True, env=env())
    assert shown.returncode == 0, shown.stderr
    assert "PELICAN" in shown.stdout and "What was the code word?" in shown.stdout
    assert "SYSTEM-PROMPT-MARKER" not in shown.stdout
    with convlog.open(db) as log:
        for key in (f"acp:{session_id}", f"acp:{fallback['sessionId']}"):
            assert all("SYSTEM-PROMPT-MARKER" not in str(m.content)
                       for m in log.messages(key))
