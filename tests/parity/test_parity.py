"""Every rule of tests/parity/rules.py on every surface, on SQLite and PostgreSQL.

The cells are the product RULES x SURFACES x BACKENDS, so a new rule runs on every
surface and a new surface on every rule without anyone listing it. A surface that
cannot do an operation a rule asks for says so (`NotHere`), and each such gap must
be declared in `NOT_HERE` with its reason: an undeclared gap fails its cell, so a
surface cannot skip a rule by accident. HTTP cells talk to a real `convlog serve`
process (one per backend and worker), CLI cells run the `convlog` command, ACP cells
a real `convlog acp` proxy in front of a real ACP agent.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.conftest import PG_HOST
from tests.httpserver import spawn_serve
from tests.parity.rules import RULES, Rule
from tests.parity.surfaces import (
    ACP,
    CLI,
    DEPTH,
    AsyncLibrary,
    Client,
    Library,
    NotHere,
    RawHTTP,
    Surface,
)

SURFACES = ["python", "python-async", "client", "http", "cli", "acp"]
BACKENDS = ["sqlite", "postgres"]
NOT_HERE: dict[tuple[str, str], str] = {  # (surface, operation): why it has none
    ("cli", "messages"): "`convlog show` is the transcript (every epoch, with its clear "
                         "markers), not a message read; `context` is the CLI's read",
    ("acp", "start"): "an ACP host starts sessions with session/new, through the agent",
    ("acp", "record_injection"): "the proxy injects only within its own resume",
    ("cli", "set_memory_policy"): "the CLI sets its process's policy (--context-window-"
                                  "depth), not a conversation's",
    ("cli", "memory_cooldown"): "no CLI command reports memory (its writes are checked)",
    ("acp", "set_memory_policy"): "ACP has no memory calls",
    ("acp", "inject_memory"): "ACP has no memory calls",
    ("acp", "memory_cooldown"): "ACP has no memory calls",
    ("acp", "append"): "an ACP host's messages go through the agent's prompts",
    ("acp", "clear"): "ACP has no clear",
    ("python", "send_line"): "the library takes typed values (Message), not JSON",
    ("python-async", "send_line"): "the library takes typed values (Message), not JSON",
    ("client", "send_line"): "the Client encodes typed values: it cannot send a key twice",
    ("acp", "send_line"): "ACP's JSON-RPC is decoded by the ACP SDK's schemas",
    ("acp", "summary"): "ACP has no summary call (session/list gives titles and times)",
    ("acp", "markdown_context"): "the proxy injects the xml format within its resume",
}


class Backend:
    """One database, the `convlog serve` process on it, and the observer."""

    def __init__(self, url: str, tmp: Path, serve_url: str):
        self.url, self.tmp = url, tmp
        self._serve = spawn_serve(serve_url, tmp, "--context-window-depth", str(DEPTH))
        self.base_url, _ = self._serve.__enter__()
        self.observer = Library(url, tmp / "observer.duckdb")

    def close(self) -> None:
        self.observer.close()
        self._serve.__exit__(None, None, None)


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[Backend]:
    tmp = tmp_path_factory.mktemp(f"parity-{request.param}")
    if request.param == "sqlite":
        url = f"sqlite:///{tmp / 'parity.db'}"
        opened = Backend(url, tmp, url)
        try:
            yield opened
        finally:
            opened.close()
        return
    schema = f"convlog_parity_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_HOST, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
    url = f"postgresql://postgres@127.0.0.1:5432/test?schema={schema}"
    try:
        opened = Backend(url, tmp, f"{url}&views={tmp / 'server.duckdb'}")
        try:
            yield opened
        finally:
            opened.close()
    finally:
        with psycopg.connect(PG_HOST, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')


def make(name: str, b: Backend) -> Surface:
    cli_url = b.url if b.url.startswith("sqlite") else f"{b.url}&views={b.tmp / 'cli.duckdb'}"
    factories: dict[str, Callable[[], Surface]] = {
        "python": lambda: Library(b.url, b.tmp / f"{uuid.uuid4().hex}.duckdb"),
        "python-async": lambda: AsyncLibrary(b.url, b.tmp / f"{uuid.uuid4().hex}.duckdb"),
        "client": lambda: Client(b.base_url),
        "http": lambda: RawHTTP(b.base_url),
        "cli": lambda: CLI(cli_url, b.tmp),
        "acp": lambda: ACP(cli_url, b.tmp),
    }
    return factories[name]()


class Declared(Surface):
    """The surface under test, failing any gap `NOT_HERE` does not declare."""

    def __init__(self, inner: Surface):
        self.inner = inner
        self.name = inner.name

    def key(self) -> str:
        return self.inner.key()

    def __getattribute__(self, name: str) -> Any:
        if name in ("inner", "name", "key") or name.startswith("_"):
            return object.__getattribute__(self, name)
        found = getattr(self.inner, name)
        if not callable(found):
            return found

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return found(*args, **kwargs)
            except NotHere:
                assert (self.inner.name, name) in NOT_HERE, (
                    f"{self.inner.name} has no {name!r}: declare it in NOT_HERE, with why")
                raise
        call.__name__ = name
        return call


@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_rule_holds_on_surface(rule: Rule, surface: str, backend: Backend) -> None:
    s = make(surface, backend)
    try:
        rule.check(Declared(s), backend.observer)
    except NotHere as gap:  # declared (Declared checked it): nothing here to hold
        pytest.skip(f"{surface} cannot: {gap}")
    finally:
        s.close()


def test_every_rule_is_listed_in_the_guarantees() -> None:
    text = (Path(__file__).parents[2] / "docs" / "guarantees.md").read_text()
    missing = [r.id for r in RULES if f"`{r.id}`" not in text]
    assert not missing, f"docs/guarantees.md does not list: {missing}"
