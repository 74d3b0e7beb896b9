"""The source distribution of an installed SDK, for running the SDK's OWN tests.

Downloaded from the package index into .pytest_cache (nothing of it is committed), for
exactly the installed version; without network or index the caller's tests skip,
saying so. Used by the ACP example tests and the SDK session-store suites. A file lock
makes the download happen once when several test workers (pytest-xdist) ask at once."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from importlib.metadata import version
from pathlib import Path

import pytest
from filelock import FileLock

ROOT = Path(__file__).resolve().parents[1]


def sdist(distribution: str, probe: str) -> Path:
    """The unpacked sdist folder of `distribution` (the installed version), checked to
    contain `probe` (a path inside it)."""
    release = version(distribution)
    cache = ROOT / ".pytest_cache" / "sdists" / f"{distribution}-{release}"
    cache.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{cache}.lock"):
        found = sorted(cache.glob(f"*/{probe}"))
        if not found:
            _download(distribution, release, cache)
            found = sorted(cache.glob(f"*/{probe}"))
            if not found:
                pytest.fail(f"the {distribution} {release} sdist has no {probe}")
    return found[0].parents[len(Path(probe).parts) - 1]


def _download(distribution: str, release: str, cache: Path) -> None:
    """Download and unpack the sdist into `cache` (the caller holds its lock)."""
    cache.mkdir(exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
         "--quiet", "-d", str(cache), f"{distribution}=={release}"],
        capture_output=True, text=True, timeout=300)
    archives = sorted(cache.glob("*.tar.gz"))
    if done.returncode != 0 or not archives:
        pytest.skip(f"cannot download the {distribution} {release} sdist: "
                    f"{(done.stderr or done.stdout).strip()[-300:]}")
    with tarfile.open(archives[0]) as tar:
        tar.extractall(cache, filter="data")
