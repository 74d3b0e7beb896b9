"""Real HTTP servers for the tests: uvicorn on a loopback socket, in a thread of this
process (`served`) or as a `convlog serve` process (`spawn_serve`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import uvicorn

import convlog
from convlog.http.app import create_app
from convlog.http.auth import Auth
from convlog.http.server import bind

ADMIN_TOKEN = "admin-token-0123456789"
ALICE_TOKEN = "alice-token-0123456789"
BOB_TOKEN = "bob-token-01234567890"


@contextmanager
def served(log: convlog.ConversationLog, auth: Auth | None = None, **options: Any
           ) -> Iterator[str]:
    """The app on a real loopback socket; yields its base URL."""
    sock = bind("127.0.0.1", 0)
    app = create_app(log, auth=auth, poll_interval=0.05, **options)
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
