"""Encryption, forgetting and rotation through the public API on every backend
(memory, SQLite, PostgreSQL). The byte scan is SQLite's (test_forget): here, what a
host and an attacker with the database's rows (not the key) can see."""

from __future__ import annotations

from pathlib import Path

import pytest

import convlog
from convlog.domain.conversation import conversation_id
from convlog.domain.events import UserForgotten
from convlog.services import privacy
from convlog.services.log import application
from tests.conftest import BACKENDS
from tests.crypto.helpers import canaries, record_with_canaries, use_key


def _url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if backend == "memory":
        return "memory://"
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'c.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture(params=BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return _url(request.param, tmp_path, request)


def _open(url: str, tmp_path: Path) -> convlog.ConversationLog:
    return convlog.open(url, views=str(tmp_path / "v.duckdb"), preload_tokenizer=False)


def _stored_bytes(log: convlog.ConversationLog, keys: list[str]) -> bytes:
    recorder = application(log).store.recorder
    rows = [s.state for k in keys for s in recorder.select_events(conversation_id(k))]
    return b"".join(rows)


def test_everything_reads_back_and_no_row_shows_content(
        url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_key(monkeypatch)
    with _open(url, tmp_path) as log:
        record_with_canaries(log, "a", "alice")
        record_with_canaries(log, "n", "")  # no user: the store's own key
        info = log.info("a")
        assert (info.title, info.workspace) == (canaries("alice")["title"],
                                                canaries("alice")["workspace"])
        assert log.events("a")[0].event.metadata == {  # type: ignore[union-attr]
            "note": canaries("alice")["metadata"]}
        contents = [m.content for m in log.messages("a")]
        assert contents[0] == canaries("alice")["text"]
        assert canaries("alice")["tool_result"] in str(contents[2])
        assert canaries("alice")["call_args"] in log.messages("a")[1].tool_calls[0].arguments
        raw = _stored_bytes(log, ["a", "n"])
        for value in [*canaries("alice").values(), *canaries("").values()]:
            assert value.encode() not in raw
        assert b'"$sealed":"' in raw and b'"role":"assistant"' in raw  # public stays public
        status = privacy.status(application(log).writer)
        assert status.encrypted and status.live_keys == 2 and status.users == 1


def test_forget_through_the_api(url: str, tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    use_key(monkeypatch)
    log = _open(url, tmp_path)
    try:
        record_with_canaries(log, "a", "alice")
        record_with_canaries(log, "b", "bob")
        tokens = log.info("a").message_count
        result = log.forget(user="alice", requested_by="dpo")
        assert result.conversations == ["a"] and result.keys_destroyed == 1
        if not url.startswith("memory"):  # another process's view: a fresh log
            log.close()
            log = _open(url, tmp_path)
        assert {m.content for m in log.messages("a")} == {"[forgotten]"}
        assert log.info("a").forgotten and log.info("a").message_count == tokens
        assert log.messages("b")[0].content == canaries("bob")["text"]
        last = log.events("a")[-1].event
        assert isinstance(last, UserForgotten)
        assert (last.user, last.requested_by) == ("alice", "dpo")
        rows = {r.key: r for r in log.conversations()}
        assert rows["a"].forgotten and not rows["b"].forgotten
        with pytest.raises(convlog.ConversationForgotten):
            log.append("a", convlog.user("more"))
        assert privacy.status(application(log).writer).destroyed_keys == 1
    finally:
        log.close()


def test_rotation_and_a_wrong_key(url: str, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    if url.startswith("memory"):
        pytest.skip("a memory store lives in one process: nothing to reopen")
    use_key(monkeypatch)
    with _open(url, tmp_path) as log:
        log.conversation("a", user="alice").append(convlog.user("hello"))
        new = convlog.generate_key()
        assert privacy.rotate(application(log).writer, bytes.fromhex(new)) == 1
        log.conversation("a2", user="alice").append(convlog.user("after rotation"))
        count = len(log.events("a"))
    with pytest.raises(convlog.WrongKey):  # the old key
        _open(url, tmp_path)
    use_key(monkeypatch, new)
    with _open(url, tmp_path) as log:
        assert log.messages("a")[0].content == "hello"
        assert log.messages("a2")[0].content == "after rotation"
        assert len(log.events("a")) == count  # the refused opens wrote nothing


def test_forget_needs_an_encrypted_store(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONVLOG_KEY", raising=False)
    monkeypatch.delenv("CONVLOG_KEY_FILE", raising=False)
    with convlog.open("memory://", preload_tokenizer=False) as log:
        log.conversation("a", user="alice")
        with pytest.raises(convlog.NotEncrypted, match="keys enable"):
            log.forget(user="alice")
        with pytest.raises(convlog.InvalidInput):
            log.forget(user="")


def test_keys_enable_encrypts_what_was_written_before(
        url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONVLOG_KEY", raising=False)
    monkeypatch.delenv("CONVLOG_KEY_FILE", raising=False)
    log = _open(url, tmp_path)
    try:
        record_with_canaries(log, "a", "alice")
        assert canaries("alice")["text"].encode() in _stored_bytes(log, ["a"])
        master = bytes.fromhex(convlog.generate_key())
        reported: list[tuple[str, int]] = []
        assert log.enable_encryption(master, lambda k, n: reported.append((k, n))) > 0
        assert reported and reported[0][0] == "a"
        assert log.enable_encryption(master) == 0  # a second run finds nothing left to do
        raw = _stored_bytes(log, ["a"])
        for value in canaries("alice").values():
            assert value.encode() not in raw
        log.conversation("a", user="alice").append(convlog.user("sealed from the start"))
        if not url.startswith("memory"):
            log.close()
            use_key(monkeypatch, master.hex())
            log = _open(url, tmp_path)
        assert log.messages("a")[0].content == canaries("alice")["text"]
        assert log.messages("a")[-1].content == "sealed from the start"
        assert log.info("a").title == canaries("alice")["title"]
    finally:
        log.close()


def test_forget_from_asyncio(monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    use_key(monkeypatch)

    async def main() -> None:
        async with await convlog.open_async("memory://", preload_tokenizer=False) as log:
            conv = await log.conversation("a", user="alice")
            await conv.append(convlog.user("hello"))
            result = await log.forget(user="alice")
            assert result.conversations == ["a"]
            assert [m.content for m in await log.messages("a")] == ["[forgotten]"]

    asyncio.run(main())
