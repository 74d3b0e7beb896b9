"""The host's memory policy set from each command-line surface is recorded in the
log (issue 26): `convlog serve` and `convlog acp` flags, `convlog record`, and the
environment variables. Before the fix none of them could set it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

import convlog
from convlog.domain.events import MemoryPolicySet
from tests.e2e.acp_harness import env, one_turn
from tests.httpserver import spawn_serve

POLICY = ["--max-injected-blocks-in-history", "1", "--context-window-depth", "5"]


def policies(db: str) -> list[tuple[int, int]]:
    with convlog.open(db, create=False, preload_tokenizer=False) as log:
        found = []
        for key in _keys(log):
            found += [(r.event.max_injected_blocks_in_history, r.event.context_window_depth)
                      for r in log.events(key) if isinstance(r.event, MemoryPolicySet)]
        return found


def _keys(log: convlog.ConversationLog) -> list[str]:
    return [s.key for s in log.conversations()]


def test_serve_flags_set_the_policy_and_the_memory_endpoint_reports_it(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'c.db'}"
    with spawn_serve(db, tmp_path, *POLICY) as (url, _), convlog.Client(url) as client:
        client.conversation("k").append(convlog.user("hi"))
        state = httpx.get(url + "/v1/conversations/k/memory").json()
        assert (state["max_injected_blocks_in_history"], state["context_window_depth"]) == (1, 5)
    assert policies(db) == [(1, 5)]


def test_the_environment_sets_the_policy_of_convlog_record(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'c.db'}"
    line = json.dumps({"type": "message", "role": "user", "content": "hi"})
    done = subprocess.run(
        [sys.executable, "-m", "convlog.cli.main", "record", "--db", db, "k"],
        input=line + "\n",
        env={**env(), "CONVLOG_MAX_INJECTED_BLOCKS_IN_HISTORY": "0",
             "CONVLOG_CONTEXT_WINDOW_DEPTH": "2"}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert policies(db) == [(0, 2)]


def test_a_bad_setting_is_a_clear_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "convlog.cli.main", "sessions", "--db",
         f"sqlite:///{tmp_path / 'c.db'}"],
        env={**env(), "CONVLOG_MAX_INJECTED_BLOCKS_IN_HISTORY": "many"},
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "CONVLOG_MAX_INJECTED_BLOCKS_IN_HISTORY" in done.stderr and "many" in done.stderr


def test_acp_flags_set_the_policy(tmp_path: Path) -> None:
    pytest.importorskip("acp")
    db = f"sqlite:///{tmp_path / 'acp.db'}"

    one_turn(db, tmp_path, *POLICY)
    assert policies(db) == [(1, 5)]
