"""The event loop of `convlog serve` never waits for a storage lock (issue 43 item 2).

A huge turn written in a worker thread holds the process's write lock; small writes
then waited for it ON the event loop, and /health and every read with them (9.5 s in
the report). The server runs in this process (`served`), so the test can hold the
very lock a huge write would hold, for as long as it likes: no timing involved."""

from __future__ import annotations

import concurrent.futures
from pathlib import Path

import httpx

import convlog
from convlog.services.log import application
from tests.httpserver import served


def _turn(text: str) -> dict[str, object]:
    return {"messages": [{"type": "message", "role": "user", "content": text}]}


def test_small_writes_do_not_wait_on_the_loop_for_a_write_in_progress(tmp_path: Path
                                                                       ) -> None:
    with convlog.open(f"sqlite:///{tmp_path / 'c.db'}") as log, served(log) as url, \
            httpx.Client(base_url=url, timeout=30) as http:
        assert http.post("/v1/conversations/k/turns", json=_turn("a")).status_code == 200
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            with application(log).write_lock:  # as a huge turn in a worker thread holds it
                write = pool.submit(http.post, "/v1/conversations/k/turns", json=_turn("b"))
                for _ in range(5):
                    assert http.get("/health", timeout=5).status_code == 200
                    assert http.get("/v1/conversations/k/messages",
                                    timeout=5).status_code == 200
                assert not write.done()  # it waits for the lock, in a worker thread
            assert write.result(30).status_code == 200
        assert [m.content for m in log.messages("k")] == ["a", "b"]
