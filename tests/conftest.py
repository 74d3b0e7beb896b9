"""Shared fixtures. Tests use real storage: in-memory POPO, SQLite files, and this
machine's real PostgreSQL (never mocked; .ci/run starts it when it is down)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

import convlog
from convlog.domain.clock import SYSTEM_CLOCK, Clock
from tests.clock import ManualClock
from tests.pgcluster import PrivateCluster

PG_HOST = os.environ.get("CONVLOG_TEST_PG", "host=127.0.0.1 port=5432 dbname=test user=postgres")
BACKENDS = ["memory", "sqlite", "postgres"]


@pytest.fixture(autouse=True, scope="session")
def user_data_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The suite's own per-user data directory (`$XDG_DATA_HOME`): the views of a
    PostgreSQL store opened without ``?views=`` land there (convlog.views.duckdb.
    views_home), never in the home of whoever runs the tests."""
    home = tmp_path_factory.mktemp("user-data")
    before = os.environ.get("XDG_DATA_HOME")
    os.environ["XDG_DATA_HOME"] = str(home)
    yield home
    if before is None:
        os.environ.pop("XDG_DATA_HOME", None)
    else:
        os.environ["XDG_DATA_HOME"] = before


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'convlog.db'}"


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A PostgreSQL URL on a fresh schema of the `test` database, dropped afterwards."""
    schema = f"convlog_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_HOST, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield f"postgresql://postgres@127.0.0.1:5432/test?schema={schema}"
    finally:
        with psycopg.connect(PG_HOST, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture
def private_pg() -> Iterator[PrivateCluster]:
    """A PostgreSQL server of this test's own (tests.pgcluster), started: for tests
    that stop, restart or break the server, never the shared one."""
    cluster = PrivateCluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()


def open_backend(backend: str, tmp_path: Path, request: pytest.FixtureRequest,
                 clock: Clock = SYSTEM_CLOCK) -> convlog.ConversationLog:
    """A log on `backend` (memory, sqlite, postgresql) reading time from `clock`."""
    if backend == "memory":
        url, views = "memory://", None
    elif backend == "sqlite":
        url, views = f"sqlite:///{tmp_path / 'c.db'}", None
    else:
        url, views = request.getfixturevalue("pg_url"), str(tmp_path / "views.duckdb")
    return convlog.ConversationLog.with_options(url, convlog.LogOptions(views=views),
                                                clock=clock)


@pytest.fixture(params=BACKENDS)
def log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[convlog.ConversationLog]:
    """The storage contract: every test using this fixture runs on every backend."""
    with open_backend(request.param, tmp_path, request) as opened:
        yield opened


@pytest.fixture
def clock() -> ManualClock:
    """Time that passes only when the test advances it."""
    return ManualClock()


@pytest.fixture(params=BACKENDS)
def clocked_log(request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock
                ) -> Iterator[convlog.ConversationLog]:
    """`log`, reading time from the test's `clock`."""
    with open_backend(request.param, tmp_path, request, clock) as opened:
        yield opened
