"""The retention policy's rules, as pure functions (convlog.domain.retention): what a
policy asks of a conversation at a given time, caps, and what an erasure leaves."""

from __future__ import annotations

import math
import os
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import msgspec
import pytest

import convlog
from convlog.domain.conversation import (
    AppendMessages,
    Conversation,
    Expire,
    NoteCapReached,
    SetRetentionPolicy,
    StartConversation,
    decide_and_evolve,
    evolve,
    retention_due,
)
from convlog.domain.errors import InvalidInput
from convlog.domain.events import (
    ConversationArchived,
    ConversationErased,
    ConversationReactivated,
    Event,
    MessageAppended,
    RetentionCapReached,
    RetentionPolicySet,
)
from convlog.domain.retention import (
    CapReached,
    RetentionCause,
    RetentionPolicy,
    check_policy,
    message_bytes,
)
from convlog.storage.mapper import Envelope, MsgspecMapper

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)
DAY = timedelta(days=1)
GOLDEN = Path(__file__).parent.parent / "golden"


class Timeline:
    """One conversation, its commands decided at times the test chooses."""

    def __init__(self, key: str = "k") -> None:
        self.state = Conversation(key=key)
        self.events: list[Event] = []

    def run(self, at: datetime, *commands: object) -> list[Event]:
        events, self.state = decide_and_evolve(self.state, commands, at)  # type: ignore[arg-type]
        self.events += events
        return events

    def say(self, at: datetime, *texts: str, store: RetentionPolicy | None = None
            ) -> list[Event]:
        return self.run(at, AppendMessages(messages=[convlog.user(t) for t in texts],
                                           store_retention=store))


def started(at: datetime = T0) -> Timeline:
    line = Timeline()
    line.run(at, StartConversation(user="u1", title="secret title"))
    return line


# ----------------------------------------------------------------- the policy


@pytest.mark.parametrize(("field", "value"), [
    ("archive_after_days", 0), ("archive_after_days", -1), ("erase_after_days", math.nan),
    ("erase_after_days", math.inf), ("erase_after_days", 40_000), ("archive_after_days", True),
    ("max_messages", 0), ("max_messages", 2.5), ("max_bytes", -3), ("over_cap", "drop"),
])
def test_a_bad_policy_is_a_typed_error_naming_its_field(field: str, value: object) -> None:
    with pytest.raises(InvalidInput) as info:
        check_policy(msgspec.structs.replace(RetentionPolicy(), **{field: value}))
    assert info.value.field == field


def test_compact_is_refused_until_compaction_exists() -> None:
    with pytest.raises(InvalidInput, match="compaction operation") as info:
        check_policy(RetentionPolicy(max_messages=10, over_cap="compact"))
    assert info.value.field == "over_cap"


def test_bytes_are_the_utf8_bytes_of_every_text() -> None:
    assert message_bytes("héllo") == 6
    parts = convlog.assistant([convlog.TextPart(text="ab"), convlog.ThinkingPart(text="c"),
                               convlog.ToolUsePart(id="t", name="ls", arguments="{}"),
                               convlog.ToolResultPart(tool_use_id="t", content="xyz"),
                               convlog.ImagePart(ref="img")])
    assert message_bytes(parts.content) == 2 + 1 + 2 + 2 + 3 + 3
    call = convlog.ToolCall(id="c", name="grep", arguments='{"q":1}')
    assert message_bytes("", [call]) == 4 + 7


# ------------------------------------------------------------- archive, erase


POLICY = RetentionPolicy(archive_after_days=30, erase_after_days=90)


def test_nothing_is_due_before_the_days_have_passed() -> None:
    line = started()
    line.say(T0, "hi")
    assert retention_due(line.state, POLICY, T0 + 30 * DAY - timedelta(seconds=1)) is None
    assert line.run(T0 + 29 * DAY, Expire(store=POLICY)) == []


def test_idle_past_archive_days_archives_with_its_cause() -> None:
    line = started()
    line.say(T0 + DAY, "hi")
    found = retention_due(line.state, POLICY, T0 + 31 * DAY)
    assert found is not None and found[0] == "archive"
    (event,) = line.run(T0 + 31 * DAY, Expire(store=POLICY))
    assert isinstance(event, ConversationArchived)
    assert event.retention == RetentionCause(source="store", policy=POLICY, idle_days=30.0)
    assert line.state.status == "archived"
    # retention's own archive is no activity: idle time still counts from the message
    assert line.state.activity_at == T0 + DAY
    assert line.run(T0 + 32 * DAY, Expire(store=POLICY)) == []


def test_idle_past_erase_days_erases_and_only_once() -> None:
    line = started()
    line.say(T0, "hi", "there")
    (erased,) = line.run(T0 + 90 * DAY, Expire(store=POLICY))
    assert isinstance(erased, ConversationErased) and erased.retention.idle_days == 90.0
    state = line.state
    assert (state.status, state.erased_version, state.erasures) == ("archived", 4, 1)
    assert (state.title, state.content_bytes, state.live_message_count) == (None, 0, 0)
    assert state.epoch_start_version == 4  # the context starts after it
    assert line.run(T0 + 400 * DAY, Expire(store=POLICY)) == []  # nothing new since


def test_a_message_after_an_erasure_reactivates_and_starts_a_new_count() -> None:
    line = started()
    line.say(T0, "old")
    line.run(T0 + 91 * DAY, Expire(store=POLICY))
    events = line.say(T0 + 92 * DAY, "new")
    assert [type(e) for e in events] == [ConversationReactivated, MessageAppended]
    assert (line.state.live_message_count, line.state.content_bytes) == (1, 3)
    assert retention_due(line.state, POLICY, T0 + 100 * DAY) is None
    assert retention_due(line.state, POLICY, T0 + 182 * DAY) == (
        "erase", RetentionCause(source="store", policy=POLICY, idle_days=90.0))


def test_the_conversations_own_policy_wins_over_the_stores() -> None:
    line = started()
    line.say(T0, "hi")
    own = RetentionPolicy(archive_after_days=365)
    line.run(T0, SetRetentionPolicy(policy=own, pinned=True))
    assert line.run(T0 + 100 * DAY, Expire(store=POLICY)) == []
    assert retention_due(line.state, None, T0 + 366 * DAY) == (
        "archive", RetentionCause(source="conversation", policy=own, idle_days=366.0))


def test_setting_a_policy_is_no_activity() -> None:
    line = started()
    line.say(T0, "hi")
    line.run(T0 + 80 * DAY, SetRetentionPolicy(policy=POLICY, pinned=True))
    assert line.state.activity_at == T0
    assert retention_due(line.state, None, T0 + 90 * DAY) is not None


def test_a_forgotten_or_unstarted_conversation_is_never_due() -> None:
    assert retention_due(Conversation(key="k"), POLICY, T0 + 999 * DAY) is None
    line = started()
    line.state.forgotten = True
    assert line.run(T0 + 999 * DAY, Expire(store=POLICY)) == []


def test_an_unpinned_policy_leaves_a_pinned_one_alone() -> None:
    line = started()
    line.run(T0, SetRetentionPolicy(policy=POLICY, pinned=True))
    assert line.run(T0, SetRetentionPolicy(policy=RetentionPolicy(), pinned=False)) == []
    assert line.run(T0, SetRetentionPolicy(policy=POLICY, pinned=True)) == []
    (event,) = line.run(T0, SetRetentionPolicy(policy=RetentionPolicy(max_messages=5),
                                               pinned=True))
    assert isinstance(event, RetentionPolicySet) and event.policy.max_messages == 5


# ----------------------------------------------------------------------- caps


def test_a_turn_past_the_message_cap_is_refused_whole() -> None:
    line = started()
    cap = RetentionPolicy(max_messages=3)
    line.say(T0, "a", "b", store=cap)
    with pytest.raises(CapReached) as info:
        line.say(T0, "c", "d", store=cap)
    assert (info.value.limit, info.value.cap, info.value.size, info.value.source) == (
        "messages", 3, 4, "store")
    assert line.state.live_message_count == 2
    line.say(T0, "c", store=cap)
    with pytest.raises(CapReached):
        line.say(T0, "d", store=cap)


def test_the_byte_cap_counts_text_bytes_and_not_records() -> None:
    line = started()
    line.run(T0, SetRetentionPolicy(policy=RetentionPolicy(max_bytes=10), pinned=True))
    line.say(T0, "12345")
    record = convlog.Message(role="assistant", content=[], raw={"x": "y" * 100},
                             record="attachment")
    line.run(T0, AppendMessages(messages=[record]))
    with pytest.raises(CapReached) as info:
        line.say(T0, "123456")
    assert (info.value.limit, info.value.size, info.value.source) == ("bytes", 11, "conversation")


def test_a_cap_refusal_is_noted_once_per_cap() -> None:
    line = started()
    note = NoteCapReached(limit="messages", cap=3, size=4, source="store")
    (event,) = line.run(T0, note)
    assert isinstance(event, RetentionCapReached)
    assert line.run(T0, note) == []
    assert line.run(T0, msgspec.structs.replace(note, cap=5)) != []


# ---------------------------------------------------------------- the format


def test_an_archive_by_retention_keeps_its_stored_format() -> None:
    """`session_archived` with its optional `retention` cause (a field added with a
    default: older events read as archived by the host)."""
    event = ConversationArchived(
        at=datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC), reason="idle for 30 days",
        retention=RetentionCause(source="conversation", policy=POLICY, idle_days=30.5))
    mapper = MsgspecMapper()
    stored = mapper.to_stored_event(Envelope(uuid.UUID(int=1), 3, event))
    golden = GOLDEN / "session_archived_retention.json"
    if os.environ.get("CONVLOG_UPDATE_GOLDEN"):
        golden.write_bytes(msgspec.json.format(stored.state, indent=2) + b"\n")
    assert msgspec.json.decode(stored.state) == msgspec.json.decode(golden.read_bytes())
    assert mapper.to_domain_event(stored).event == event


def test_evolve_keeps_old_archives_as_activity() -> None:
    state = started().state
    evolve(state, ConversationArchived(at=T0 + DAY, reason="by hand"))
    assert state.activity_at == T0 + DAY
