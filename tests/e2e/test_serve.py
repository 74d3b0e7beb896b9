"""`convlog serve` as real processes: its OpenAPI document, the refusal to serve an
open log beyond loopback, schemathesis against the running server, and two servers
on one PostgreSQL database taking concurrent writers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

import convlog
from tests.httpserver import ADMIN_TOKEN, spawn_serve

ROOT = Path(__file__).resolve().parents[2]
TOKEN_ENV = {"CONVLOG_TOKEN": ADMIN_TOKEN}


def test_the_committed_openapi_document_is_the_served_one(tmp_path: Path) -> None:
    with spawn_serve(f"sqlite:///{tmp_path / 'c.db'}", tmp_path) as (url, _):
        served = httpx.get(url + "/openapi.json").content
    committed = (ROOT / "docs" / "openapi.json").read_bytes()
    assert served.strip() == committed.strip(), (
        "docs/openapi.json is stale: python -m convlog.http > docs/openapi.json")


def test_the_default_is_sqlite_in_the_working_directory_and_stops_on_sigterm(
        tmp_path: Path) -> None:
    with spawn_serve(None, tmp_path) as (url, proc), convlog.Client(url) as client:
        conv = client.conversation("k")
        conv.append(convlog.user("hi"))
        with httpx.stream("GET", url + "/v1/conversations/k/stream", timeout=10) as live:
            assert live.status_code == 200  # an open stream must not hold the exit
            proc.terminate()
            # uvicorn shuts down, then re-raises the signal it caught
            assert proc.wait(15) in (0, -signal.SIGTERM)
    with convlog.open(f"sqlite:///{tmp_path / 'convlog.db'}", create=False) as log:
        assert [m.content for m in log.messages("k")] == ["hi"]


def test_serving_beyond_loopback_needs_a_token(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CONVLOG_TOKEN"}
    done = subprocess.run(
        [sys.executable, "-m", "convlog.cli.main", "serve", "--db",
         f"sqlite:///{tmp_path / 'c.db'}", "--host", "0.0.0.0", "--port", "0"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "needs a token" in done.stderr and "CONVLOG_TOKEN" in done.stderr


def test_a_served_process_takes_tokens_from_the_environment(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    tokens.write_text('{"alice": "alice-token-0123456789"}')
    with spawn_serve(f"sqlite:///{tmp_path / 'c.db'}", tmp_path, "--user-tokens",
                     str(tokens), env=TOKEN_ENV) as (url, _):
        assert httpx.get(url + "/v1/conversations").status_code == 401
        with convlog.Client(url, token="alice-token-0123456789") as alice:
            alice.conversation("a").append(convlog.user("hi"))
        with convlog.Client(url, token=ADMIN_TOKEN) as admin:
            assert admin.get("a").info().user == "alice"
    assert (tmp_path / "c.db").exists()


@pytest.mark.slow
def test_schemathesis_finds_no_server_error_and_only_problem_documents(tmp_path: Path
                                                                       ) -> None:
    checks = ",".join([
        "not_a_server_error", "status_code_conformance", "content_type_conformance",
        "response_headers_conformance", "response_schema_conformance",
        "negative_data_rejection", "missing_required_header", "unsupported_method",
        "problem_documents"])  # ours: tests/e2e/schemathesis_hooks.py
    config = tmp_path / "schemathesis.toml"  # an event stream is read for its timeout
    config.write_text('[[operations]]\ninclude-path = "/v1/conversations/{key}/stream"\n'
                      'request-timeout = 2\n')  # in all, never ending: 2 s, not 30
    with spawn_serve(f"sqlite:///{tmp_path / 'c.db'}", tmp_path, env=TOKEN_ENV) as (url, _):
        done = subprocess.run(
            [sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "run",
             url + "/openapi.json",
             "-H", f"Authorization: Bearer {ADMIN_TOKEN}", "--max-examples", "20",
             "--generation-deterministic", "--checks", checks,
             # a hang still fails; a loaded machine's first count (the vocabulary
             # loads, seconds under load 14) does not: 2 s failed GET /v1/context there
             "--request-timeout", "30"],
            cwd=tmp_path,  # its cache (.schemathesis/) stays out of the checkout
            env={**os.environ, "SCHEMATHESIS_HOOKS": "tests.e2e.schemathesis_hooks",
                 "PYTHONPATH": str(ROOT), "NO_COLOR": "1"},
            capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    # every operation of the document was exercised (a new endpoint counts itself in)
    document = json.loads((ROOT / "docs" / "openapi.json").read_text(encoding="utf-8"))
    operations = sum(1 for path in document["paths"].values() for method in path
                     if method in ("get", "put", "post", "delete", "patch"))
    assert f"Tested: {operations}" in done.stdout and " passed" in done.stdout


@pytest.mark.slow
def test_two_servers_on_one_postgresql_database_lose_and_duplicate_nothing(
        tmp_path: Path, pg_url: str) -> None:
    writers, turns = 8, 25
    with spawn_serve(pg_url + f"&views={tmp_path / 'a.duckdb'}", tmp_path, env=TOKEN_ENV
                     ) as (a, _), \
            spawn_serve(pg_url + f"&views={tmp_path / 'b.duckdb'}", tmp_path, env=TOKEN_ENV
                        ) as (b, _):
        errors: list[BaseException] = []

        def write(n: int) -> None:
            try:
                with convlog.Client(a if n % 2 else b, token=ADMIN_TOKEN) as client:
                    shared, own = client.conversation("shared"), client.conversation(f"w{n}")
                    for t in range(turns):
                        turn = [convlog.user(f"{n}/{t}", id=f"{n}-{t}-q"),
                                convlog.assistant("ok", id=f"{n}-{t}-a")]
                        shared.append_turn(turn)
                        own.append_turn(turn)
                        if t % 5 == 0:  # a retry through the OTHER server: skipped
                            with convlog.Client(b if n % 2 else a, token=ADMIN_TOKEN) as other:
                                assert other.get("shared").append_turn(turn).appended == []
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        assert not errors, errors
        with convlog.Client(a, token=ADMIN_TOKEN) as client:
            ids = [m.message_id for m in client.get("shared").messages()]
            assert len(ids) == len(set(ids)) == writers * turns * 2
            for n in range(writers):
                own = [m.message_id for m in client.get(f"w{n}").messages()]
                assert own == [f"{n}-{t}-{r}" for t in range(turns) for r in "qa"]
            for n in range(writers):  # each writer's own order holds in the shared one
                mine = [i for i in ids if i.startswith(f"{n}-")]
                assert mine == [f"{n}-{t}-{r}" for t in range(turns) for r in "qa"]


def test_a_stream_on_one_server_sees_writes_through_another(tmp_path: Path, pg_url: str
                                                           ) -> None:
    with spawn_serve(pg_url + f"&views={tmp_path / 'a.duckdb'}", tmp_path, env=TOKEN_ENV
                     ) as (a, _), \
            spawn_serve(pg_url + f"&views={tmp_path / 'b.duckdb'}", tmp_path, env=TOKEN_ENV
                        ) as (b, _), \
            convlog.Client(a, token=ADMIN_TOKEN) as reader, \
            convlog.Client(b, token=ADMIN_TOKEN) as writer:
        reader.conversation("ui")
        seen: list[str] = []
        done = threading.Event()

        def follow() -> None:
            for item in reader.get("ui").follow(timeout=30):
                seen.append(getattr(item.event, "message_id", item.event.event_name()))
                if len(seen) == 3:
                    done.set()
                    return

        thread = threading.Thread(target=follow, daemon=True)
        thread.start()
        writer.get("ui").append_turn([convlog.user("hi", id="q"),
                                      convlog.assistant("hello", id="a")])
        assert done.wait(30), seen
        assert seen == ["session_started", "q", "a"]
