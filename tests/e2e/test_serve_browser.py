"""`convlog serve` without a token, driven the way a hostile web page would drive it
through the operator's browser (issue 25): a cross-site `text/plain` POST, a rebound
DNS name in `Host`, an untyped body. Real server processes, real HTTP."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import httpx

import convlog
from tests.httpserver import ADMIN_TOKEN, spawn_serve

PROBLEM = "application/problem+json"
EVIL = "https://evil.example"
TURN = b'{"messages": [{"type": "message", "role": "user", "content": "planted"}]}'


def _problem(answer: httpx.Response, status: int, field: str) -> None:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == PROBLEM
    assert answer.json()["field"] == field


def _stored(db: Path) -> list[str]:
    with convlog.open(f"sqlite:///{db}", create=False) as log:
        return [str(m.content) for key in ["k"] if log.exists(key)
                for m in log.messages(key)]


def test_a_cross_site_text_plain_post_is_refused_and_stores_nothing(tmp_path: Path) -> None:
    with spawn_serve(f"sqlite:///{tmp_path / 'c.db'}", tmp_path) as (url, _):
        answer = httpx.post(url + "/v1/conversations/k/turns", content=TURN,
                            headers={"Content-Type": "text/plain", "Origin": EVIL})
        _problem(answer, 403, "Origin")
        # the same body without an Origin (a form, a Blob): still not JSON, refused
        for headers in ({"Content-Type": "text/plain"}, {}):
            answer = httpx.post(url + "/v1/conversations/k/turns", content=TURN,
                                headers=headers)
            _problem(answer, 415, "Content-Type")
    assert _stored(tmp_path / "c.db") == []


def test_a_rebound_host_name_is_refused_even_for_sql(tmp_path: Path) -> None:
    with spawn_serve(f"sqlite:///{tmp_path / 'c.db'}", tmp_path) as (url, _):
        port = urlsplit(url).port
        for path in ("/v1/sql?q=select+1", "/v1/conversations", "/health"):
            _problem(httpx.get(url + path, headers={"Host": f"evil.example:{port}"}), 421,
                     "Host")
        _problem(httpx.get(url + "/health", headers={"Host": "127.0.0.1:1"}), 421, "Host")
        for host in (f"127.0.0.1:{port}", f"localhost:{port}"):
            assert httpx.get(url + "/health", headers={"Host": host}).status_code == 200
        own = httpx.get(url + "/health", headers={"Origin": f"http://127.0.0.1:{port}"})
        assert own.status_code == 200  # the server's own origin
        # a JSON body from a client that sends no Origin (curl, the SDK) is served
        answer = httpx.post(url + "/v1/conversations/k/turns", content=TURN,
                            headers={"Content-Type": "application/json"})
        assert answer.status_code == 200, answer.text
    assert _stored(tmp_path / "c.db") == ["planted"]


def test_an_allowed_origin_is_served_with_cors_and_others_are_not(tmp_path: Path) -> None:
    ui = "https://ui.example"
    with spawn_serve(f"sqlite:///{tmp_path / 'c.db'}", tmp_path, "--allow-origin", ui,
                     "--allow-origin", "http://localhost:3000") as (url, _):
        preflight = httpx.options(url + "/v1/conversations/k/turns", headers={
            "Origin": ui, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type"})
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == ui
        answer = httpx.post(url + "/v1/conversations/k/turns", content=TURN, headers={
            "Origin": ui, "Content-Type": "application/json"})
        assert answer.status_code == 200, answer.text
        assert answer.headers["access-control-allow-origin"] == ui
        _problem(httpx.get(url + "/v1/conversations", headers={"Origin": EVIL}), 403, "Origin")
        _problem(httpx.options(url + "/v1/conversations", headers={
            "Origin": EVIL, "Access-Control-Request-Method": "GET"}), 403, "Origin")


def test_with_a_token_a_foreign_origin_is_refused_too(tmp_path: Path) -> None:
    with spawn_serve(f"sqlite:///{tmp_path / 'c.db'}", tmp_path,
                     env={"CONVLOG_TOKEN": ADMIN_TOKEN}) as (url, _):
        auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        _problem(httpx.get(url + "/v1/conversations", headers={**auth, "Origin": EVIL}), 403,
                 "Origin")
        port = urlsplit(url).port  # a token server may sit behind any name
        assert httpx.get(url + "/v1/conversations", headers={
            **auth, "Host": f"convlog.internal:{port}"}).status_code == 200


def test_loopback_names_are_served_with_or_without_the_port(tmp_path: Path) -> None:
    """Issue 44: a host sent ``Host: localhost`` (no port) to a server on another port
    than 80 and got a 421 whose text said localhost was allowed."""
    with spawn_serve(f"sqlite:///{tmp_path / 'c.db'}", tmp_path) as (url, _):
        port = urlsplit(url).port
        for host in ("localhost", "LocalHost", "127.0.0.1", f"localhost:{port}"):
            answer = httpx.get(url + "/health", headers={"Host": host})
            assert answer.status_code == 200, (host, answer.text)
        # what is refused is said exactly: the name, or the port
        wrong_port = httpx.get(url + "/health", headers={"Host": "localhost:1"})
        _problem(wrong_port, 421, "Host")
        assert f"port 1, but this server listens on port {port}" in wrong_port.json()["detail"]
        wrong_name = httpx.get(url + "/health", headers={"Host": "evil.example"})
        _problem(wrong_name, 421, "Host")
        assert "'evil.example' is not a name of this server" in wrong_name.json()["detail"]
