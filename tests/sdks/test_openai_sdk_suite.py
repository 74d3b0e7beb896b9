"""The OpenAI Agents SDK's OWN tests, from the sdist of the installed version, run with
every `SQLiteSession` of theirs replaced by convlog's session (plugins/
convlog_openai_swap.py): the runner with session memory (run, run_sync, streamed),
limits and settings, pop and clear, concurrency, the encrypted session wrapped
around ours, tool-failure history, max turns and soft cancel.

What is deselected tests SQLiteSession's own machinery, not the Session protocol:
its connection pool, file locks and rollbacks, rows corrupted by writing SQL into its
tables, and the private hooks (`_pop_item_with_validation`) that EncryptedSession and
compaction use only when the backend IS a SQLiteSession. Each group says why."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sdists import sdist

pytest.importorskip("agents")
PLUGINS = Path(__file__).parent / "plugins"

MODULES = [
    "tests/memory/test_session.py",
    "tests/memory/test_session_limit.py",
    "tests/extensions/memory/test_encrypt_session.py",
    "tests/test_tool_batch_failure_history.py",
    "tests/test_native_tool_failure_history.py",
    "tests/test_tool_failure_boundaries.py",
    "tests/test_soft_cancel.py",
    "tests/test_max_turns.py",
]
SQLITE_MACHINERY = [  # reach into SQLiteSession's connections, locks and tables
    "test_sqlite_session_close_closes_worker_thread_connections",
    "test_sqlite_session_reaps_connections_from_exited_worker_threads",
    "test_sqlite_session_closes_retired_connections_before_the_next_allocation",
    "test_sqlite_session_keeps_connections_of_live_worker_threads",
    "test_sqlite_session_closed_rejects_empty_add_items",  # its own message text
    "test_sqlite_session_pop_item_skips_corrupt_most_recent",
    "test_sqlite_session_pop_item_returns_none_after_dropping_only_corrupt_rows",
    "test_sqlite_session_get_items_limit_skips_corrupt_newest_rows",
    "test_sqlite_session_get_items_session_settings_limit_skips_corrupt_rows",
    "test_sqlite_session_file_lock_is_shared_across_instances",
    "test_sqlite_session_failed_add_items_releases_write_lock",
    "test_sqlite_session_failed_clear_session_rolls_back",
    "test_sqlite_session_failed_pop_item_releases_write_lock",
    "test_sqlite_session_rollback_failure_evicts_connection",
    "test_sqlite_session_close_retries_quarantined_connection",
    "test_sqlite_session_post_commit_cancellation_propagates_after_known_outcome",
]
SQLITE_ONLY_HOOKS = [  # EncryptedSession's atomic pop exists only over a real SQLiteSession
    "test_encrypted_compaction_skips_unencrypted_stored_history",
    "test_encrypted_pop_wrong_key_preserves_recoverable_history",
    "test_encrypted_pop_rechecks_authentication_after_expired_tail",
    "test_encrypted_pop_authentication_is_atomic_with_concurrent_mutations",
    "test_encrypted_pop_wrong_key_preserves_row_identity",
    "test_encrypted_pop_cancellation_waits_for_authentication_rollback",
]

PAIRED_BY_CONVLOG = [  # asserts SQLiteSession hands back an output whose call the limit
    # cut (its runner then drops it); convlog's session already leaves it out (issue 28:
    # a limit never starts with an output without its call). The run in that test,
    # the model's input, is the same either way: tests/sdks/test_openai_pairs.py
    "test_session_limit_drops_unmatched_history_function_call_output",
]


@pytest.mark.slow
def test_the_sdk_session_tests_pass_on_convlog(tmp_path: Path) -> None:
    root = sdist("openai-agents", "tests/memory/test_session.py")
    deselect = " or ".join(SQLITE_MACHINERY + SQLITE_ONLY_HOOKS + PAIRED_BY_CONVLOG)
    env = {**os.environ, "PYTHONPATH": f"{PLUGINS}{os.pathsep}{root}",
           "OPENAI_AGENTS_DISABLE_TRACING": "1", "CONVLOG_SWAP_REPORT": str(tmp_path / "swap")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "convlog_openai_swap",
         "-p", "no:cacheprovider",
         "-k", f"not ({deselect})", *MODULES],
        cwd=root, env=env, capture_output=True, text=True, timeout=600)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    passed = int(summary.split(" passed")[0].split()[-1])
    assert passed >= 300, summary  # the swap really ran the suite, not a handful
    assert " failed" not in summary and "error" not in summary, summary
    modules, sessions = map(int, (tmp_path / "swap").read_text().split())
    assert modules == len(MODULES) and sessions >= 100, (modules, sessions)
