"""`convlog serve` against one user who tries to slow down or starve the others, as
real processes on real sockets (issue 43): pathological text, trailers, one huge
turn, every stream held, readers that never read, a forged `Host`. Figures (how long
the others waited) are bench.http's; these tests check behaviour, never time."""

from __future__ import annotations

import contextlib
import select
import socket
from pathlib import Path

import httpx

import convlog
from tests.httpserver import ADMIN_TOKEN, address, assert_problem, read_answer, spawn_serve

TURN = b'{"messages": [{"type": "message", "role": "user", "content": "hi"}]}'


def _chunked_post(url: str) -> bytes:
    """The head and whole body of a chunked turn, up to where trailers begin."""
    host = url.removeprefix("http://")
    return (b"POST /v1/conversations/k/turns HTTP/1.1\r\nHost: %s\r\n"
            b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"%x\r\n%s\r\n0\r\n" % (host.encode(), len(TURN), TURN))


def test_a_turn_of_two_million_spaces_is_recorded_and_counted(tmp_path: Path) -> None:
    """tiktoken's core panicked on a long run of spaces: the turn was a plain-text 500."""
    with spawn_serve(f"sqlite:///{tmp_path / 'c.db'}", tmp_path) as (url, _), \
            httpx.Client(base_url=url, timeout=60) as http:
        turn = http.post("/v1/conversations/k/turns",
                         json={"messages": [{"type": "message", "role": "user",
                                             "content": " " * 2_000_000}]})
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


def test_an_empty_views_file_does_not_make_the_analytics_answer_503(tmp_path: Path) -> None:
    """A full disk had left the views file empty: 503 on /v1/conversations, /v1/costs
    and /v1/telemetry for as long as the file stayed."""
    with convlog.open(f"sqlite:///{tmp_path / 'c.db'}") as log:
        log.conversation("k", user="u").append_turn([convlog.user("hi")])
    (tmp_path / "c.duckdb").write_bytes(b"")
    with spawn_serve(f"sqlite:///{tmp_path / 'c.db'}", tmp_path) as (url, _), \
            httpx.Client(base_url=url, timeout=60) as http:
        for path in ("/v1/conversations", "/v1/costs", "/v1/telemetry"):
            answer = http.get(path)
            assert answer.status_code == 200, (path, answer.text)
        assert [c["key"] for c in http.get("/v1/conversations").json()] == ["k"]
    assert [p.name.split(".set-aside-")[0] for p in tmp_path.iterdir()
            if ".set-aside-" in p.name] == ["c.duckdb"]


def test_a_giant_trailer_is_refused_before_it_is_read_whole(tmp_path: Path) -> None:
    """A ~60 MB trailer made /health wait up to 7 s and held ~160 MB until the body
    timeout: httptools buffers a trailer value in quadratic time, and the 64 KiB
    header limit did not count trailers."""
    with spawn_serve(f"sqlite:///{tmp_path / 'c.db'}", tmp_path) as (url, _), \
            socket.create_connection(address(url)) as sock:
        sock.sendall(_chunked_post(url) + b"X-Big: ")
        with contextlib.suppress(OSError):
            for _ in range(4):  # 256 KiB of one trailer value, and no end in sight
                sock.sendall(b"a" * 65536)
            assert select.select([sock], [], [], 10)[0], "no answer to a 256 KiB trailer"
            for _ in range(60):  # the rest (4 MiB in all) is read and dropped
                sock.sendall(b"a" * 65536)
            sock.sendall(b"\r\n\r\n")
        assert_problem(*read_answer(sock), expected=431)
        assert httpx.get(url + "/health", timeout=10).status_code == 200
        with convlog.Client(url) as client:  # the turn was not recorded
            assert [c.key for c in client.sessions()] == []


def test_too_many_trailer_lines_are_refused(tmp_path: Path) -> None:
    with spawn_serve(f"sqlite:///{tmp_path / 'c.db'}", tmp_path) as (url, _), \
            socket.create_connection(address(url)) as sock:
        lines = b"".join(b"X-T%d: 1\r\n" % n for n in range(500))
        sock.sendall(_chunked_post(url) + lines + b"\r\n")
        assert_problem(*read_answer(sock), expected=431)


def test_a_chunked_turn_with_a_small_trailer_is_recorded(tmp_path: Path) -> None:
    with spawn_serve(f"sqlite:///{tmp_path / 'c.db'}", tmp_path) as (url, _), \
            socket.create_connection(address(url)) as sock:
        sock.sendall(_chunked_post(url) + b"X-Checksum: 1234\r\n\r\n")
        status, _, body = read_answer(sock)
        assert status == 200, body
