"""`ConversationLog.live_items`: the SDK stores' read path that decodes a message only
as far as its SDK item (issue 30). It must choose exactly the messages `live_messages`
chooses, give back the same items, and fall back to the whole message when there is
no item to give (another host's message) or when the row is sealed (encrypted store)."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

import convlog
from convlog.domain.events import MessageAppended
from convlog.services.items import RawEntry, RawItem, RawJson


def as_raw(m: MessageAppended | RawJson) -> object:
    """The item of a `live_json` row, decoded: what `live_messages` holds."""
    return msgspec.json.decode(m.raw) if isinstance(m, RawJson) else m.raw


def item(n: int) -> dict[str, object]:
    return {"type": "function_call", "call_id": f"call_{n}", "name": "f", "arguments": "{}"}


def filled(log: convlog.ConversationLog) -> convlog.ConversationLog:
    conv = log.conversation("lean")
    conv.append_turn([convlog.Message(role="user", content=f"m{n}", raw=item(n))
                      for n in range(5)])
    conv.retract_last("pop_item")  # m4 goes
    conv.clear()
    conv.append_turn([convlog.Message(role="user", content=f"m{n}", raw=item(n))
                      for n in range(5, 300)])
    conv.append(convlog.user("no item: written by another host"))
    conv.retract_last("pop_item")
    conv.append(convlog.user("still no item"))
    conv.retract_last("pop_item")
    conv.append(convlog.Message(role="user", content="m300", raw=item(300)))
    conv.append(convlog.user("plain"))
    return log


@pytest.mark.parametrize("last", [None, 1, 2, 20, 130, 500])
def test_live_items_choose_what_live_messages_choose(log: convlog.ConversationLog,
                                                     last: int | None) -> None:
    filled(log)
    full = log.live_messages("lean", last=last)
    lean = log.live_items("lean", last=last)
    assert [m.message_id for m in lean] == [m.message_id for m in full]
    assert [m.raw for m in lean] == [m.raw for m in full]
    # an item's type and call id are there for list-level rules (tool-call pairing)
    assert all(isinstance(m, RawItem) for m in lean[:-1])
    assert isinstance(lean[-1], MessageAppended) and lean[-1].content == "plain"
    # raw_only (the Claude store's load): the same choice, the item and its id only
    bare = log.live_items("lean", last=last, raw_only=True)
    assert [(m.message_id, m.raw) for m in bare] == [(m.message_id, m.raw) for m in full]
    assert all(type(m) is RawEntry for m in bare[:-1]) and bare[-1] == lean[-1]
    if last is None:  # live_json (Google ADK's get_session): the item's JSON, undecoded
        json = log.live_json("lean")
        assert [(m.message_id, as_raw(m)) for m in json] == [
            (m.message_id, m.raw) for m in full]
        assert all(type(m) is RawJson for m in json[:-1]) and json[-1] == lean[-1]


def test_live_items_of_an_encrypted_store(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONVLOG_KEY", "22" * 32)
    url = f"sqlite:///{tmp_path}/sealed.db"
    with convlog.open(url) as log:
        filled(log)
    raw_bytes = (tmp_path / "sealed.db").read_bytes()
    assert b"call_299" not in raw_bytes  # sealed at rest (the WAL is checkpointed on close)
    with convlog.open(url) as log:
        lean = log.live_items("lean")
        assert [m.raw for m in lean] == [m.raw for m in log.live_messages("lean")]
        assert lean[0].raw == item(5)
        assert [m.raw for m in log.live_items("lean", raw_only=True)] == [m.raw for m in lean]
        assert [as_raw(m) for m in log.live_json("lean")] == [m.raw for m in lean]
        for last in (1, 3, 20):
            assert [m.raw for m in log.live_items("lean", last=last)] == [
                m.raw for m in log.live_messages("lean", last=last)]


def test_live_items_of_an_unknown_conversation(log: convlog.ConversationLog) -> None:
    with pytest.raises(convlog.UnknownConversation):
        log.live_items("nobody")


@pytest.mark.parametrize("last", [None, 2, 50])
def test_live_items_find_a_clear_this_process_has_not_seen(tmp_path: Path,
                                                           last: int | None) -> None:
    """live_items loads no state (issue 30): it starts at the epoch this process last
    saw and must find a newer clear, made by another process, in the rows."""
    url = f"sqlite:///{tmp_path}/shared.db"
    with convlog.open(url) as reader, convlog.open(url) as other:
        conv = reader.conversation("shared")
        conv.append_turn([convlog.Message(role="user", content=f"m{n}", raw=item(n))
                          for n in range(3)])
        reader.clear("shared")  # this process now knows epoch 1
        conv.append(convlog.Message(role="user", content="m3", raw=item(3)))
        assert [m.raw for m in reader.live_items("shared", last=last)] == [item(3)]
        other.clear("shared")  # epoch 2, unseen by `reader`
        other.conversation("shared").append(
            convlog.Message(role="user", content="m4", raw=item(4)))
        other.conversation("shared").append(
            convlog.Message(role="user", content="m5", raw=item(5)))
        other.retract_last("shared", "pop_item")
        assert [m.raw for m in reader.live_items("shared", last=last)] == [item(4)]
        assert [m.raw for m in reader.live_items("shared", last=last)] == [
            m.raw for m in other.live_messages("shared", last=last)]


def test_live_items_of_nothing_live(log: convlog.ConversationLog) -> None:
    conv = log.conversation("cleared")
    conv.append(convlog.Message(role="user", content="m0", raw=item(0)))
    conv.clear()
    assert log.live_items("cleared") == log.live_items("cleared", last=5) == []
    assert log.live_items("cleared", last=0) == []
    with pytest.raises(convlog.UnknownConversation):
        log.live_items("nobody", last=0)
    with pytest.raises(convlog.UnknownConversation):
        log.live_items("nobody", last=3)
