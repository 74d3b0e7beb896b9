"""The pure parts of the HTTP room: error field paths, tokens, loopback, key-safe
paths, and the one clear error when the `http` extra is missing."""

from __future__ import annotations

import subprocess
import sys

import msgspec
import pytest

from convlog.http.auth import Auth, is_loopback
from convlog.http.limits import routing_path
from convlog.http.problems import ProblemError, validation_field
from convlog.http.schema import TurnIn


def error_of(body: bytes) -> tuple[str, str | None]:
    with pytest.raises(msgspec.ValidationError) as caught:
        msgspec.json.decode(body, type=TurnIn)
    return validation_field(str(caught.value))


def test_validation_errors_name_the_field() -> None:
    assert error_of(b'{"messages": [{"type": "message", "role": "user", "content": 1}]}')[1] == (
        "messages[0].content")
    assert error_of(b'{"messages": [{"type": "message", "role": "user", "content": "x", '
                    b'"colour": 1}]}') == (
        "unknown field `colour`", "messages[0].colour")
    assert error_of(b'{"messages": [{"content": "x"}]}') == (
        "missing required field `role`", "messages[0].role")
    assert error_of(b"[]")[1] == "body"


def test_tokens() -> None:
    auth = Auth("a" * 16, {"alice": "b" * 16})
    assert auth.authenticate("Bearer " + "a" * 16).admin
    assert auth.authenticate("bearer " + "b" * 16).user == "alice"
    for header in (None, "", "Basic xyz", "Bearer ", "Bearer " + "c" * 16):
        with pytest.raises(ProblemError) as caught:
            auth.authenticate(header)
        assert caught.value.status == 401 and caught.value.field == "Authorization"
    assert Auth().authenticate(None).admin  # no token configured: loopback only


def test_loopback() -> None:
    assert all(map(is_loopback, ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "10.0.0.1", "::", "example.org"]))


def test_a_key_stays_one_segment() -> None:
    def path(raw: bytes) -> str:
        return routing_path({"raw_path": raw, "path": "ignored"})

    assert path(b"/v1/conversations/a%2Fmessages") == "/v1/conversations/a%2Fmessages"
    assert path(b"/v1/conversations/100%25%20x/turns") == "/v1/conversations/100%25 x/turns"
    assert path(b"/v1/conversations/k?after=1") == "/v1/conversations/k"
    assert routing_path({"path": "/health"}) == "/health"


@pytest.mark.parametrize(("code", "needle"), [
    ("import convlog; convlog.Client", "pip install 'convlog[http]'"),
    ("import convlog; convlog.AsyncClient", "pip install 'convlog[http]'"),
    ("from convlog.cli.main import main; main(['serve', '--db', 'memory://'])",
     "pip install 'convlog[http]'"),
])
def test_a_missing_extra_is_one_clear_error(code: str, needle: str) -> None:
    blocked = "import sys; sys.modules['httpx'] = sys.modules['starlette'] = None; "
    done = subprocess.run([sys.executable, "-c", blocked + code], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode != 0 and needle in done.stderr, done.stderr
