"""The retention options of a process (issue 48) are recorded as the store's policy
by the long-running surfaces too: `convlog acp` and `convlog serve` flags, and the
environment; a policy set on purpose is left alone."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

import convlog
from tests.e2e.acp_harness import one_turn
from tests.httpserver import spawn_serve

P = convlog.RetentionPolicy


def store_policy(db: str) -> convlog.RetentionInForce:
    with convlog.open(db, create=False) as log:
        return log.store_retention_policy()


def test_acp_flags_set_the_store_policy(tmp_path: Path) -> None:
    pytest.importorskip("acp")
    db = f"sqlite:///{tmp_path / 'acp.db'}"

    one_turn(db, tmp_path, "--archive-after-days", "7", "--erase-after-days", "30")
    assert store_policy(db) == convlog.RetentionInForce(
        policy=P(archive_after_days=7, erase_after_days=30), source="store")


def test_serve_flags_and_environment_and_a_policy_set_on_purpose(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'c.db'}"
    with spawn_serve(db, tmp_path, "--max-messages", "100",
                     env={"CONVLOG_ERASE_AFTER_DAYS": "90"}) as (url, _):
        shown = httpx.get(url + "/v1/retention").json()
        assert shown == {"policy": {"erase_after_days": 90.0, "max_messages": 100},
                         "source": "store"}
        answer = httpx.put(url + "/v1/retention", json={"archive_after_days": 3})
        assert answer.status_code == 200, answer.text
    with spawn_serve(db, tmp_path, "--max-messages", "5"):  # pinned: left alone
        pass
    assert store_policy(db).policy == P(archive_after_days=3)
