"""The live history behind the SDK session stores: `raw` kept exactly, `retract_last`
as a compensating event (the message stays in the log), `clear` as a new epoch."""

from __future__ import annotations

import threading

import pytest

import convlog
from convlog.domain.events import MessageAppended, MessageRetracted
from convlog.services.log import application


def texts(messages: list[MessageAppended]) -> list[str]:
    return [m.content for m in messages if isinstance(m.content, str)]


def test_raw_items_come_back_exactly(log: convlog.ConversationLog) -> None:
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "é"}],
            "n": 2**53, "f": 0.1, "nested": {"ok": True, "none": None, "list": [1, "2"]}}
    conv = log.conversation("raw")
    conv.append(convlog.Message(role="user", content="é", raw=item))
    assert conv.live_messages()[0].raw == item
    assert conv.messages()[0].raw == item


def test_raw_must_be_an_object() -> None:
    with pytest.raises(convlog.InvalidInput, match="raw"):
        convlog.Message(role="user", content="x", raw=[1, 2])  # type: ignore[arg-type]


def test_retract_last_withdraws_the_newest_live_message(log: convlog.ConversationLog) -> None:
    conv = log.conversation("pop")
    conv.append_turn([convlog.user(t) for t in ("a", "b", "c")])
    popped = conv.retract_last("pop_item")
    assert popped is not None and popped.content == "c"
    assert texts(conv.live_messages()) == ["a", "b"]
    assert texts(conv.live_messages(last=1)) == ["b"]
    again = conv.retract_last()
    assert again is not None and again.content == "b"
    assert texts(conv.live_messages()) == ["a"]
    # history is kept for replay: every message and both retractions are in the log
    assert texts(conv.messages()) == ["a", "b", "c"]
    retractions = [r.event for r in conv.events() if isinstance(r.event, MessageRetracted)]
    assert [(e.message_id, e.reason) for e in retractions] == [
        (popped.message_id, "pop_item"), (again.message_id, None)]


def test_retract_on_nothing_records_nothing(log: convlog.ConversationLog) -> None:
    assert log.retract_last("never-started") is None
    assert not log.exists("never-started")
    conv = log.conversation("empty")
    version = conv.info().version
    assert conv.retract_last() is None
    assert conv.info().version == version


def test_clear_starts_a_new_epoch_of_live_items(log: convlog.ConversationLog) -> None:
    conv = log.conversation("epochs")
    conv.append_turn([convlog.user("old")])
    conv.clear("clear_session")
    assert conv.live_messages() == [] and conv.live_messages(last=5) == []
    assert conv.retract_last() is None  # a pop never reaches into an earlier epoch
    conv.append(convlog.user("new"))
    assert texts(conv.live_messages()) == ["new"]
    assert texts(conv.messages()) == ["new"]  # a read respects the clear (issue 42)
    assert [line.text for line in conv.transcript() if line.role == "user"] == ["old", "new"]


def test_last_walks_past_many_retractions(log: convlog.ConversationLog) -> None:
    conv = log.conversation("deep")
    conv.append_turn([convlog.user(str(i)) for i in range(300)])
    for _ in range(200):
        conv.retract_last()
    assert texts(conv.live_messages(last=3)) == ["97", "98", "99"]
    assert len(conv.live_messages()) == 100
    assert conv.live_messages(last=0) == []
    with pytest.raises(convlog.InvalidInput, match="last"):
        conv.live_messages(last=-1)


def test_context_skips_retracted_messages(log: convlog.ConversationLog) -> None:
    conv = log.conversation("ctx")
    conv.append_turn([convlog.user("keep me"), convlog.assistant("drop me")])
    conv.retract_last()
    text = conv.context().text
    assert "keep me" in text and "drop me" not in text


def test_two_logs_popping_at_once_retract_different_messages(sqlite_url: str) -> None:
    """Two ConversationLogs on one file stand for two processes: each has its own cache,
    so the loser of a race sees the winner's retraction only through the conflict."""
    with convlog.open(sqlite_url) as first, convlog.open(sqlite_url) as second:
        first.conversation("race").append_turn([convlog.user(str(i)) for i in range(40)])
        second.live_messages("race")  # warm the second log's cache
        popped: list[str] = []

        def pop(log: convlog.ConversationLog) -> None:
            for _ in range(10):
                found = log.retract_last("race")
                assert found is not None
                popped.append(str(found.content))

        threads = [threading.Thread(target=pop, args=(log,)) for log in (first, second)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(popped, key=int) == [str(i) for i in range(20, 40)]
        assert texts(first.live_messages("race")) == [str(i) for i in range(20)]


def test_the_timeline_shows_a_retraction(log: convlog.ConversationLog) -> None:
    conv = log.conversation("timeline")
    conv.append(convlog.Message(id="m1", role="user", content="hi"))
    conv.retract_last("pop_item")
    row = conv.timeline()[-1]
    assert row.type == "message_retracted" and "id=m1 reason=pop_item" in row.details


def test_a_context_gives_no_line_to_a_message_with_nothing_to_read(
        log: convlog.ConversationLog) -> None:
    conv = log.conversation("markers")
    conv.append_turn([convlog.user("hello"),
                      convlog.Message(role="assistant", content=[], raw={"type": "tag"}),
                      convlog.assistant("hi")])
    context = conv.context()
    assert context.message_count == 2 and context.omitted == 0


def test_retracted_since_finds_what_was_popped_after_a_message(
        log: convlog.ConversationLog) -> None:
    from convlog.services.items import retracted_since

    conv = log.conversation("since")
    conv.append_turn([convlog.user("old")])
    conv.retract_last()  # before the clear: another epoch
    conv.clear()
    conv.append_turn([convlog.user(t) for t in ("a", "b", "c")])
    conv.retract_last()  # c
    conv.append_turn([convlog.user(f"n{i}") for i in range(150)])  # more than a page
    for _ in range(150):
        conv.retract_last()
    a, b = conv.live_messages()
    assert texts(retracted_since(application(log).store, "since", b.message_id))[-1:] == ["c"]  # type: ignore[arg-type]
    assert len(retracted_since(application(log).store, "since", b.message_id)) == 151
    assert texts(retracted_since(application(log).store, "since", a.message_id))[-1:] == ["c"]  # type: ignore[arg-type]
    conv.retract_last()  # b: retracted after itself, so found walking back to it
    store = application(log).store
    assert [m.message_id for m in retracted_since(store, "since", b.message_id)][-1] == (
        b.message_id)
    assert "old" not in texts(retracted_since(application(log).store, "since", "nowhere"))  # type: ignore[arg-type]


def test_retracted_since_is_empty_without_a_retraction_in_the_epoch(
        log: convlog.ConversationLog) -> None:
    from convlog.services.items import retracted_since

    conv = log.conversation("none-retracted")
    conv.append_turn([convlog.user("a"), convlog.user("b")])
    (a, _) = conv.live_messages()
    assert retracted_since(application(log).store, "none-retracted", a.message_id) == []
    conv.retract_last()
    conv.clear()  # the retraction belongs to the previous epoch
    conv.append_turn([convlog.user("c")])
    (c,) = conv.live_messages()
    assert retracted_since(application(log).store, "none-retracted", c.message_id) == []
