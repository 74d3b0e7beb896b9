"""The DuckDB view store: exactly-once catch-up, the catalog, costs, locking."""

from __future__ import annotations

import decimal
import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import duckdb
import pytest
from eventsourcing.persistence import TrackingRecorder
from eventsourcing.tests.persistence import TrackingRecorderTestCase

import convlog
from convlog.projections.catalog import CATALOG
from convlog.services.log import application
from convlog.views.duckdb import ViewStore
from tests.clock import ManualClock


class TestDuckDBTracking(TrackingRecorderTestCase):
    """eventsourcing's own contract for tracking recorders, against a real file."""

    def setUp(self) -> None:
        import tempfile

        self._dir = tempfile.TemporaryDirectory()
        self.addCleanup(self._dir.cleanup)

    def create_recorder(self) -> TrackingRecorder:
        return ViewStore(Path(self._dir.name) / "views.duckdb", [CATALOG])


def fill(url: str, conversations: int, turns: int) -> None:
    with convlog.open(url) as log:
        for c in range(conversations):
            conv = log.conversation(f"c{c}", user=f"u{c % 3}", agent="copilot")
            for t in range(turns):
                conv.append_turn([convlog.user(f"q{t}", id=f"{c}-{t}-q"),
                                  convlog.assistant(f"a{t}", id=f"{c}-{t}-a", model="gpt-4o",
                                                    usage=convlog.Usage(input_tokens=100,
                                                                        output_tokens=10))])


def counts(views: Path) -> tuple[int, int, int]:
    with duckdb.connect(str(views)) as con:
        messages = con.execute("SELECT count(*) FROM messages").fetchone()
        distinct = con.execute(
            "SELECT count(DISTINCT (conversation_id, version)) FROM messages").fetchone()
        summed = con.execute("SELECT sum(message_count) FROM sessions").fetchone()
    assert messages and distinct and summed
    return int(messages[0]), int(distinct[0]), int(summed[0])


def test_catalog_reads_its_own_writes(log: convlog.ConversationLog) -> None:
    log.conversation("a", user="u1", agent="copilot", channel="discord", title="T")
    assert [r.key for r in log.conversations()] == ["a"]
    log.append("a", convlog.user("hello"))
    (row,) = log.conversations()
    assert (row.user, row.agent, row.channel, row.title, row.message_count) == (
        "u1", "copilot", "discord", "T", 1)
    assert row.content_tokens > 0


def test_catalog_filters_order_and_status(log: convlog.ConversationLog) -> None:
    log.conversation("old", user="u1", agent="x")
    log.conversation("mid", user="u2", agent="y")
    log.conversation("new", user="u1", agent="y")
    assert [r.key for r in log.conversations()] == ["new", "mid", "old"]
    assert [r.key for r in log.conversations(user="u1")] == ["new", "old"]
    assert [r.key for r in log.conversations(agent="y", limit=1)] == ["new"]
    log.archive("mid")
    assert [r.key for r in log.conversations()] == ["new", "old"]
    assert {r.key: r.status for r in log.conversations(include_archived=True)}["mid"] == "archived"
    assert not log.can_resume("mid")
    assert log.can_resume("new")
    assert not log.can_resume("never-seen")
    log.reactivate("mid")
    assert log.can_resume("mid")


def test_costs_count_a_repeated_response_once_and_flag_unknown_prices(
        log: convlog.ConversationLog) -> None:
    usage = convlog.Usage(input_tokens=1_000_000, output_tokens=0)
    log.conversation("k", user="u1", agent="copilot").append_turn([
        convlog.user("q"),
        convlog.assistant("part 1", model="gpt-4o", usage=usage, response_id="r"),
        convlog.assistant("part 2", model="gpt-4o", usage=usage, response_id="r"),
        convlog.assistant("own price", model="gpt-4o", usage=usage,
                          cost_usd=decimal.Decimal("0.25")),
        convlog.assistant("mystery", model="no-such-model", usage=usage, agent="helper"),
    ])
    by_model = {r.group: r for r in log.costs(by="model")}
    gpt = by_model["gpt-4o"]
    assert gpt.input_tokens == 2_000_000  # the repeated response counted once
    assert gpt.cost_usd == pytest.approx(2.5 + 0.25)  # $2.50/MTok input, and the host's
    assert gpt.price_versions and gpt.price_versions[0].startswith("genai-prices")
    mystery = by_model["no-such-model"]
    assert mystery.cost_usd is None  # never zero
    assert mystery.cost_incomplete
    (row,) = log.conversations()
    assert row.cost_incomplete
    assert row.top_agents == ["copilot", "helper"]
    assert {r.group for r in log.costs(by="agent")} == {"copilot", "helper"}
    assert [r.group for r in log.costs(by="user")] == ["u1"]


def test_host_prices_override_the_table(tmp_path: Path) -> None:
    prices = {"my-llm": convlog.ModelPrice(input_per_mtok=1.0, output_per_mtok=2.0)}
    with convlog.open("memory://", prices=prices) as log:
        log.append("k", convlog.assistant("x", model="my-llm", usage=convlog.Usage(
            input_tokens=1_000_000, output_tokens=1_000_000)))
        (row,) = log.costs(by="model")
    assert row.cost_usd == pytest.approx(3.0)
    assert row.price_versions == ["host"]


def test_costs_since_a_date(log: convlog.ConversationLog) -> None:
    log.append("k", convlog.assistant("x", model="gpt-4o",
                                      usage=convlog.Usage(input_tokens=10)))
    assert log.costs(since=convlog_date(days=-1))
    assert log.costs(since=convlog_date(days=+1)) == []
    with pytest.raises(convlog.InvalidInput, match="cannot group costs by"):
        log.costs(by="planet")


def test_a_page_is_the_head_of_the_whole_catalog(clocked_log: convlog.ConversationLog,
                                                 clock: ManualClock) -> None:
    """A page is cut before its rows are joined with usage and agents (issue 45: the
    first page no longer grows with the catalog): each page is the head of the whole
    list, same rows, same figures, ties on activity broken by key, for every filter."""
    log = clocked_log
    for c in range(9):
        if c % 3:  # every third conversation shares its moment with the one before
            clock.advance(60)
        log.conversation(f"c{c}", user=f"u{c % 2}", agent="copilot")
        log.append_turn(f"c{c}", [
            convlog.user(f"q{c}", id=f"{c}-q"),
            convlog.assistant(f"a{c}", id=f"{c}-a", model="gpt-4o",
                              agent="helper" if c % 2 else None,
                              usage=convlog.Usage(input_tokens=100 + c, output_tokens=c))])
    log.archive("c4")
    for filters in ({}, {"user": "u1"}, {"agent": "copilot"}, {"include_archived": True}):
        whole = log.conversations(**filters)
        assert len(whole) >= 4
        for limit in (1, 3, len(whole), len(whole) + 5):
            assert log.conversations(limit=limit, **filters) == whole[:limit]
    # c5 and c6 were active at the same moment: the key decides
    assert [r.key for r in log.conversations(limit=4)] == ["c8", "c7", "c5", "c6"]


def convlog_date(days: int) -> date:

    return (datetime.now(UTC) + timedelta(days=days)).date()


def test_expire_archives_idle_conversations_only(clocked_log: convlog.ConversationLog,
                                                 clock: ManualClock) -> None:
    """Time passes on the log's clock (convlog.LogOptions.clock), not by sleeping."""
    log = clocked_log
    log.conversation("idle")
    log.conversation("busy")
    clock.advance(2 * 86400)
    cutoff_days = 1.0  # "idle" is two days past it, "busy" (touched now) is not
    log.append("busy", convlog.user("still here"))
    listed = [r.key for r in log.expire(idle_days=cutoff_days, dry_run=True)]
    assert listed == ["idle"]
    assert log.can_resume("idle")  # dry run changed nothing
    log.append("busy", convlog.user("and here"))
    assert [r.key for r in log.expire(idle_days=cutoff_days)] == ["idle"]
    assert not log.can_resume("idle")
    assert log.messages("busy")  # nothing deleted anywhere
    with pytest.raises(convlog.InvalidInput):
        log.expire(idle_days=0)


def test_views_are_a_cache_that_can_be_deleted(sqlite_url: str, tmp_path: Path) -> None:
    fill(sqlite_url, conversations=3, turns=4)
    with convlog.open(sqlite_url) as log:
        before = [(r.key, r.message_count, r.cost_usd) for r in log.conversations()]
    (tmp_path / "convlog.duckdb").unlink()
    with convlog.open(sqlite_url) as log:
        assert [(r.key, r.message_count, r.cost_usd) for r in log.conversations()] == before
        assert application(log).catalog.rebuild() == 3 * (1 + 8)
        assert [(r.key, r.message_count, r.cost_usd) for r in log.conversations()] == before


def view_rows(views: Path) -> dict[str, list[tuple[object, ...]]]:
    with duckdb.connect(str(views)) as con:
        tables = ("sessions", "messages", "conversation_usage", "conversation_agents")
        # USD sums are doubles: added in another order, the last bit may differ
        return {t: [tuple(round(v, 12) if isinstance(v, float) else v for v in row)
                    for row in con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall()]
                for t in tables}


def test_a_catch_up_in_many_small_batches_equals_one_in_a_single_batch(
        sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches are staged by a reader thread in two alternating slots while the
    previous one is applied: the rows must not depend on where batches are cut, even
    for a response whose records (usage repeated) land in different batches."""
    from convlog.views import duckdb as views_module

    fill(sqlite_url, conversations=5, turns=6)
    with convlog.open(sqlite_url) as log:
        usage = convlog.Usage(input_tokens=1000, output_tokens=50)
        for part in range(3):  # one response, three records, three turns
            log.append("c1", convlog.assistant(f"part {part}", id=f"r-{part}",
                                               model="gpt-4o", usage=usage,
                                               response_id="resp-1"))
    with convlog.open(sqlite_url) as log:
        assert application(log).catalog.rebuild() == 5 * (1 + 12) + 3
    whole = view_rows(tmp_path / "convlog.duckdb")
    monkeypatch.setattr(views_module, "BATCH", 4)
    with convlog.open(sqlite_url) as log:
        assert application(log).catalog.rebuild() == 68
    assert view_rows(tmp_path / "convlog.duckdb") == whole
    with convlog.open(sqlite_url) as log:
        (row,) = [r for r in log.costs(by="conversation") if r.group == "c1"]
    assert row.input_tokens == 6 * 100 + 1000  # the response's usage counted once


def test_a_corrupt_event_stops_the_catch_up_at_its_batch_naming_it(
        sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bad event in a later batch (staged ahead by the reader) fails the catch-up
    with a CorruptEvent naming it; the batches before it stay applied, exactly once."""
    import sqlite3

    from convlog.storage.errors import CorruptEvent
    from convlog.views import duckdb as views_module

    fill(sqlite_url, conversations=4, turns=3)  # 4 * (1 + 6) = 28 events
    db = str(tmp_path / "convlog.db")
    with sqlite3.connect(db) as raw:
        raw.execute("UPDATE stored_events SET state = CAST('{not json' AS BLOB) "
                    "WHERE rowid = 20")
        (stream, version) = raw.execute("SELECT originator_id, originator_version "
                                        "FROM stored_events WHERE rowid = 20").fetchone()
    monkeypatch.setattr(views_module, "BATCH", 5)  # the first batch is 1, then 5s
    with convlog.open(sqlite_url) as log, pytest.raises(CorruptEvent) as caught:
        application(log).catalog.refresh()
    assert f"position {version}" in str(caught.value) and stream in str(caught.value)
    with duckdb.connect(str(tmp_path / "convlog.duckdb")) as con:
        tracked = con.execute("SELECT notification_id FROM convlog_tracking").fetchone()
        applied = con.execute("SELECT count(*) FROM messages").fetchone()
    assert tracked == (16,)  # 1 + 5 + 5 + 5: the batch holding event 20 is not applied
    assert applied is not None and applied[0] == 16 - 4 + 1  # no half batch either


CATCH_UP = textwrap.dedent("""
    import sys, convlog
    from convlog.services.log import application
    from convlog.views import duckdb as views
    views.BATCH = 7  # many small transactions, so a kill lands between or inside them
    with convlog.open(sys.argv[1]) as log:
        print("ready", flush=True)
        application(log).catalog.refresh()
""")


def test_a_catch_up_killed_mid_batch_applies_every_event_exactly_once(
        sqlite_url: str, tmp_path: Path) -> None:
    fill(sqlite_url, conversations=20, turns=30)  # 20 * (1 + 60) = 1,220 events
    views = tmp_path / "convlog.duckdb"
    kills = 0
    for delay in (0.15, 0.3, 0.5, 0.8):
        proc = subprocess.Popen([sys.executable, "-c", CATCH_UP, sqlite_url],
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        proc.stdout.readline()
        time.sleep(delay)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
    assert kills >= 1, "the catch-up always finished before it could be killed"
    with convlog.open(sqlite_url) as log:
        application(log).catalog.refresh()
    assert counts(views) == (1200, 1200, 1200)


HOST = textwrap.dedent("""
    import sys, time, convlog
    with convlog.open(sys.argv[1]) as log:
        for i in range(int(sys.argv[2])):
            log.append("live", convlog.user(f"m{i}", id=f"m{i}"))
            if i % 10 == 0:
                log.conversations()  # the host itself uses the views too
        print("done", flush=True)
""")


def test_the_cli_works_while_a_host_process_writes(sqlite_url: str) -> None:
    fill(sqlite_url, conversations=1, turns=1)  # the database exists before the CLI runs
    host = subprocess.Popen([sys.executable, "-c", HOST, sqlite_url, "300"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    exe = str(Path(sys.executable).parent / "convlog")
    seen = []
    try:
        while host.poll() is None:
            run = subprocess.run([exe, "sessions", "--db", sqlite_url, "--json"],
                                 capture_output=True, text=True, timeout=60)
            assert run.returncode == 0, run.stderr
            seen.append(run.stdout)
    finally:
        out, err = host.communicate(timeout=60)
    assert host.returncode == 0, err
    assert "done" in out
    with convlog.open(sqlite_url) as log:
        live = [r for r in log.conversations() if r.key == "live"]
    assert [r.message_count for r in live] == [300]
    assert seen, "the CLI never ran while the host was writing"


BUSY_HOST = textwrap.dedent("""
    import sys, time, convlog
    with convlog.open(sys.argv[1]) as log:
        print("ready", flush=True)
        end = time.monotonic() + float(sys.argv[2])
        i = 0
        while time.monotonic() < end:
            log.append("busy", convlog.user(f"m{i}", id=f"m{i}"))
            log.conversations()  # never a second without using the views
            i += 1
        print(i, flush=True)
""")


def test_a_host_using_the_views_without_pause_does_not_starve_the_cli(
        sqlite_url: str) -> None:
    """The views file is one read-write process at a time, and a host keeps it open
    while it uses it. A host that queries the views without ever pausing for its
    keep-open second must still let the CLI in well within its 10 s lock wait (it
    held the file for its whole run, and the CLI failed)."""
    fill(sqlite_url, conversations=1, turns=1)
    host = subprocess.Popen([sys.executable, "-c", BUSY_HOST, sqlite_url, "14"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    exe = str(Path(sys.executable).parent / "convlog")
    try:
        assert host.stdout is not None and host.stdout.readline() == "ready\n"
        time.sleep(1.0)
        run = subprocess.run([exe, "sessions", "--db", sqlite_url, "--json"],
                             capture_output=True, text=True, timeout=60)
        still_busy = host.poll() is None
    finally:
        out, err = host.communicate(timeout=60)
    assert run.returncode == 0, run.stderr
    assert still_busy, "the host stopped before the CLI ran: nothing was tested"
    assert host.returncode == 0, err
    assert int(out.split()[-1]) > 0
