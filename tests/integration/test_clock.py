"""One clock for everything that stamps or expires (issue 46): the log's
`LogOptions.clock` stamps every event, ages conversations (`expire`, a summary's
status), ages kept request answers and times resume tiers. A test moves it; nothing
sleeps. (`test_expire_archives_idle_conversations_only` and
`test_latency_is_recorded_in_milliseconds` use it too.)"""

from __future__ import annotations

import convlog
from convlog.services.log import application
from convlog.storage.requests import KEEP_SECONDS, Answer
from tests.clock import ManualClock


def test_events_are_stamped_by_the_logs_clock(clocked_log: convlog.ConversationLog,
                                              clock: ManualClock) -> None:
    start = clock.now()
    conv = clocked_log.conversation("k")
    clock.advance(60)
    conv.append(convlog.user("later"))
    assert [r.at for r in conv.timeline()] == [start, clock.now()]
    assert conv.info().last_active_at == clock.now()


def test_a_summary_ages_on_the_logs_clock(clocked_log: convlog.ConversationLog,
                                          clock: ManualClock) -> None:
    clocked_log.append("k", convlog.user("hi"))
    assert clocked_log.summary("k", paused_after=60).status == "active"
    clock.advance(61)
    assert clocked_log.summary("k", paused_after=60).status == "paused"


def test_a_kept_answer_expires_on_the_logs_clock(clocked_log: convlog.ConversationLog,
                                                 clock: ManualClock) -> None:
    answer = Answer("fingerprint", 200, b"{}")
    assert application(clocked_log).requests.keep("scope", answer, None) == answer
    clock.advance(KEEP_SECONDS - 1)
    assert application(clocked_log).requests.answer("scope") == answer
    clock.advance(2)
    if application(clocked_log).config.backend != "memory":  # nothing outlives a memory:// process
        assert application(clocked_log).requests.answer("scope") is None


def test_a_contexts_header_ages_on_the_logs_clock(clocked_log: convlog.ConversationLog,
                                                  clock: ManualClock) -> None:
    """The markdown context's header says whether the conversation is paused: on the
    log's clock, as `summary()` does (the header read the machine's clock)."""
    clocked_log.append("k", convlog.user("hi"))
    assert "- Status: active" in clocked_log.context("k", format="markdown").text
    clock.advance(31 * 60)  # PAUSED_AFTER is 30 minutes
    assert "- Status: paused" in clocked_log.context("k", format="markdown").text
