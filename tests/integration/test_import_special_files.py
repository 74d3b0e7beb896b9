"""`convlog import` of something that is not a file of conversations (issue 25):
a device (`/dev/zero`), a FIFO, a directory with no file of the format (even one
named `dir.jsonl`) is a clear error, exit 1, before a database is created; it was
"0 file(s)", exit 0 (and a FIFO or /dev/zero could have blocked or run forever)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from convlog.cli.main import main


def cli(db: Path, *args: str) -> int:
    try:
        return main([*args, "--db", f"sqlite:///{db}"])
    except SystemExit as exc:
        return int(exc.code or 0)


@pytest.mark.parametrize("fmt", ["openai", "claude-code", "codex"])
def test_not_a_regular_file(fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
                            ) -> None:
    fifo = tmp_path / "f.jsonl"
    os.mkfifo(fifo)
    db = tmp_path / "c.db"
    for path in ("/dev/zero", str(fifo)):
        assert cli(db, "import", fmt, path) == 1
        err = capsys.readouterr().err
        assert err == f"convlog: error: {path}: not a regular file or directory\n"
    assert not db.exists()


@pytest.mark.parametrize("fmt", ["openai", "claude-code", "codex"])
def test_a_directory_without_files_of_the_format(fmt: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "dir.jsonl"
    empty.mkdir()
    db = tmp_path / "c.db"
    assert cli(db, "import", fmt, str(empty)) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"convlog: error: {empty}: no {fmt} files in this directory")
    assert not db.exists()
