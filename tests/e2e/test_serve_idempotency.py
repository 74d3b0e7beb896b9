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
        replay = _post(b, FIRST)  # the same body through it: the first answer again
        assert replay.status_code == 200 and replay.json()["appended"] == ["turn-1#0"]
        assert replay.headers["Idempotent-Replayed"] == "true"
    with spawn_serve(db + views[2], tmp_path) as (c, _):  # after a restart
        _refused(_post(c, OTHER))
        assert _contents(c) == ["the first body"]


def test_sqlite_two_servers_and_a_restart(tmp_path: Path) -> None:
    _check(f"sqlite:///{tmp_path / 'c.db'}", tmp_path)


def test_postgresql_two_servers_and_a_restart(tmp_path: Path, pg_url: str) -> None:
    _check(pg_url, tmp_path, tuple(f"&views={tmp_path / n}.duckdb"  # type: ignore[arg-type]
                                   for n in "abc"))


# ------------------------------------------- every POST, refused ones keep nothing

EVENTS = {"events": [{"type": "message", "role": "user", "content": "no id here"},
                     {"type": "resume_attempted", "strategy": "session/new"}]}
RETRIES: list[tuple[str, dict[str, Any]]] = [  # (path under the conversation, body)
    ("/events", EVENTS),
    ("/resume/attempts", {"strategy": "session/resume"}),
    ("/memory", {"text": "likes tea", "memory_ids": ["tea"]}),
    ("/clear", {"reason": "again?"}),
]


def _keyed(url: str, path: str, body: dict[str, Any], key: str,
           token: str | None = None) -> httpx.Response:
    headers = {"Idempotency-Key": key, **({"Authorization": f"Bearer {token}"}
                                          if token else {})}
    return httpx.post(url + "/v1/conversations/r" + path, json=body, headers=headers,
                      timeout=30)


def _versions(db: str) -> int:
    with convlog.open(db, views=None, preload_tokenizer=False) as log:
        return log.info("r").version


def _retries(db: str, tmp_path: Path, views: tuple[str, str, str]) -> None:
    with convlog.open(db, preload_tokenizer=False) as log:
        log.conversation("r", user="u1").append(convlog.user("hello"))
    with spawn_serve(db + views[0], tmp_path) as (a, _), \
            spawn_serve(db + views[1], tmp_path) as (b, _):
        first = {path: _keyed(a, path, body, f"k{path}") for path, body in RETRIES}
        assert all(r.status_code == 200 for r in first.values()), first
        after = _versions(db)
        for path, body in RETRIES:  # the same key and body through another server
            again = _keyed(b, path, body, f"k{path}")
            assert (again.status_code, again.content) == (
                first[path].status_code, first[path].content), path
            assert again.headers["Idempotent-Replayed"] == "true"
        assert _versions(db) == after  # nothing recorded again
    with spawn_serve(db + views[2], tmp_path) as (c, _):  # after a restart
        for path, body in RETRIES:
            again = _keyed(c, path, body, f"k{path}")
            assert (again.status_code, again.content) == (
                first[path].status_code, first[path].content), path
    assert _versions(db) == after


def test_every_post_replays_its_first_answer_on_sqlite(tmp_path: Path) -> None:
    """Issue 42 item 5: a retried /events recorded its message and its resume attempt
    again, /resume/attempts its attempt, and /memory answered 422 memory-cooling."""
    _retries(f"sqlite:///{tmp_path / 'r.db'}", tmp_path, ("", "", ""))


def test_every_post_replays_its_first_answer_on_postgresql(tmp_path: Path,
                                                           pg_url: str) -> None:
    _retries(pg_url, tmp_path, tuple(f"&views={tmp_path / n}.duckdb"  # type: ignore[arg-type]
                                     for n in "abc"))


def test_a_refused_request_keeps_no_key(tmp_path: Path) -> None:
    """A 404 (another user's conversation), a 422 (a bad body) or a 409 (archived)
    keeps nothing: the same key then works for a valid request, and refused requests
    write nothing to the store."""
    db = tmp_path / "r.db"
    tokens = tmp_path / "tokens.json"
    tokens.write_text('{"u1": "u1-token-0123456789", "u2": "u2-token-0123456789"}')
    with convlog.open(f"sqlite:///{db}", preload_tokenizer=False) as log:
        log.conversation("r", user="u1").append(convlog.user("hello"))
    with spawn_serve(f"sqlite:///{db}", tmp_path, "--user-tokens", str(tokens),
                     env={"CONVLOG_TOKEN": "admin-token-0123456789"}) as (url, _):
        for _ in range(20):
            assert _keyed(url, "/resume/attempts", {"strategy": "s"}, "same",
                          "u2-token-0123456789").status_code == 404
            assert _keyed(url, "/resume/attempts", {"strategy": ""}, "same",
                          "u1-token-0123456789").status_code == 422
        import sqlite3
        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT count(*) FROM convlog_request_answers"
                                ).fetchone() == (0,)
        ok = _keyed(url, "/resume/attempts", {"strategy": "s"}, "same", "u1-token-0123456789")
        assert ok.status_code == 200, ok.text
