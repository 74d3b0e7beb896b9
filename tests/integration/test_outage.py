"""A PostgreSQL outage seen by `convlog serve` (issue 33), on a private cluster: while
the database is down a write answers a 503 problem document quickly (a bounded wait
for a connection, no retry loop of pool timeouts), and once it is back, writes
succeed again at once (not after the pool's reconnection back-off, which had grown to
12.8 s after a 20 s outage)."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from tests.httpserver import spawn_serve
from tests.pgcluster import PrivateCluster

OUTAGE = 8.0
"""Long enough for an exponential reconnection back-off to grow past several seconds."""


def turn(i: int) -> dict[str, object]:
    return {"messages": [{"type": "message", "role": "user", "content": f"turn {i}",
                          "id": f"m{i}"}]}


def test_an_outage_answers_503_quickly_and_writes_resume_when_it_ends(
        private_pg: PrivateCluster, tmp_path: Path) -> None:
    url = private_pg.url(views=str(tmp_path / "v.duckdb"))
    with spawn_serve(url, tmp_path) as (base, _), httpx.Client(base_url=base,
                                                              timeout=120) as http:
        path = "/v1/conversations/k/turns"
        assert http.post(path, json=turn(0)).status_code == 200
        private_pg.stop()
        down = time.monotonic()
        answers: list[float] = []
        while time.monotonic() - down < OUTAGE:
            started = time.monotonic()
            answer = http.post(path, json=turn(1))
            answers.append(time.monotonic() - started)
            assert answer.status_code == 503, answer.text
            assert answer.headers["content-type"].startswith("application/problem+json")
            assert answer.json()["type"].endswith("storage-unavailable")
            time.sleep(0.2)
        assert max(answers) < 10, answers  # generous here; bench.scale measures it
        private_pg.start()
        up = time.monotonic()
        while (answer := http.post(path, json=turn(1))).status_code != 200:
            assert answer.status_code == 503, answer.text
            time.sleep(0.05)
        resumed = time.monotonic() - up
        assert resumed < 3, f"writes resumed {resumed:.1f} s after the database came back"
        assert answer.json()["appended"] == ["m1"]
        messages = http.get("/v1/conversations/k/messages").json()
        assert [m["message_id"] for m in messages] == ["m0", "m1"], messages
