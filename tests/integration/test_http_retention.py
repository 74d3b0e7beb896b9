"""Retention over HTTP (issue 48): the store's policy (admin), a conversation's own
(its user may set it), a run with its dry run, through `convlog.Client` and
`convlog.AsyncClient` against a real server; and `convlog serve`'s schedule, which
runs the policy at start and every interval of the log's clock (the test moves it)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import convlog
from convlog.http.auth import Auth
from convlog.http.client import RemoteError
from convlog.services.retention import Schedule
from tests.clock import ManualClock
from tests.httpserver import ADMIN_TOKEN, ALICE_TOKEN, served

DAY = 86_400.0
P = convlog.RetentionPolicy


@pytest.fixture
def log(tmp_path: Path, clock: ManualClock) -> Iterator[convlog.ConversationLog]:
    with convlog.ConversationLog.with_options(f"sqlite:///{tmp_path / 'c.db'}",
                                              convlog.LogOptions(), clock=clock) as opened:
        yield opened


def test_policies_and_a_run_through_the_clients(log: convlog.ConversationLog,
                                                clock: ManualClock) -> None:
    auth = Auth(ADMIN_TOKEN, {"alice": ALICE_TOKEN})
    with served(log, auth) as url:
        with convlog.Client(url, token=ADMIN_TOKEN) as admin:
            assert admin.store_retention_policy().source == "none"
            assert admin.set_store_retention_policy(P(archive_after_days=7,
                                                      erase_after_days=30))
            assert admin.store_retention_policy().policy == P(archive_after_days=7,
                                                              erase_after_days=30)
            admin.conversation("bob:1", user="bob").append(convlog.user("bob's"))
        with convlog.Client(url, token=ALICE_TOKEN) as alice:
            conv = alice.conversation("alice:1")
            conv.append(convlog.user("alice's"))
            assert conv.retention_policy().source == "store"
            assert conv.set_retention_policy(P(archive_after_days=1))
            assert conv.retention_policy() == convlog.RetentionInForce(
                policy=P(archive_after_days=1), source="conversation")
            with pytest.raises(RemoteError) as refused:  # the store's needs the admin
                alice.set_store_retention_policy(P(erase_after_days=1))
            assert refused.value.status == 403
            with pytest.raises(RemoteError) as refused:
                alice.enforce_retention(dry_run=True)
            assert refused.value.status == 403
            with pytest.raises(convlog.UnknownConversation):  # not hers
                alice.get("bob:1").retention_policy()
            with pytest.raises(convlog.InvalidInput) as bad:
                conv.set_retention_policy(P(erase_after_days=-1))
            assert bad.value.field == "erase_after_days"
        clock.advance(2 * DAY)

        async def remote() -> None:
            async with convlog.AsyncClient(url, token=ADMIN_TOKEN) as admin:
                planned = await admin.enforce_retention(dry_run=True)
                assert [(a.key, a.action, a.source) for a in planned.actions] == [
                    ("alice:1", "archive", "conversation")]
                done = await admin.enforce_retention()
                assert done.actions == planned.actions and not done.dry_run
                assert (await (await admin.get("alice:1")).retention_policy()).source == (
                    "conversation")

        asyncio.run(remote())
        assert log.state("alice:1").status == "archived"
        assert log.state("bob:1").status == "active"
        # unknown fields are refused, naming the field
        answer = httpx.put(url + "/v1/retention", json={"erase_after_dayz": 3},
                           headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
        assert answer.status_code == 422 and "erase_after_dayz" in answer.text


def _until(condition: object, what: str) -> None:
    """Wait for the server's background task (a condition, never a duration)."""
    deadline = time.monotonic() + 10
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_serve_runs_the_policy_on_its_schedule(log: convlog.ConversationLog,
                                               clock: ManualClock) -> None:
    log.set_store_retention_policy(P(archive_after_days=1))
    log.conversation("a").append(convlog.user("hello"))
    schedule = Schedule(log.enforce_retention, clock, interval=2 * DAY)
    with served(log, retention=schedule, retention_poll=0.01):
        _until(lambda: schedule.runs == 1, "the run at start")
        assert schedule.last is not None and schedule.last.actions == []
        clock.advance(DAY + 1)  # idle a day: due, but the next run is a day away
        assert not schedule.due() and log.state("a").status == "active"
        clock.advance(DAY)  # the interval passed: the schedule runs
        _until(lambda: schedule.runs == 2, "the scheduled run")
        assert [a.key for a in schedule.last.actions] == ["a"]
        assert log.state("a").status == "archived"
        archived = log.events("a")[-1].event
        assert getattr(archived, "retention", None) is not None
