"""`convlog serve` against one user who tries to slow down or starve the others, as
real processes on real sockets (issue 43): pathological text, trailers, one huge
turn, every stream held, readers that never read, a forged `Host`. Figures (how long
the others waited) are bench.http's; these tests check behaviour, never time."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.httpserver import ADMIN_TOKEN, spawn_serve


def test_a_turn_of_two_million_spaces_is_recorded_and_counted(tmp_path: Path) -> None:
    """tiktoken's core panicked on a long run of spaces: the turn was a plain-text 500."""
    with spawn_serve(f"sqlite:///{tmp_path / 'c.db'}", tmp_path) as (url, _), \
            httpx.Client(base_url=url, timeout=60) as http:
        turn = http.post("/v1/conversations/k/turns",
                         json={"messages": [{"role": "user", "content": " " * 2_000_000}]})
        assert turn.status_code < 300, turn.text
        context = http.get("/v1/conversations/k/context", params={"tokens": 100_000})
        assert context.status_code == 200, context.text
        assert http.get("/health").status_code == 200


def test_no_redirect_is_built_from_the_host_header(tmp_path: Path) -> None:
    """A trailing slash was a 307 to http://<the request's Host>/..., unauthenticated."""
    with spawn_serve(f"sqlite:///{tmp_path / 'c.db'}", tmp_path,
                     env={"CONVLOG_TOKEN": ADMIN_TOKEN}) as (url, _):
        for path in ("/v1/conversations/x/", "/v1/conversations/", "/health/"):
            answer = httpx.get(url + path, headers={"Host": "evil.example"})
            assert answer.status_code == 404, (path, answer.status_code, answer.headers)
            assert "location" not in answer.headers
            assert answer.headers["content-type"] == "application/problem+json"
            assert "evil.example" not in answer.text
