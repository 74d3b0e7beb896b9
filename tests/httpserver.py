"""Real HTTP servers for the tests: uvicorn on a loopback socket, in a thread of this
process (`served`) or as a `convlog serve` process (`spawn_serve`); and reading an
answer off a raw socket (`read_answer`), for tests that speak HTTP by hand."""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import uvicorn

import convlog
from convlog.http.app import create_app
from convlog.http.auth import Auth
from convlog.http.server import bind
from convlog.services.log import application

ADMIN_TOKEN = "admin-token-0123456789"
ALICE_TOKEN = "alice-token-0123456789"
BOB_TOKEN = "bob-token-01234567890"
PROBLEM = "application/problem+json"


@contextmanager
def served(log: convlog.ConversationLog, auth: Auth | None = None, **options: Any
           ) -> Iterator[str]:
    """The app on a real loopback socket; yields its base URL."""
    sock = bind("127.0.0.1", 0)
    app = create_app(application(log), auth=auth, poll_interval=0.05, **options)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False,
                                           timeout_graceful_shutdown=1, lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@contextmanager
def spawn_serve(db: str | None, cwd: Path, *args: str, env: dict[str, str] | None = None
                ) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`convlog serve --port 0` as a real process; yields (base URL, process). `db`
    None: the default, ./convlog.db in `cwd`."""
    environment = {**os.environ, **(env or {})}
    environment.pop("CONVLOG_URL", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "convlog.cli.main", "serve", *(["--db", db] if db else []),
         "--port", "0", *args],
        cwd=cwd, env=environment, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.search(r"listening on (http://\S+)", line)
        assert found, f"no listening line: {line!r} {proc.stderr.read() if proc.poll() else ''}"
        drain = threading.Thread(target=proc.stderr.read, daemon=True)  # never block it
        drain.start()
        yield found.group(1), proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    assert parts.hostname and parts.port
    return parts.hostname, parts.port


def read_answer(sock: socket.socket, timeout: float = 10) -> tuple[int, dict[str, str], bytes]:
    """Read one whole response (the server closes the connection after a refusal)."""
    sock.settimeout(timeout)
    data = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, TimeoutError):
            break
        if not chunk:
            break
        data += chunk
        head, sep, body = data.partition(b"\r\n\r\n")
        if sep and b"content-length" in head.lower():
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            if len(body) >= length:
                break
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0].startswith("HTTP/1.1 "), data[:200]
    headers = {k.strip().lower(): v.strip() for k, _, v in
               (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


def send_giant_value(sock: socket.socket, head: bytes, what: str) -> None:
    """Send `head`, then 4 MiB of one header (or trailer) value: the server must answer
    once 256 KiB of it are in, while the rest is still arriving (it is never read
    whole); what follows is read and dropped. The answer is left to `read_answer`."""
    sock.sendall(head)
    with contextlib.suppress(OSError):
        for _ in range(4):  # 256 KiB of one value, and no end in sight
            sock.sendall(b"a" * 65536)
        assert select.select([sock], [], [], 10)[0], f"no answer to a 256 KiB {what}"
        for _ in range(60):  # the rest (4 MiB in all) is read and dropped
            sock.sendall(b"a" * 65536)
        sock.sendall(b"\r\n\r\n")


def assert_problem(status: int, headers: dict[str, str], body: bytes, expected: int) -> None:
    assert status == expected, body
    assert headers["content-type"] == PROBLEM
    document = json.loads(body)
    assert document["status"] == expected and document["type"].startswith("urn:convlog:")
