"""Retention (issue 48): the policy set per store and per conversation, carried out
by `enforce_retention` with a moved clock (never sleeping), its dry run, caps, and
an erasure that leaves no text in any file (SQLite db and -wal, PostgreSQL's table
files, the views, exports), on plain and encrypted stores."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

import convlog
from convlog.domain.conversation import Expire, conversation_id
from convlog.domain.events import ConversationArchived, MessageAppended
from convlog.domain.retention import STORE_STREAM
from convlog.services.log import application
from tests.clock import ManualClock
from tests.crypto.helpers import (
    canaries,
    files_under,
    found_in_files,
    no_key,
    record_with_canaries,
    use_key,
)

DAY = 86_400.0
P = convlog.RetentionPolicy


def _said(log: convlog.ConversationLog, key: str) -> list[object]:
    """The content of every message event of `key`, every epoch."""
    return [r.event.content for r in log.events(key)
            if isinstance(r.event, MessageAppended)]


def _topics(log: convlog.ConversationLog, key: str) -> list[str]:
    return [type(r.event).event_name() for r in log.events(key)]


def test_the_store_policy_and_a_conversations_own(clocked_log: convlog.ConversationLog,
                                                  clock: ManualClock) -> None:
    log = clocked_log
    assert log.store_retention_policy().source == "none"
    assert log.set_store_retention_policy(P(archive_after_days=7, erase_after_days=30))
    assert not log.set_store_retention_policy(P(archive_after_days=7, erase_after_days=30))
    log.conversation("a").append(convlog.user("hello"))
    own = log.conversation("b")
    own.append(convlog.user("keep me a year"))
    assert own.set_retention_policy(P(erase_after_days=365))
    assert log.retention_policy("a") == convlog.RetentionInForce(
        policy=P(archive_after_days=7, erase_after_days=30), source="store")
    assert own.retention_policy().source == "conversation"
    # the settings stream is no conversation
    assert sorted(r.key for r in log.conversations(include_archived=True)) == ["a", "b"]
    with pytest.raises(convlog.UnknownConversation):
        log.set_retention_policy("nobody", P(erase_after_days=1))
    with pytest.raises(convlog.InvalidInput, match="over_cap"):
        log.set_store_retention_policy(P(max_messages=3, over_cap="compact"))
    with pytest.raises(convlog.InvalidInput, match="erase_after_days"):
        log.set_store_retention_policy(P(erase_after_days=0))

    clock.advance(6 * DAY)
    assert log.enforce_retention(dry_run=True).actions == []
    clock.advance(2 * DAY)  # 8 days idle: the store's policy archives `a`, not `b`
    planned = log.enforce_retention(dry_run=True)
    assert [(a.key, a.action, a.source) for a in planned.actions] == [
        ("a", "archive", "store")]
    assert log.state("a").status == "active"  # a dry run writes nothing
    done = log.enforce_retention()
    assert done.actions == planned.actions and not done.dry_run
    assert log.state("a").status == "archived" and log.state("b").status == "active"
    assert _topics(log, "a")[-1] == "session_archived"
    archived = log.events("a")[-1].event
    assert isinstance(archived, ConversationArchived) and archived.retention is not None
    assert archived.retention.idle_days == 8 and archived.retention.source == "store"
    assert log.enforce_retention().actions == []  # done once

    clock.advance(23 * DAY)  # 31 days: `a` is erased, `b` keeps its year
    done = log.enforce_retention()
    assert [(a.key, a.action) for a in done.actions] == [("a", "erase")]
    assert _said(log, "a") == ["[erased]"] and log.messages("a") == []
    assert log.messages("b")[0].content == "keep me a year"
    assert log.enforce_retention().actions == []  # nothing happened since: not again
    # a new message starts afresh, and is kept until the policy asks again
    log.get("a").append(convlog.user("back again"))
    assert _said(log, "a") == ["[erased]", "back again"]
    assert [m.content for m in log.messages("a")] == ["back again"]
    assert log.state("a").status == "active"


def test_nothing_is_erased_that_the_policy_in_force_did_not_ask_for(
        clocked_log: convlog.ConversationLog, clock: ManualClock) -> None:
    log = clocked_log
    log.set_store_retention_policy(P(erase_after_days=10))
    log.conversation("a").append(convlog.user("old"))
    clock.advance(11 * DAY)
    assert [a.key for a in log.enforce_retention(dry_run=True).actions] == ["a"]
    log.get("a").append(convlog.user("new activity"))  # between the dry run and the run
    assert log.enforce_retention().actions == []
    log.set_store_retention_policy(P(erase_after_days=30))  # a longer policy now
    clock.advance(11 * DAY)
    assert log.enforce_retention().actions == []
    log.set_store_retention_policy(P())  # keep everything
    clock.advance(365 * DAY)
    assert log.enforce_retention().actions == []
    assert [m.content for m in log.messages("a")] == ["old", "new activity"]


def test_caps_refuse_a_turn_whole_and_record_it_once(
        clocked_log: convlog.ConversationLog) -> None:
    log = clocked_log
    log.set_store_retention_policy(P(max_messages=3))
    conv = log.conversation("a")
    conv.append_turn([convlog.user("1"), convlog.assistant("2")])
    for _ in range(2):
        with pytest.raises(convlog.CapReached, match="limited to 3 messages"):
            conv.append_turn([convlog.user("3"), convlog.assistant("4")])
    assert len(log.messages("a")) == 2
    assert _topics(log, "a").count("retention_cap_reached") == 1
    conv.append(convlog.user("3"))  # within the cap
    own = log.conversation("b")
    own.set_retention_policy(P(max_bytes=10))
    own.append(convlog.user("12345"))
    with pytest.raises(convlog.CapReached, match="10 bytes"):
        own.append(convlog.user("123456"))


def _open(url: str, tmp_path: Path, clock: ManualClock) -> convlog.ConversationLog:
    return convlog.ConversationLog.with_options(
        url, convlog.LogOptions(views=str(tmp_path / "views.duckdb")), clock=clock)


def _pg_files(conninfo: str, schema: str) -> dict[str, bytes]:
    """Every byte of the store's tables as PostgreSQL keeps them on disk (heap,
    TOAST and index files of its schema), read by the server itself."""
    out = {}
    with psycopg.connect(conninfo, autocommit=True) as admin:
        admin.execute("CHECKPOINT")
        rels = admin.execute(
            "SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON "
            "n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind IN ('r','t','i','m') "
            "UNION SELECT t.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON "
            "n.oid = c.relnamespace JOIN pg_class t ON t.oid = c.reltoastrelid "
            "WHERE n.nspname = %s", (schema, schema)).fetchall()
        for (rel,) in rels:
            path = admin.execute("SELECT pg_relation_filepath(%s::regclass)", (rel,)
                                 ).fetchone()
            if path and path[0]:
                blob = admin.execute(
                    "SELECT pg_read_binary_file(%s, 0, (pg_stat_file(%s, true)).size, true)",
                    (path[0], path[0])).fetchone()
                if blob and blob[0]:
                    out[f"{rel} ({path[0]})"] = bytes(blob[0])
    return out


def _parquet_text(folder: Path) -> str:
    """Every value of every exported Parquet file, as text (the files compress)."""
    import duckdb

    con = duckdb.connect()
    return "\n".join(repr(con.execute("SELECT * FROM read_parquet(?)", [str(p)]).fetchall())
                     for p in sorted(folder.glob("*.parquet")))


@pytest.mark.parametrize(("backend", "encrypted"), [
    ("sqlite", False), ("sqlite", True), ("postgres", False), ("postgres", True)])
def test_an_erasure_leaves_no_text_in_any_file(
        backend: str, encrypted: bool, tmp_path: Path, clock: ManualClock,
        monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    if encrypted:
        use_key(monkeypatch)
    else:
        no_key(monkeypatch)
    # PostgreSQL: a server of the test's own, so that no other test's open
    # transaction holds back what VACUUM FULL may drop (the store waits for them)
    cluster = request.getfixturevalue("private_pg") if backend == "postgres" else None
    url = f"sqlite:///{tmp_path / 'c.db'}" if cluster is None else cluster.url()
    with _open(url, tmp_path, clock) as log:
        log.set_store_retention_policy(P(erase_after_days=30))
        record_with_canaries(log, "old", "alice")
        application(log).catalog.refresh()
        before = {r.key: r for r in log.conversations()}["old"]
        clock.advance(20 * DAY)
        record_with_canaries(log, "kept", "bob")  # same store, not due
        application(log).catalog.refresh()
        clock.advance(11 * DAY)
        # in an encrypted store, alice's ciphertexts must go too (not only the key)
        sealed = [state[state.rfind(b'"$sealed":"') + 11:-2]
                  for _, _, state in application(log).store.keys.select_rows(conversation_id("old"))
                  if b'"$sealed":"' in state]
        assert bool(sealed) == encrypted
        done = log.enforce_retention()
        assert [(a.key, a.action) for a in done.actions] == [("old", "erase")]
        assert done.rows_erased > 10
        after = {r.key: r for r in log.conversations(include_archived=True)}
        assert after["old"].title is None and after["old"].status == "archived"
        for name in ("message_count", "content_tokens", "input_tokens", "output_tokens"):
            assert getattr(after["old"], name) == getattr(before, name), name
        # (an encrypted store's views hold no text at all)
        assert after["kept"].title == (None if encrypted else canaries("bob")["title"])
        log.export_parquet(tmp_path / "export")
        assert set(_said(log, "old")) == {"[erased]"}
        assert log.messages("kept")[0].content == canaries("bob")["text"]
        if backend == "sqlite":
            assert (tmp_path / "c.db-wal").exists()  # the process still runs
    alice = [v.encode() for v in canaries("alice").values()] + sealed
    assert {p.name for p in files_under(tmp_path)} >= {"views.duckdb"}
    assert found_in_files(tmp_path, alice) == []
    exported = _parquet_text(tmp_path / "export")  # compressed: read them decoded too
    assert encrypted or canaries("bob")["title"] in exported  # the check sees text
    assert [n for n in canaries("alice").values() if n in exported] == []
    assert all(n.decode() not in exported for n in sealed)
    bob = canaries("bob")["text"].encode()
    if cluster is not None:
        stored = _pg_files(cluster.conninfo, "public")
        assert encrypted or any(bob in data for data in stored.values())
        assert [(rel, n[:20]) for rel, data in stored.items() for n in alice if n in data] == []


def test_an_erasure_cut_short_is_finished_by_the_next_run(
        sqlite_url: str, tmp_path: Path, clock: ManualClock) -> None:
    """The erasure is recorded first; a run killed before the text is removed leaves
    it to the next run, which finishes it before anything else."""
    with _open(sqlite_url, tmp_path, clock) as log:
        log.set_store_retention_policy(P(erase_after_days=1))
        record_with_canaries(log, "old", "alice")
        clock.advance(2 * DAY)
        # what a run killed right after recording the erasure leaves: the record
        application(log).writer.decide("old", lambda _s, _f: [Expire(store=P(erase_after_days=1))])
        assert _topics(log, "old")[-1] == "conversation_erased"
        assert found_in_files(tmp_path, [canaries("alice")["text"].encode()])
        done = log.enforce_retention()
        assert done.actions == [] and done.rows_erased > 10
    assert found_in_files(tmp_path, [v.encode() for v in canaries("alice").values()]) == []


def test_the_settings_stream_is_not_a_conversation(log: convlog.ConversationLog) -> None:
    log.set_store_retention_policy(P(archive_after_days=3))
    assert log.conversations(include_archived=True) == []
    assert STORE_STREAM in application(log).store.keys.all_streams()


def test_the_asyncio_twin(clocked_log: convlog.ConversationLog, clock: ManualClock) -> None:
    import asyncio

    from convlog.services.aio import AsyncConversationLog

    async def main() -> None:
        alog = AsyncConversationLog(clocked_log)
        assert await alog.set_store_retention_policy(P(archive_after_days=2))
        conv = await alog.conversation("a")
        await conv.append(convlog.user("hi"))
        assert await conv.set_retention_policy(P(archive_after_days=1))
        assert (await alog.retention_policy("a")).policy == P(archive_after_days=1)
        assert (await alog.store_retention_policy()).source == "store"
        clock.advance(DAY)
        assert [a.key for a in (await alog.enforce_retention(dry_run=True)).actions] == ["a"]
        assert (await alog.enforce_retention()).archived == 1

    asyncio.run(main())


def test_every_action_is_counted_in_the_telemetry_views(
        clocked_log: convlog.ConversationLog, clock: ManualClock) -> None:
    log = clocked_log
    log.set_store_retention_policy(P(archive_after_days=1, erase_after_days=3,
                                     max_messages=1))
    log.conversation("a").append(convlog.user("one"))
    with pytest.raises(convlog.CapReached):
        log.get("a").append(convlog.user("two"))
    clock.advance(1.5 * DAY)
    log.enforce_retention()
    clock.advance(2 * DAY)
    log.enforce_retention()
    _, rows = log.sql("SELECT action, source, count(*) FROM retention_actions "
                      "GROUP BY ALL ORDER BY action")
    assert rows == [("archive", "store", 1), ("cap_reached", "store", 1),
                    ("erase", "store", 1), ("policy_set", None, 1)]
