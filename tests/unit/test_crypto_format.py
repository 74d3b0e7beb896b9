"""The encrypted stored format is a contract: a golden file pins it.

tests/golden/crypto_message_appended.json holds a master key, a wrapped data key and
one sealed event exactly as convlog stores them. A convlog that cannot open it, or
that lays payloads out differently, would strand every encrypted database.
Regenerate (only for an intended, versioned change) with CONVLOG_UPDATE_GOLDEN=1.
"""

from __future__ import annotations

import base64
import os
import uuid
from pathlib import Path

import msgspec
import pytest

from convlog.crypto import cipher
from convlog.crypto.keyring import Keyring, KeyRow
from convlog.domain.conversation import Conversation
from convlog.domain.events import EVENT_TYPES, Event, MessageAppended
from convlog.storage.mapper import MsgspecMapper
from convlog.storage.memory import POPOConvlogRecorder
from convlog.storage.sealed import MARK, SEALED_FIELDS, SNAPSHOT_TOPIC, Sealer, sealed_at
from tests.samples import samples

GOLDEN = Path(__file__).parent.parent / "golden" / "crypto_message_appended.json"
MASTER = bytes(range(32))
STORE_ID = "5f0c1b2a3d4e4f5a8b9c0d1e2f3a4b5c"
KEY_ID = "00112233445566778899aabbccddeeff"
DATA_KEY = bytes(range(100, 132))
STREAM = uuid.UUID("00000000-0000-4000-8000-000000000001")


class Golden(msgspec.Struct):
    master_key: str
    store_id: str
    key_id: str
    user: str
    wrapped: str
    stream: uuid.UUID
    version: int
    topic: str
    state: str


def _keyring(wrapped: bytes) -> Keyring:
    table = POPOConvlogRecorder()
    table.add_key(KeyRow(STORE_ID, "check", "", cipher.check_value(MASTER, STORE_ID), "t"))
    table.add_key(KeyRow(KEY_ID, "data", "u1", wrapped, "t"))
    return Keyring.open(table, MASTER, "golden")


def _mapper(keyring: Keyring) -> MsgspecMapper:
    mapper = MsgspecMapper()
    mapper.sealer = Sealer(keyring, msgspec.json.Encoder(decimal_format="number"))
    return mapper


def _sample() -> MessageAppended:
    return next(e for e in samples() if isinstance(e, MessageAppended))


def test_the_golden_sealed_event_opens_and_keeps_its_layout() -> None:
    if os.environ.get("CONVLOG_UPDATE_GOLDEN"):
        wrapped = cipher.wrap(MASTER, DATA_KEY, store_id=STORE_ID, key_id=KEY_ID, user="u1")
        stored = _mapper(_keyring(wrapped)).store(STREAM, 7, _sample(), "u1")
        GOLDEN.write_bytes(msgspec.json.format(msgspec.json.encode(Golden(
            MASTER.hex(), STORE_ID, KEY_ID, "u1", base64.b64encode(wrapped).decode(), STREAM,
            7, stored.topic, stored.state.decode())), indent=2) + b"\n")
    golden = msgspec.json.decode(GOLDEN.read_bytes(), type=Golden)
    wrapped = base64.b64decode(golden.wrapped)
    assert cipher.unwrap(bytes.fromhex(golden.master_key), wrapped, store_id=golden.store_id,
                         key_id=golden.key_id, user=golden.user) == DATA_KEY
    state = golden.state.encode()
    at = sealed_at(state)
    assert at > 0
    blob = base64.b64decode(state[at + len(MARK):-2])
    assert blob[0] == cipher.FORMAT == 1
    assert blob[1:17] == bytes.fromhex(golden.key_id)
    private = {k: v for k, v in msgspec.to_builtins(_sample()).items()
               if k in SEALED_FIELDS["message_appended"]}
    assert len(blob) == 1 + 16 + 12 + len(msgspec.json.encode(private)) + 16
    public = msgspec.json.decode(state[:at] + b"}")
    assert public["type"] == "message_appended" and "content" not in public
    event = _mapper(_keyring(wrapped)).decode_row(golden.stream, golden.version, golden.topic,
                                                  state)
    assert event == _sample()


def test_sealed_fields_are_real_fields_of_their_events() -> None:
    """A renamed field must not silently become public: every sealed name exists."""
    fields = {c.event_name(): set(c.__struct_fields__) for c in EVENT_TYPES}
    fields[SNAPSHOT_TOPIC] = set(Conversation.__struct_fields__)
    for name, sealed in SEALED_FIELDS.items():
        assert sealed <= fields[name], (name, sealed - fields[name])


def test_every_event_type_says_what_of_it_is_sealed() -> None:
    """Public is not the default: an event type missing from SEALED_FIELDS (as
    memory_injected once was) would be stored readable in an encrypted store."""
    assert set(SEALED_FIELDS) == {c.event_name() for c in EVENT_TYPES} | {SNAPSHOT_TOPIC}


@pytest.mark.parametrize("event", samples(), ids=lambda e: e.event_name())
def test_every_event_round_trips_sealed_and_shows_no_private_field(event: Event) -> None:
    wrapped = cipher.wrap(MASTER, DATA_KEY, store_id=STORE_ID, key_id=KEY_ID, user="u1")
    mapper = _mapper(_keyring(wrapped))
    stored = mapper.store(STREAM, 3, event, "u1")
    private = SEALED_FIELDS.get(event.event_name(), frozenset())
    at = sealed_at(stored.state)
    visible = msgspec.json.decode(stored.state[:at] + b"}" if at >= 0 else stored.state)
    exposed = private & set(visible)
    assert not exposed or (exposed == {"metadata"} and list(visible["metadata"]) == ["client"])
    assert (at >= 0) == bool(private & set(msgspec.to_builtins(event)))
    assert mapper.decode(stored) == event


def test_a_sealed_marker_inside_host_metadata_is_not_taken_for_one() -> None:
    plain = msgspec.json.encode({"type": "session_started", "key": "k",
                                 "metadata": {"x": 1, "$sealed": "AAAA"}, "at": "t"})
    assert sealed_at(plain) == -1
    tricky = msgspec.json.encode({"type": "x", "metadata": {"$sealed": "AAAA"}, "title": "a"})
    assert sealed_at(tricky) == -1


def test_a_forgotten_payload_reads_as_a_marker() -> None:
    wrapped = cipher.wrap(MASTER, DATA_KEY, store_id=STORE_ID, key_id=KEY_ID, user="u1")
    keyring = _keyring(wrapped)
    mapper = _mapper(keyring)
    stored = mapper.store(STREAM, 3, _sample(), "u1")
    keyring.forget("u1")
    back = mapper.decode(stored)
    assert back.content == "[forgotten]" and back.tool_calls == []
    assert back.usage == _sample().usage and back.tokens == _sample().tokens


def test_the_client_name_stays_readable_and_the_rest_of_the_metadata_does_not() -> None:
    from datetime import UTC, datetime

    from convlog.domain.events import ConversationStarted

    wrapped = cipher.wrap(MASTER, DATA_KEY, store_id=STORE_ID, key_id=KEY_ID, user="u1")
    keyring = _keyring(wrapped)
    mapper = _mapper(keyring)
    event = ConversationStarted(at=datetime(2026, 1, 1, tzinfo=UTC), key="k", user="u1",
                           title="private", metadata={"client": "zed", "ticket": "private"})
    stored = mapper.store(STREAM, 1, event, "u1")
    assert b'"metadata":{"client":"zed"}' in stored.state and b"private" not in stored.state
    assert mapper.decode(stored) == event  # the sealed, whole metadata wins
    keyring.forget("u1")
    forgotten = mapper.decode(stored)
    assert forgotten.metadata == {"client": "zed"} and forgotten.title is None
