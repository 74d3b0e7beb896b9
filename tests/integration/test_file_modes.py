"""Every file convlog creates has the mode docs/encryption.md's table says, whatever
the umask (issues 25 and 43: the database files, then the views file a full disk left
behind, were 0644 under umask 022). Private: SQLite's database, its write-ahead log
and shared memory, the DuckDB views (made 0600 even when creating them fails) and the
followers' state files. Parquet exports follow the umask; HTML pages stay 0644 on
purpose: they are written to be shared (`convlog.html.publish`)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

import convlog


@pytest.fixture
def loose_umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def test_store_files_are_private(tmp_path: Path, loose_umask: None) -> None:
    db = tmp_path / "c.db"
    with convlog.open(f"sqlite:///{db}") as log:
        log.conversation("k", user="alice").append_turn([convlog.user("private")])
        log.sql("SELECT count(*) FROM messages")  # creates the views
        files = [db, Path(f"{db}-wal"), Path(f"{db}-shm")]
        files += [p for p in tmp_path.iterdir() if ".views" in p.name or
                  p.suffix == ".duckdb"]
        assert len(files) > 3, sorted(p.name for p in tmp_path.iterdir())
        for path in files:
            if path.exists():
                assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_followers_state_files_are_private(tmp_path: Path, loose_umask: None) -> None:
    """`convlog watch` keeps a transcript's unfinished last line in its state file."""
    from eventsourcing.persistence import Tracking

    from convlog.otel.tracking import TrackingFile
    from convlog.services.importing import Position
    from convlog.watch.positions import Positions, Saved

    positions = Positions(tmp_path / "c.watch.sqlite")
    positions.put("claude-code", "/a.jsonl", Saved(
        device=1, inode=2, position=Position(offset=3, line=1), tail=b'{"half a line'))
    tracking = TrackingFile(tmp_path / "c.otel.sqlite")
    tracking.insert_tracking(Tracking("otel", 7))
    try:
        made = sorted(p.name for p in tmp_path.iterdir())
        assert {"c.watch.sqlite", "c.otel.sqlite"} <= set(made), made
        for name in made:
            assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600, name
    finally:
        positions.close()
        tracking.close()


def test_the_views_file_made_after_setting_one_aside_is_private(tmp_path: Path,
                                                                loose_umask: None) -> None:
    db = tmp_path / "c.db"
    (tmp_path / "c.duckdb").write_bytes(b"")  # as a full disk left it: 0644, empty
    with convlog.open(f"sqlite:///{db}") as log:
        log.conversation("k", user="alice").append_turn([convlog.user("private")])
        log.sql("SELECT count(*) FROM messages")
    assert stat.S_IMODE((tmp_path / "c.duckdb").stat().st_mode) == 0o600


def test_exports_follow_the_umask_and_pages_are_shareable(tmp_path: Path,
                                                          loose_umask: None) -> None:
    from convlog.html import write_conversation_page

    with convlog.open(f"sqlite:///{tmp_path / 'c.db'}") as log:
        log.conversation("k", user="alice").append_turn([convlog.user("private")])
        exported = log.export_parquet(tmp_path / "parquet")
        page = write_conversation_page(log, "k", tmp_path / "k.html")
    assert exported
    for path in exported:
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path  # the umask's
    assert stat.S_IMODE(page.stat().st_mode) == 0o644
