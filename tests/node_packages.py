"""A Node.js package of the tests (its package.json and committed lockfile) installed
into the venv with `npm ci`, once per lockfile, then its sources copied fresh."""

from __future__ import annotations

import filecmp
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def installed(source: Path, name: str) -> Path:
    """A copy of the package at `source` with its locked node_modules, in the venv
    under `name`; skips (saying so) where Node.js or npm is absent."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Node.js and npm are not installed on this machine")
    home = Path(sys.prefix) / name
    lock = home / "package-lock.json"
    if not (home / "node_modules").exists() or not lock.exists() or not filecmp.cmp(
            lock, source / "package-lock.json", shallow=False):
        home.mkdir(exist_ok=True)
        for file in ("package.json", "package-lock.json"):
            shutil.copy(source / file, home / file)
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--silent"], cwd=home,
                       check=True, timeout=300)
    shutil.copy(source / "tsconfig.json", home / "tsconfig.json")
    shutil.rmtree(home / "src", ignore_errors=True)
    shutil.copytree(source / "src", home / "src")
    return home
