"""Issue 26: read models are bound to the store they were built from. Views opened
against a recreated store, another store, or a store restored from an older backup are
rebuilt with a notice; they never answer from another store's data. Each test
reproduces a report and failed before the store fingerprint existed."""

from __future__ import annotations

import uuid
from pathlib import Path

import psycopg
import pytest

import convlog
from convlog.cli.main import main
from tests.conftest import PG_HOST


def test_a_recreated_sqlite_file_is_not_answered_from_the_old_views(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The exact report: old:1 into ./convlog.db, delete db+wal+shm, new:1 into a new
    ./convlog.db: `convlog sessions` listed old:1 and not new:1."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CONVLOG_VIEWS", raising=False)
    monkeypatch.delenv("CONVLOG_DB", raising=False)
    with convlog.open("sqlite:///convlog.db") as log:
        log.append("old", convlog.user("1"))
    assert main(["sessions"]) == 0
    assert "old" in capsys.readouterr().out
    for name in ("convlog.db", "convlog.db-wal", "convlog.db-shm"):
        (tmp_path / name).unlink(missing_ok=True)
    with convlog.open("sqlite:///convlog.db") as log:
        log.append("new", convlog.user("1"))
    assert main(["sessions"]) == 0
    out, err = capsys.readouterr()
    assert "new" in out and "old" not in out
    assert "rebuilding" in err


def test_a_store_restored_from_an_older_backup_rebuilds_the_views(tmp_path: Path) -> None:
    db = tmp_path / "convlog.db"
    with convlog.open(f"sqlite:///{db}") as log:
        log.append("kept", convlog.user("1"))
    backup = db.read_bytes()
    with convlog.open(f"sqlite:///{db}") as log:
        log.append("later", convlog.user("2"))
        assert {r.key for r in log.conversations()} == {"kept", "later"}
    for name in ("convlog.db-wal", "convlog.db-shm"):
        (tmp_path / name).unlink(missing_ok=True)
    db.write_bytes(backup)  # the store went backwards
    with convlog.open(f"sqlite:///{db}") as log:
        assert {r.key for r in log.conversations()} == {"kept"}


def test_two_postgresql_stores_sharing_a_views_file_never_mix(
        pg_url: str, tmp_path: Path) -> None:
    views = str(tmp_path / "shared.duckdb")
    other = f"convlog_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_HOST, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{other}"')
    try:
        with convlog.open(pg_url, views=views) as log:
            log.append("old", convlog.user("1"))
            assert [r.key for r in log.conversations()] == ["old"]
        other_url = pg_url.split("?")[0] + f"?schema={other}"
        with convlog.open(other_url, views=views) as log:
            log.append("new", convlog.user("1"))
            assert [r.key for r in log.conversations()] == ["new"]
        with convlog.open(pg_url, views=views) as log:
            assert [r.key for r in log.conversations()] == ["old"]
    finally:
        with psycopg.connect(PG_HOST, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA "{other}" CASCADE')


def test_default_views_paths_never_collide(pg_url: str, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A postgresql:// URL without ?views= used ./convlog.duckdb, the SQLite default's
    file: `convlog --db postgresql://... sessions` showed SQLite's conversations."""
    from convlog.views.duckdb import default_path

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CONVLOG_VIEWS", raising=False)
    other = pg_url.split("?")[0] + "?schema=another"
    paths = {default_path(Path("convlog.db")), default_path(None, "postgresql", pg_url),
             default_path(None, "postgresql", other)}
    assert len(paths) == 3
    with convlog.open("sqlite:///convlog.db") as log:
        log.append("lite", convlog.user("1"))
        assert [r.key for r in log.conversations()] == ["lite"]
    with convlog.open(pg_url) as log:
        log.append("pg", convlog.user("1"))
        assert [r.key for r in log.conversations()] == ["pg"]
