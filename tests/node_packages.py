"""A Node.js package of the tests (its package.json and committed lockfile) installed
into the venv with `npm ci`, once per lockfile, then its sources copied fresh.

The suite runs on several workers (pytest-xdist): a file lock makes one of them run
`npm ci` while the others wait, and each worker compiles and runs its own copy of the
sources (node_modules shared through a symlink), so no worker deletes the `src/` or
`dist/` another one is using."""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock


def installed(source: Path, name: str) -> Path:
    """A copy of the package at `source` with its locked node_modules, in the venv
    under `name`, this worker's own; skips (saying so) where Node.js or npm is absent."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Node.js and npm are not installed on this machine")
    home = Path(sys.prefix) / name
    home.mkdir(exist_ok=True)
    with FileLock(home / "install.lock"):
        done = home / "installed-package-lock.json"  # written once `npm ci` succeeded
        if not (home / "node_modules").exists() or not done.exists() or not filecmp.cmp(
                done, source / "package-lock.json", shallow=False):
            done.unlink(missing_ok=True)
            for file in ("package.json", "package-lock.json"):
                shutil.copy(source / file, home / file)
            subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--silent"], cwd=home,
                           check=True, timeout=300)
            shutil.copy(source / "package-lock.json", done)
    work = home / "workers" / os.environ.get("PYTEST_XDIST_WORKER", "main")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    for file in ("package.json", "tsconfig.json"):
        if (source / file).exists():
            shutil.copy(source / file, work / file)
    if (source / "src").exists():
        shutil.copytree(source / "src", work / "src")
    (work / "node_modules").symlink_to(home / "node_modules", target_is_directory=True)
    return work
