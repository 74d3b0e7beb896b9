"""The reference site builds in strict mode (issue 29): a broken link, a missing anchor
or a page left out of the navigation fails `make test`, not only `make docs`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_docs_site_builds_strict(tmp_path: Path) -> None:
    """As `make docs` does it, on a copy (the generated pages are not written into the
    work tree by a test)."""
    pytest.importorskip("material", reason="mkdocs-material is a dev dependency")
    shutil.copytree(ROOT / "docs", tmp_path / "docs",
                    ignore=shutil.ignore_patterns("cli-reference.md", "http-reference.md"))
    shutil.copy(ROOT / "mkdocs.yml", tmp_path)
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "docs.gen_reference", str(tmp_path / "docs")],
                   cwd=ROOT, check=True, timeout=120, env=env)
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
         str(tmp_path / "site")], cwd=tmp_path, capture_output=True, text=True, timeout=300,
        check=False, env=env)
    assert done.returncode == 0, done.stderr
    for page in ("http", "cli-reference", "http-reference"):
        assert (tmp_path / "site" / page / "index.html").exists(), page
    assert "WARNING" not in done.stderr
