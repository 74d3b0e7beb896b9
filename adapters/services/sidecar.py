"""Where a follower keeps its own small state (`convlog watch`'s reading positions,
`convlog export --otel`'s tracking position): a SQLite file that belongs to ONE log.

Beside a SQLite log (``convlog.db`` -> ``convlog.<name>.sqlite``); for PostgreSQL,
one file per URL under ``$XDG_STATE_HOME/convlog`` (the URL's digest in its name: a
position is only true of the log it was taken in); in memory for a log in memory.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from convlog.storage.urls import StorageConfig

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
