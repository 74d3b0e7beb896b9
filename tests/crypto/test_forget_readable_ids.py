"""What stays readable after `forget`, said honestly (issue 25): message ids, native
session ids and memory block ids are public fields (the views and dedup need them), so
they survive crypto-shredding in the database and the views. The README lists them
among the readable fields; this test proves the list, and fails if they get sealed
without the README being updated."""

from __future__ import annotations

from pathlib import Path

import pytest

import convlog
from tests.crypto.helpers import use_key


def test_ids_survive_forget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_key(monkeypatch)
    db = tmp_path / "c.db"
    with convlog.open(f"sqlite:///{db}", preload_tokenizer=False) as log:
        conv = log.conversation("k", user="alice")
        conv.append_turn([convlog.user("secret text", id="MSGID-alice-1")])
        conv.bind_native_session("NATIVE-alice-1")
        conv.inject_memory("secret memory", ["MEMID-alice-1"], block_id="BLOCK-alice-1")
        log.forget(user="alice")
        assert log.sql("SELECT message_id FROM messages")[1] == [("MSGID-alice-1",)]
        assert log.sql("SELECT native_session_id FROM sessions")[1] == [("NATIVE-alice-1",)]
    data = db.read_bytes() + (Path(f"{db}-wal").read_bytes()
                              if Path(f"{db}-wal").exists() else b"")
    for readable in (b"MSGID-alice-1", b"NATIVE-alice-1", b"BLOCK-alice-1"):
        assert readable in data
    for sealed in (b"secret text", b"secret memory", b"MEMID-alice-1"):
        assert sealed not in data
