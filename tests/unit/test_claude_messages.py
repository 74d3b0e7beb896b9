"""The Claude store's two ways from an entry to its readable message (issue 30):
the typed one every well-formed entry takes, and the lenient one it falls back to,
give the same message, and neither refuses what the SDK may append."""

from __future__ import annotations

import base64
from typing import Any

import msgspec
import pytest

from convlog.domain.errors import InvalidInput
from convlog.domain.messages import Message
from convlog.integrations.claude_messages import _slowly, to_message

USAGE = {"input_tokens": 4, "cache_creation_input_tokens": 310, "cache_read_input_tokens": 18,
         "output_tokens": 120, "service_tier": "standard"}
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": base64.b64encode(b"png").decode()}}


def record(kind: str, content: Any, **body: Any) -> dict[str, Any]:
    return {"parentUuid": None, "type": kind, "uuid": "u", "sessionId": "s",
            "message": {"role": kind, "content": content, **body}}


CASES: list[dict[str, Any]] = [
    record("user", "plain text"),
    record("user", ""),
    record("user", []),
    record("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
                    {"type": "text", "text": "and"}]),
    record("user", [{"type": "tool_result", "tool_use_id": "t1",
                     "content": [{"type": "text", "text": "a"}, IMAGE]}]),
    record("user", [IMAGE, {"type": "image", "source": {"type": "url", "url": "https://x"}}]),
    record("assistant", [{"type": "text", "text": "hi"}], model="claude-sonnet-4-5",
           id="msg_1", usage=USAGE),
    record("assistant", [{"type": "tool_use", "id": "t1", "name": "Grep",
                          "input": {"pattern": "x", "n": [1, 2.5, None, True]}},
                         {"type": "thinking", "thinking": "hm"},
                         {"type": "server_tool_use", "id": "s1", "name": "web_search"},
                         {"type": "redacted_thinking", "data": "x"}, {"type": "text"}],
           model="claude-opus-4", usage={"input_tokens": -3, "output_tokens": True,
                                         "cache_read_input_tokens": "9"}),
    record("assistant", "just text", usage={}),
    # four counts: plain ints in range take `_usage_of`'s short way; the rest its long one
    record("assistant", "x", usage={"input_tokens": 0, "output_tokens": 10**15,
                                    "cache_read_input_tokens": 3,
                                    "cache_creation_input_tokens": 4}),
    record("assistant", "x", usage={"input_tokens": 1.5, "output_tokens": False,
                                    "cache_read_input_tokens": None,
                                    "cache_creation_input_tokens": -1}),
    {"type": "summary", "summary": "s", "leafUuid": "x"},
    {"type": "system", "message": "not a body"},
    {"message": {"content": "no type"}},
    {"type": "user", "message": None},
    # refused by the typed decode: the lenient way keeps what it can
    record("user", [{"type": "image", "source": {"type": "base64", "data": "%%% no"}},
                    {"type": "text", "text": 5}, "a string", {"type": "text", "text": "kept"}]),
    record("user", 7),
    record("user", None),
    record("user", {"type": "text", "text": "a dict"}),
    record("assistant", "x", model=5, id=["y"], usage="lots"),
    record("assistant", "x", usage=[1, 2]),
    {"type": "assistant", "message": "a string"},
    {"type": ["odd"], "message": {"content": "x"}},
]


@pytest.mark.parametrize("entry", CASES)
def test_the_typed_way_reads_as_the_lenient_way(entry: dict[str, Any]) -> None:
    fast = to_message(entry, "m1", agent="claude")
    slow = _slowly(entry, msgspec.json.decode(msgspec.json.encode(entry)), "m1", "claude")
    assert isinstance(fast, Message)
    assert msgspec.structs.asdict(fast) == msgspec.structs.asdict(slow)
    assert fast.raw == entry


def test_usage_past_the_limit_and_a_bad_agent_are_refused_as_before() -> None:
    with pytest.raises(InvalidInput, match="usage"):
        to_message(record("assistant", "x", usage={"input_tokens": 10**16}), "m")
    with pytest.raises(InvalidInput, match="UTF-8"):
        to_message(record("assistant", "x"), "m", agent="bad \udc80")
    with pytest.raises(InvalidInput, match="JSON object"):
        to_message(["not", "an", "object"], "m")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="must be JSON"):
        to_message({"type": "user", "x": object()}, "m")
