"""Hostile and malformed frames at the proxy, from the client side and the agent side.

The proxy runs as a real process; the test writes raw bytes to its stdin and reads
raw lines from its stdout. Every bad frame must get a JSON-RPC error (or, for a bad
response, be dropped), the proxy must keep serving, and nothing may be lost from the
log."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import convlog
from tests.e2e.acp_harness import agent_command, env, proxy_command

pytest.importorskip("acp")


class Raw:
    """The proxy process, spoken to in raw bytes."""

    def __init__(self, proc: asyncio.subprocess.Process):
        self.proc = proc
        self.notes: list[dict[str, Any]] = []

    async def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def request(self, request_id: Any, method: str, params: Any) -> dict[str, Any]:
        await self.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                                    "params": params}).encode() + b"\n")
        return await self.answer(request_id)

    async def answer(self, request_id: Any) -> dict[str, Any]:
        """The response to `request_id` (notifications before it are kept in `notes`)."""
        assert self.proc.stdout is not None
        while True:
            line = await asyncio.wait_for(self.proc.stdout.readline(), 30)
            assert line, "the proxy closed its stdout"
            message = json.loads(line)
            if "method" in message:
                self.notes.append(message)
                continue
            if message.get("id") == request_id:
                return message  # type: ignore[no-any-return]


async def start(db: str, workdir: Path, *options: str) -> Raw:
    proc = await asyncio.create_subprocess_exec(
        *proxy_command(db, agent_command("memory", workdir), *options),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env(),
        limit=2**20)
    return Raw(proc)


INIT = {"protocolVersion": 1, "clientInfo": {"name": "raw", "version": "0"}}


def test_malformed_client_frames_get_protocol_errors_and_the_proxy_keeps_serving(
        tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'h.db'}"

    async def scenario() -> None:
        raw = await start(db, tmp_path)
        assert (await raw.request(1, "initialize", INIT))["result"]["agentCapabilities"][
            "loadSession"] is True
        await raw.send(b"this is {not json\n")
        assert (await raw.answer(None))["error"]["code"] == -32700
        await raw.send(b"[1, 2, 3]\n")
        bad = await raw.answer(None)
        assert bad["error"]["code"] == -32600 and "JSON object" in bad["error"]["data"][
            "details"]
        await raw.send(b'{"jsonrpc": "2.0", "id": 7, "method": 5}\n')
        bad = await raw.answer(7)
        assert bad["error"]["code"] == -32600 and "method" in bad["error"]["data"]["details"]
        await raw.send(b'{"jsonrpc": "2.0", "id": 8, "method": "session/new", "params": 3}\n')
        assert (await raw.answer(8))["error"]["code"] == -32600
        await raw.send(b'{"jsonrpc": "2.0", "id": true, "method": "session/new"}\n')
        assert (await raw.answer(None))["error"]["code"] == -32600
        await raw.send(b'{"jsonrpc": "2.0", "id": 99, "result": {}}\n')  # a stray response
        wrong = await raw.request(9, "session/prompt", {"sessionId": 5, "prompt": "hi"})
        assert wrong["error"]["code"] == -32602
        fields = {e["field"] for e in wrong["error"]["data"]["errors"]}
        assert {"sessionId", "prompt"} <= fields
        unknown = await raw.request(10, "no/such/method", {})
        assert unknown["error"]["code"] == -32601  # the agent's answer, passed through
        # a 50 MB frame passes through to the agent (an unknown method: its error comes back)
        big = {"blob": "x" * 50_000_000}
        assert (await raw.request(11, "x/big", big))["error"]["code"] == -32601
        # still serving: a session and a turn are recorded
        new = await raw.request(12, "session/new", {"cwd": str(tmp_path), "mcpServers": []})
        session_id = new["result"]["sessionId"]
        done = await raw.request(13, "session/prompt", {
            "sessionId": session_id, "prompt": [{"type": "text", "text": "garbage please"}]})
        assert done["result"]["stopReason"] == "end_turn"  # the agent's junk line did not hurt
        assert raw.proc.stdin is not None
        raw.proc.stdin.close()
        assert await asyncio.wait_for(raw.proc.wait(), 15) == 0
        with convlog.open(db) as log:
            assert [m.role for m in log.messages(f"acp:{session_id}")] == ["user", "assistant"]

    asyncio.run(asyncio.wait_for(scenario(), 120))


def test_a_frame_over_the_limit_is_skipped_and_answered_with_its_id(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'h.db'}"

    async def scenario() -> None:
        raw = await start(db, tmp_path, "--max-frame-mb", "1")
        await raw.request(1, "initialize", INIT)
        frame = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                            "params": {"blob": "y" * 50_000_000}}).encode() + b"\n"
        await raw.send(frame)
        refused = await raw.answer(2)
        assert refused["error"]["code"] == -32600
        assert "over the proxy's limit of 1048576 bytes" in refused["error"]["data"]["details"]
        assert "result" in await raw.request(3, "session/new", {"cwd": "/", "mcpServers": []})
        raw.proc.kill()
        await raw.proc.wait()

    asyncio.run(asyncio.wait_for(scenario(), 120))


def test_a_missing_agent_or_no_agent_command_is_one_clear_error(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'h.db'}"

    async def run(*command: str) -> tuple[int | None, bytes]:
        proc = await asyncio.create_subprocess_exec(
            *proxy_command(db, list(command)), stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env())
        _, err = await asyncio.wait_for(proc.communicate(b""), 30)
        return proc.returncode, err

    code, err = asyncio.run(run("/no/such/agent"))
    assert code == 1 and b"cannot start the agent '/no/such/agent'" in err
    assert b"Traceback" not in err
    code, err = asyncio.run(run())
    assert code == 2 and b"AGENT_COMMAND" in err  # a usage error (docs/cli.md)


def test_sigterm_mid_turn_records_the_turn_and_exits_cleanly(tmp_path: Path) -> None:
    import signal

    db = f"sqlite:///{tmp_path / 'h.db'}"

    async def scenario() -> str:
        raw = await start(db, tmp_path)
        await raw.request(1, "initialize", INIT)
        new = await raw.request(2, "session/new", {"cwd": str(tmp_path), "mcpServers": []})
        session_id = new["result"]["sessionId"]
        await raw.send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                                   "params": {"sessionId": session_id, "prompt": [
                                       {"type": "text", "text": "slow, then stop"}]}}).encode()
                       + b"\n")
        while not (tmp_path / "trace.jsonl").exists():
            await asyncio.sleep(0.02)
        raw.proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(raw.proc.wait(), 15) == 0
        return str(session_id)

    session_id = asyncio.run(asyncio.wait_for(scenario(), 60))
    with convlog.open(db) as log:
        user, agent = log.messages(f"acp:{session_id}")
        assert user.content == "slow, then stop"
        assert isinstance(agent.content, list)
        assert agent.content[-1] == convlog.TextPart(text="[turn cancelled]")


@pytest.mark.parametrize("session_id", ["a\x00b", "x" * 513], ids=["nul", "over-512"])
def test_a_session_id_that_cannot_be_a_key_is_invalid_params_not_internal(
        tmp_path: Path, session_id: str) -> None:
    """session/load and session/resume with an id no conversation can have answer
    -32602 naming `sessionId` (they were -32603 with a traceback), and the proxy goes on."""
    db = f"sqlite:///{tmp_path / 'h.db'}"

    async def scenario() -> None:
        raw = await start(db, tmp_path)
        await raw.request(1, "initialize", INIT)
        where = {"cwd": str(tmp_path), "mcpServers": []}
        for request_id, method in ((2, "session/load"), (3, "session/resume")):
            bad = await raw.request(request_id, method, {"sessionId": session_id, **where})
            assert bad["error"]["code"] == -32602, bad
            assert [e["field"] for e in bad["error"]["data"]["errors"]] == ["sessionId"]
        new = await raw.request(4, "session/new", where)
        assert new["result"]["sessionId"]
        assert raw.proc.stdin is not None
        raw.proc.stdin.close()
        assert await asyncio.wait_for(raw.proc.wait(), 15) == 0

    asyncio.run(asyncio.wait_for(scenario(), 60))


SILENT_AGENT = "import sys\nfor line in sys.stdin:\n    pass\n"


def test_an_agent_that_never_answers_initialize_gets_the_host_an_error(
        tmp_path: Path) -> None:
    """The host waited forever; now it gets a JSON-RPC error naming the timeout, the
    proxy's log says so on stderr, and the silent agent is stopped."""
    agent = tmp_path / "silent.py"
    agent.write_text(SILENT_AGENT)
    db = f"sqlite:///{tmp_path / 'h.db'}"

    async def scenario() -> None:
        import sys

        proc = await asyncio.create_subprocess_exec(
            *proxy_command(db, [sys.executable, str(agent)], "--init-timeout", "1"),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=env())
        raw = Raw(proc)
        answer = await raw.request(1, "initialize", INIT)
        assert answer["error"]["code"] == -32603
        assert "did not answer initialize within 1 s" in answer["error"]["data"]["details"]
        assert proc.stdin is not None and proc.stderr is not None
        proc.stdin.close()
        await asyncio.wait_for(proc.wait(), 15)
        assert "did not answer initialize" in (await proc.stderr.read()).decode()

    asyncio.run(asyncio.wait_for(scenario(), 60))
