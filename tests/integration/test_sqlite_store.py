"""SQLite specifics: durability across processes, snapshots, URLs, concurrent writers."""

from __future__ import annotations

import multiprocessing
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

import convlog
import convlog.storage.sqlite_wal
from convlog.domain.conversation import conversation_id
from convlog.services.log import application
from convlog.storage.application import SNAPSHOT_INTERVAL
from tests.folds import fold


def test_data_survives_reopening(sqlite_url: str) -> None:
    with convlog.open(sqlite_url) as log:
        log.conversation("k", user="u1").append(convlog.user("remember me", id="1"))
    with convlog.open(sqlite_url) as log:
        assert [m.content for m in log.messages("k")] == ["remember me"]
        assert log.append("k", convlog.user("remember me", id="1")).appended == []


def test_snapshots_bound_a_cold_start_and_agree_with_a_full_replay(sqlite_url: str) -> None:
    n = SNAPSHOT_INTERVAL + 40
    with convlog.open(sqlite_url) as log:
        conv = log.conversation("long")
        for start in range(0, n, 100):
            conv.append_turn([convlog.user(f"m{i}") for i in range(start, min(n, start + 100))])
        conv.clear()
        expected = fold("long", [r.event for r in log.events("long")])
    path = sqlite_url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as db:
        (snapshots,) = db.execute("SELECT COUNT(*) FROM stored_snapshots").fetchone()
        # Prove the cold start uses the snapshot: without the events before it, a full
        # replay could not work.
        db.execute("DELETE FROM stored_events WHERE originator_version BETWEEN 2 AND ?",
                   (SNAPSHOT_INTERVAL - 1,))
    assert snapshots >= 1
    with convlog.open(sqlite_url) as log:  # a new process state: no cache
        assert log.state("long") == expected
        assert log.state("long").message_count == n


def _writer(url: str, key: str, worker: int, turns: int) -> None:
    with convlog.open(url) as log:
        for t in range(turns):
            log.append_turn(key, [convlog.user(f"w{worker} t{t} q", id=f"w{worker}-{t}-q"),
                                  convlog.assistant(f"w{worker} t{t} a", id=f"w{worker}-{t}-a")])


def test_concurrent_processes_lose_nothing_duplicate_nothing_interleave_nothing(
        sqlite_url: str) -> None:
    workers, turns = 4, 40
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(sqlite_url, "shared", w, turns))
             for w in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    with convlog.open(sqlite_url) as log:
        ids = [m.message_id for m in log.messages("shared")]
    assert len(ids) == len(set(ids)) == workers * turns * 2
    for i in range(0, len(ids), 2):  # every turn's two messages are adjacent
        q, a = ids[i], ids[i + 1]
        assert q.endswith("-q") and a == q[:-1] + "a"


def test_the_message_index_is_in_the_same_database(sqlite_url: str) -> None:
    with convlog.open(sqlite_url) as log:
        log.append("k", convlog.user("x", id="m1"))
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as db:
        rows = db.execute(
            "SELECT e.originator_id, e.originator_version, i.message_id "
            "FROM convlog_stream_message_ids i JOIN stored_events e ON e.rowid = i.stream"
        ).fetchall()
    assert rows == [(conversation_id("k").hex, 1, "m1")]


def _to_first_format(path: Path) -> None:
    """Rewrite a file's message-id index into the first storage format (keyed by the
    32-hex stream id), as files written before the stream-numbered index hold it."""
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE convlog_message_ids (conversation_id TEXT NOT NULL, "
                   "message_id TEXT NOT NULL, PRIMARY KEY (conversation_id, message_id)) "
                   "WITHOUT ROWID")
        db.execute("INSERT INTO convlog_message_ids SELECT e.originator_id, i.message_id "
                   "FROM convlog_stream_message_ids i JOIN stored_events e ON e.rowid = i.stream")
        db.execute("DROP TABLE convlog_stream_message_ids")
    db.close()


def test_a_file_of_the_first_index_format_is_migrated_on_open(sqlite_url: str) -> None:
    path = Path(sqlite_url.removeprefix("sqlite:///"))
    with convlog.open(sqlite_url) as log:
        log.append_turn("a", [convlog.user("a1", id="m1"), convlog.assistant("a2", id="m2")])
        log.append_turn("b", [convlog.user("b1", id="m1")])
    _to_first_format(path)
    with convlog.open(sqlite_url) as log:
        retried = log.append_turn("a", [convlog.user("a1", id="m1"),
                                        convlog.user("a3", id="m3")])
        assert (retried.appended, retried.skipped) == (["m3"], ["m1"])
        assert log.append("b", convlog.user("b1", id="m1")).skipped == ["m1"]
        assert [m.message_id for m in log.messages("a")] == ["m1", "m2", "m3"]
    with sqlite3.connect(path) as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        (indexed,) = db.execute("SELECT count(*) FROM convlog_stream_message_ids").fetchone()
    db.close()
    assert "convlog_message_ids" not in tables
    assert indexed == 4


def test_read_only_open_does_not_create_a_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    with pytest.raises(convlog.StorageError, match="no convlog database"):
        convlog.open(str(missing), create=False)
    assert not missing.exists()


def test_a_file_that_is_not_a_database_is_a_storage_error(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(convlog.StorageError, match=r"junk\.db"):
        convlog.open(str(junk))


def test_a_read_that_the_database_fails_is_a_storage_error(sqlite_url: str) -> None:
    """Reads run outside eventsourcing's transaction wrapper (one statement, for speed),
    so their failures must still leave as convlog's typed error, naming the cause."""
    with convlog.open(sqlite_url) as log:
        conv = log.conversation("k")
        conv.append(convlog.user("hi", id="1"))
        other = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"))
        other.execute("ALTER TABLE stored_events RENAME TO moved_away")
        other.close()
        with pytest.raises(convlog.StorageError, match="no such table: stored_events"):
            conv.messages(last=5)


@pytest.mark.parametrize(
    ("url", "match"),
    [
        ("mysql://x", "unknown storage scheme"),
        ("sqlite://host/x.db", "no host"),
        ("sqlite:///x.db?synchronous=sometimes", "synchronous must be one of"),
        ("sqlite:///x.db?colour=blue", "unknown SQLite option"),
        ("sqlite:///x.db?timeout=soon", "whole seconds"),
        ("sqlite:///x.db?timeout=\u00b2", "whole seconds"),  # "²".isdigit() (issue 46)
        ("sqlite:///no/such/dir/x.db", "does not exist"),
        ("", "empty"),
        ("postgresql://u@localhost/db?colour=blue", "unknown PostgreSQL option"),
        ("postgresql://u@localhost/db?pool_size=many", "whole number"),
    ],
)
def test_bad_urls_say_what_is_wrong(url: str, match: str) -> None:
    with pytest.raises(convlog.StorageError, match=match):
        convlog.open(url)


def test_env_var_selects_the_default_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    monkeypatch.setenv("CONVLOG_URL", f"sqlite:///{tmp_path / 'env.db'}")
    with convlog.open() as log:
        log.append("k", convlog.user("x"))
    assert (tmp_path / "env.db").exists()


def test_synchronous_option_is_applied(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}?synchronous=full"
    with convlog.open(url) as log:
        log.append("k", convlog.user("x"))
        with application(log).store.recorder.datastore.transaction(commit=False) as c:  # type: ignore[attr-defined]
            c.execute("PRAGMA synchronous")
            assert c.fetchone()[0] == 2  # FULL


def test_the_wal_is_checkpointed_off_the_writers_thread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With fewer WAL pages than the in-line limit, only the background checkpointer
    copies pages into the database file: the file grows while appends return."""
    monkeypatch.setattr(convlog.storage.sqlite_wal, "CHECKPOINT_EVERY_COMMITS", 5)
    path = tmp_path / "c.db"
    with convlog.open(f"sqlite:///{path}") as log:
        log.append("k", convlog.user("first", id="m0"))
        empty = path.stat().st_size
        recorder: Any = application(log).store.recorder
        assert recorder._writer.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == (
            convlog.storage.sqlite_wal.WAL_HARD_LIMIT_PAGES)
        for n in range(20):
            log.append_turn("k", [convlog.user("x" * 3000, id=f"t{n}-{i}") for i in range(5)])
        thread = recorder._checkpointer._thread
        assert thread is not None and thread.is_alive()
        assert thread.name == "convlog-sqlite-checkpoint"
        deadline = time.monotonic() + 30
        while path.stat().st_size <= empty and time.monotonic() < deadline:
            time.sleep(0.05)
        assert path.stat().st_size > empty
        assert len(log.messages("k")) == 101
    assert not thread.is_alive()  # closing the log stops the thread


def test_a_stream_number_is_remembered_only_once_committed(sqlite_url: str) -> None:
    """The writer caches each stream's number (the rowid of its first event). A
    rolled-back transaction's rowid may be given to another stream later, so nothing
    of it may be remembered."""
    from eventsourcing.persistence import IntegrityError, StoredEvent

    with convlog.open(sqlite_url) as log:
        recorder = application(log).store.recorder
        doomed = conversation_id("doomed")
        first = StoredEvent(originator_id=doomed, originator_version=1,
                            topic="session_started", state=b"{}")
        with pytest.raises(IntegrityError):  # the same message id twice: rolled back
            recorder.insert_events([first], message_ids=(doomed, ["m1", "m1"]))
        assert recorder._streams == {}  # type: ignore[attr-defined]
        log.append("kept", convlog.user("x", id="m1"))
        log.append("kept", convlog.user("y", id="m2"))
        assert log.append("kept", convlog.user("x", id="m1")).skipped == ["m1"]
        assert log.append("doomed", convlog.user("z", id="m1")).appended == ["m1"]
        cached = dict(recorder._streams)  # type: ignore[attr-defined]
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as db:
        actual = dict(db.execute("SELECT originator_id, rowid FROM stored_events "
                                 "WHERE originator_version = 1").fetchall())
    db.close()
    assert {k.hex: v for k, v in cached.items()} == actual
