"""Every Python block of the README and of docs/*.md runs (issue 29), with Sybil: the
blocks of one page run in order in one namespace, in an empty folder, as a reader
would paste them. A block that cannot run here is marked in the page itself with
`<!-- skip: next "why" -->`, and the reason names the test that runs it another way."""

from __future__ import annotations

import os
import unittest
from pathlib import Path

import pytest

sybil = pytest.importorskip("sybil", reason="sybil is a dev dependency")
from sybil.parsers.markdown import PythonCodeBlockParser, SkipParser  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PARSER = sybil.Sybil(parsers=[PythonCodeBlockParser(), SkipParser()], path=str(ROOT),
                     patterns=["README.md", "docs/*.md"])


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_python_block_runs(page: Path, tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))  # a reader's fresh home (~/.claude, ~/.convlog)
    for name in ("CONVLOG_URL", "CONVLOG_KEY", "CONVLOG_KEY_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")
    saved = dict(os.environ)  # a page may set CONVLOG_KEY itself: it must not leak out
    try:
        for example in PARSER.parse(page):
            try:
                example.evaluate()
            except unittest.SkipTest:
                continue
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_no_page_hides_its_set_up(page: Path) -> None:
    """A page runs top to bottom with only what it shows (issue 44): set-up hidden in
    an `invisible-code-block` passed here and failed for the reader who followed it
    (`NameError: name 'conv'`, a CONVLOG_KEY they never saw set)."""
    text = page.read_text()
    if page.name == "development.md":  # it names the construct, to forbid it
        text = text.replace("no hidden `invisible-code-block`", "")
    assert "invisible-code-block" not in text
