"""The lean read of SDK items (convlog.storage.raw_items, issue 30) describes each
message to pairing exactly as the whole message does: `item_tools` of the `RawItem`
decoded from a stored row equals `message_tools` of the `MessageAppended` decoded
from the same row, for any content, calls and role. Without this, `get_items` could
pair (and so hand back) a different history than the rest of convlog sees."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

from hypothesis import given, settings
from hypothesis import strategies as st

from convlog.domain.content import (
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResultPart,
    ToolUsePart,
)
from convlog.domain.events import MessageAppended
from convlog.projections.pairing import message_tools
from convlog.services.items import RawItem, item_tools, items_tools
from convlog.storage.mapper import MsgspecMapper

AT = datetime(2026, 11, 25, tzinfo=UTC)
ids = st.sampled_from(["a", "b", "c"])
texts = st.sampled_from(["", "x", 'quoted "type":"tool_use" text'])
parts = st.one_of(
    st.builds(TextPart, text=texts),
    st.builds(ImagePart, ref=st.just("img.png")),
    st.builds(ThinkingPart, text=texts),
    st.builds(ToolUsePart, id=ids, name=st.just("f"), arguments=st.just('{"q": 1}')),
    st.builds(ToolResultPart, tool_use_id=ids, content=texts),
)
messages = st.builds(
    MessageAppended,
    at=st.just(AT),
    message_id=st.just("m1"),
    role=st.sampled_from(["user", "assistant", "tool"]),
    content=st.one_of(texts, st.lists(parts, max_size=4)),
    tool_calls=st.lists(st.builds(ToolCall, id=ids, name=st.just("f")), max_size=2),
    tool_call_id=st.one_of(st.none(), ids),
    raw=st.just({"type": "message", "content": [{"type": "output_text", "text": "t"}]}),
)


def read_back(events: list[MessageAppended]) -> tuple[list[Any], list[Any]]:
    """The rows as `live_items` reads them (lean) and as everything else does."""
    mapper = MsgspecMapper()
    stream = uuid4()
    stored = [mapper.store(stream, n, e) for n, e in enumerate(events, start=1)]
    rows = [(s.originator_version, s.topic, s.state) for s in stored]
    return mapper.decode_events(stream, rows), [mapper.decode(s) for s in stored]


@settings(max_examples=500, deadline=None)
@given(history=st.lists(messages, min_size=1, max_size=6))
def test_a_lean_item_is_described_as_its_whole_message(history: list[MessageAppended]
                                                       ) -> None:
    lean, whole = read_back(history)
    assert all(type(item) is RawItem for item in lean)
    assert [item.raw for item in lean] == [m.raw for m in whole]
    described = [message_tools(m) for m in whole]
    assert [item_tools(item) for item in lean] == described
    assert items_tools(lean) == described
    assert items_tools(whole) == described


def test_a_message_without_an_item_is_decoded_whole() -> None:
    plain = MessageAppended(at=AT, message_id="m", role="user", content="hi")
    lean, whole = read_back([plain])
    assert lean == whole and type(lean[0]) is MessageAppended
