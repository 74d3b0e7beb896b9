"""The Claude Agent SDK's own checks of a SessionStore, against convlog's store:

1. its shipped conformance suite (`claude_agent_sdk.testing.
   run_session_store_conformance`, every optional method included), on SQLite files,
   on memory:// and on PostgreSQL;
2. its OWN tests from the sdist of the installed version, with every
   `InMemorySessionStore` of theirs replaced by convlog's store (plugins/
   convlog_claude_swap.py): resume materialization, listing, summaries, rename and
   tag, import, the transcript mirror, under asyncio and trio.

Deselected from 2., each for a reason that is not the protocol: tests that set
InMemorySessionStore's private `_mtimes`, that expect several sessions appended within
one millisecond to get strictly ordered epoch-ms mtimes (convlog stamps the write
time, as a database's `updated_at` would), and that count loads in flight after a
fixed number of event-loop ticks (a store doing its I/O in a worker thread needs more
ticks than a dict does)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sdists import sdist

pytest.importorskip("claude_agent_sdk")
from claude_agent_sdk.testing import run_session_store_conformance

from convlog.integrations.claude_agent_sdk import ConvlogSessionStore

PLUGINS = Path(__file__).parent / "plugins"
MODULES = [
    "tests/test_session_store_conformance.py",
    "tests/test_session_helpers_store.py",
    "tests/test_session_import.py",
    "tests/test_session_resume.py",
    "tests/test_session_summary.py",
    "tests/test_transcript_mirror.py",
    "tests/test_session_mutations.py",
    "tests/test_sessions.py",
]
NOT_THE_PROTOCOL = [
    "test_continue_picks_most_recent",  # sets InMemorySessionStore._mtimes
    "test_continue_skips_sidechain_sessions",  # sets _mtimes
    "test_continue_tie_break_is_deterministic",  # sets _mtimes
    "test_fast_path_limit_offset",  # sub-millisecond appends, strictly ordered mtimes
    "test_mixed_sessions_gap_filled",  # the same
    "test_sidechain_summary_does_not_consume_page_slot",  # the same
    "test_fast_path_skips_load",  # the same (two sessions, newest first by mtime)
    "test_load_concurrency_is_bounded",  # loads in flight after 5 event-loop ticks
    "test_gap_fill_bounded_concurrency",  # the same
    "test_cancelled_after_mkdtemp_cleans_temp_dir",  # progress within 50 ticks
]


def test_conformance_on_sqlite_files(tmp_path: Path) -> None:
    made: list[ConvlogSessionStore] = []

    def fresh() -> ConvlogSessionStore:  # the suite asks for a fresh store per contract
        made.append(ConvlogSessionStore(f"sqlite:///{tmp_path / f'{len(made)}.db'}"))
        return made[-1]

    asyncio.run(run_session_store_conformance(fresh))
    assert len(made) >= 14  # every contract ran, optional ones included
    for store in made:
        store.close()


def test_conformance_in_memory() -> None:
    asyncio.run(run_session_store_conformance(lambda: ConvlogSessionStore("memory://")))


def test_conformance_on_postgresql(pg_url: str, tmp_path: Path) -> None:
    import convlog

    made: list[convlog.ConversationLog] = []

    async def fresh() -> ConvlogSessionStore:
        # one schema, and a fresh store per contract: wipe what the last one wrote
        if made:
            made[-1].close()
        log = convlog.open(pg_url, views=str(tmp_path / f"v{len(made)}.duckdb"))
        made.append(log)
        store = ConvlogSessionStore(log)
        for project in ("proj", "A", "B", "other", "other-proj"):
            for row in await store.list_sessions(project):
                await store.delete({"project_key": project, "session_id": row["session_id"]})
        return store

    asyncio.run(run_session_store_conformance(fresh))
    made[-1].close()


@pytest.mark.slow
def test_the_sdk_session_store_tests_pass_on_convlog(tmp_path: Path) -> None:
    root = sdist("claude-agent-sdk", "tests/test_session_store_conformance.py")
    env = {**os.environ, "PYTHONPATH": str(PLUGINS),
           "CONVLOG_SWAP_REPORT": str(tmp_path / "swap")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-o", "pythonpath=", "-p", "no:cacheprovider",
         "-p", "convlog_claude_swap", "-k", f"not ({' or '.join(NOT_THE_PROTOCOL)})",
         *MODULES], cwd=root, env=env, capture_output=True, text=True, timeout=900)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert int(summary.split(" passed")[0].split()[-1]) >= 450, summary
    modules, stores = map(int, (tmp_path / "swap").read_text().split())
    assert modules >= 6 and stores >= 100, (modules, stores)
