"""The user's and the agent's views, and their diff, as pure functions of event lists.

Each test writes the log a host would have produced (the same events convlog's own
resume, injection and summary code records) and checks what each view shows.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from convlog.domain.errors import InvalidInput
from convlog.domain.events import (
    ConversationCleared,
    ConversationStarted,
    Event,
    HistoryInjected,
    MessageAppended,
    MessageRetracted,
    NativeSessionBound,
    Recorded,
    ResumeAttempted,
    ResumeFailed,
    ResumeSucceeded,
    SummaryRecorded,
    UserForgotten,
)
from convlog.projections.moment import parse_moment
from convlog.projections.replay_views import agent_view, user_view, view
from convlog.projections.view_diff import diff

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


class Log:
    """Events with positions and one second between them."""

    def __init__(self) -> None:
        self.recorded: list[Recorded] = []
        self.add(ConversationStarted(at=T0, key="k"))

    @property
    def at(self) -> datetime:
        return T0 + timedelta(seconds=len(self.recorded))

    def add(self, event: Event) -> int:
        self.recorded.append(Recorded(version=len(self.recorded) + 1, event=event))  # type: ignore[arg-type]
        return len(self.recorded)

    def say(self, *texts: str) -> list[int]:
        return [self.add(MessageAppended(at=self.at, message_id=f"m{len(self.recorded)}",
                                         role="user" if i % 2 == 0 else "assistant",
                                         content=text))
                for i, text in enumerate(texts)]

    def bind(self, native: str) -> int:
        return self.add(NativeSessionBound(at=self.at, native_session_id=native))

    def resume_native(self, native: str) -> int:
        self.add(ResumeAttempted(at=self.at, strategy="session/resume", native_session_id=native))
        return self.add(ResumeSucceeded(at=self.at, strategy="session/resume",
                                        native_session_id=native, fresh=False))

    def fail(self, strategy: str = "session/resume", reason: str = "not_found") -> int:
        self.add(ResumeAttempted(at=self.at, strategy=strategy))
        return self.add(ResumeFailed(at=self.at, strategy=strategy, reason=reason))  # type: ignore[arg-type]

    def fresh(self, native: str | None, fresh: bool | None = True) -> int:
        self.add(ResumeAttempted(at=self.at, strategy="session/new"))
        return self.add(ResumeSucceeded(at=self.at, strategy="session/new",
                                        native_session_id=native, fresh=fresh))

    def inject(self, low: int, high: int, count: int, native: str | None = None,
               text: str = "HISTORY") -> int:
        return self.add(HistoryInjected(at=self.at, from_version=low, to_version=high,
                                        message_count=count, tokens=50, format="xml",
                                        text=text, native_session_id=native))

    def summary(self, low: int, high: int, text: str = "SUMMARY") -> int:
        return self.add(SummaryRecorded(at=self.at, from_version=low, to_version=high,
                                        message_count=high - low + 1, text=text, tokens=5))

    def clear(self) -> int:
        return self.add(ConversationCleared(at=self.at, reason="new topic"))


def live(log: Log) -> list[tuple[int, str]]:
    return [(e.version, e.kind) for e in agent_view("k", log.recorded).entries if e.live]


def test_without_sessions_or_resumes_the_views_agree() -> None:
    log = Log()
    versions = log.say("a", "b", "c", "d")
    agent = agent_view("k", log.recorded)
    assert [e.version for e in agent.entries] == versions
    assert all(e.live and e.gone is None for e in agent.entries)
    assert [e.text for e in user_view("k", log.recorded).entries] == ["a", "b", "c", "d"]
    d = diff("k", log.recorded)
    assert not d.parted and d.in_context == d.user_messages == 4


def test_a_native_resume_keeps_what_the_session_received() -> None:
    log = Log()
    log.bind("s1")
    before = log.say("a", "b")
    resumed = log.resume_native("s1")
    after = log.say("c", "d")
    agent = agent_view("k", log.recorded)
    assert live(log) == [(v, "message") for v in [*before, *after]]
    marker = next(e for e in agent.entries if e.version == resumed)
    assert marker.kind == "marker" and "resumed natively" in marker.text and not marker.alert
    assert agent.session == "s1" and agent.since == 0
    assert not diff("k", log.recorded).parted


def test_failed_resume_then_fresh_session_with_injection() -> None:
    log = Log()
    log.bind("s1")
    old = log.say("a", "b", "c", "d")
    log.fail()
    boundary = log.fresh("s2")
    log.bind("s2")
    injected = log.inject(old[2], old[3], 2, "s2", text="<history>c d</history>")
    new = log.say("e", "f")
    agent = agent_view("k", log.recorded)
    assert live(log) == [(injected, "injection"), (new[0], "message"), (new[1], "message")]
    gone = [e for e in agent.entries if e.version in old]
    assert all(not e.live and "new, empty session" in (e.gone or "") for e in gone)
    assert all(e.session == "s1" for e in gone)
    marker = next(e for e in agent.entries if e.version == boundary)
    assert "after session/resume failed (not_found)" in marker.text and not marker.alert
    assert agent.session == "s2" and agent.since == boundary

    d = diff("k", log.recorded)
    assert (d.in_context, d.covered) == (2, 2)
    assert [m.version for m in d.missing] == old[:2]
    assert all(f"left out of the history injected at #{injected}" in m.reason
               for m in d.missing)
    assert [e.version for e in d.extra] == [injected] and d.extra[0].live
    assert not d.alerts


def test_fresh_session_with_nothing_injected_is_flagged() -> None:
    log = Log()
    log.bind("0")
    old = log.say("a", "b")
    log.fail()
    boundary = log.fresh("0")  # same id again: convlog injected into "0" before
    new = log.say("c")
    agent = agent_view("k", log.recorded)
    marker = next(e for e in agent.entries if e.version == boundary)
    assert marker.alert and "nothing was injected: the agent lost 2 earlier messages" in (
        marker.text)
    d = diff("k", log.recorded)
    assert [a.version for a in d.alerts] == [boundary]
    assert [m.version for m in d.missing] == old
    assert all(f"started empty at #{boundary}" in m.reason for m in d.missing)
    assert d.in_context == len(new)


def test_a_fresh_first_session_is_not_flagged() -> None:
    log = Log()
    log.fresh("s1")
    log.say("a")
    assert not diff("k", log.recorded).alerts


def test_fresh_is_inferred_from_the_strategy_name_when_not_recorded() -> None:
    log = Log()
    log.say("a")
    log.fresh("s9", fresh=None)  # "session/new": fresh, like convlog.Tier says
    log.say("b")
    assert [v for v, _ in live(log)] == [len(log.recorded)]


def test_every_tier_failing_is_flagged_at_the_next_message() -> None:
    log = Log()
    log.bind("s1")
    log.say("a")
    log.fail()
    log.fail("session/load", "unsupported")
    log.say("b")
    alerts = diff("k", log.recorded).alerts
    assert len(alerts) == 1
    assert "session/resume failed (not_found), session/load failed (unsupported)" in (
        alerts[0].text)


def test_nothing_from_before_a_clear() -> None:
    log = Log()
    old = log.say("a", "b")
    cleared = log.clear()
    new = log.say("c", "d")
    agent = agent_view("k", log.recorded)
    assert [e.version for e in agent.entries] == [cleared, *new]
    assert agent.entries[0].kind == "marker" and "new topic" in agent.entries[0].text
    assert agent.since == cleared
    d = diff("k", log.recorded)
    assert [m.version for m in d.missing] == old
    assert all(m.reason == f"before the clear at #{cleared}" for m in d.missing)
    user = user_view("k", log.recorded)
    assert [e.kind for e in user.entries] == ["message", "message", "marker", "message",
                                              "message"]


def test_a_summary_replaces_the_messages_it_covers() -> None:
    log = Log()
    old = log.say("a", "b", "c")
    summary = log.summary(old[0], old[1])
    new = log.say("d")
    agent = agent_view("k", log.recorded)
    assert live(log) == [(old[2], "message"), (summary, "summary"), (new[0], "message")]
    replaced = [e for e in agent.entries if e.version in old[:2]]
    assert all(e.gone == f"replaced by the summary at #{summary}" for e in replaced)
    d = diff("k", log.recorded)
    assert not d.missing and (d.in_context, d.covered) == (2, 2)
    assert [e.kind for e in d.extra] == ["summary"]


def test_a_summary_made_for_an_injection_is_shown_once_inside_it() -> None:
    log = Log()
    old = log.say("a", "b", "c", "d")
    log.fail()
    log.fresh("s2")
    summary = log.summary(old[0], old[1])
    injected = log.inject(old[0], old[3], 2, "s2", text="SUMMARY + c d")
    agent = agent_view("k", log.recorded)
    assert not [e for e in agent.entries if e.kind == "summary"]
    entry = next(e for e in agent.entries if e.version == injected)
    assert f"includes the summary recorded at #{summary}" in (entry.note or "")
    d = diff("k", log.recorded)
    assert not d.missing and d.covered == 4


def test_the_message_being_sent_is_delivered_after_the_injection() -> None:
    log = Log()
    old = log.say("a", "b")
    sending = log.say("c")[0]  # recorded before the resume, excluded from the context
    log.fresh("s2")
    injected = log.inject(old[0], old[1], 2, "s2")
    assert live(log) == [(injected, "injection"), (sending, "message")]
    entry = agent_view("k", log.recorded).entries[-1]
    assert entry.note == f"sent after the injection at #{injected}"
    assert not diff("k", log.recorded).missing


def test_binding_a_new_id_starts_an_empty_session_and_an_old_one_comes_back() -> None:
    log = Log()
    log.say("a")  # before any id: the session is named by the first binding
    log.bind("s1")
    first = [2, *log.say("b")]
    switched = log.bind("s2")
    second = log.say("c")
    agent = agent_view("k", log.recorded)
    assert {e.session for e in agent.entries if e.version in first} == {"s1"}
    assert [v for v, _ in live(log)] == second
    assert "bound without a resume" in agent.entries[[e.version for e in agent.entries]
                                                     .index(switched)].text
    log.bind("s1")
    assert [v for v, _ in live(log)] == first
    gone = next(e for e in agent_view("k", log.recorded).entries if e.version == second[0])
    assert gone.gone is not None and "went back to session s1" in gone.gone


def test_an_injection_into_a_session_that_already_talked_starts_a_new_one() -> None:
    log = Log()
    old = log.say("a", "b")
    injected = log.inject(old[0], old[1], 2)  # a host's own fresh session, not recorded
    assert live(log) == [(injected, "injection")]
    assert diff("k", log.recorded).covered == 2


@pytest.mark.parametrize("name", ["user", "agent"])
def test_views_at_a_version_and_at_a_time(name: str) -> None:
    log = Log()
    log.say("a", "b", "c")
    by_version = view("k", name, log.recorded, at=3)
    by_time = view("k", name, log.recorded, at=T0 + timedelta(seconds=2))
    assert [e.version for e in by_version.entries] == [2, 3] == [
        e.version for e in by_time.entries]
    assert by_version.version == by_time.version == 3
    assert view("k", name, log.recorded, at=0).entries == []


def test_parse_moment() -> None:
    assert parse_moment(None) is None
    assert parse_moment(7) == parse_moment("7") == 7
    assert parse_moment(" 12 ") == 12
    assert parse_moment(10**30) == parse_moment("9" * 5000) == 2**63 - 1
    assert parse_moment("2026-03-01T12:00:00") == T0  # naive: UTC
    plus2 = timezone(timedelta(hours=2))
    assert parse_moment("2026-03-01T14:00:00+02:00") == T0
    assert parse_moment(datetime(2026, 3, 1, 14, tzinfo=plus2)) == T0
    assert parse_moment(datetime(2026, 3, 1, 12)) == T0
    for bad in ("yesterday", True, -1, 1.5, "", "v3", "\u00b2", "\u0663"):
        with pytest.raises(InvalidInput) as caught:
            parse_moment(bad)
        assert caught.value.field == "at"
    with pytest.raises(InvalidInput, match="'yesterday'"):
        parse_moment("yesterday")


def test_unknown_view_name() -> None:
    with pytest.raises(InvalidInput, match="unknown view 'bot'") as caught:
        view("k", "bot", [])
    assert caught.value.field == "view"


def test_a_later_summary_replaces_an_injection_inside_its_range_only() -> None:
    log = Log()
    old = log.say("a", "b", "c", "d")
    log.fresh("s2")
    injected = log.inject(old[2], old[3], 2, "s2")
    new = log.say("e", "f")
    partial = log.summary(new[0], new[1])  # covers e..f, not the injection's c..d
    assert live(log) == [(injected, "injection"), (partial, "summary")]
    whole = log.summary(old[0], new[1])  # covers everything so far
    assert live(log) == [(whole, "summary")]
    gone = {e.version: e.gone for e in agent_view("k", log.recorded).entries}
    assert gone[injected] == gone[partial] == f"replaced by the summary at #{whole}"
    d = diff("k", log.recorded)
    assert not d.missing and d.covered == 6


def test_memory_blocks_enter_where_recorded_and_leave_when_the_memory_projection_says(
        ) -> None:
    from convlog.domain.events import MemoryInjected

    log = Log()
    blocks = []
    for i in range(3):
        blocks.append(log.add(MemoryInjected(at=log.at, block_id=f"b{i}", memory_ids=[f"m{i}"],
                                             text=f"[Context from memory]\nfact {i}", turn=i)))
        log.say(f"q{i}", f"a{i}")
    capped = agent_view("k", log.recorded, memory_cap=2)
    memory = [e for e in capped.entries if e.kind == "memory"]
    assert [e.version for e in memory] == blocks and memory[0].note == "memories m0"
    assert [e.live for e in memory] == [False, True, True]
    assert memory[0].gone == f"evicted at #{blocks[2]} (at most 2 blocks stay live)"
    ephemeral = [e for e in agent_view("k", log.recorded, memory_cap=0).entries
                 if e.kind == "memory"]
    assert [e.live for e in ephemeral] == [False, False, False]
    assert ephemeral[0].gone == f"evicted at #{blocks[0] + 1} (a block lives for its own turn)"
    at_second = agent_view("k", log.recorded, at=blocks[1], memory_cap=0)
    assert [e.live for e in at_second.entries if e.kind == "memory"] == [False, True]
    d = diff("k", log.recorded, memory_cap=2)
    assert [(e.kind, e.live) for e in d.extra] == [("memory", False), ("memory", True),
                                                  ("memory", True)]
    assert not d.missing


def test_the_agent_view_marks_a_withdrawn_message_and_a_forgotten_user() -> None:
    log = Log()
    log.say("keep", "gone")  # m1, m2
    pop = log.add(MessageRetracted(at=log.at, message_id="m2", reason="pop_item"))
    log.add(UserForgotten(at=log.at, user="u1"))
    entries = agent_view("k", log.recorded).entries
    assert [(e.kind, e.live) for e in entries] == [
        ("message", True), ("message", False), ("marker", False), ("marker", False)]
    assert entries[1].gone == f"withdrawn at #{pop} (pop_item)"
    assert entries[2].text == "message m2 withdrawn (pop_item)"
    assert entries[3].text.startswith("user u1 was forgotten")
