"""A views file that is not usable never blocks the analytics (issue 43 item 6).

A full disk left a new views file empty (and 0644); once there was room again,
`sql`, `sessions`, `views rebuild` and `serve`'s analytics failed for good with "not
a valid DuckDB database" until someone deleted the file. Now any file at the views
path that is not a usable views file (empty, not DuckDB's, a SQLite file, truncated,
corrupt, someone else's DuckDB database) is renamed aside with a notice and the
views are rebuilt from the log; nothing is deleted. Real SQLite, real DuckDB files.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import pytest

import convlog


def _log(tmp_path: Path) -> convlog.ConversationLog:
    return convlog.open(f"sqlite:///{tmp_path / 'c.db'}")


def _fill(tmp_path: Path, turns: int = 3) -> Path:
    """A log with a few turns and its views file, built; returns the views path."""
    with _log(tmp_path) as log:
        conv = log.conversation("k", user="u")
        for n in range(turns):
            conv.append_turn([convlog.user(f"turn {n} " + "words " * 100)])
        log.sql("SELECT 1")
    views = tmp_path / "c.duckdb"
    assert views.stat().st_size > 0
    return views


def _empty(views: Path) -> None:
    views.write_bytes(b"")


def _text(views: Path) -> None:
    views.write_text("not a database\n" * 100)


def _sqlite(views: Path) -> None:
    views.unlink()
    with sqlite3.connect(views) as con:  # DuckDB would try to download an extension
        con.execute("CREATE TABLE t (x)")


def _truncated(views: Path) -> None:
    views.write_bytes(views.read_bytes()[:5000])


def _garbled(views: Path) -> None:
    data = bytearray(views.read_bytes())
    data[12288:] = os.urandom(len(data) - 12288)
    views.write_bytes(bytes(data))


def _someone_elses(views: Path) -> None:
    views.unlink()
    with duckdb.connect(str(views)) as con:
        con.execute("CREATE TABLE mine AS SELECT 42 AS answer")


BREAK: dict[str, Callable[[Path], None]] = {
    "empty": _empty, "text": _text, "sqlite": _sqlite, "truncated": _truncated,
    "garbled": _garbled, "someone else's DuckDB": _someone_elses}


def _set_aside(tmp_path: Path) -> list[Path]:
    return sorted(p for p in tmp_path.iterdir() if ".set-aside-" in p.name)


@pytest.mark.parametrize("kind", list(BREAK))
def test_an_unusable_views_file_is_set_aside_and_rebuilt(
        tmp_path: Path, kind: str, capfd: pytest.CaptureFixture[str]) -> None:
    views = _fill(tmp_path)
    BREAK[kind](views)
    broken, mode = views.read_bytes(), stat.S_IMODE(views.stat().st_mode)
    with _log(tmp_path) as log:
        assert log.sql("SELECT count(*) FROM messages")[1] == [(3,)]
        assert [r.key for r in log.conversations()] == ["k"]
    notice = capfd.readouterr().err
    assert f"the views file {views} is not usable" in notice and "set aside as" in notice
    aside = _set_aside(tmp_path)
    assert len(aside) == 1 and aside[0].read_bytes() == broken  # kept, not deleted
    assert stat.S_IMODE(aside[0].stat().st_mode) == mode  # renamed, not rewritten
    assert stat.S_IMODE(views.stat().st_mode) == 0o600
    if kind == "someone else's DuckDB":
        with duckdb.connect(str(aside[0]), read_only=True) as con:
            assert con.execute("SELECT answer FROM mine").fetchall() == [(42,)]
    with _log(tmp_path) as log:  # the new file is used as it is: no second notice
        assert log.sql("SELECT count(*) FROM messages")[1] == [(3,)]
    assert "set aside" not in capfd.readouterr().err
    assert len(_set_aside(tmp_path)) == 1


def test_views_rebuild_and_the_cli_recover_from_an_empty_file(tmp_path: Path) -> None:
    views = _fill(tmp_path)
    _empty(views)
    convlog_cli = Path(sys.executable).parent / "convlog"
    for args in (["views", "rebuild"], ["sessions"], ["sql", "SELECT count(*) FROM messages"]):
        done = subprocess.run([str(convlog_cli), *args, "--db", f"sqlite:///{tmp_path / 'c.db'}"],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    assert len(_set_aside(tmp_path)) == 1


def test_corruption_met_in_a_query_fails_it_and_the_next_use_rebuilds(tmp_path: Path) -> None:
    views = _fill(tmp_path, turns=300)
    data = bytearray(views.read_bytes())
    data[-300_000:-200_000] = os.urandom(100_000)  # past what opening the file reads
    views.write_bytes(bytes(data))
    with _log(tmp_path) as log:
        failed = None
        for query in ("SELECT count(*) FROM messages", "SELECT * FROM sessions",
                      "SELECT * FROM messages"):
            try:
                log.sql(query)
            except convlog.StorageError as exc:
                failed = exc
                break
        if failed is None:
            pytest.skip("the garbled blocks held nothing these queries read")
        assert f"the views file {views} is corrupt" in str(failed)
        assert log.sql("SELECT count(*) FROM messages")[1] == [(300,)]
    assert len(_set_aside(tmp_path)) == 1


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """An 8 MiB tmpfs (skipped where mounting is impossible)."""
    if shutil.which("mount") is None:
        pytest.skip("no mount command here: cannot make a small file system")
    where = tmp_path / "small"
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(where)],
                          capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs (needs root): {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, timeout=30)


def _fill_disk(filler: Path) -> None:
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 65536)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise


def test_a_full_disk_leaves_a_private_views_file_that_is_rebuilt_once_there_is_room(
        small_fs: Path) -> None:
    """The issue's reproduction: the views file is made while the disk is full."""
    old = os.umask(0o022)
    filler = small_fs / "filler"
    try:
        with _log(small_fs) as log:
            log.conversation("k", user="u").append_turn([convlog.user("hi")])
            _fill_disk(filler)
            with pytest.raises(convlog.StorageError):
                log.sql("SELECT count(*) FROM messages")
            views = small_fs / "c.duckdb"
            assert views.exists()
            assert stat.S_IMODE(views.stat().st_mode) == 0o600
            filler.unlink()
            assert log.sql("SELECT count(*) FROM messages")[1] == [(1,)]
    finally:
        os.umask(old)



_OPEN_VIEWS = """
import sys
import convlog
with convlog.open(sys.argv[1], views=sys.argv[2]) as log:
    print(len(log.conversations()))
"""


def _waits_for_a_flock(pid: int) -> bool:
    """Whether process `pid` is blocked on an advisory lock (/proc/locks lists a
    blocked request as `N: -> FLOCK ...`)."""
    lines = Path("/proc/locks").read_text().splitlines()
    return any("->" in line and "FLOCK" in line and f" {pid} " in line for line in lines)


def test_a_views_file_being_created_is_waited_for_never_set_aside(tmp_path: Path) -> None:
    """A process that finds a views file whose header another process is still
    writing (DuckDB writes it in its connect) waits for the creator instead of setting
    the new file aside as unusable; a CLI run failed with "not a valid DuckDB database
    file" when five `convlog sessions` opened a new views file at once
    (tests/e2e/test_cli.py::test_sessions_filters_and_order)."""
    import fcntl

    db = f"sqlite:///{tmp_path / 'c.db'}"
    with convlog.open(db, views=str(tmp_path / "host.duckdb")) as log:
        log.conversation("k", user="u").append(convlog.user("hi"))
    views = tmp_path / "shared" / "v.duckdb"
    views.parent.mkdir()
    views.write_bytes(b"\0" * 8)  # a creator's file, its header not written yet
    folder = os.open(views.parent, os.O_RDONLY)
    fcntl.flock(folder, fcntl.LOCK_EX)  # as a creating process holds it
    proc = subprocess.Popen([sys.executable, "-c", _OPEN_VIEWS, db, str(views)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while proc.poll() is None and not _waits_for_a_flock(proc.pid):
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(0.02)
        views.unlink()  # the creator finishes its file
        duckdb.connect(str(views)).close()
    finally:
        os.close(folder)  # and lets go
    out, err = proc.communicate(timeout=300)
    assert (proc.returncode, out) == (0, "1\n"), err
    assert not list(views.parent.glob("*.set-aside-*")), err
