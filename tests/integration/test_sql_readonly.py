"""`convlog sql` reads the views and never changes them (issue 25, issue 26).

The views are a cache of the log; a statement that writes, commits, copies to a
file, attaches another database or installs an extension is refused with a clear
error (exit 1), and the views are as they were."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import convlog

REFUSED = [
    "delete from messages; commit",
    "DELETE FROM sessions",
    "COPY (SELECT 1) TO '{out}'",
    "ATTACH '{out}' AS other",
    "INSTALL httpfs",
    "LOAD httpfs",
    "CREATE TABLE stash AS SELECT 1",
    "SELECT 1; SELECT 2",
]


def seeded(url: str) -> None:
    with convlog.open(url) as log:
        c = log.conversation("c:1", user="carol")
        c.append_turn([convlog.user("hello"), convlog.assistant("hi")])


@pytest.mark.parametrize("query", REFUSED)
def test_cli_sql_refuses_writes(query: str, sqlite_url: str, tmp_path: Path) -> None:
    seeded(sqlite_url)
    exe = str(Path(sys.executable).parent / "convlog")
    out = tmp_path / "out.file"
    done = subprocess.run([exe, "sql", query.format(out=out), "--db", sqlite_url],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout
    assert done.stderr.startswith("convlog: error:"), done.stderr
    assert "read-only" in done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    assert "Count" not in done.stdout
    assert not out.exists()
    with convlog.open(sqlite_url) as log:
        assert log.sql("SELECT count(*) FROM messages")[1] == [(2,)]
        assert log.sql("SELECT count(*) FROM sessions")[1] == [(1,)]


def test_api_sql_refuses_writes_with_a_typed_error(sqlite_url: str) -> None:
    seeded(sqlite_url)
    with convlog.open(sqlite_url) as log:
        with pytest.raises(convlog.InvalidInput) as caught:
            log.sql("DELETE FROM messages")
        assert caught.value.field == "sql"
        assert log.sql("SELECT count(*) FROM messages")[1] == [(2,)]
        # Reading still works, CTEs and DESCRIBE included.
        assert log.sql("WITH m AS (SELECT * FROM messages) SELECT count(*) FROM m"
                       )[1] == [(2,)]
        assert log.sql("DESCRIBE messages")[0]
