"""The reference site builds in strict mode (issue 29): a broken link, a missing anchor
or a page left out of the navigation fails `make test`, not only `make docs`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_docs_site_builds_strict(tmp_path: Path) -> None:
    pytest.importorskip("material", reason="mkdocs-material is a dev dependency")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "http" / "index.html").exists()
    assert "WARNING" not in done.stderr
