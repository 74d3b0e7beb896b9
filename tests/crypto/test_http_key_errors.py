"""Documented errors over HTTP are 4xx problem documents, not `500 internal error`
with a traceback (issue 25): a write to a forgotten conversation (410), and a write
needing a new data key by a server whose master key was rotated elsewhere (409)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

import convlog
from convlog.services import privacy
from convlog.services.log import application
from tests.crypto.helpers import use_key
from tests.httpserver import served


def test_forgotten_and_rotated_elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    use_key(monkeypatch)
    url = f"sqlite:///{tmp_path / 'c.db'}"
    with convlog.open(url, preload_tokenizer=False) as log, served(log) as base, \
            httpx.Client(base_url=base, timeout=10) as http:
        http.post("/v1/conversations", json={"key": "k", "user": "alice"})
        turn = {"messages": [{"type": "message", "role": "user", "content": "hi"}]}
        assert http.post("/v1/conversations/k/turns", json=turn).status_code == 200
        log.forget(user="alice")
        gone = http.post("/v1/conversations/k/turns", json=turn)
        assert gone.status_code == 410, gone.text
        assert gone.headers["content-type"] == "application/problem+json"
        assert gone.json()["type"] == "urn:convlog:problem:conversation-forgotten"
        with convlog.open(url, preload_tokenizer=False) as other:  # another process
            privacy.rotate(application(other).writer, bytes.fromhex(convlog.generate_key()))
        application(log).store.keyring.refresh(force=True)
        rotated = http.post("/v1/conversations", json={"key": "k2", "user": "bob"})
        rotated = http.post("/v1/conversations/k2/turns", json=turn)
        assert rotated.status_code == 409, rotated.text
        assert rotated.json()["type"] == "urn:convlog:problem:key-rotated"
        assert "rotated" in rotated.json()["detail"]


def test_the_client_raises_the_typed_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    """convlog.Client gave a generic RemoteError for both: now the same exceptions a
    local log raises, with the key and user of a forgotten conversation."""
    use_key(monkeypatch)
    url = f"sqlite:///{tmp_path / 'c.db'}"
    with convlog.open(url, preload_tokenizer=False) as log, served(log) as base, \
            convlog.Client(base) as remote:
        conv = remote.conversation("it's:k", user="al'ice")
        conv.append(convlog.user("hi"))
        log.forget(user="al'ice")
        with pytest.raises(convlog.ConversationForgotten) as gone:
            conv.append(convlog.user("again"))
        assert (gone.value.key, gone.value.user) == ("it's:k", "al'ice")
        with convlog.open(url, preload_tokenizer=False) as other:
            privacy.rotate(application(other).writer, bytes.fromhex(convlog.generate_key()))
        application(log).store.keyring.refresh(force=True)
        fresh = remote.conversation("k2", user="bob")
        with pytest.raises(convlog.WrongKey, match="rotated"):
            fresh.append(convlog.user("hi"))
