"""A batch line that cannot apply fails the batch (issue 25): a `session_started` for
dave in a conversation started as carol was silently dropped, dave's message stored
as carol's, and `forget --user dave` then missed it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import convlog


def record(url: str, *lines: str) -> subprocess.CompletedProcess[str]:
    exe = str(Path(sys.executable).parent / "convlog")
    return subprocess.run([exe, "record", "c:1", "--db", url], input="\n".join(lines) + "\n",
                          capture_output=True, text=True, timeout=60)


def test_a_start_as_another_user_fails_the_batch(sqlite_url: str) -> None:
    first = record(sqlite_url, '{"type":"session_started","user":"carol"}',
                   '{"type":"message","role":"user","content":"carol here"}')
    assert first.returncode == 0, first.stderr
    second = record(sqlite_url, '{"type":"session_started","user":"dave"}',
                    '{"type":"message","role":"user","content":"dave thinks this is his"}')
    assert second.returncode == 1
    assert second.stderr.startswith("convlog: error: stdin:1: field 'user':"), second.stderr
    assert "'carol'" in second.stderr and "'dave'" in second.stderr
    with convlog.open(sqlite_url) as log:
        assert [m.content for m in log.messages("c:1")] == ["carol here"]  # nothing written
    same = record(sqlite_url, '{"type":"session_started","user":"carol"}',
                  '{"type":"message","role":"user","content":"carol again"}')
    assert same.returncode == 0, same.stderr  # the same user: a no-op start, as before


def test_the_api_says_so_too(sqlite_url: str) -> None:
    with convlog.open(sqlite_url) as log:
        log.conversation("k", user="carol").append(convlog.user("hi"))
        with pytest.raises(convlog.InvalidInput) as caught:
            log.conversation("k", user="dave")
        assert caught.value.field == "user"
        log.conversation("k", user="carol")  # reopening as the owner is fine


def test_a_userless_conversation_cannot_become_a_users(sqlite_url: str) -> None:
    """Issue 25: written with no user, then started as alice: her later text was stored
    under the shared key and `forget --user alice` left it readable. A conversation's
    user is fixed by its first event, so the start is refused and nothing of hers is
    written there."""
    first = record(sqlite_url, '{"type":"message","role":"user","content":"nobody"}')
    assert first.returncode == 0, first.stderr
    second = record(sqlite_url, '{"type":"session_started","user":"alice"}',
                    '{"type":"message","role":"user","content":"alice wrote this"}')
    assert second.returncode == 1
    assert "started without a user" in second.stderr, second.stderr
    with convlog.open(sqlite_url) as log:
        assert [m.content for m in log.messages("c:1")] == ["nobody"]
