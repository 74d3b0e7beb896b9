"""Storage URLs: which event store a log opens, and how.

Accepted forms::

    sqlite:///relative/path.db        (three slashes: relative to the working directory)
    sqlite:////absolute/path.db       (four slashes: absolute)
    ./convlog.db, /var/lib/x.db       (a bare path means SQLite)
    memory://                         (this process only; for tests)
    postgresql://user@host:port/db    (parsed; the backend is not available yet)

SQLite query options: ``synchronous=normal|full`` (see convlog.sqlite) and
``timeout=SECONDS`` (how long a writer waits for another process's lock, default 5).
The default URL is ``$CONVLOG_URL``, else ``sqlite:///./convlog.db``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from convlog.errors import StorageError, UnsupportedURL

DEFAULT_URL = "sqlite:///./convlog.db"
ENV_VAR = "CONVLOG_URL"
SQLITE_OPTIONS = {"synchronous": ("off", "normal", "full", "extra"), "timeout": None}


@dataclass(frozen=True)
class StorageConfig:
    """A parsed storage URL: the backend and the eventsourcing environment it needs."""

    url: str
    backend: str  # "sqlite" | "memory" | "postgresql"
    path: Path | None = None
    options: dict[str, str] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        if self.backend == "memory":
            return {"PERSISTENCE_MODULE": "convlog.memory:Factory"}
        if self.backend == "sqlite":
            assert self.path is not None
            env = {
                "PERSISTENCE_MODULE": "convlog.sqlite:Factory",
                "SQLITE_DBNAME": str(self.path),
                "CONVLOG_SQLITE_SYNCHRONOUS": self.options.get("synchronous", "normal"),
            }
            if "timeout" in self.options:
                env["SQLITE_LOCK_TIMEOUT"] = self.options["timeout"]
            return env
        raise UnsupportedURL(
            f"{self.url!r}: the PostgreSQL backend is not available in this version; "
            "use sqlite:///PATH or memory://"
        )

    def check_exists(self) -> None:
        """For read-only commands: a missing SQLite file is an error, not a new database."""
        if self.backend == "sqlite" and self.path is not None and not self.path.exists():
            raise StorageError(f"no convlog database at {self.path} (from {self.url!r})")


def default_url() -> str:
    return os.environ.get(ENV_VAR) or DEFAULT_URL


def parse_url(url: str | None = None) -> StorageConfig:
    url = url if url is not None else default_url()
    if not url.strip():
        raise UnsupportedURL("storage URL is empty")
    if "://" not in url:
        return _sqlite(url, Path(url), "")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "memory":
        return StorageConfig(url=url, backend="memory")
    if scheme == "sqlite":
        if parts.netloc:
            raise UnsupportedURL(
                f"{url!r}: SQLite URLs have no host; write sqlite:///relative.db "
                "or sqlite:////absolute.db")
        raw_path = parts.path[1:] if parts.path.startswith("/") else parts.path
        if not raw_path:
            raise UnsupportedURL(f"{url!r}: no database path after sqlite:///")
        return _sqlite(url, Path(raw_path), parts.query)
    if scheme in ("postgresql", "postgres"):
        return StorageConfig(url=url, backend="postgresql", options=dict(parse_qsl(parts.query)))
    raise UnsupportedURL(
        f"{url!r}: unknown storage scheme {scheme!r}; use sqlite:///PATH, a file path, "
        "or memory://")


def _sqlite(url: str, path: Path, query: str) -> StorageConfig:
    options = dict(parse_qsl(query, keep_blank_values=True))
    for key, value in options.items():
        if key not in SQLITE_OPTIONS:
            raise UnsupportedURL(
                f"{url!r}: unknown SQLite option {key!r}; known: {', '.join(SQLITE_OPTIONS)}")
        allowed = SQLITE_OPTIONS[key]
        if allowed is not None and value.lower() not in allowed:
            raise UnsupportedURL(
                f"{url!r}: {key} must be one of {', '.join(allowed)}, not {value!r}")
        if key == "timeout" and not value.isdigit():
            raise UnsupportedURL(f"{url!r}: timeout must be whole seconds, not {value!r}")
    if str(path) == ":memory:":
        raise UnsupportedURL(f"{url!r}: for an in-memory log use memory://")
    if path.exists() and path.is_dir():
        raise StorageError(f"{path} is a directory, not a database file")
    if not path.parent.exists():
        raise StorageError(f"cannot create a database at {path}: {path.parent} does not exist")
    return StorageConfig(url=url, backend="sqlite", path=path,
                         options={k: v.lower() for k, v in options.items()})
