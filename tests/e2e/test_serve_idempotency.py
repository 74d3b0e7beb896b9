"""An `Idempotency-Key` reused with another body is refused by every server on the
database and after a restart, not only by the process that saw it first (issue 25):
real `convlog serve` processes on one SQLite file, and on one PostgreSQL schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

import convlog
from tests.httpserver import spawn_serve

PATH = "/v1/conversations/k/turns"
FIRST = {"messages": [{"type": "message", "role": "user", "content": "the first body"}]}
OTHER = {"messages": [{"type": "message", "role": "user", "content": "ANOTHER body, same key"}]}


def _post(url: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(url + PATH, json=body, headers={"Idempotency-Key": "turn-1"},
                      timeout=30)


def _refused(answer: httpx.Response) -> None:
    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["field"] == "Idempotency-Key"


def _contents(url: str) -> list[str]:
    with convlog.Client(url) as client:
        return [str(m.content) for m in client.get("k").messages()]


def _check(db: str, tmp_path: Path, views: tuple[str, str, str] = ("", "", "")) -> None:
    with spawn_serve(db + views[0], tmp_path) as (a, _), \
            spawn_serve(db + views[1], tmp_path) as (b, _):
        assert _post(a, FIRST).json()["appended"] == ["turn-1#0"]
        _refused(_post(b, OTHER))  # another server on the same database
        replay = _post(b, FIRST)  # the same body through it: a replay, nothing appended
        assert replay.status_code == 200 and replay.json()["appended"] == []
    with spawn_serve(db + views[2], tmp_path) as (c, _):  # after a restart
        _refused(_post(c, OTHER))
        assert _contents(c) == ["the first body"]


def test_sqlite_two_servers_and_a_restart(tmp_path: Path) -> None:
    _check(f"sqlite:///{tmp_path / 'c.db'}", tmp_path)


def test_postgresql_two_servers_and_a_restart(tmp_path: Path, pg_url: str) -> None:
    _check(pg_url, tmp_path, tuple(f"&views={tmp_path / n}.duckdb"  # type: ignore[arg-type]
                                   for n in "abc"))
