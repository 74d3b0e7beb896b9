"""A private PostgreSQL cluster for tests that stop, restart or break the server.

The machine's shared PostgreSQL (127.0.0.1:5432) serves every test running at the
same time: a test that restarted it broke all of them. A `PrivateCluster` is its own
`initdb` in a temporary directory, on its own port, started and stopped with
`pg_ctl`; nothing else connects to it.

PostgreSQL refuses to run as root: when the tests run as root, the cluster's files
belong to the ``postgres`` user and every server command runs as that user
(``runuser``); otherwise they run as the current user.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg

SERVER_USER = "postgres"


def _bindir() -> Path:
    """The newest installed PostgreSQL's programs (Debian keeps them out of PATH)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
                   key=lambda p: int(Path(p).parent.parent.name))
    if found:
        return Path(found[-1]).parent
    pg_ctl = shutil.which("pg_ctl")
    if pg_ctl is None:
        raise RuntimeError("no PostgreSQL server programs (initdb, pg_ctl) on this machine")
    return Path(pg_ctl).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrivateCluster:
    """One PostgreSQL server of a test's own: `start`, `stop`, `restart`, `url`."""

    def __init__(self) -> None:
        self.bindir = _bindir()
        self.root = Path(tempfile.mkdtemp(prefix="convlog-pg-"))
        self.data = self.root / "data"
        self.logfile = self.root / "server.log"
        self.port = _free_port()
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            server = pwd.getpwnam(SERVER_USER)
            os.chown(self.root, server.pw_uid, server.pw_gid)
            self._as_user = ["runuser", "-u", SERVER_USER, "--"]
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres",
                  "-E", "UTF8", "--no-sync")

    def _run(self, program: str, *args: str, timeout: float = 60) -> None:
        done = subprocess.run([*self._as_user, str(self.bindir / program), *args],
                              capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"{program} {' '.join(args)} failed: {done.stderr.strip()}")

    def url(self, **options: str) -> str:
        """The convlog URL of the cluster's `postgres` database."""
        query = "&".join(f"{k}={v}" for k, v in options.items())
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres" + (
            f"?{query}" if query else "")

    @property
    def conninfo(self) -> str:
        return f"host=127.0.0.1 port={self.port} dbname=postgres user=postgres"

    def start(self) -> None:
        """Start the server and return once it accepts connections."""
        options = (f"-p {self.port} -c listen_addresses=127.0.0.1 "
                   f"-c unix_socket_directories={self.root} -c max_connections=60")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.logfile), "-o", options,
                  "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        """Stop the server: "fast" ends sessions cleanly, "immediate" is a crash."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def restart(self) -> None:
        self.stop()
        self.start()

    def running(self) -> bool:
        try:
            psycopg.connect(self.conninfo, connect_timeout=2).close()
        except psycopg.OperationalError:
            return False
        return True

    def wait_until_running(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not self.running():
            if time.monotonic() > deadline:
                raise RuntimeError(f"private PostgreSQL on port {self.port} did not come up")
            time.sleep(0.05)

    def close(self) -> None:
        """Stop the server (when running) and delete its files."""
        if (self.data / "postmaster.pid").exists():
            with contextlib.suppress(RuntimeError):
                self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)
