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

Then what the host sees on `session/load` after a restart equals what it saw live
(tool calls with kind, rawInput, locations, diff, rawOutput; usage; title: issue 41),
and a host on the SDK's experimental v2 client is answered v1 (tests/hosts/typescript/
src/host_v2.ts, in front of src/agent.ts, an agent on the SDK's protocol router).

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
from tests.e2e.acp_harness import agent_command, coalesced, env, proxy_command, trace
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


def killed_after_its_first_line(args: list[str], workdir: Path) -> dict[str, Any]:
    """Run the host with `args` until it prints its first line (JSON), then kill host,
    proxy and agent at once, as when the machine goes down."""
    first = subprocess.Popen(["node", *args], stdout=subprocess.PIPE, text=True, env=env())
    started: dict[str, Any] = {}
    try:
        assert first.stdout is not None
        line = first.stdout.readline()
        assert line, "the host ended before its first answer"
        started = json.loads(line)
    finally:
        for pid in (first.pid, started.get("proxyPid")):
            if pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        for pid in {t["pid"] for t in trace(workdir)}:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        first.wait(30)
    return started


def test_a_typescript_host_restarts_everything_and_the_agent_gets_system_history_question(
        tmp_path: Path) -> None:
    host = built_host()
    db = f"sqlite:///{tmp_path / 'acp.db'}"
    command = proxy_command(db, agent_command("memory", tmp_path))

    # 1. a new session, the system prompt in its first prompt; 2. all killed
    started = killed_after_its_first_line(
        [str(host), "first", SYSTEM, str(tmp_path), "--", *command], tmp_path)
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


PROMPTS = ["title: Weather desk", "edit the file, twice", "thanks"]  # as host.ts's


def test_after_a_restart_and_a_load_the_host_sees_the_tool_calls_usage_and_title_it_saw_live(
        tmp_path: Path) -> None:
    """Issue 41's "done when" for ACP: the TypeScript host gets on `session/load` what
    it got live (the round-trip rule, docs/acp.md: the prompt's blocks, then every
    update of the turn as the agent sent it, text chunks of one message joined), every
    update valid for the SDK's own zod schemas (it parses each one it is sent)."""
    host = built_host()
    db = f"sqlite:///{tmp_path / 'acp.db'}"
    command = proxy_command(db, agent_command("memory", tmp_path))
    started = killed_after_its_first_line(
        [str(host), "tools", SYSTEM, str(tmp_path), "--", *command], tmp_path)
    again = subprocess.run(["node", str(host), "reload", SYSTEM, str(tmp_path),
                            started["sessionId"], "--", *command], capture_output=True,
                           text=True, timeout=120, env=env())
    assert again.returncode == 0, again.stdout + again.stderr
    replayed = json.loads(again.stdout.splitlines()[0])["replayed"]

    live: list[list[dict[str, Any]]] = started["live"]
    expected: list[dict[str, Any]] = []
    for text, turn in zip(PROMPTS, live, strict=True):  # the system prompt: not dialogue
        expected.append({"sessionUpdate": "user_message_chunk",
                         "content": {"type": "text", "text": text}})
        expected.extend(coalesced(turn))
    assert replayed == expected
    edit = next(u for u in live[1] if u.get("toolCallId") == "e1"
                and u.get("status") == "completed")
    assert edit["rawOutput"] == {"tempC": 21, "sky": "clear"}
    assert [c["type"] for c in edit["content"]] == ["diff", "content"]
    assert edit in replayed
    call = next(u for u in replayed if u["sessionUpdate"] == "tool_call"
                and u["toolCallId"] == "e1")
    assert (call["kind"], call["locations"]) == ("edit", [{"path": "/work/project/a.py",
                                                           "line": 3}])
    assert call["rawInput"] == {"path": "/work/project/a.py", "old": "x = 1", "new": "x = 2"}
    usage = [u for u in replayed if u["sessionUpdate"] == "usage_update"]
    assert usage[-1] == [u for t in live for u in t if u["sessionUpdate"] == "usage_update"][-1]
    assert [u["title"] for u in replayed if u["sessionUpdate"] == "session_info_update"] == [
        "Weather desk"]


def test_a_v2_host_is_answered_v1_and_its_v1_turn_is_recorded_whole(tmp_path: Path) -> None:
    """Issue 41 item 7: a host on the SDK's experimental v2 client, in front of an
    agent that speaks v1 and v2 (tests/hosts/typescript/src/agent.ts, the SDK's
    protocol router). convlog acp records v1 only, so it negotiates v1 with both: the
    agent is asked for 1, the host answered 1, and says so on stderr. The SDK's v2
    client refuses a v1 answer (it closes the connection: the spec's "a client that
    does not support the version SHOULD close"); the host then talks v1, and that
    turn is recorded whole. Before, the proxy passed the agent's v2 answer through
    and recorded v2 turns without the agent's reply (streamed after the answer)."""
    host = built_host()
    agent = ["node", str(host.parent / "agent.js")]
    db = f"sqlite:///{tmp_path / 'acp.db'}"
    ran = subprocess.run(["node", str(host.parent / "host_v2.js"), str(tmp_path), "--",
                          *proxy_command(db, agent)], capture_output=True, text=True,
                         timeout=120, env=env())
    assert ran.returncode == 0, ran.stdout + ran.stderr
    refused, spoke = (json.loads(x) for x in ran.stdout.splitlines())
    assert refused["v2"] == "refused", refused
    assert "asked for ACP protocol version 2" in ran.stderr
    assert spoke["protocolVersion"] == 1 and spoke["v1"] == "v1 reply to: hello over v1"
    with convlog.open(db) as log:
        messages = log.messages(f"acp:{spoke['sessionId']}")
        assert [m.role for m in messages] == ["user", "assistant"]
        assert "v1 reply to: hello over v1" in str(messages[1].content)
        assert messages[1].raw is not None and any(
            u.get("kind") == "fetch" for u in messages[1].raw["acp"])
