"""Stored event formats are a contract: golden files pin them, upcasters evolve them.

A failure here means a change would break databases already written. If the change
is intended, bump the event's class_version, add an upcaster, keep the old golden
file under tests/golden/vN/, and regenerate with CONVLOG_UPDATE_GOLDEN=1.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import msgspec
import pytest
from eventsourcing.persistence import StoredEvent

from convlog.domain.events import (
    EVENT_TYPES,
    Event,
    MessageAppended,
    ResumeFailed,
    ResumeSucceeded,
)
from convlog.storage.errors import CorruptEvent
from convlog.storage.mapper import Envelope, MsgspecMapper, all_topics, topic_of
from tests.samples import AT, samples

GOLDEN = Path(__file__).parent.parent / "golden"
STREAM = uuid.UUID("00000000-0000-4000-8000-000000000001")
mapper = MsgspecMapper()


def stored(event: Event, version: int = 7) -> StoredEvent:
    return mapper.to_stored_event(Envelope(STREAM, version, event))


def test_every_event_type_has_a_sample() -> None:
    assert {type(e) for e in samples()} == set(EVENT_TYPES)


def test_topics_are_stable_names_not_python_paths() -> None:
    for cls in EVENT_TYPES:
        topic = topic_of(cls)
        assert ":" not in topic and "." not in topic, topic
        assert topic.split("@")[0] == cls.event_name()


@pytest.mark.parametrize("event", samples(), ids=lambda e: e.event_name())
def test_stored_form_matches_golden_file(event: Event) -> None:
    s = stored(event)
    path = GOLDEN / f"{s.topic.replace('@', '.v')}.json"
    if os.environ.get("CONVLOG_UPDATE_GOLDEN"):
        path.write_bytes(msgspec.json.format(s.state, indent=2) + b"\n")
    golden = path.read_bytes()
    assert msgspec.json.decode(s.state) == msgspec.json.decode(golden)
    # and the golden file itself decodes to the very same event
    back = mapper.to_domain_event(StoredEvent(STREAM, 7, s.topic, golden))
    assert back.event == event


@pytest.mark.parametrize("event", samples(), ids=lambda e: e.event_name())
def test_round_trip_through_the_mapper(event: Event) -> None:
    back = mapper.to_domain_event(stored(event, 3))
    assert back.originator_id == STREAM
    assert back.originator_version == 3
    assert back.event == event
    assert type(back.event) is type(event)


@pytest.mark.parametrize(("cls", "latency_ms"), [(ResumeSucceeded, 12.5), (ResumeFailed, 3.25)])
def test_version_1_resume_outcomes_are_upcast_from_seconds(cls: type[Event],
                                                           latency_ms: float) -> None:
    name = cls.event_name()
    golden = (GOLDEN / "v1" / f"{name}.json").read_bytes()
    event = mapper.to_domain_event(StoredEvent(STREAM, 1, name, golden)).event
    assert isinstance(event, cls)
    assert event.latency_ms == latency_ms  # type: ignore[attr-defined]
    assert event.at == AT
    assert all_topics(cls) == [name, f"{name}@2"]


def test_v1_without_latency_upcasts_to_none() -> None:
    state = b'{"type":"resume_succeeded","at":"2026-01-02T03:04:05Z","strategy":"session/new"}'
    event = mapper.to_domain_event(StoredEvent(STREAM, 1, "resume_succeeded", state)).event
    assert isinstance(event, ResumeSucceeded)
    assert event.latency_ms is None


def test_a_message_stored_before_raw_existed_reads_back_without_it() -> None:
    state = (b'{"type":"message_appended","at":"2026-01-02T03:04:05Z","message_id":"m",'
             b'"role":"user","content":"hi"}')
    event = mapper.to_domain_event(StoredEvent(STREAM, 1, "message_appended", state)).event
    assert isinstance(event, MessageAppended)
    assert event.raw is None
    assert b"raw" not in stored(event).state  # and the default is not written


@pytest.mark.parametrize(
    ("topic", "state", "detail"),
    [
        ("message_appended", b"\x00\xff garbage", "malformed"),
        ("message_appended", b'{"type":"message_appended","at":"2026-01-02T03:04:05Z"}',
         "message_id"),
        ("no_such_event", b"{}", "unknown event type"),
        ("resume_failed@9", b"{}", "newer convlog"),
        ("resume_failed", b"[1, 2]", "not an object"),
    ],
)
def test_undecodable_stored_events_raise_a_typed_error(topic: str, state: bytes,
                                                       detail: str) -> None:
    with pytest.raises(CorruptEvent) as info:
        mapper.to_domain_event(StoredEvent(STREAM, 42, topic, state))
    assert info.value.version == 42
    assert str(STREAM) in str(info.value)
    assert topic in str(info.value)
    assert detail in str(info.value)


@pytest.mark.parametrize("name", ["title_changed", "context_window_reported"])
def test_facts_written_before_they_kept_the_agents_update_read_without_one(name: str) -> None:
    """Issue 41 added `update` (the ACP payload as the agent sent it) to these two;
    rows written before have none and read back with None (tests/golden/before_41)."""
    golden = (GOLDEN / "before_41" / f"{name}.json").read_bytes()
    event = mapper.to_domain_event(StoredEvent(STREAM, 7, name, golden)).event
    assert event.update is None
    assert event == msgspec.structs.replace(
        next(e for e in samples() if e.event_name() == name), update=None)
