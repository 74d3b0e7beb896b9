"""Bearer tokens, per-user tokens, and the limits that keep clients from hurting
each other, against a real socket."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import convlog
from convlog.http.auth import Auth, load_user_tokens
from tests.httpserver import ADMIN_TOKEN, ALICE_TOKEN, BOB_TOKEN, served


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    auth = Auth(ADMIN_TOKEN, {"alice": ALICE_TOKEN, "bob": BOB_TOKEN})
    with convlog.open(f"sqlite:///{tmp_path / 'c.db'}") as log, served(
            log, auth, max_body=64 * 1024, body_timeout=5.0) as base:
        yield base


def client(url: str, token: str | None) -> httpx.Client:
    return httpx.Client(base_url=url, headers=bearer(token) if token else {}, timeout=10)


def test_a_token_is_required_when_configured(url: str) -> None:
    with client(url, None) as anonymous:
        denied = anonymous.get("/v1/conversations")
        assert denied.status_code == 401 and denied.headers["www-authenticate"].startswith(
            "Bearer")
        assert denied.json()["field"] == "Authorization"
        assert anonymous.get("/health").status_code == 200
    with client(url, "wrong-token-0123456789") as wrong:
        assert wrong.get("/v1/conversations").status_code == 401
    with client(url, ADMIN_TOKEN) as admin:
        assert admin.get("/v1/conversations").status_code == 200


def test_one_users_token_cannot_reach_another_users_conversation(url: str) -> None:
    with client(url, ALICE_TOKEN) as alice, client(url, BOB_TOKEN) as bob, \
            client(url, ADMIN_TOKEN) as admin:
        assert alice.post("/v1/conversations", json={"key": "a:1"}).json()["user"] == "alice"
        alice.post("/v1/conversations/a:1/turns", json={"messages": [
            {"type": "message", "role": "user", "content": "alice's secret", "id": "s"}]})
        # bob's token meets a 404, exactly as for a key that does not exist
        for path in ("", "/messages", "/transcript", "/timeline", "/context", "/stream"):
            answer = bob.get("/v1/conversations/a:1" + path)
            assert answer.status_code == 404, path
            assert "secret" not in answer.text
        writes = {"/turns": {"messages": [{"type": "message", "role": "user",
                                           "content": "bob was here"}]},
                  "/events": {"events": [{"type": "message", "role": "user", "content": "x"}]},
                  "/archive": {}, "/clear": {}, "/native-session": {"native_session_id": "n"},
                  "/resume/attempts": {"strategy": "s"}, "/resume/injection": {}}
        for path, body in writes.items():
            assert bob.post("/v1/conversations/a:1" + path, json=body).status_code == 404, path
        assert bob.post("/v1/conversations", json={"key": "a:1"}).status_code == 404
        assert bob.post("/v1/conversations", json={"key": "b:1", "user": "alice"}
                        ).json()["field"] == "user"
        # writing a new key with a user token starts it as that user's
        bob.post("/v1/conversations/b:2/turns", json={"messages": [
            {"type": "message", "role": "user", "content": "mine"}]})
        assert admin.get("/v1/conversations/b:2").json()["user"] == "bob"
        assert [r["key"] for r in bob.get("/v1/conversations").json()] == ["b:2"]
        assert bob.get("/v1/conversations", params={"user": "alice"}).status_code == 403
        assert [r["key"] for r in alice.get("/v1/conversations").json()] == ["a:1"]
        for path in ("/v1/costs", "/v1/telemetry"):
            assert bob.get(path).status_code == 403
        assert bob.post("/v1/sql", json={"query": "SELECT 1"}).status_code == 403
        assert alice.get("/v1/conversations/a:1/messages").json()[0]["content"] == (
            "alice's secret")
        assert len(admin.get("/v1/conversations").json()) == 2


def test_two_users_starting_the_same_new_key_at_once_never_share_it(url: str) -> None:
    """Both see a key that does not exist yet and write to it at the same instant: one
    starts it, the other gets the 404 of a foreign key, and nothing of the loser's lands
    in it (the ownership check runs again inside the write)."""
    keys = [f"race:{i}" for i in range(40)]
    answers: dict[tuple[str, str], int] = {}

    def write(token: str, name: str, barrier: threading.Barrier) -> None:
        with client(url, token) as caller:
            for key in keys:
                barrier.wait()
                answers[name, key] = caller.post(f"/v1/conversations/{key}/turns", json={
                    "messages": [{"type": "message", "role": "user",
                                  "content": f"{name} wrote this"}]}
                ).status_code

    barrier = threading.Barrier(2)
    threads = [threading.Thread(target=write, args=(token, name, barrier))
               for token, name in ((ALICE_TOKEN, "alice"), (BOB_TOKEN, "bob"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with client(url, ADMIN_TOKEN) as admin:
        for key in keys:
            owner = admin.get(f"/v1/conversations/{key}").json()["user"]
            other = "bob" if owner == "alice" else "alice"
            assert (answers[owner, key], answers[other, key]) == (200, 404), key
            texts = [m["content"] for m in admin.get(f"/v1/conversations/{key}/messages").json()]
            assert texts == [f"{owner} wrote this"], key


def test_user_tokens_file_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text('{"alice": "short"}')
    with pytest.raises(convlog.InvalidInput, match="at least 16") as caught:
        load_user_tokens(path)
    assert caught.value.field == f"{path}: alice"
    path.write_text("[1]")
    with pytest.raises(convlog.InvalidInput, match="JSON object"):
        load_user_tokens(path)
    with pytest.raises(convlog.InvalidInput, match="admin token is also"):
        Auth(ALICE_TOKEN, {"alice": ALICE_TOKEN})


def test_a_body_over_the_limit_is_refused(url: str) -> None:
    big = {"messages": [{"type": "message", "role": "user", "content": "x" * 70_000}]}
    with client(url, ADMIN_TOKEN) as admin:
        answer = admin.post("/v1/conversations/k/turns", json=big)
        assert answer.status_code == 413 and answer.json()["type"].endswith("too-large")

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it streams
            yield b'{"messages": [{"type": "message", "role": "user", "content": "'
            for _ in range(10):
                yield b"x" * 10_000
            yield b'"}]}'

        answer = admin.post("/v1/conversations/k/turns", content=chunks())
        assert answer.status_code == 413
        assert problem_free(admin)


def problem_free(admin: httpx.Client) -> bool:
    return admin.get("/v1/conversations").status_code == 200


def test_slow_clients_time_out_and_do_not_hold_the_server(url: str) -> None:
    host, port = url.removeprefix("http://").split(":")
    slow: list[socket.socket] = []
    answers: list[bytes] = []

    def trickle() -> None:
        s = socket.create_connection((host, int(port)))
        slow.append(s)
        s.sendall(b"POST /v1/conversations/k/turns HTTP/1.1\r\nHost: x\r\nAuthorization: "
                  b"Bearer " + ADMIN_TOKEN.encode() + b"\r\nContent-Length: 100\r\n\r\n{")
        s.settimeout(60)
        answers.append(s.recv(4096))

    threads = [threading.Thread(target=trickle) for _ in range(50)]
    for t in threads:
        t.start()
    time.sleep(0.2)
    with client(url, ADMIN_TOKEN) as admin:  # meanwhile the server answers the others
        for _ in range(20):
            assert admin.post("/v1/conversations/k/turns", json={"messages": [
                {"type": "message", "role": "user", "content": "hi"}]}).status_code == 200
    assert answers == [], "served only after the slow clients gave up"
    for t in threads:
        t.join(10)
    for s in slow:
        s.close()
    assert len(answers) == 50
    assert all(a.startswith(b"HTTP/1.1 408") and b"problem+json" in a for a in answers)


def test_past_the_in_flight_limit_requests_get_a_503_problem(tmp_path: Path) -> None:
    with convlog.open(f"sqlite:///{tmp_path / 'c.db'}") as log, served(
            log, max_requests=2) as url, httpx.Client(base_url=url, timeout=10) as http:
        http.post("/v1/conversations", json={"key": "k"})
        port = int(url.rsplit(":", 1)[1])
        # A request whose body is still coming stays in flight. One more such request
        # before each try: one that arrives while a try is in flight may be refused.
        slow: list[socket.socket] = []
        try:
            for _ in range(100):
                slow.append(socket.create_connection(("127.0.0.1", port)))
                slow[-1].sendall(b"POST /v1/conversations/k/turns HTTP/1.1\r\nHost: "
                                 b"127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                                 b"Content-Length: 100\r\n\r\n{" % port)
                busy = http.get("/v1/conversations/k")
                if busy.status_code == 503:
                    break
                time.sleep(0.05)
            assert busy.status_code == 503 and busy.headers["retry-after"] == "1"
            assert busy.headers["content-type"] == "application/problem+json"
            assert http.get("/health").status_code == 200  # /health is never counted
            with http.stream("GET", "/v1/conversations/k/stream") as live:  # nor streams
                assert live.status_code == 200
        finally:
            for s in slow:
                s.close()
        for _ in range(50):  # the slots free up as the server sees the clients go
            if http.get("/v1/conversations/k").status_code == 200:
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the slots of closed requests were never freed")
