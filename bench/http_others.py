"""What the other users of `convlog serve` see while one user is hostile (issue 43).

Part of ``bench.http``. Two hostile loads, each against the same background of other
users: wrk posting 2-message turns from 8 connections and wrk asking for /health from
2 connections, both for the whole run; their p50/p99 are the figures, with no hostile
load (the baseline) and with each:

- one huge writer: one client posting the largest turn the default limits take
  (`--max-batch` 1,000 messages, ~7.5 MB of the 8 MiB `--max-body`), back to back;
- many streams: `STREAMS` SSE streams open (the default `--max-streams` of 500 in
  full runs), following the very conversations the background appends to, read
  as fast as they come.

Each load gets a server of its own, on a fresh SQLite file, started with
``--max-streams-per-token`` set to the stream count (without a token every client is
one caller).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

BACKGROUND_APPENDERS = 8
BACKGROUND_HEALTH = 2
HUGE_MESSAGES = 1_000  # the default --max-batch
HUGE_TEXT = 7_500  # characters a message: ~7.5 MB a turn, under the 8 MiB --max-body
STREAMS = 500  # the default --max-streams (half of the default --max-connections)
QUICK_STREAMS = 100
KEYS = 64  # conversations the background appends to (bench.http's APPEND_LUA)

Start = Callable[[str, Path, list[str]], tuple[subprocess.Popen[str], str]]
Wrk = Callable[[str, int, float, str], Any]
Finish = Callable[[Any], dict[str, Any]]


def huge_body() -> bytes:
    return json.dumps({"messages": [
        {"type": "message", "role": "user", "content": f"{i} " + "x" * HUGE_TEXT}
        for i in range(HUGE_MESSAGES)]}).encode()


@contextlib.contextmanager
def _in_background(work: Callable[[threading.Event], None], join: float) -> Iterator[None]:
    """`work(stop)` in a daemon thread for as long as the block runs."""
    stop = threading.Event()
    thread = threading.Thread(target=work, args=(stop,), daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(join)


@contextlib.contextmanager
def huge_writer(url: str) -> Iterator[dict[str, Any]]:
    """One client posting the largest turn the limits take, back to back."""
    body = huge_body()
    latencies: list[float] = []

    def run(stop: threading.Event) -> None:
        with httpx.Client(base_url=url, timeout=120) as client:
            n = 0
            while not stop.is_set():
                begin = time.perf_counter()
                answer = client.post(f"/v1/conversations/huge-{n % 4}/turns", content=body,
                                     headers={"Content-Type": "application/json"})
                answer.raise_for_status()
                latencies.append(time.perf_counter() - begin)
                n += 1

    with _in_background(run, 300):
        yield {"latencies": latencies, "mb": len(body) / 1e6}


def _open_stream(address: tuple[str, int], n: int) -> socket.socket:
    sock = socket.create_connection(address, timeout=30)
    sock.sendall(b"GET /v1/conversations/bench-%d-%d/stream HTTP/1.1\r\nHost: %s:%d\r\n\r\n"
                 % (n % 2, n % (KEYS // 2), address[0].encode(), address[1]))
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            raise SystemExit(f"stream {n}: closed before its head: {head!r}")
        head += chunk
    if not head.startswith(b"HTTP/1.1 200"):
        raise SystemExit(f"stream {n} refused: {head[:200]!r}")
    sock.setblocking(False)
    return sock


@contextlib.contextmanager
def streams(url: str, count: int) -> Iterator[dict[str, Any]]:
    """`count` live streams over the background's conversations, drained by one thread."""
    parts = urlsplit(url)
    address = (parts.hostname or "127.0.0.1", parts.port or 80)
    socks = [_open_stream(address, n) for n in range(count)]
    seen = {"streams": len(socks), "bytes": 0}

    def drain(stop: threading.Event) -> None:
        with selectors.DefaultSelector() as selector:
            for sock in socks:
                selector.register(sock, selectors.EVENT_READ)
            while not stop.is_set():
                for key, _ in selector.select(0.2):
                    with contextlib.suppress(BlockingIOError):
                        seen["bytes"] += len(key.fileobj.recv(1 << 16))  # type: ignore[union-attr]

    try:
        with _in_background(drain, 30):
            yield seen
    finally:
        for sock in socks:
            sock.close()


def seed(url: str) -> None:
    """The conversations the background appends to, so streams can follow them."""
    with httpx.Client(base_url=url, timeout=60) as client:
        for tid in range(2):
            for k in range(KEYS // 2):
                client.post(f"/v1/conversations/bench-{tid}-{k}/turns", json={"messages": [
                    {"type": "message", "role": "user", "content": "seed"}]}
                ).raise_for_status()


def measure(url: str, seconds: float, wrk: Wrk, finish: Finish, append_lua: str
            ) -> dict[str, Any]:
    """The background for `seconds`: wrk appending and wrk asking for /health at once."""
    appends = wrk(url, BACKGROUND_APPENDERS, seconds, append_lua)
    health = wrk(url + "/health", BACKGROUND_HEALTH, seconds, "")
    a, h = finish(appends), finish(health)
    return {"append": {"messages_per_s": 2 * a["requests"] / a["seconds"],
                       "p50_ms": a["p50_us"] / 1000, "p99_ms": a["p99_us"] / 1000},
            "health": {"per_s": h["requests"] / h["seconds"],
                       "p50_ms": h["p50_us"] / 1000, "p99_ms": h["p99_us"] / 1000}}


def run(start: Start, wrk: Wrk, finish: Finish, append_lua: str, seconds: float,
        quick: bool) -> dict[str, Any]:
    """The baseline and the two hostile loads, each on a server of its own."""
    count = QUICK_STREAMS if quick else STREAMS
    out: dict[str, Any] = {"appenders": BACKGROUND_APPENDERS,
                           "health_clients": BACKGROUND_HEALTH}
    loads: dict[str, Callable[[str], contextlib.AbstractContextManager[dict[str, Any]]]] = {
        "baseline": lambda url: contextlib.nullcontext({}),
        "huge_writer": huge_writer,
        "streams": lambda url: streams(url, count),
    }
    for name, load in loads.items():
        with tempfile.TemporaryDirectory() as tmp:
            proc, url = start(f"sqlite:///{tmp}/others.db", Path(tmp),
                              ["--max-streams-per-token", str(count)])
            try:
                seed(url)
                with load(url) as seen:
                    result = measure(url, seconds, wrk, finish, append_lua)
                if name == "huge_writer":
                    lat = seen["latencies"]
                    result["huge"] = {"turns": len(lat), "mb": seen["mb"],
                                      "messages": HUGE_MESSAGES,
                                      "p50_s": statistics.median(lat) if lat else None}
                if name == "streams":
                    result["streams"] = {"open": seen["streams"], "bytes": seen["bytes"]}
                out[name] = result
            finally:
                proc.terminate()
                proc.wait(30)
    return out


def report(others: dict[str, Any]) -> None:
    print(f"Other users during a hostile load ({others['appenders']} clients appending "
          f"2-message turns, {others['health_clients']} asking for /health):")
    print(f"{'load':<34} | {'msg/s':>7} | {'append p50':>10} | {'p99 ms':>8} | "
          f"{'health p50':>10} | {'p99 ms':>8}")
    for name, label in (("baseline", "none"), ("huge_writer", "one huge writer"),
                        ("streams", "many streams")):
        r = others[name]
        if name == "huge_writer":
            h = r["huge"]
            label = (f"huge writer: {h['turns']} x {h['messages']:,} msgs "
                     f"({h['mb']:.1f} MB)")
        elif name == "streams":
            label = f"{r['streams']['open']} streams open"
        a, h = r["append"], r["health"]
        print(f"{label:<34} | {a['messages_per_s']:>7,.0f} | {a['p50_ms']:>10.2f} | "
              f"{a['p99_ms']:>8.1f} | {h['p50_ms']:>10.2f} | {h['p99_ms']:>8.1f}")


def check_fds(count: int) -> None:
    """The bench holds `count` sockets, and the server as many: make room."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = 2 * count + 256
    if soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            raise SystemExit(f"bench.http needs {need} open files (ulimit -n is {soft})")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
