"""`convlog serve` against one user who tries to slow down or starve the others, as
real processes on real sockets (issue 43): pathological text, trailers, one huge
turn, every stream held, readers that never read, a forged `Host`. Figures (how long
the others waited) are bench.http's; these tests check behaviour, never time."""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import socket
import sqlite3
import time
from pathlib import Path

import httpx

import convlog
from tests.httpserver import (
    ADMIN_TOKEN,
    address,
    assert_problem,
    read_answer,
    send_giant_value,
    spawn_serve,
)

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
        send_giant_value(sock, _chunked_post(url) + b"X-Big: ", "trailer")
        assert_problem(*read_answer(sock), expected=431)
        assert httpx.get(url + "/health", timeout=10).status_code == 200
        with convlog.Client(url) as client:  # the turn was not recorded
            assert [c.key for c in client.conversations()] == []


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


def _open_stream(url: str, token: str, key: str) -> tuple[socket.socket, int]:
    """A live SSE stream on a raw socket, never read past its head: (socket, status)."""
    sock = socket.create_connection(address(url))
    sock.sendall(b"GET /v1/conversations/%s/stream HTTP/1.1\r\nHost: %s\r\n"
                 b"Authorization: Bearer %s\r\n\r\n"
                 % (key.encode(), url.removeprefix("http://").encode(), token.encode()))
    sock.settimeout(10)
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        assert chunk, head
        head += chunk
    return sock, int(head.split()[1])


def _users(tmp_path: Path, count: int) -> tuple[Path, dict[str, str]]:
    tokens = {f"user{n}": f"user{n}-token-0123456789" for n in range(count)}
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps(tokens))
    return path, tokens


def test_streams_leave_room_for_writes_and_health(tmp_path: Path) -> None:
    """With --max-connections 20, 10 users holding their 2 streams each left the
    admin, a normal write and /health with 503: streams counted among requests."""
    path, tokens = _users(tmp_path, 10)
    with spawn_serve(f"sqlite:///{tmp_path / 'c.db'}", tmp_path, "--user-tokens", str(path),
                     "--max-connections", "20", "--max-streams-per-token", "2",
                     env={"CONVLOG_TOKEN": ADMIN_TOKEN}) as (url, _):
        for user, token in tokens.items():
            with convlog.Client(url, token=token) as client:
                client.conversation(f"k-{user}").append(convlog.user("hi"))
        held, statuses = [], []
        try:
            for user, token in tokens.items():
                for _ in range(2):
                    sock, status = _open_stream(url, token, f"k-{user}")
                    held.append(sock)
                    statuses.append(status)
            # streams in all: half of --max-connections by default; the rest are 503
            assert statuses == [200] * 10 + [503] * 10
            with httpx.Client(base_url=url, timeout=10) as http:
                assert http.get("/health").status_code == 200
                admin = http.get("/v1/conversations",
                                 headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
                assert admin.status_code == 200, admin.text
                write = http.post("/v1/conversations/k-user0/turns", json={
                    "messages": [{"type": "message", "role": "user",
                                  "content": "still here"}]},
                    headers={"Authorization": f"Bearer {tokens['user0']}"})
                assert write.status_code == 200, write.text
        finally:
            for sock in held:
                sock.close()


def test_streams_in_all_have_a_cap_of_their_own(tmp_path: Path) -> None:
    path, tokens = _users(tmp_path, 4)
    with spawn_serve(f"sqlite:///{tmp_path / 'c.db'}", tmp_path, "--user-tokens", str(path),
                     "--max-streams", "3", env={"CONVLOG_TOKEN": ADMIN_TOKEN}) as (url, _):
        for user, token in tokens.items():
            with convlog.Client(url, token=token) as client:
                client.conversation(f"k-{user}").append(convlog.user("hi"))
        held = []
        try:
            for user in ("user0", "user1", "user2"):
                sock, status = _open_stream(url, tokens[user], f"k-{user}")
                held.append(sock)
                assert status == 200
            with socket.create_connection(address(url)) as sock:
                sock.sendall(b"GET /v1/conversations/k-user3/stream HTTP/1.1\r\nHost: %s\r\n"
                             b"Authorization: Bearer %s\r\n\r\n"
                             % (url.removeprefix("http://").encode(), tokens["user3"].encode()))
                status, headers, body = read_answer(sock, timeout=5)
            assert status == 503, body
            assert headers["retry-after"] == "1"
            detail = json.loads(body)["detail"]
            assert "3 streams are open" in detail and "--max-streams" in detail
            with httpx.Client(base_url=url, timeout=10) as http:
                auth = {"Authorization": f"Bearer {tokens['user3']}"}
                write = http.post("/v1/conversations/k-user3/turns", json={
                    "messages": [{"type": "message", "role": "user",
                                  "content": "still here"}]}, headers=auth)
                assert write.status_code == 200, write.text
        finally:
            for sock in held:
                sock.close()


def _established(sock: socket.socket) -> bool:
    """Is the connection still up, as this end's kernel sees it (Linux's TCP_INFO:
    its first byte is the state, 1 established)? Reading would say it too, but would
    read what the server is trying to send."""
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0] == 1


def test_readers_that_never_read_are_cut_off_and_their_buffers_freed(tmp_path: Path) -> None:
    """40 clients asking for a 7 MB transcript and reading nothing held ~270 MB for as
    long as they stayed, through the header timeout and its 408 (a closed connection
    still holds what it has not sent)."""
    with convlog.open(f"sqlite:///{tmp_path / 'c.db'}") as log:
        conv = log.conversation("big", user="u")
        for n in range(15):  # ~12 MB of transcript: more than the kernel buffers hold
            conv.append_turn([convlog.user(f"{n}-{i} " + "words " * 1300) for i in range(100)])
    with spawn_serve(f"sqlite:///{tmp_path / 'c.db'}", tmp_path, "--write-timeout", "1"
                     ) as (url, _):
        full = len(httpx.get(url + "/v1/conversations/big/transcript", timeout=60).content)
        assert full > 10_000_000  # one reader that reads: served whole
        stalled = []
        try:
            for _ in range(5):
                sock = socket.socket()
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                sock.connect(address(url))
                sock.sendall(b"GET /v1/conversations/big/transcript HTTP/1.1\r\nHost: %s\r\n\r\n"
                             % url.removeprefix("http://").encode())
                stalled.append(sock)
            deadline = time.monotonic() + 120  # a generous bound: cut after 1 to 2 s
            while any(map(_established, stalled)) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert not any(map(_established, stalled)), "the stalled readers were never cut off"
            for sock in stalled:  # what they get is cut short: the rest was dropped
                sock.settimeout(10)
                received = 0
                with contextlib.suppress(ConnectionResetError):
                    while chunk := sock.recv(1 << 20):
                        received += len(chunk)
                assert received < full
            assert httpx.get(url + "/health", timeout=10).status_code == 200
        finally:
            for sock in stalled:
                sock.close()


def _turn(count: int, text: str = "x") -> dict[str, object]:
    return {"messages": [{"type": "message", "role": "user", "content": text}
                         for _ in range(count)]}


def test_a_batch_past_the_cap_is_a_413_naming_it(tmp_path: Path) -> None:
    """One user posted one turn of 250,000 messages (7 MB): there was no cap."""
    with spawn_serve(f"sqlite:///{tmp_path / 'c.db'}", tmp_path, "--max-batch", "100"
                     ) as (url, _), httpx.Client(base_url=url, timeout=60) as http:
        for path, body in (("/v1/conversations/k/turns", _turn(101)),
                           ("/v1/conversations/k/events", {"events": [
                               {"type": "message", "role": "user", "content": "x"}] * 101})):
            answer = http.post(path, json=body)
            assert answer.status_code == 413, answer.text
            problem = answer.json()
            assert "the most is 100" in problem["detail"] and "--max-batch" in problem["detail"]
        assert http.post("/v1/conversations/k/turns", json=_turn(100)).status_code == 200
        big = http.post("/v1/conversations/k/turns", content=b" " * (8 * 1024 * 1024 + 1),
                        headers={"Content-Type": "application/json"})
        assert big.status_code == 413 and "--max-body" in big.json()["detail"]


def test_the_event_loop_never_waits_for_the_write_lock(tmp_path: Path) -> None:
    """Small writes waited for the write lock ON the event loop while a huge turn held
    it in a worker thread, and /health with them. Another process holding SQLite's
    write lock (here: an open BEGIN IMMEDIATE) shows it without any timing: while it
    is held, /health and reads must answer, and a small write waits in a worker
    thread; once it is released, that write goes through."""
    db = tmp_path / "c.db"
    with spawn_serve(f"sqlite:///{db}?timeout=60", tmp_path) as (url, _), \
            httpx.Client(base_url=url, timeout=60) as http:
        assert http.post("/v1/conversations/k/turns", json=_turn(1)).status_code == 200
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another process's write lock, held
        try:
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                write = pool.submit(http.post, "/v1/conversations/k/turns", json=_turn(1, "y"))
                for _ in range(5):  # the loop is free: these answer at once
                    assert http.get("/health", timeout=5).status_code == 200
                    assert http.get("/v1/conversations/k", timeout=5).status_code == 200
                assert not write.done()  # the write waits, off the loop
                holder.execute("COMMIT")
                assert write.result(60).status_code == 200
        finally:
            holder.close()
        texts = [m["content"] for m in http.get("/v1/conversations/k/messages").json()]
        assert texts == ["x", "y"]
