"""The erased state (convlog.storage.erasure) is a stored format: a golden file pins
it, and every event type erases to a state the mapper reads back with its public
fields intact and no private text. Regenerate (only for an intended, versioned
change) with CONVLOG_UPDATE_GOLDEN=1."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import msgspec
import pytest

from convlog.domain.events import MessageAppended
from convlog.storage.erasure import ERASED, erased_state
from convlog.storage.mapper import MsgspecMapper
from convlog.storage.sealed import SEALED_FIELDS
from tests.samples import samples

GOLDEN = Path(__file__).parent.parent / "golden" / "erased_message_appended.json"
STREAM = uuid.UUID("00000000-0000-4000-8000-000000000001")


class Golden(msgspec.Struct):
    topic: str
    state: str
    erased: str


def test_the_erased_message_is_pinned() -> None:
    mapper = MsgspecMapper()
    event = next(e for e in samples() if isinstance(e, MessageAppended))
    topic, state = mapper.encode(STREAM, 7, event)
    erased = erased_state(topic, state)
    assert erased is not None
    found = Golden(topic=topic, state=state.decode(), erased=erased.decode())
    if os.environ.get("CONVLOG_UPDATE_GOLDEN"):
        GOLDEN.write_bytes(msgspec.json.format(msgspec.json.encode(found)) + b"\n")
    golden = msgspec.json.decode(GOLDEN.read_bytes(), type=Golden)
    assert erased_state(golden.topic, golden.state.encode()) == golden.erased.encode()
    back = mapper.decode_row(STREAM, 7, golden.topic, golden.erased.encode())
    assert back.content == ERASED and not back.tool_calls and back.raw is None
    assert (back.usage, back.model, back.message_id) == (event.usage, event.model,
                                                         event.message_id)


@pytest.mark.parametrize("event", samples(), ids=lambda e: type(e).__name__)
def test_every_event_erases_to_a_readable_state_without_its_text(event: object) -> None:
    mapper = MsgspecMapper()
    topic, state = mapper.encode(STREAM, 3, event)
    erased = erased_state(topic, state)
    private = SEALED_FIELDS[topic.partition("@")[0]]
    if erased is None:  # nothing private, or nothing private set
        fields = msgspec.json.decode(state)
        assert not private & set(fields)
        return
    assert erased_state(topic, erased) in (None, erased)  # erasing again changes nothing
    back = mapper.decode_row(STREAM, 3, topic, erased)
    assert type(back) is type(event)
    for name in msgspec.structs.fields(type(event)):  # type: ignore[arg-type]
        if name.name in private:
            continue
        if name.name == "metadata":
            continue
        assert getattr(back, name.name) == getattr(event, name.name), name.name
