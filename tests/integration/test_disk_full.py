"""A full disk, or a database at its size limit: a clear error, no corruption, and later
writes work once there is room.

Two ways to fill the store:

* a real small file system: a 1 MiB tmpfs the test mounts (needs root, or it is
  skipped with the reason) and later grows with ``mount -o remount,size=...``;
* SQLite's ``PRAGMA max_page_count`` on convlog's own write connection (the pragma is
  per connection, so it must be set on the writer; the test reaches it through the
  recorder and is skipped if that hook is gone), later raised again.
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import convlog
from convlog.services.log import application

TURN = 4  # messages per turn, ~3 KB each


def turn(n: int) -> list[convlog.Message]:
    return [convlog.user(f"turn {n} message {i} " + "x" * 3000, id=f"t{n}-m{i}", tokens=3)
            for i in range(TURN)]


def ids_of(turns: int) -> list[str]:
    return [f"t{t}-m{i}" for t in range(turns) for i in range(TURN)]


def integrity(path: Path) -> list[str]:
    con = sqlite3.connect(path)
    try:
        return [row[0] for row in con.execute("PRAGMA integrity_check")]
    finally:
        con.close()


@dataclass
class Store:
    """A log whose storage can be filled up, and a way to make room again."""

    log: convlog.ConversationLog
    path: Path
    make_room: Callable[[], None]


def _mount(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True, timeout=30)


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs mounted at a fresh directory (skipped where mounting is impossible)."""
    if shutil.which("mount") is None or shutil.which("umount") is None:
        pytest.skip("no mount/umount command here: cannot make a small file system")
    where = tmp_path / "small"
    where.mkdir()
    mounted = _mount(["-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)])
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs (needs root or CAP_SYS_ADMIN): "
                    f"{mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, timeout=30)


def tmpfs_store(small_fs: Path, tmp_path: Path) -> Iterator[Store]:
    path = small_fs / "full.db"
    # The views are a cache elsewhere: only the event store is on the small disk.
    log = convlog.open(f"sqlite:///{path}", views=str(tmp_path / "views.duckdb"))

    def grow() -> None:
        done = _mount(["-o", "remount,size=16m", str(small_fs)])
        assert done.returncode == 0, done.stderr

    try:
        yield Store(log, path, grow)
    finally:
        log.close()


def page_limit_store(tmp_path: Path) -> Iterator[Store]:
    path = tmp_path / "limited.db"
    log = convlog.open(f"sqlite:///{path}", views=str(tmp_path / "views.duckdb"))
    log.conversation("k", user="u1")  # the first write opens the writer connection
    writer: Any = getattr(application(log).store.recorder, "_writer", None)
    if not isinstance(writer, sqlite3.Connection):
        log.close()
        pytest.skip("convlog's SQLite writer connection is not reachable any more "
                    "(recorder._writer): the tmpfs variant still covers a full disk")
    pages = writer.execute("PRAGMA page_count").fetchone()[0]
    writer.execute(f"PRAGMA max_page_count = {pages + 40}")  # room for a few turns

    def grow() -> None:
        # The limit belongs to that connection: once it is closed, there is room anyway.
        with contextlib.suppress(sqlite3.ProgrammingError):
            writer.execute("PRAGMA max_page_count = 1000000")

    try:
        yield Store(log, path, grow)
    finally:
        log.close()


@pytest.fixture(params=["tmpfs", "max_page_count"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "tmpfs":
        yield from tmpfs_store(request.getfixturevalue("small_fs"), tmp_path)
    else:
        yield from page_limit_store(tmp_path)


def fill(store: Store) -> tuple[int, convlog.StorageError]:
    """Append turns until the store is full: (turns written, the error)."""
    conv = store.log.conversation("k", user="u1")
    for n in range(2_000):
        try:
            conv.append_turn(turn(n))
        except convlog.StorageError as exc:
            return n, exc
    pytest.fail("the store never filled up")


def test_a_full_store_loses_nothing_and_works_again_once_there_is_room(store: Store) -> None:
    written, _ = fill(store)
    assert written >= 1
    log = store.log
    # The failed turn is wholly absent; every earlier turn is intact; no corruption.
    assert [m.message_id for m in log.messages("k")] == ids_of(written)
    assert integrity(store.path) == ["ok"]
    # Still full: the retry fails the same clean way and writes nothing.
    with pytest.raises(convlog.StorageError):
        log.append_turn("k", turn(written))
    assert [m.message_id for m in log.messages("k")] == ids_of(written)

    store.make_room()
    result = log.append_turn("k", turn(written))  # the very turn that failed
    assert result.appended == [f"t{written}-m{i}" for i in range(TURN)]
    for n in range(written + 1, written + 4):
        log.append_turn("k", turn(n))
    assert [m.message_id for m in log.messages("k")] == ids_of(written + 4)
    assert integrity(store.path) == ["ok"]
    # The views agree with the log, exactly.
    _, rows = log.sql("SELECT count(*) FROM messages")
    assert rows[0][0] == TURN * (written + 4)
    (row,) = log.conversations()
    assert row.message_count == TURN * (written + 4)


def test_reopening_after_a_full_store_sees_every_committed_turn(store: Store) -> None:
    written, _ = fill(store)
    application(store.log).store.close()  # the host goes away while the disk is full
    store.make_room()
    with convlog.open(f"sqlite:///{store.path}", create=False) as again:
        assert [m.message_id for m in again.messages("k")] == ids_of(written)
        again.append_turn("k", turn(written))
        assert again.info("k").message_count == TURN * (written + 1)
    assert integrity(store.path) == ["ok"]


def test_the_error_says_the_store_is_full(store: Store) -> None:
    _, error = fill(store)
    message = str(error)
    assert "full" in message, message
    assert "rollback" not in message.lower(), message
