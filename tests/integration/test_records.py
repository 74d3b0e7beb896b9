"""Not every record is a message (issue 41): the stored form of a record, how a row
stored before records were marked reads, and the one rule in Python
(convlog.domain.records) and in the views' SQL (convlog.projections.catalog.
RECORD_SQL) agreeing on every stored message, through real DuckDB."""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import msgspec
import pytest
from eventsourcing.persistence import StoredEvent
from hypothesis import given, settings
from hypothesis import strategies as st

import convlog
from convlog.domain.content import TextPart, ToolResultPart, ToolUsePart, Usage
from convlog.domain.events import MessageAppended
from convlog.domain.records import is_record, record_kind
from convlog.projections.catalog import RECORD_SQL
from convlog.storage.mapper import Envelope, MsgspecMapper
from convlog.views.analytics import Analytics
from convlog.views.duckdb import union_fields

GOLDEN = Path(__file__).parent.parent / "golden"
STREAM = uuid.UUID("00000000-0000-4000-8000-000000000001")
AT = datetime(2026, 11, 28, 3, 11, 5, 120000, tzinfo=UTC)
ATTACHMENT = {"parentUuid": "u1", "isSidechain": False, "type": "attachment",
              "attachment": {"type": "todo_reminder", "content": [], "itemCount": 0},
              "uuid": "a-9", "timestamp": "2026-11-28T03:11:05.120Z", "sessionId": "s-1"}
mapper = MsgspecMapper()


def test_a_record_keeps_its_stored_form() -> None:
    """A Claude Code entry that is no dialogue, as the store writes it since issue 41."""
    record = MessageAppended(at=AT, message_id="a-9", role="assistant", content=[],
                             agent="claude", raw=ATTACHMENT, record="attachment")
    state = mapper.to_stored_event(Envelope(STREAM, 7, record)).state
    path = GOLDEN / "message_appended_record.json"
    if os.environ.get("CONVLOG_UPDATE_GOLDEN"):
        path.write_bytes(msgspec.json.format(state, indent=2) + b"\n")
    assert msgspec.json.decode(state) == msgspec.json.decode(path.read_bytes())
    back = mapper.to_domain_event(StoredEvent(STREAM, 7, "message_appended",
                                              path.read_bytes())).event
    assert back == record and is_record(back) and record_kind(back) == "attachment"


def test_a_record_stored_before_the_mark_reads_as_a_record() -> None:
    """Stores written before issue 41 hold the same rows without `record`: an assistant
    row with no content parts, no tool call, result, usage or cost, keeping an SDK's
    item. Recognised as the record it is, named after what its item calls itself."""
    old = (GOLDEN / "legacy" / "message_appended_unmarked_record.json").read_bytes()
    event = mapper.to_domain_event(StoredEvent(STREAM, 7, "message_appended", old)).event
    assert isinstance(event, MessageAppended) and event.record is None
    assert is_record(event) and record_kind(event) == "queue-operation"
    # and the same row with anything readable in it is a message
    for change in ({"content": [TextPart(text="hi")]}, {"role": "user"},
                   {"usage": Usage(output_tokens=3)}, {"raw": None},
                   {"cost_usd": Decimal("0.01")}, {"tool_call_id": "c1"}):
        assert not is_record(msgspec.structs.replace(event, **change)), change


def test_a_record_is_refused_with_anything_to_say() -> None:
    with pytest.raises(convlog.InvalidInput, match="raw is required"):
        convlog.Message(role="assistant", content=[], record="attachment")
    with pytest.raises(convlog.InvalidInput) as caught:
        convlog.Message(role="assistant", content="hi", record="x", raw={})
    assert caught.value.field == "record"


# ------------------------------------------------- the rule in Python and in SQL


parts = st.one_of(st.builds(TextPart, text=st.text(max_size=3)),
                  st.builds(ToolUsePart, id=st.just("c1"), name=st.just("f")),
                  st.builds(ToolResultPart, tool_use_id=st.just("c1"), content=st.just("x")))
rows = st.builds(
    MessageAppended, at=st.just(AT), message_id=st.just("m"),
    role=st.sampled_from(["user", "assistant", "tool"]),
    content=st.one_of(st.just([]), st.just(""), st.text(max_size=3),
                      st.lists(parts, max_size=2)),
    tool_calls=st.one_of(st.just([]), st.just([convlog.ToolCall(id="c2", name="g")])),
    tool_call_id=st.one_of(st.none(), st.just("c1")),
    usage=st.one_of(st.none(), st.just(Usage()), st.just(Usage(input_tokens=4))),
    cost_usd=st.one_of(st.none(), st.just(Decimal("0.5"))),
    raw=st.one_of(st.none(), st.just({}), st.just(ATTACHMENT)),
    record=st.one_of(st.none(), st.just("attachment")))


@pytest.fixture(scope="module")
def con() -> Any:
    connection = duckdb.connect()
    yield connection
    connection.close()


@settings(max_examples=300, deadline=None)
@given(event=rows)
def test_the_views_sql_and_the_python_rule_agree(con: Any, event: MessageAppended) -> None:
    import json

    schema = json.dumps(union_fields(Analytics.VIEWS))
    state = mapper.to_stored_event(Envelope(STREAM, 3, event)).state.decode()
    (found,) = con.execute(f"SELECT {RECORD_SQL} FROM (SELECT json_transform(?, ?) AS e)",
                           [state, schema]).fetchone()
    assert found is is_record(event), state


def test_an_encrypted_store_counts_records_out_by_their_mark(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sealed content and items are unreadable to the views: the mark (public) says a
    row is a record, so the catalog counts it out there too."""
    from tests.crypto.helpers import use_key

    use_key(monkeypatch)
    with convlog.open(f"sqlite:///{tmp_path / 'sealed.db'}") as log:
        conv = log.conversation("claude:p/s", user="u1", agent="claude")
        conv.append_turn([convlog.user("hi"), convlog.Message(
            role="assistant", content=[], raw=ATTACHMENT, record="attachment"),
            convlog.assistant("hello")])
        (row,) = log.conversations()
        assert row.message_count == 2 == log.info("claude:p/s").message_count
        assert [m.content for m in log.messages("claude:p/s")] == ["hi", "hello"]
