"""Files the store writes hold the users' conversations: SQLite's database, its
write-ahead log and shared memory, and the DuckDB views are created 0600 whatever the
umask (issue 25: they were 0644 under umask 022). HTML pages stay 0644 on purpose:
they are written to be shared (`convlog.html.publish`)."""

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
