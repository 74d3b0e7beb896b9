"""Forgetting a user on SQLite: the canary test.

Canary strings are planted in every place a user's content can go (title, workspace,
metadata, message text, thinking, tool arguments, tool calls, tool results, injected
history, memory blocks and their memory ids, snapshots); the views are built and
exported before; the user is forgotten; then every byte of every file convlog wrote (the
database, its -wal and -shm, the DuckDB views, Parquet exports made afterwards) is
scanned. None of the user's canaries, and none of their wrapped key's bytes, may be
found; the other user's conversation still reads back whole; counts, tokens and costs
survive.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import convlog
from convlog.domain.conversation import conversation_id
from convlog.services.log import application
from convlog.storage import application as storage_application
from tests.crypto.helpers import (
    canaries,
    files_under,
    found_in_files,
    no_key,
    record_with_canaries,
    use_key,
)


@pytest.fixture(autouse=True)
def small_snapshots(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(storage_application, "SNAPSHOT_INTERVAL", 5)


def _open(root: Path) -> convlog.ConversationLog:
    return convlog.open(f"sqlite:///{root / 'c.db'}", views=str(root / "c.duckdb"),
                        preload_tokenizer=False)


def test_the_scanner_finds_plaintext_canaries(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: on an unencrypted store the same scan finds every canary, so the
    scan of the real test can fail."""
    no_key(monkeypatch)
    with _open(tmp_path) as log:
        record_with_canaries(log, "a", "alice")
        application(log).catalog.refresh()
    hits = found_in_files(tmp_path, [v.encode() for v in canaries("alice").values()])
    assert len({h.split(": ", 1)[1] for h in hits}) == len(canaries("alice"))


def test_forget_leaves_no_byte_of_the_user_in_any_file(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    use_key(monkeypatch)
    with _open(tmp_path) as log:
        record_with_canaries(log, "a1", "alice")
        record_with_canaries(log, "a2", "alice")
        record_with_canaries(log, "b1", "bob")
        application(log).catalog.refresh()
        log.export_parquet(tmp_path / "before")
        before = {r.key: r for r in log.conversations()}
        costs_before = {r.group: r for r in log.costs(by="user")}
        wrapped = [r.wrapped for r in application(log).store.keys.key_rows()
                   if r.kind == "data" and r.user == "alice"]
        assert wrapped and all(wrapped)
        # the snapshots exist, and hold no plaintext either
        snapshots = application(log).store.snapshots
        assert snapshots is not None
        assert list(snapshots.get(conversation_id("a1")))

        result = log.forget(user="alice", requested_by="dpo@example.com")
        assert sorted(result.conversations) == ["a1", "a2"] and result.keys_destroyed == 1
        # at once, with the process still running (the -wal file still exists): no
        # copy of alice's wrapped key is left in the database, its WAL or free pages
        assert (tmp_path / "c.db-wal").exists()
        assert found_in_files(tmp_path, [w for w in wrapped if w]) == []

        after = {r.key: r for r in log.conversations()}
        assert after["a1"].forgotten and after["a2"].forgotten and not after["b1"].forgotten
        for key in ("a1", "a2", "b1"):  # figures survive erasure
            for name in ("message_count", "content_tokens", "input_tokens", "output_tokens"):
                assert getattr(after[key], name) == getattr(before[key], name), (key, name)
        costs_after = {r.group: r for r in log.costs(by="user")}
        assert costs_after["alice"].input_tokens == costs_before["alice"].input_tokens
        log.export_parquet(tmp_path / "after")

    # files other processes left: none but ours. Scan everything.
    names = {p.name for p in files_under(tmp_path)}
    assert "c.db" in names and "c.duckdb" in names
    alice = [v.encode() for v in canaries("alice").values()]
    stale_exports = tmp_path / "before"  # made BEFORE forgetting: not convlog's to erase
    for path in files_under(stale_exports):
        path.unlink()
    assert found_in_files(tmp_path, alice + [w for w in wrapped if w]) == []

    # a new process with the master key cannot read alice, reads bob whole
    with _open(tmp_path) as log:
        assert {m.content for m in log.messages("a1")} == {"[forgotten]"}
        assert log.info("a1").forgotten and log.info("a1").title is None
        assert log.info("b1").title == canaries("bob")["title"]
        assert log.messages("b1")[0].content == canaries("bob")["text"]
        shown = [line.text for line in log.transcript("a1")]
        assert shown[-1].startswith("user alice was forgotten")
        with pytest.raises(convlog.ConversationForgotten):
            log.conversation("a1").append(convlog.user("more"))
        # a new conversation of the same user gets a new key and works
        log.conversation("a3", user="alice").append(convlog.user("after erasure"))
        assert log.messages("a3")[0].content == "after erasure"
        # forgetting again is safe, and forgets the new conversation too
        again = log.forget(user="alice")
        assert sorted(again.conversations) == ["a1", "a2", "a3"] and again.keys_destroyed == 1


def test_forget_after_keys_enable_erases_the_plaintext_written_before(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The harder case: the user's content was first written in plaintext (and copied
    into the views); `keys enable` re-encrypts it; then the user is forgotten."""

    no_key(monkeypatch)
    with _open(tmp_path) as log:
        record_with_canaries(log, "a1", "alice")
        record_with_canaries(log, "b1", "bob")
        application(log).catalog.refresh()
    key = use_key(monkeypatch)
    with pytest.raises(convlog.NotEncrypted, match="keys enable"):
        _open(tmp_path)
    master = bytes.fromhex(key)
    with convlog.ConversationLog(f"sqlite:///{tmp_path / 'c.db'}",
                                 views=str(tmp_path / "c.duckdb"), preload_tokenizer=False,
                                 master_key=None) as log:
        assert log.enable_encryption(master) > 0
    with _open(tmp_path) as log:
        assert log.messages("b1")[0].content == canaries("bob")["text"]
        log.forget(user="alice")
        application(log).catalog.refresh()
        log.export_parquet(tmp_path / "export")
    alice = [v.encode() for v in canaries("alice").values()]
    bob = [v.encode() for v in canaries("bob").values()]
    assert found_in_files(tmp_path, alice) == []
    assert found_in_files(tmp_path, bob) == []  # encrypted too, not erased
    with _open(tmp_path) as log:
        assert log.info("b1").title == canaries("bob")["title"]


def test_key_rows_are_stamped_on_the_logs_clock(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 46 item 4: one clock stamps everything, the key table's rows too (when
    the store was made encrypted, a data key made, a user's keys destroyed)."""
    from datetime import UTC, datetime

    from tests.clock import ManualClock

    use_key(monkeypatch)
    clock = ManualClock(datetime(2031, 5, 1, 9, tzinfo=UTC))
    with convlog.ConversationLog.with_options(f"sqlite:///{tmp_path / 'k.db'}",
                                              convlog.LogOptions(), clock=clock) as log:
        log.conversation("k", user="alice").append(convlog.user("hello"))
        clock.advance(3600)
        log.forget(user="alice")
        rows = application(log).store.keys.key_rows()
    stamps = {(r.kind, r.user): (r.created_at[:13], (r.destroyed_at or "")[:13]) for r in rows}
    assert stamps[("data", "alice")] == ("2031-05-01T09", "2031-05-01T10")
    assert {created for created, _ in stamps.values()} == {"2031-05-01T09"}
