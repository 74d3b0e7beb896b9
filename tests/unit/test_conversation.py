"""The Conversation aggregate's rules, as pure functions: no storage involved."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest

import convlog
from convlog.domain.conversation import (
    AppendMessages,
    Archive,
    BindNativeSession,
    Clear,
    Command,
    Conversation,
    RecordFact,
    RequireUser,
    StartConversation,
    conversation_id,
    decide,
    decide_and_evolve,
    evolve,
)
from convlog.domain.errors import InvalidInput, SystemMessageRejected, UnknownConversation
from convlog.domain.events import (
    ConversationArchived,
    ConversationReactivated,
    ConversationStarted,
    HistoryInjected,
    MessageAppended,
    NativeSessionBound,
    ResumeFailed,
)
from tests.folds import decide_all, fold

NOW = datetime(2026, 5, 1, tzinfo=UTC)


def started(key: str = "k") -> Conversation:
    return fold(key, decide(Conversation(key=key), StartConversation(user="u1"), NOW))


def test_conversation_ids_are_deterministic_and_distinct() -> None:
    assert conversation_id("cli:default") == conversation_id("cli:default")
    assert conversation_id("cli:default") != conversation_id("cli:other")


@pytest.mark.parametrize("key", ["", "   ", "a\nb", "x" * 513, None, 42])
def test_bad_keys_are_rejected(key: object) -> None:
    with pytest.raises(InvalidInput) as info:
        conversation_id(key)  # type: ignore[arg-type]
    assert info.value.field == "key"


def test_start_is_idempotent() -> None:
    state = started()
    assert state.started and state.user == "u1" and state.version == 1
    assert decide(state, StartConversation(user="u1"), NOW) == []
    assert decide(state, StartConversation(), NOW) == []
    # another user cannot apply (issue 25): dropping it would misfile their text
    with pytest.raises(convlog.InvalidInput, match="started as user 'u1'"):
        decide(state, StartConversation(user="someone else"), NOW)


def test_first_message_starts_an_unstarted_conversation() -> None:
    events = decide(Conversation(key="k"), AppendMessages(messages=[convlog.user("hi")]), NOW)
    assert [type(e) for e in events] == [ConversationStarted, MessageAppended]


def test_known_ids_are_skipped_and_a_fully_known_turn_records_nothing() -> None:
    turn = [convlog.user("a", id="1"), convlog.assistant("b", id="2")]
    events = decide(started(), AppendMessages(messages=turn, known_ids=frozenset({"1"})), NOW)
    assert [e.message_id for e in events if isinstance(e, MessageAppended)] == ["2"]
    assert decide(started(), AppendMessages(messages=turn, known_ids=frozenset({"1", "2"})),
                  NOW) == []


def test_duplicate_ids_inside_one_turn_are_an_error() -> None:
    turn = [convlog.user("a", id="1"), convlog.assistant("b", id="1")]
    with pytest.raises(InvalidInput) as info:
        decide(started(), AppendMessages(messages=turn), NOW)
    assert info.value.field == "messages[1].id"


def test_duplicate_ids_in_a_batch_are_located_as_before_the_fast_paths() -> None:
    """decide_and_evolve checks a batch's ids with one set when they are distinct
    (issue 30); a duplicate is still reported where it is, with the same words."""
    a, b = convlog.user("a", id="1"), convlog.assistant("b", id="1")
    with pytest.raises(InvalidInput, match="appears twice in one turn") as info:
        decide_and_evolve(started(), [AppendMessages(messages=[a, b])], NOW)
    assert info.value.field == "messages[1].id"
    with pytest.raises(InvalidInput, match="appears earlier in this batch") as info:
        decide_and_evolve(started(), [AppendMessages(messages=[a]),
                                      AppendMessages(messages=[convlog.user("c", id="2"), b])],
                          NOW)
    assert "command 2" in str(info.value) and str(info.value.field).endswith("messages[1].id")
    with pytest.raises(InvalidInput, match="expected a Message"):
        decide_and_evolve(started(), [AppendMessages(messages=[a, "b"])],  # type: ignore[list-item]
                          NOW)
    events, _ = decide_and_evolve(started(), [AppendMessages(
        messages=[a, convlog.user("c", id="2")], known_ids=frozenset({"1"}))], NOW)
    assert [e.message_id for e in events if isinstance(e, MessageAppended)] == ["2"]


def test_appending_to_an_archived_conversation_reactivates_it() -> None:
    state = fold("k", [*decide_all(Conversation(key="k"), [StartConversation(), Archive()], NOW)])
    assert state.status == "archived"
    events = decide(state, AppendMessages(messages=[convlog.user("back")]), NOW)
    assert isinstance(events[0], ConversationReactivated)


@pytest.mark.parametrize("command", [Archive(), Clear()])
def test_lifecycle_commands_need_an_existing_conversation(command: object) -> None:
    with pytest.raises(UnknownConversation):
        decide(Conversation(key="k"), command, NOW)  # type: ignore[arg-type]


def test_archive_twice_records_once() -> None:
    events = decide_all(started(), [Archive(), Archive()], NOW)
    assert [type(e) for e in events] == [ConversationArchived]


def test_clear_starts_a_new_epoch_after_the_history() -> None:
    state = started()
    events = decide_all(state, [AppendMessages(messages=[convlog.user("x")]), Clear()], NOW)
    after = fold("k", [*decide(Conversation(key="k"), StartConversation(), NOW), *events])
    assert after.epoch == 1 and after.epoch_start_version == 3 and after.message_count == 1


def test_decide_and_evolve_returns_the_folded_state_and_leaves_its_input_alone() -> None:
    state = started()
    commands: list[Command] = [AppendMessages(messages=[convlog.user("x"), convlog.user("y")]),
                               Archive(), Clear()]
    events, after = decide_and_evolve(state, commands, NOW)
    assert events == decide_all(state, commands, NOW)
    folded = msgspec.structs.replace(state)
    for event in events:
        evolve(folded, event)
    assert after == folded and after is not state
    assert state.version == 1 and state.message_count == 0  # the input is unchanged


def test_binding_the_same_native_session_again_records_nothing() -> None:
    state = fold("k", [*decide(Conversation(key="k"), StartConversation(), NOW),
                       NativeSessionBound(at=NOW, native_session_id="s1")])
    assert decide(state, BindNativeSession(native_session_id="s1"), NOW) == []
    assert len(decide(state, BindNativeSession(native_session_id="s2"), NOW)) == 1


def test_facts_are_stamped_with_the_recording_time() -> None:
    fact = ResumeFailed(at=datetime(1970, 1, 1, tzinfo=UTC), strategy="session/load")
    (event,) = decide(started(), RecordFact(event=fact), NOW)
    assert event.at == NOW and isinstance(event, ResumeFailed)


def test_injection_range_must_lie_inside_the_log() -> None:
    bad = HistoryInjected(at=NOW, from_version=1, to_version=99, message_count=1, tokens=1,
                          format="xml", text="x")
    with pytest.raises(InvalidInput, match="outside the log"):
        decide(started(), RecordFact(event=bad), NOW)


def test_a_bad_command_in_a_batch_is_located_by_its_origin() -> None:
    commands: list[Command] = [AppendMessages(messages=[convlog.user("ok")]), Clear(),
                               RecordFact(event=ResumeFailed(at=NOW, strategy=" "))]
    with pytest.raises(InvalidInput) as info:
        decide_all(started(), commands, NOW, origins=["in:1", "in:2", "in:5"])
    assert info.value.where == "in:5" and info.value.field == "strategy"
    assert str(info.value).startswith("in:5: field 'strategy'")


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: convlog.Message(role="system", content="be nice"), "role"),
        (lambda: convlog.Message(role="robot", content="x"), "role"),
        (lambda: convlog.Message(role="user", content=42), "content"),  # type: ignore[arg-type]
        (lambda: convlog.Message(role="user", content={"x": "y"}),  # type: ignore[arg-type]
         "content"),
        (lambda: convlog.Message(role="user", content=["x"]),  # type: ignore[list-item]
         "content[0]"),
        (lambda: convlog.user([convlog.ToolUsePart(id="1", name="f", arguments="{bad")]),
         "content[0].arguments"),
        (lambda: convlog.assistant("x", tool_calls=[convlog.ToolCall(id="1", name="f",
                                                                     arguments="nope")]),
         "tool_calls[0].arguments"),
        (lambda: convlog.user("x", tool_calls=[convlog.ToolCall(id="1", name="f")]),
         "tool_calls"),
        (lambda: convlog.tool("result", tool_call_id=""), "tool_call_id"),
        (lambda: convlog.user("x", id=""), "id"),
        (lambda: convlog.assistant("x", usage=convlog.Usage(input_tokens=-1)),
         "usage.input_tokens"),
        (lambda: convlog.assistant("x", tokens=-3), "tokens"),
        (lambda: convlog.user("bad \udcff bytes"), "content"),
        (lambda: convlog.assistant([convlog.TextPart(text="ok"),
                                    convlog.TextPart(text="\ud800")]), "content[1].text"),
        (lambda: convlog.assistant("x", model="gpt\udcff"), "model"),
    ],
)
def test_bad_messages_fail_where_they_are_built(build: object, field: str) -> None:
    with pytest.raises(InvalidInput) as info:
        build()  # type: ignore[operator]
    assert info.value.field == field


def test_system_prompts_have_their_own_error() -> None:
    with pytest.raises(SystemMessageRejected, match="system prompts are not stored"):
        convlog.Message(role="system", content="You are helpful.")


def test_lone_surrogates_in_session_fields_are_rejected() -> None:
    with pytest.raises(InvalidInput) as info:
        decide(Conversation(key="k"), StartConversation(metadata={"note": "\udcff"}), NOW)
    assert info.value.field == "metadata.note"
    assert "not valid UTF-8" in info.value.reason


def test_the_owner_guard_passes_for_the_owner_and_records_nothing() -> None:
    assert decide(started(), RequireUser(user="u1"), NOW) == []


@pytest.mark.parametrize("state", [started(), Conversation(key="k")])
def test_the_owner_guard_refuses_another_user_as_an_unknown_conversation(
        state: Conversation) -> None:
    with pytest.raises(UnknownConversation):
        decide(state, RequireUser(user="u2"), NOW)


def test_a_guarded_start_of_a_key_someone_else_started_writes_nothing() -> None:
    """u2 checked that "k" did not exist, but u1 started it meanwhile: u2's start is a
    no-op, and the guard after it refuses the whole batch."""
    batch: list[Command] = [StartConversation(user="u2"), RequireUser(user="u2"),
                            AppendMessages(messages=[convlog.user("mine")])]
    with pytest.raises(UnknownConversation):
        decide_all(started(), batch, NOW)
    events = decide_all(Conversation(key="k"), batch, NOW)
    assert [type(e) for e in events] == [ConversationStarted, MessageAppended]
