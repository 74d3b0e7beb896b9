"""Issue 26's identity rule, end to end, on SQLite and PostgreSQL: a store has an
identity created with it and stored in it; the DuckDB views record the identity and
position of the store they were built from; views opened against a recreated store, or
a store that went backwards, are rebuilt with a notice, or refused with a clear error
when ``$CONVLOG_VIEWS_MISMATCH=refuse``. (test_views_identity.py has the first
reproductions; this file adds the PostgreSQL side of each and the refuse mode.)"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import duckdb
import psycopg
import pytest

import convlog
from convlog.cli.main import main
from convlog.services.log import application
from tests.conftest import PG_HOST


def _schema(url: str) -> str:
    return parse_qs(urlsplit(url).query)["schema"][0]


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A store URL, in a working directory of its own with the default views path."""
    monkeypatch.chdir(tmp_path)
    for name in ("CONVLOG_VIEWS", "CONVLOG_DB", "CONVLOG_URL", "CONVLOG_VIEWS_MISMATCH"):
        monkeypatch.delenv(name, raising=False)
    if request.param == "sqlite":
        yield "sqlite:///convlog.db"
    else:
        yield request.getfixturevalue("pg_url")


def _recreate(url: str, tmp_path: Path) -> None:
    """Delete the store and make a new, empty one at the same place."""
    if url.startswith("sqlite"):
        for name in ("convlog.db", "convlog.db-wal", "convlog.db-shm"):
            (tmp_path / name).unlink(missing_ok=True)
        return
    with psycopg.connect(PG_HOST, autocommit=True) as admin:
        admin.execute(f'DROP SCHEMA "{_schema(url)}" CASCADE')
        admin.execute(f'CREATE SCHEMA "{_schema(url)}"')


@contextlib.contextmanager
def _backup(url: str, tmp_path: Path) -> Iterator[None]:
    """Back the store up now; restore that backup (the store goes backwards) on exit."""
    if url.startswith("sqlite"):
        with contextlib.closing(sqlite3.connect(tmp_path / "convlog.db")) as db:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        shutil.copy(tmp_path / "convlog.db", tmp_path / "backup.db")
        yield
        _recreate(url, tmp_path)
        shutil.copy(tmp_path / "backup.db", tmp_path / "convlog.db")
        return
    dump = tmp_path / "backup.sql"
    subprocess.run(["pg_dump", "-h", "127.0.0.1", "-U", "postgres", "-d", "test", "-n",
                    _schema(url), "-f", str(dump)], check=True, timeout=120)
    yield
    with psycopg.connect(PG_HOST, autocommit=True) as admin:
        admin.execute(f'DROP SCHEMA "{_schema(url)}" CASCADE')
    subprocess.run(["psql", "-q", "-h", "127.0.0.1", "-U", "postgres", "-d", "test",
                    "-v", "ON_ERROR_STOP=1", "-f", str(dump)], check=True, timeout=120,
                   capture_output=True)


def _sessions(url: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        code = main(["sessions", "--db", url])
    except SystemExit as exited:  # an error: one line on stderr, exit 1
        code = int(exited.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def _views_file(url: str) -> Path:
    with convlog.open(url) as log:
        path = application(log).analytics.views.path
    assert path is not None
    return path


def test_a_store_has_an_identity_made_with_it_and_stored_in_it(
        store: str, tmp_path: Path) -> None:
    with convlog.open(store) as log:
        first = application(log).store.index.store_identity()
    with convlog.open(store) as log:
        assert application(log).store.index.store_identity() == first  # stored, not made per open
    if store.startswith("sqlite"):
        with contextlib.closing(sqlite3.connect(tmp_path / "convlog.db")) as db:
            assert db.execute("SELECT value FROM convlog_store WHERE name = 'id'"
                              ).fetchone() == (first,)
    else:
        with psycopg.connect(PG_HOST) as db:
            row = db.execute(f'SELECT value FROM "{_schema(store)}".convlog_store '
                             "WHERE name = 'id'").fetchone()
            assert row == (first,)
    _recreate(store, tmp_path)
    with convlog.open(store) as log:
        assert application(log).store.index.store_identity() != first  # a new store, a new identity


def test_the_views_record_the_identity_and_position_of_their_store(store: str) -> None:
    with convlog.open(store) as log:
        log.append("k", convlog.user("1"))
        log.conversations()
        identity = application(log).store.index.store_identity()
        position = application(log).store.index.max_notification_id()
        path = application(log).analytics.views.path
        application(log).analytics.views.close()
    with duckdb.connect(str(path), read_only=True) as views:
        meta = dict(views.execute("SELECT name, value FROM convlog_meta").fetchall())
        (tracked,) = views.execute("SELECT notification_id FROM convlog_tracking"
                                   ).fetchone() or (None,)
    assert meta["store_id"] == identity
    assert tracked == position


def test_a_recreated_store_is_not_answered_from_the_old_views(
        store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The report, through the CLI and the default views path, on both backends."""
    with convlog.open(store) as log:
        log.append("old", convlog.user("1"))
    assert "old" in _sessions(store, capsys)[1]
    _recreate(store, tmp_path)
    with convlog.open(store) as log:
        log.append("new", convlog.user("1"))
    code, out, err = _sessions(store, capsys)
    assert code == 0
    assert "new" in out and "old" not in out
    assert "another store" in err and "rebuilding" in err


def test_a_store_that_went_backwards_is_detected(
        store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with convlog.open(store) as log:
        log.append("kept", convlog.user("1"))
    with _backup(store, tmp_path):
        with convlog.open(store) as log:
            log.append("later", convlog.user("2"))
        assert {"kept", "later"} <= set(_sessions(store, capsys)[1].split())
    code, out, err = _sessions(store, capsys)
    assert code == 0
    assert "kept" in out and "later" not in out
    assert "went backwards" in err


def test_a_store_restored_then_written_to_is_detected(
        store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Restored from an older backup, then written to past the views' position: the
    position exists again, with another event."""
    with convlog.open(store) as log:
        log.append("kept", convlog.user("1"))
    with _backup(store, tmp_path):
        with convlog.open(store) as log:
            log.append("lost", convlog.user("2"))
        assert "lost" in _sessions(store, capsys)[1]
    with convlog.open(store) as log:
        for i in range(3):
            log.append("after", convlog.user(f"{i}"))
    code, out, err = _sessions(store, capsys)
    assert code == 0
    assert "after" in out and "lost" not in out
    assert "rebuilding" in err


def test_refuse_mode_is_a_clear_error_and_views_rebuild_recovers(
        store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    with convlog.open(store) as log:
        log.append("old", convlog.user("1"))
    assert _sessions(store, capsys)[0] == 0
    _recreate(store, tmp_path)
    with convlog.open(store) as log:
        log.append("new", convlog.user("1"))
    monkeypatch.setenv("CONVLOG_VIEWS_MISMATCH", "refuse")
    code, out, err = _sessions(store, capsys)
    assert (code, out) == (1, "")
    assert len(err.splitlines()) == 1
    views = str(_views_file(store))
    assert views in err and "another store" in err and "convlog views rebuild" in err
    with pytest.raises(convlog.StorageError, match="another store"), \
            convlog.open(store) as log:
        log.conversations()
    capsys.readouterr()
    assert main(["views", "rebuild", "--db", store]) == 0
    code, out, err = _sessions(store, capsys)
    assert code == 0 and "new" in out and "old" not in out


def test_an_unknown_mismatch_mode_is_named(store: str, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    monkeypatch.setenv("CONVLOG_VIEWS_MISMATCH", "ignore")
    with convlog.open(store) as log, pytest.raises(convlog.InvalidInput) as caught:
        log.conversations()
    assert caught.value.field == "CONVLOG_VIEWS_MISMATCH"
    assert "rebuild, refuse" in str(caught.value)
