"""A newcomer's PostgreSQL URL works as written (issue 44, item 7): `?schema=NAME`
that does not exist yet is created by a writing open (a role that may not create it
is told to `CREATE SCHEMA`), a reading open creates nothing, and the views file of a
server's store lands in the per-user data directory, never in the current one."""

from __future__ import annotations

import stat
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

import convlog
from convlog.services.log import application
from convlog.storage.errors import StorageError
from tests.conftest import PG_HOST


def schema_exists(name: str) -> bool:
    with psycopg.connect(PG_HOST, autocommit=True) as admin:
        return admin.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s",
                             (name,)).fetchone() is not None


@pytest.fixture
def new_schema() -> Iterator[str]:
    """A schema name nothing has created (dropped afterwards if a test made it)."""
    name = f"convlog_new_{uuid.uuid4().hex[:12]}"
    try:
        yield name
    finally:
        with psycopg.connect(PG_HOST, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def test_a_schema_that_does_not_exist_is_created(new_schema: str, tmp_path: Path) -> None:
    """It failed: 'schema "..." does not exist'."""
    url = f"postgresql://postgres@127.0.0.1:5432/test?schema={new_schema}"
    with convlog.open(url, views=tmp_path / "v.duckdb") as log:
        log.conversation("k", user="u1").append(convlog.user("hello"))
    assert schema_exists(new_schema)
    with convlog.open(url, views=tmp_path / "v.duckdb", create=False) as log:
        assert [m.content for m in log.messages("k")] == ["hello"]


def test_hosts_starting_together_create_it_once(new_schema: str, tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    url = f"postgresql://postgres@127.0.0.1:5432/test?schema={new_schema}"

    def host(n: int) -> int:
        with convlog.open(url, views=tmp_path / f"v{n}.duckdb") as log:
            return log.conversation(f"k{n}").append(convlog.user("hi")).version

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(host, range(4))) == [2, 2, 2, 2]


def test_a_reading_open_of_a_missing_schema_creates_nothing(new_schema: str) -> None:
    url = f"postgresql://postgres@127.0.0.1:5432/test?schema={new_schema}"
    with pytest.raises(StorageError) as caught:
        convlog.open(url, create=False)
    assert f"no schema {new_schema!r}" in str(caught.value)
    assert not schema_exists(new_schema)


def test_a_role_that_may_not_create_it_is_told_to_create_schema(new_schema: str) -> None:
    role = f"convlog_nocreate_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_HOST, autocommit=True) as admin:
        admin.execute(f'CREATE ROLE "{role}" LOGIN')
    try:
        url = f"postgresql://{role}@127.0.0.1:5432/test?schema={new_schema}"
        with pytest.raises(StorageError) as caught:
            convlog.open(url)
        message = str(caught.value)
        assert f'CREATE SCHEMA "{new_schema}"' in message, message
        assert "permission denied" in message
        assert not schema_exists(new_schema)
    finally:
        with psycopg.connect(PG_HOST, autocommit=True) as admin:
            admin.execute(f'DROP ROLE "{role}"')


def test_the_views_of_a_server_store_go_to_the_user_data_directory(
        pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """They went to ./convlog-pg-<id>.duckdb, wherever the command ran."""
    data = tmp_path / "data"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    monkeypatch.delenv("CONVLOG_VIEWS", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    with convlog.open(pg_url) as log:
        log.append("pg", convlog.user("1"))
        assert [r.key for r in log.conversations()] == ["pg"]
        views = application(log).analytics.views.path
    assert list(work.iterdir()) == []
    assert views is not None and views.parent == data / "convlog" / "views"
    assert views.name.startswith("pg-") and views.suffix == ".duckdb" and views.exists()
    assert stat.S_IMODE(views.parent.stat().st_mode) == 0o700
