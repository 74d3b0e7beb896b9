"""Storage URLs: which event store a log opens, and how.

Accepted forms::

    sqlite:///relative/path.db        (three slashes: relative to the working directory)
    sqlite:////absolute/path.db       (four slashes: absolute)
    ./convlog.db, /var/lib/x.db       (a bare path means SQLite)
    memory://                         (this process only; for tests)
    postgresql://user[:password]@host[:port]/db[?options]

SQLite query options: ``synchronous=normal|full`` (see convlog.storage.sqlite) and
``timeout=SECONDS`` (how long a writer waits for another process's lock, default 5).
PostgreSQL query options: ``pool_size`` (default 5), ``max_overflow`` (10),
``connect_timeout`` (seconds a request waits for a connection before the
database counts as unavailable, 2), ``lock_timeout`` (seconds a writer waits for the
table lock, 0 = no limit), ``schema`` (default: the user's search path; created by
a writing open when missing), and ``views`` (the DuckDB file of read models, default
``pg-<id>.duckdb`` in the per-user data directory: convlog.views.duckdb.views_home).
The default URL is ``$CONVLOG_URL``, else ``sqlite:///./convlog.db``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from convlog.domain.errors import MissingExtra
from convlog.domain.numbers import whole_number
from convlog.storage.errors import StorageError, UnsupportedURL

DEFAULT_URL = "sqlite:///./convlog.db"
ENV_VAR = "CONVLOG_URL"
POOL_TIMEOUT = 2
"""PostgreSQL: seconds a request waits for a connection by default (`connect_timeout`);
past it the database counts as unavailable (convlog.storage.postgres_pool)."""
SQLITE_OPTIONS = {"synchronous": ("off", "normal", "full", "extra"), "timeout": None}
POSTGRES_OPTIONS = {
    "pool_size": "POSTGRES_POOL_SIZE",
    "max_overflow": "POSTGRES_MAX_OVERFLOW",
    "connect_timeout": "POSTGRES_CONNECT_TIMEOUT",
    "lock_timeout": "POSTGRES_LOCK_TIMEOUT",
    "schema": "POSTGRES_SCHEMA",
}


def _redact(url: str) -> str:
    """The URL without its password, for error messages."""
    parts = urlsplit(url)
    if parts.password:
        return url.replace(f":{parts.password}@", ":***@", 1)
    return url


@dataclass(frozen=True)
class StorageConfig:
    """A parsed storage URL: the backend and the eventsourcing environment it needs."""

    url: str
    backend: str  # "sqlite" | "memory" | "postgresql"
    path: Path | None = None
    options: dict[str, str] = field(default_factory=dict)

    @property
    def display(self) -> str:
        """The store as errors name it (no password)."""
        return str(self.path) if self.path is not None else _redact(self.url)

    def env(self) -> dict[str, str]:
        if self.backend == "memory":
            return {"PERSISTENCE_MODULE": "convlog.storage.memory:Factory"}
        if self.backend == "sqlite":
            assert self.path is not None
            env = {
                "PERSISTENCE_MODULE": "convlog.storage.sqlite:Factory",
                "SQLITE_DBNAME": str(self.path),
                "CONVLOG_SQLITE_SYNCHRONOUS": self.options.get("synchronous", "normal"),
            }
            if "timeout" in self.options:
                env["SQLITE_LOCK_TIMEOUT"] = self.options["timeout"]
            return env
        return self._postgres_env()

    def _postgres_env(self) -> dict[str, str]:
        parts = urlsplit(self.url)
        if not parts.hostname or not parts.path.strip("/"):
            raise UnsupportedURL(
                f"{_redact(self.url)!r}: expected postgresql://user@host[:port]/database")
        env = {
            "PERSISTENCE_MODULE": "convlog.storage.postgres:Factory",
            "POSTGRES_DBNAME": unquote(parts.path.strip("/")),
            "POSTGRES_HOST": parts.hostname,
            "POSTGRES_PORT": str(parts.port or 5432),
            "POSTGRES_USER": unquote(parts.username or os.environ.get("USER", "postgres")),
            "POSTGRES_PASSWORD": unquote(parts.password or ""),
        }
        env["POSTGRES_CONNECT_TIMEOUT"] = str(POOL_TIMEOUT)
        for key, name in POSTGRES_OPTIONS.items():
            if key in self.options:
                env[name] = self.options[key]
        return env

    def check_reachable(self, *, create: bool = True) -> None:
        """PostgreSQL: one direct connection first, so a wrong host, role or database
        fails at once with the server's own words instead of after the pool's wait.
        It also makes the URL's ``?schema=`` when it is missing and `create` (a
        reading open names it instead, and creates nothing)."""
        if self.backend != "postgresql":
            return
        try:
            import psycopg
        except ImportError:
            raise MissingExtra("PostgreSQL needs the 'postgres' extra: "
                               "pip install 'convlog[postgres]'") from None

        env = self._postgres_env()
        try:
            with psycopg.connect(
                    host=env["POSTGRES_HOST"], port=int(env["POSTGRES_PORT"]),
                    dbname=env["POSTGRES_DBNAME"], user=env["POSTGRES_USER"],
                    password=env["POSTGRES_PASSWORD"] or None, autocommit=True,
                    connect_timeout=int(self.options.get("connect_timeout", "10"))) as conn:
                if self.options.get("schema"):
                    self._ensure_schema(conn, self.options["schema"], create)
        except psycopg.Error as exc:
            reason = " ".join(str(exc).split())
            raise StorageError(f"cannot connect to PostgreSQL at {_redact(self.url)!r}: "
                               f"{reason}") from None

    def _ensure_schema(self, conn: Any, schema: str, create: bool) -> None:
        import psycopg
        from psycopg.sql import SQL, Identifier

        found = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s",
                             (schema,)).fetchone()
        if found:
            return
        if not create:
            raise StorageError(f"no schema {schema!r} in {_redact(self.url)!r}: a writing "
                               "command creates it")
        try:
            conn.execute(SQL("CREATE SCHEMA IF NOT EXISTS {}").format(Identifier(schema)))
        except psycopg.errors.UniqueViolation:
            pass  # another host created it at the same moment
        except psycopg.errors.InsufficientPrivilege as exc:
            role = self._postgres_env()["POSTGRES_USER"]
            reason = " ".join(str(exc).split())
            raise StorageError(
                f"schema {schema!r} does not exist and role {role!r} may not create it "
                f"({reason}): as the database's owner, run CREATE SCHEMA \"{schema}\" "
                f"AUTHORIZATION \"{role}\" (or GRANT CREATE ON DATABASE to the role)"
                ) from None

    def create_private(self) -> None:
        """Create a missing SQLite file 0600 whatever the umask: it holds the users'
        conversations, and SQLite gives its -wal and -shm files the same mode."""
        if self.backend == "sqlite" and self.path is not None:
            create_private(self.path)

    def exists(self) -> bool:
        """False for a SQLite file that is not there yet (opening it would create it);
        True for every other store (a server's, or one in memory)."""
        return not (self.backend == "sqlite" and self.path is not None
                    and not self.path.exists())

    def check_exists(self) -> None:
        """For read-only commands: a missing SQLite file is an error, not a new database."""
        if not self.exists():
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
        options = dict(parse_qsl(parts.query))
        for key, value in options.items():
            if key not in POSTGRES_OPTIONS and key != "views":
                raise UnsupportedURL(f"{_redact(url)!r}: unknown PostgreSQL option {key!r}; "
                                     f"known: {', '.join([*POSTGRES_OPTIONS, 'views'])}")
            if key in ("pool_size", "max_overflow", "connect_timeout", "lock_timeout") and (
                    whole_number(value) is None):
                raise UnsupportedURL(f"{_redact(url)!r}: {key} must be a whole number, "
                                     f"not {value!r}")
        return StorageConfig(url=url, backend="postgresql", options=options)
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
        if key == "timeout" and whole_number(value) is None:
            raise UnsupportedURL(f"{url!r}: timeout must be whole seconds, not {value!r}")
    if str(path) == ":memory:":
        raise UnsupportedURL(f"{url!r}: for an in-memory log use memory://")
    if path.exists() and path.is_dir():
        raise StorageError(f"{path} is a directory, not a database file")
    if not path.parent.exists():
        raise StorageError(f"cannot create a database at {path}: {path.parent} does not exist")
    return StorageConfig(url=url, backend="sqlite", path=path,
                         options={k: v.lower() for k, v in options.items()})


def create_private(path: Path) -> None:
    """Create `path` empty and 0600 whatever the umask, if it is missing: a SQLite file
    made from it keeps that mode, and SQLite gives its -wal and -shm files the same."""
    if path.exists():
        return
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:  # another process made it first
        pass
    except OSError:  # a missing directory and the like: sqlite3 says it better
        pass
