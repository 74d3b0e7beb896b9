"""The storage contract, in the eventsourcing pattern: one test case, subclassed per
backend (memory, SQLite, this machine's real PostgreSQL). It pins what convlog needs
from a recorder beyond eventsourcing's own interface; the behaviour of the whole log
on every backend is covered by the tests that use the `log` fixture (conftest.py)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from eventsourcing.persistence import IntegrityError

import convlog
from convlog.domain.conversation import conversation_id
from convlog.services.log import application
from convlog.storage.mapper import Envelope
from convlog.storage.requests import KEEP_SECONDS, Answer
from tests.samples import samples


class StorageContract:
    """Subclasses provide `url`; every test below runs on each backend."""

    @pytest.fixture
    def url(self, tmp_path: Path, request: pytest.FixtureRequest) -> str:
        raise NotImplementedError

    @pytest.fixture
    def log(self, url: str, tmp_path: Path) -> Iterator[convlog.ConversationLog]:
        with convlog.open(url, views=str(tmp_path / "views.duckdb")) as opened:
            yield opened

    def test_message_ids_known_to_the_index(self, log: convlog.ConversationLog) -> None:
        log.append_turn("k", [convlog.user("a", id="m1"), convlog.user("b", id="m2")])
        cid = conversation_id("k")
        index = application(log).store.index
        assert index.known_message_ids(cid, ["m1", "m2", "m3"]) == {"m1", "m2"}
        assert index.known_message_ids(conversation_id("other"), ["m1"]) == set()

    def test_a_known_message_id_conflicts_in_the_same_transaction(
            self, log: convlog.ConversationLog) -> None:
        log.append("k", convlog.user("a", id="m1"))
        cid = conversation_id("k")
        state = log.state("k")
        stored = [application(log).store.mapper.to_stored_event(Envelope(cid, state.version + 1, e))
                  for e in samples()[1:2]]
        with pytest.raises(IntegrityError):
            application(log).store.recorder.insert_events(stored, message_ids=(cid, ["m1"]))
        assert [r.version for r in log.events("k")] == [1, 2]  # nothing half-written

    def test_the_same_version_twice_conflicts(self, log: convlog.ConversationLog) -> None:
        log.append("k", convlog.user("a"))
        cid = conversation_id("k")
        stored = [application(log).store.mapper.to_stored_event(Envelope(cid, 2, samples()[3]))]
        with pytest.raises(IntegrityError):
            application(log).store.recorder.insert_events(stored)

    def test_raw_reads_come_in_log_order_after_a_position(
            self, log: convlog.ConversationLog) -> None:
        for key in ("a", "b", "a"):
            log.append(key, convlog.user(key))
        rows = application(log).store.index.select_raw(0, 100)
        positions = [r[0] for r in rows]
        assert positions == sorted(positions)
        assert len(rows) == 5  # two session starts and three messages
        assert {r[1] for r in rows} == {conversation_id("a").hex, conversation_id("b").hex}
        assert application(log).store.index.select_raw(positions[2], 100) == rows[3:]
        assert application(log).store.index.max_notification_id() == positions[-1]
        assert all(isinstance(r[4], str) and r[4].startswith("{") for r in rows)

    def test_every_event_type_is_stored_and_read_back(
            self, log: convlog.ConversationLog) -> None:
        cid = uuid.uuid4()
        envelopes = [Envelope(cid, v, e) for v, e in enumerate(samples(), start=1)]
        application(log).store.recorder.insert_events([application(log).store.mapper.to_stored_event(e)
                                          for e in envelopes])
        back = [r.event for r in application(log).store.recorded(cid)]
        assert back == [e.event for e in envelopes]


    def test_a_request_keeps_its_first_answer_for_a_day(
            self, log: convlog.ConversationLog) -> None:
        store = application(log).store
        one, two = Answer("one", 200, b'{"v":1}'), Answer("two", 201, b'{"v":2}')
        assert store.find_answer("scope", 1000.0) is None
        assert store.keep_answer("scope", one, 1000.0, "u") == one
        assert store.keep_answer("scope", two, 1000.0 + KEEP_SECONDS - 1, "u") == one
        assert store.find_answer("scope", 1000.0 + KEEP_SECONDS - 1) == one
        assert store.keep_answer("other", two, 1000.0, None) == two
        if application(log).config.backend != "memory":  # nothing outlives a memory:// process
            assert store.find_answer("scope", 1001.0 + KEEP_SECONDS) is None
            assert store.keep_answer("scope", two, 1001.0 + KEEP_SECONDS, "u") == two
        store.drop_answers()
        assert store.find_answer("other", 1000.0) is None


class TestMemory(StorageContract):
    @pytest.fixture
    def url(self, tmp_path: Path, request: pytest.FixtureRequest) -> str:
        return "memory://"


class TestSQLite(StorageContract):
    @pytest.fixture
    def url(self, tmp_path: Path, request: pytest.FixtureRequest) -> str:
        return f"sqlite:///{tmp_path / 'contract.db'}"


class TestPostgreSQL(StorageContract):
    @pytest.fixture
    def url(self, tmp_path: Path, request: pytest.FixtureRequest) -> str:
        return str(request.getfixturevalue("pg_url"))
