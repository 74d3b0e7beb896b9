"""Where a follower keeps its own small state (`convlog watch`'s reading positions,
`convlog export --otel`'s tracking position): a SQLite file that belongs to ONE log.

Beside a SQLite log (``convlog.db`` -> ``convlog.<name>.sqlite``); for PostgreSQL,
one file per URL under ``$XDG_STATE_HOME/convlog`` (the URL's digest in its name: a
position is only true of the log it was taken in); in memory for a log in memory.
Created 0600 whatever the umask (`connect`): `convlog watch` keeps the unfinished
last line of a transcript in it.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

from convlog.storage.urls import StorageConfig, create_private

MEMORY = ":memory:"


def sidecar_path(config: StorageConfig, name: str, override: str | None = None) -> Path:
    """The state file `name` of the log at `config`; the environment variable
    `override`, when set, names it instead."""
    if override and os.environ.get(override):
        return Path(os.environ[override])
    if config.path is not None:
        return config.path.with_suffix(f".{name}.sqlite")
    if config.backend == "memory":
        return Path(MEMORY)
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    digest = hashlib.sha256(config.url.encode()).hexdigest()[:16]
    return Path(state) / "convlog" / f"{name}-{digest}.sqlite"


def connect(path: Path) -> sqlite3.Connection:
    """The state file at `path` (made 0600 if new, and its directory if missing), in WAL mode,
    in autocommit, usable from any thread (its user serializes access)."""
    if str(path) != MEMORY:
        path.parent.mkdir(parents=True, exist_ok=True)
        create_private(path)
    db = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    return db
