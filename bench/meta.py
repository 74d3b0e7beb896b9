"""The run metadata every bench program saves with its figures, in one place.

Why: ``python -m bench.report`` renders BENCHMARKS.md and the docs from
``bench/results/``, and each rendered block says when, on which revision, in which
mode, on which machine and under how much load its figures were measured. A bench calls
``run = meta.begin("name", quick)`` when it starts and ``run.save(payload)`` at the end:
the payload is written to ``bench/results/<name>-<UTC date>[-quick].json`` with a
``"meta"`` object (see :meth:`Run.finish`). Quick runs are saved under their own name and
labelled ``"mode": "quick"``, so they never stand in for a full run's figures.
"""

from __future__ import annotations

import json
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"

# Packages whose version moves figures: convlog's stack and the peers it is compared with
# (a peer absent from this interpreter's venv is left out).
PACKAGES = ("convlog", "eventsourcing", "msgspec", "tiktoken", "duckdb", "psycopg",
            "openai-agents", "claude-agent-sdk", "google-adk", "SQLAlchemy",
            "langchain-community", "langchain-core", "langgraph", "langgraph-checkpoint-sqlite")


def package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _git(*args: str) -> str:
    out = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else ""


def revision() -> tuple[str, bool]:
    """The commit measured, and whether the tree differs from it (results excluded:
    an earlier bench of the same ``make bench`` has just written there)."""
    commit = _git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = _git("status", "--porcelain", "--", ".", ":(exclude)bench/results")
    return commit, bool(dirty)


def git_revision() -> str:
    """The commit measured, marked dirty when the library's sources differ from it."""
    commit = _git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = _git("status", "--porcelain", "--", "adapters", "domain", "projections")
    return f"{commit}{' (dirty)' if dirty else ''}"


def memory_total() -> str:
    try:
        kib = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text()
                   .splitlines() if line.startswith("MemTotal"))
    except (OSError, StopIteration):
        return "unknown"
    return f"{kib / 1024 / 1024:.1f} GiB"


def machine() -> dict[str, Any]:
    """What the figures ran on: CPU, cores, Python, SQLite and the packages that matter."""
    packages = {name: package_version(name) for name in PACKAGES}
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "memory": memory_total(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "sqlite": sqlite3.sqlite_version,
        "tempdir": tempfile.gettempdir(),
        "packages": {k: v for k, v in packages.items() if v != "not installed"},
    }


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def command() -> str:
    """The command line that ran this bench, as a reader would type it from the repo."""
    exe = Path(sys.executable)
    try:
        shown = str(exe.relative_to(REPO)) if exe.is_relative_to(REPO) else exe.name
    except ValueError:
        shown = exe.name
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    module = spec.name if spec is not None else Path(sys.argv[0]).stem
    return " ".join([shown, "-m", module, *sys.argv[1:]])


@dataclass
class Run:
    """One bench run: started at ``begin``, saved with its metadata by ``save``."""

    bench: str
    mode: str
    utc_start: datetime = field(default_factory=lambda: datetime.now(UTC))
    load_start: list[float] = field(default_factory=load_average)
    started: float = field(default_factory=time.perf_counter)

    def finish(self, host_pace: dict[str, Any] | None = None) -> dict[str, Any]:
        """The ``meta`` object: when, what, where, and how busy the machine was.
        ``host_pace`` is the bench's fixed-CPU-loop probe where it measures one."""
        commit, dirty = revision()
        return {
            "bench": self.bench, "mode": self.mode,
            "utc_start": self.utc_start.isoformat(timespec="seconds"),
            "utc_end": datetime.now(UTC).isoformat(timespec="seconds"),
            "elapsed_s": round(time.perf_counter() - self.started, 1),
            "revision": commit, "dirty": dirty, "command": command(),
            "machine": machine(),
            "noise": {"load_start": self.load_start, "load_end": load_average(),
                      "cores": os.cpu_count(), "host_pace": host_pace},
        }

    def path(self) -> Path:
        day = self.utc_start.strftime("%Y-%m-%d")
        return RESULTS / f"{self.bench}-{day}{'-quick' if self.mode == 'quick' else ''}.json"

    def save(self, payload: dict[str, Any], host_pace: dict[str, Any] | None = None) -> Path:
        """Write ``payload`` plus ``meta`` to the run's results file; return its path."""
        RESULTS.mkdir(parents=True, exist_ok=True)
        path = self.path()
        saved = {**payload, "meta": self.finish(host_pace)}
        path.write_text(json.dumps(saved, indent=2, default=str) + "\n")
        return path


def begin(bench: str, quick: bool) -> Run:
    """Start a run of ``bench`` (the results file's prefix) in quick or full mode."""
    return Run(bench, "quick" if quick else "full")
