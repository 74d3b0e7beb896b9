"""The public API against real storage (in-memory and SQLite files)."""

from __future__ import annotations

from datetime import UTC, timedelta

import pytest

import convlog
from convlog.domain.events import ConversationStarted, MessageAppended


def test_a_turn_is_recorded_and_read_back(log: convlog.ConversationLog) -> None:
    conv = log.conversation("discord:thread:42", user="u1", agent="copilot", channel="discord")
    result = conv.append_turn([
        convlog.user("What did we decide about auth?", id="m1"),
        convlog.assistant("JWT with rotating keys.", id="m2", model="gpt-4o",
                          usage=convlog.Usage(input_tokens=812, output_tokens=9)),
    ])
    assert result.appended == ["m1", "m2"] and result.skipped == [] and result.version == 3
    info = conv.info()
    assert (info.user, info.agent, info.channel, info.message_count) == (
        "u1", "copilot", "discord", 2)
    messages = conv.messages()
    assert [m.content for m in messages] == ["What did we decide about auth?",
                                             "JWT with rotating keys."]
    assert messages[1].usage == convlog.Usage(input_tokens=812, output_tokens=9)


def test_retrying_a_turn_is_a_no_op(log: convlog.ConversationLog) -> None:
    conv = log.conversation("k")
    turn = [convlog.user("a", id="1"), convlog.assistant("b", id="2")]
    conv.append_turn(turn)
    again = conv.append_turn(turn)
    assert again.appended == [] and again.skipped == ["1", "2"] and again.events == 0
    partly = conv.append_turn([*turn, convlog.user("c", id="3")])
    assert partly.appended == ["3"] and partly.skipped == ["1", "2"]
    assert [m.message_id for m in conv.messages()] == ["1", "2", "3"]


def test_message_ids_are_unique_per_conversation_not_globally(
        log: convlog.ConversationLog) -> None:
    log.append("a", convlog.user("x", id="same"))
    assert log.append("b", convlog.user("y", id="same")).appended == ["same"]


def test_a_turn_with_one_bad_message_writes_nothing(log: convlog.ConversationLog) -> None:
    conv = log.conversation("k")
    conv.append(convlog.user("before", id="0"))
    with pytest.raises(convlog.InvalidInput):
        conv.append_turn([convlog.user("ok", id="1"), convlog.user("dup", id="1")])
    assert [m.message_id for m in conv.messages()] == ["0"]


def test_starting_again_records_nothing(log: convlog.ConversationLog) -> None:
    log.conversation("k", user="u1")
    log.conversation("k", user="u1")
    assert [type(r.event) for r in log.events("k")] == [ConversationStarted]


def test_the_first_message_of_an_unknown_key_starts_it(log: convlog.ConversationLog) -> None:
    log.append("auto:start", convlog.user("hi"))
    assert [type(r.event) for r in log.events("auto:start")] == [ConversationStarted,
                                                                  MessageAppended]


def test_unknown_keys_raise_on_reads(log: convlog.ConversationLog) -> None:
    for read in (log.get, log.state, log.transcript, log.events, log.messages):
        with pytest.raises(convlog.UnknownConversation):
            read("nobody")
    with pytest.raises(convlog.UnknownConversation):
        log.archive("nobody")


def test_last_n_messages_come_from_the_tail_in_order(log: convlog.ConversationLog) -> None:
    conv = log.conversation("k")
    for i in range(30):
        conv.append_turn([convlog.user(f"q{i}", id=f"q{i}"), convlog.assistant(f"a{i}")])
        conv.bind_native_session(f"s{i}")  # non-message events in between
    last = conv.messages(last=5)
    assert [m.content for m in last] == ["a27", "q28", "a28", "q29", "a29"]
    assert len(conv.messages(last=1000)) == 60


def test_archive_reactivate_and_listing(log: convlog.ConversationLog) -> None:
    log.conversation("a", user="u1", agent="x")
    log.conversation("b", user="u2", agent="y")
    log.append("a", convlog.user("newest activity"))
    assert [s.key for s in log.conversations()] == ["a", "b"]
    log.archive("b", reason="idle")
    assert [s.key for s in log.conversations()] == ["a"]
    assert {s.key for s in log.conversations(include_archived=True)} == {"a", "b"}
    assert [s.key for s in log.conversations(user="u2", include_archived=True)] == ["b"]
    assert log.conversations(agent="nope") == []
    log.reactivate("b")
    assert log.info("b").status == "active"


def test_clear_keeps_history_and_marks_the_transcript(log: convlog.ConversationLog) -> None:
    conv = log.conversation("k")
    conv.append(convlog.user("old"))
    conv.clear(reason="/clear")
    conv.append(convlog.user("new"))
    assert [line.role for line in conv.transcript()] == ["user", "marker", "user"]
    state = conv.state
    assert state.epoch == 1 and state.epoch_start_version == 3


def test_replay_until_a_version_or_a_time(log: convlog.ConversationLog) -> None:
    conv = log.conversation("k")
    for i in range(5):
        conv.append(convlog.user(f"m{i}"))
    rows = conv.timeline()
    assert [r.version for r in conv.timeline(until=3)] == [1, 2, 3]
    cut = rows[2].at
    assert all(r.at <= cut for r in conv.timeline(until=cut))
    assert conv.timeline(until=rows[0].at - timedelta(seconds=1)) == []


def test_the_timeline_and_the_views_cut_the_log_at_the_same_moment(
        log: convlog.ConversationLog) -> None:
    """One parser of "a moment" for both (issue 46): a naive time is UTC (the
    timeline raised TypeError comparing it with the stored aware times), a version
    may be given as digits, and a moment that is neither is an InvalidInput."""
    conv = log.conversation("k")
    for i in range(3):
        conv.append(convlog.user(f"m{i}"))
    at = conv.timeline()[2].at
    naive = at.astimezone(UTC).replace(tzinfo=None)
    for moment in (naive, at, 3, "3", at.isoformat(), naive.isoformat()):
        assert [r.version for r in conv.timeline(until=moment)] == [1, 2, 3], moment
        assert conv.view(at=moment).version == 3, moment
    with pytest.raises(convlog.InvalidInput) as raised:
        conv.timeline(until="yesterday")
    assert raised.value.field == "until"


def test_state_returned_to_callers_is_a_copy(log: convlog.ConversationLog) -> None:
    log.conversation("k")
    log.state("k").message_count = 999
    assert log.state("k").message_count == 0


def test_a_count_is_made_when_first_needed(sqlite_url: str) -> None:
    """Issue 45: the append stores no count (a host's is kept); a reader that shows one
    (here the timeline) makes it then."""
    with convlog.open(sqlite_url) as log:
        log.append("k", convlog.user("hello world", id="1"))
        log.append("k", convlog.user("counted by the host", id="2", tokens=7))
        first, second = log.messages("k")
        shown = [r.details.split(" | ")[0] for r in log.timeline("k")[1:]]
    assert (first.tokens, first.token_counter) == (None, None)
    assert (second.tokens, second.token_counter) == (7, "host")
    assert shown == ["id=1 role=user tokens=2", "id=2 role=user tokens=7"]
