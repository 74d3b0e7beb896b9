"""`convlog record` under random input (hypothesis): clean errors only, and nothing
written on error.

Batches of random JSON values, random bytes and near-valid lines (the strategies of
tests/unit/test_properties.py) are recorded with the real CLI entry point into a real
SQLite file, into a fresh key or into a conversation that already has events. The
outcome must be either success (exit 0; the batch was valid) or exit 1 with exactly
one line on stderr, ``convlog: error: ...``, never a traceback or an internal error,
and then the conversation is exactly as before (a fresh key does not exist).
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

import convlog
from convlog.cli.main import main
from convlog.domain.errors import InvalidInput
from convlog.domain.events import Recorded
from convlog.services.jsonlines import parse_lines
from tests.unit.test_properties import NESTED, batches

SEEDED = "seeded:conversation"


@dataclass
class Env:
    url: str
    workdir: Path
    log: convlog.ConversationLog


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    workdir = tmp_path_factory.mktemp("record-fuzz")
    url = f"sqlite:///{workdir / 'fuzz.db'}"
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("CONVLOG_DEBUG", raising=False)  # internal errors must stay visible
        patch.delenv("CONVLOG_URL", raising=False)
        with convlog.open(url) as log:
            log.conversation(SEEDED, user="u1", agent="a1")
            log.append_turn(SEEDED, [convlog.user("hi", id="m-1"),
                                     convlog.assistant("hey", id="m-2")])
            yield Env(url, workdir, log)


def recorded(log: convlog.ConversationLog, key: str) -> list[Recorded] | None:
    return log.events(key) if log.exists(key) else None


def record(env: Env, key: str, data: bytes) -> tuple[int, str, str, Path]:
    path = env.workdir / "batch.jsonl"
    path.write_bytes(data)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(["record", key, str(path), "--db", env.url])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), err.getvalue(), path


def check_record(env: Env, key: str, data: bytes) -> None:
    before = recorded(env.log, key)
    try:
        parse_lines(data, "batch")
        parses = True
    except InvalidInput:
        parses = False
    code, out, err, path = record(env, key, data)
    event(f"exit {code}, parses: {parses}")  # shown by --hypothesis-show-statistics
    after = recorded(env.log, key)
    assert "Traceback" not in err, err
    assert "internal error" not in err, err
    if code == 0:
        assert parses, ("a batch parse_lines rejects was recorded", data)
        assert err == ""
        assert after is not None and after[:len(before or [])] == (before or [])
        return
    assert code == 1, (code, err)
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("convlog: error: "), lines[0]
    if not parses:
        assert f"{path}:" in lines[0], lines[0]  # names the file and line
    assert after == before, "a failed batch wrote something"


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=batches, fresh=st.booleans())
@example(data=b'{"type": "message", "role": "user", "content": "ok", "id": "new-1"}\n'
              b'{"type": "message", "role": "system", "content": "x"}', fresh=False)
@example(data=b'{"type": "session_archived"}', fresh=True)
@example(data=b'{"type": "history_injected", "from_version": 1, "to_version": 99, '
              b'"message_count": 1, "tokens": 1, "format": "xml", "text": "t"}', fresh=False)
@example(data=b'{"type": "message", "role": "user", "content": "x", "id": "m-1"}\n'
              b'{"type": "message", "role": "user", "content": "y", "id": "m-1"}', fresh=False)
def test_record_gives_clean_errors_only_and_writes_nothing_on_error(
        env: Env, data: bytes, fresh: bool) -> None:
    check_record(env, f"fresh:{uuid.uuid4().hex}" if fresh else SEEDED, data)


def test_record_rejects_deeply_nested_json_cleanly(env: Env) -> None:
    key = f"fresh:{uuid.uuid4().hex}"
    line = b'{"type": "session_started", "metadata": {"a": ' + NESTED + b"}}\n"
    code, _, err, path = record(env, key, line)
    assert "internal error" not in err, err
    assert (code, err.count("\n")) == (1, 1), err
    assert err.startswith(f"convlog: error: {path}:1: "), err
    assert not env.log.exists(key)
