"""Tiered resume against real storage: the recorded telemetry, routing, injection at
most once, timeouts, the async API and the auto-start gap."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import convlog
from convlog.domain.events import (
    HistoryInjected,
    NativeSessionBound,
    ResumeAttempted,
    ResumeFailed,
    ResumeSucceeded,
    SummaryRecorded,
)
from convlog.services.resume.run import MAX_ERROR_CHARS, classify
from tests.clock import ManualClock

RESUME_EVENTS = (ResumeAttempted, ResumeSucceeded, ResumeFailed, HistoryInjected)


class Calls:
    """Records what each tier was told."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []

    def tier(self, strategy: str, result: Any = None, *, raises: BaseException | None = None,
             delay: float = 0.0, **kwargs: Any) -> convlog.Tier:
        def run(call: convlog.TierCall) -> Any:
            self.seen.append((call.strategy, call.native_session_id))
            assert call.strategy == strategy
            if delay:
                time.sleep(delay)
            if raises is not None:
                raise raises
            return result
        return convlog.Tier(strategy, run, **kwargs)

    @property
    def strategies(self) -> list[str]:
        return [s for s, _ in self.seen]


def trail(conv: convlog.ConversationHandle) -> list[tuple[str, str, str | None]]:
    """The resume telemetry of a conversation: (event, strategy or format, reason)."""
    rows: list[tuple[str, str, str | None]] = []
    for r in conv.events():
        e = r.event
        if isinstance(e, ResumeAttempted):
            rows.append(("attempted", e.strategy, None))
        elif isinstance(e, ResumeSucceeded):
            rows.append(("succeeded", e.strategy, None))
        elif isinstance(e, ResumeFailed):
            rows.append(("failed", e.strategy, e.reason))
        elif isinstance(e, HistoryInjected):
            rows.append(("injected", e.format, None))
    return rows


def injections(conv: convlog.ConversationHandle) -> list[HistoryInjected]:
    return [r.event for r in conv.events() if isinstance(r.event, HistoryInjected)]


def history(conv: convlog.ConversationHandle, n: int = 4) -> None:
    conv.append_turn([convlog.user(f"question {i}", id=f"q{i}") if i % 2 == 0 else
                      convlog.assistant(f"answer {i}", id=f"a{i}") for i in range(n)])


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at teardown so a deliberately hung tier's thread ends promptly."""
    event = threading.Event()
    yield event
    event.set()


# ------------------------------------------------------------ the tiers run


def test_tiers_are_tried_in_order_and_stop_at_the_first_success(
        log: convlog.ConversationLog) -> None:
    conv = log.conversation("c", agent="copilot")
    conv.bind_native_session("native-1")
    history(conv)
    calls = Calls()
    outcome = conv.resume([
        calls.tier("session/resume", raises=convlog.TierFailed("unsupported", "no resume")),
        calls.tier("session/load", True),
        calls.tier("session/new", "fresh-1"),
    ])
    assert calls.strategies == ["session/resume", "session/load"]
    assert outcome.ok and outcome.strategy == "session/load" and not outcome.fresh
    assert outcome.native_session_id == "native-1"
    assert outcome.injection is None and not outcome.already_injected
    assert trail(conv) == [("attempted", "session/resume", None),
                           ("failed", "session/resume", "unsupported"),
                           ("attempted", "session/load", None),
                           ("succeeded", "session/load", None)]
    assert injections(conv) == []
    assert [(a.strategy, a.ok, a.reason) for a in outcome.attempts] == [
        ("session/resume", False, "unsupported"), ("session/load", True, None)]
    failed = next(r.event for r in conv.events() if isinstance(r.event, ResumeFailed))
    assert failed.error == "TierFailed: no resume"
    assert failed.native_session_id == "native-1"


class RpcError(Exception):
    def __init__(self, code: int):
        super().__init__(f"json-rpc error {code}")
        self.code = code


@pytest.mark.parametrize(("exc", "reason"), [
    (convlog.TierFailed("transient", "busy"), "transient"),
    (convlog.TierFailed("not_found"), "not_found"),
    (TimeoutError("slow"), "timeout"),
    (NotImplementedError(), "unsupported"),
    (KeyError("session"), "not_found"),
    (FileNotFoundError("gone"), "not_found"),
    (ConnectionError("reset"), "transient"),
    (ConnectionRefusedError(), "transient"),
    (RuntimeError("boom"), "error"),
    (ValueError("bad"), "error"),
    (RpcError(-32601), "unsupported"),
    (RpcError(-32002), "not_found"),
    (RpcError(-32000), "error"),
])
def test_failure_reasons_are_classified_and_recorded(
        log: convlog.ConversationLog, exc: Exception, reason: str) -> None:
    assert classify(exc) == reason
    conv = log.conversation("c")
    conv.bind_native_session("n")
    outcome = conv.resume([Calls().tier("session/resume", raises=exc)])
    assert not outcome.ok and outcome.injection is None
    assert trail(conv) == [("attempted", "session/resume", None),
                           ("failed", "session/resume", reason)]
    [attempt] = outcome.attempts
    assert (attempt.ok, attempt.reason) == (False, reason)
    assert attempt.error is not None and attempt.error.startswith(type(exc).__name__)


def test_long_error_texts_are_cut(log: convlog.ConversationLog) -> None:
    conv = log.conversation("c")
    conv.bind_native_session("n")
    conv.resume([Calls().tier("session/resume", raises=RuntimeError("x" * 5_000))])
    [failed] = [r.event for r in conv.events() if isinstance(r.event, ResumeFailed)]
    assert failed.error is not None and len(failed.error) == MAX_ERROR_CHARS


def test_a_tier_returning_false_is_a_failure(log: convlog.ConversationLog) -> None:
    conv = log.conversation("c")
    conv.bind_native_session("n")
    calls = Calls()
    outcome = conv.resume([calls.tier("session/resume", False), calls.tier("session/load")])
    assert calls.strategies == ["session/resume", "session/load"]
    assert outcome.strategy == "session/load"
    assert trail(conv)[:2] == [("attempted", "session/resume", None),
                               ("failed", "session/resume", "error")]


def test_all_tiers_failing_is_an_outcome_not_a_crash(log: convlog.ConversationLog) -> None:
    conv = log.conversation("c")
    conv.bind_native_session("n")
    history(conv)
    calls = Calls()
    outcome = conv.resume([calls.tier("session/resume", raises=RuntimeError("a")),
                           calls.tier("session/load", raises=ConnectionError("b")),
                           calls.tier("session/new", raises=KeyError("c"))])
    assert calls.strategies == ["session/resume", "session/load", "session/new"]
    assert (outcome.ok, outcome.strategy, outcome.injection) == (False, None, None)
    assert [a.reason for a in outcome.attempts] == ["error", "transient", "not_found"]
    assert [row[0] for row in trail(conv)] == ["attempted", "failed"] * 3
    assert injections(conv) == []


def timed(clock: ManualClock, strategy: str, takes: float, *,
          raises: BaseException | None = None) -> convlog.Tier:
    """A tier that "takes" `takes` seconds on the log's clock."""
    def run(call: convlog.TierCall) -> None:
        clock.advance(takes)
        if raises is not None:
            raise raises
    return convlog.Tier(strategy, run)


def test_latency_is_recorded_in_milliseconds(clocked_log: convlog.ConversationLog,
                                             clock: ManualClock) -> None:
    log = clocked_log
    conv = log.conversation("c")
    conv.bind_native_session("n")
    outcome = conv.resume([timed(clock, "session/resume", 0.03, raises=ConnectionError()),
                           timed(clock, "session/load", 0.05)])
    events = [r.event for r in conv.events()
              if isinstance(r.event, ResumeFailed | ResumeSucceeded)]
    assert [e.latency_ms for e in events] == [a.latency_ms for a in outcome.attempts]
    assert [e.latency_ms for e in events] == [30.0, 50.0]  # ms, to the microsecond
    quick = log.conversation("q")
    quick.bind_native_session("n")
    [attempt] = quick.resume([timed(clock, "session/resume", 0.000_25)]).attempts
    assert attempt.latency_ms == 0.25  # a quick tier's latency is not rounded away


# ------------------------------------------------------------ injection


def test_native_success_injects_nothing(log: convlog.ConversationLog) -> None:
    conv = log.conversation("c")
    conv.bind_native_session("native-1")
    history(conv)
    calls = Calls()
    outcome = conv.resume([calls.tier("session/resume"), calls.tier("session/new", "fresh")])
    assert calls.strategies == ["session/resume"]
    assert outcome.injection is None and outcome.ok and not outcome.fresh
    assert injections(conv) == []
    assert conv.state.native_session_id == "native-1"


def test_fresh_success_injects_the_recorded_text(log: convlog.ConversationLog) -> None:
    conv = log.conversation("c")
    conv.bind_native_session("dead-1")
    history(conv)
    calls = Calls()
    outcome = conv.resume([calls.tier("session/resume", raises=convlog.TierFailed("not_found")),
                           calls.tier("session/load", raises=NotImplementedError()),
                           calls.tier("session/new", "fresh-1")],
                          budget=convlog.Budget(tokens=2_000), format="markdown")
    assert calls.seen == [("session/resume", "dead-1"), ("session/load", "dead-1"),
                          ("session/new", None)]  # a fresh tier gets no old session id
    assert outcome.ok and outcome.fresh and outcome.strategy == "session/new"
    assert outcome.native_session_id == "fresh-1"
    injection = outcome.injection
    assert injection is not None and injection.format == "markdown"
    [event] = injections(conv)
    assert event.text == injection.text
    assert (event.message_count, event.tokens, event.native_session_id) == (
        4, injection.tokens, "fresh-1")
    assert (event.from_version, event.to_version) == (injection.from_version,
                                                      injection.to_version)
    for i in range(4):
        assert (f"question {i}" if i % 2 == 0 else f"answer {i}") in injection.text
    assert trail(conv)[-2:] == [("succeeded", "session/new", None),
                                ("injected", "markdown", None)]
    # The new native session is now the one bound to this conversation.
    assert conv.state.native_session_id == "fresh-1"
    assert any(isinstance(r.event, NativeSessionBound)
               and r.event.native_session_id == "fresh-1" for r in conv.events())


def test_injection_happens_at_most_once_per_native_session(
        log: convlog.ConversationLog) -> None:
    conv = log.conversation("c")
    history(conv)
    calls = Calls()
    first = conv.resume([calls.tier("session/new", "fresh-1")])
    assert first.injection is not None and not first.already_injected
    second = conv.resume([calls.tier("session/new", "fresh-1")])
    assert second.ok and second.injection is None and second.already_injected
    assert len(injections(conv)) == 1
    third = conv.resume([calls.tier("session/new", "fresh-2")])
    assert third.injection is not None
    assert [e.native_session_id for e in injections(conv)] == ["fresh-1", "fresh-2"]


def test_a_native_tier_gets_the_session_bound_to_this_conversation(
        log: convlog.ConversationLog) -> None:
    a = log.conversation("a", agent="copilot", user="u1")
    b = log.conversation("b", agent="copilot", user="u1")
    a.bind_native_session("native-A")
    b.bind_native_session("native-B")
    calls = Calls()
    a.resume([calls.tier("session/resume")])
    b.resume([calls.tier("session/resume")])
    assert calls.seen == [("session/resume", "native-A"), ("session/resume", "native-B")]
    a.bind_native_session("native-A2")
    a.resume([calls.tier("session/load")])
    assert calls.seen[-1] == ("session/load", "native-A2")
    attempted = [r.event.native_session_id for r in a.events()
                 if isinstance(r.event, ResumeAttempted)]
    assert attempted == ["native-A", "native-A2"]


def test_without_a_bound_session_a_native_tier_is_not_called(
        log: convlog.ConversationLog) -> None:
    conv = log.conversation("c")
    history(conv)
    other = log.conversation("other", agent=conv.info().agent)
    other.bind_native_session("someone-elses")
    calls = Calls()
    outcome = conv.resume([calls.tier("session/resume"), calls.tier("session/load"),
                           calls.tier("session/new", "fresh-1")])
    assert calls.seen == [("session/new", None)]
    assert trail(conv)[:4] == [("attempted", "session/resume", None),
                               ("failed", "session/resume", "not_found"),
                               ("attempted", "session/load", None),
                               ("failed", "session/load", "not_found")]
    assert [(a.ok, a.reason, a.latency_ms) for a in outcome.attempts[:2]] == [
        (False, "not_found", None), (False, "not_found", None)]
    assert outcome.injection is not None


def test_a_hung_tier_times_out(log: convlog.ConversationLog,
                               release: threading.Event) -> None:
    conv = log.conversation("c")
    conv.bind_native_session("n")
    history(conv)

    def hang(call: convlog.TierCall) -> None:
        release.wait(10)

    # Had the timeout not fired, the hung tier would have answered (None: a success)
    # once released, and session/resume would be the strategy.
    outcome = conv.resume([convlog.Tier("session/resume", hang, timeout=0.2),
                           Calls().tier("session/new", "fresh-1")])
    assert outcome.ok and outcome.strategy == "session/new" and outcome.injection is not None
    assert trail(conv)[:2] == [("attempted", "session/resume", None),
                               ("failed", "session/resume", "timeout")]
    timed_out = outcome.attempts[0]
    assert timed_out.latency_ms is not None and timed_out.latency_ms >= 180  # waited it out
    assert timed_out.error is not None and "0.2s" in timed_out.error


def test_an_unknown_key_is_refused_before_any_tier_and_stays_unknown(
        log: convlog.ConversationLog) -> None:
    """A resume never starts a conversation: a mistyped key used to become an empty
    one with no user (issue 42). No tier runs, nothing is recorded."""
    calls = Calls()
    with pytest.raises(convlog.UnknownConversation):
        log.resume("never-seen", [calls.tier("session/resume"),
                                  calls.tier("session/new", "fresh-1")])
    assert calls.seen == []
    assert not log.exists("never-seen")


def test_a_conversation_without_history_injects_nothing(
        log: convlog.ConversationLog) -> None:
    log.conversation("empty")
    calls = Calls()
    outcome = log.resume("empty", [calls.tier("session/resume"),
                                   calls.tier("session/new", "fresh-1")])
    assert calls.seen == [("session/new", None)]
    assert outcome.ok and outcome.fresh and outcome.injection is None
    conv = log.get("empty")
    assert injections(conv) == []
    assert trail(conv) == [("attempted", "session/resume", None),
                           ("failed", "session/resume", "not_found"),
                           ("attempted", "session/new", None),
                           ("succeeded", "session/new", None)]
    assert conv.state.native_session_id == "fresh-1"


def test_the_auto_start_gap_injects_history_but_not_the_message_being_sent(
        log: convlog.ConversationLog) -> None:
    # A host restarted; the user types before the host ever started an agent session.
    conv = log.conversation("c")
    history(conv)
    sent = convlog.user("NEW QUESTION being sent now", id="now")
    conv.append(sent)
    outcome = conv.resume([Calls().tier("session/new", "fresh-1")], exclude=[sent.id])
    assert outcome.injection is not None
    assert "NEW QUESTION" not in outcome.injection.text
    assert "question 0" in outcome.injection.text and "answer 3" in outcome.injection.text
    assert outcome.injection.message_count == 4 and outcome.injection.omitted == 0
    [event] = injections(conv)
    assert "NEW QUESTION" not in event.text


def test_the_auto_start_gap_on_a_brand_new_key(log: convlog.ConversationLog) -> None:
    sent = convlog.user("first words ever", id="first")
    log.append("brand-new", sent)  # auto-starts the conversation
    outcome = log.resume("brand-new", [Calls().tier("session/new", "fresh-1")],
                         exclude=[sent.id])
    assert outcome.ok and outcome.injection is None
    assert injections(log.get("brand-new")) == []


def test_resume_can_summarize_what_does_not_fit(log: convlog.ConversationLog) -> None:
    conv = log.conversation("c")
    history(conv, 10)
    seen: list[tuple[str | None, int]] = []

    def summarize(previous: str | None, messages: list[Any]) -> str:
        seen.append((previous, len(messages)))
        return "EARLIER: they discussed questions 0 to 6"

    outcome = conv.resume([Calls().tier("session/new", "fresh-1")],
                          budget=convlog.Budget(messages=3), summarizer=summarize)
    assert seen == [(None, 7)]
    assert outcome.injection is not None
    assert outcome.injection.text.index("EARLIER:") < outcome.injection.text.index("answer 7")
    kinds = [type(r.event) for r in conv.events()
             if isinstance(r.event, SummaryRecorded | HistoryInjected)]
    assert kinds == [SummaryRecorded, HistoryInjected]
    [event] = injections(conv)
    assert event.text == outcome.injection.text and event.message_count == 3


# -------------------------------------------------------------- bad input


def test_an_async_tier_on_the_sync_api_is_invalid(log: convlog.ConversationLog) -> None:
    conv = log.conversation("c")

    async def run(call: convlog.TierCall) -> str:
        return "x"

    before = len(conv.events())
    with pytest.raises(convlog.InvalidInput) as caught:
        conv.resume([convlog.Tier("session/new", run)])
    assert "session/new" in str(caught.value.field)
    assert len(conv.events()) == before


def test_an_async_tier_anywhere_is_rejected_before_any_tier_runs(
        log: convlog.ConversationLog) -> None:
    conv = log.conversation("c")
    conv.bind_native_session("n")
    calls = Calls()

    async def run(call: convlog.TierCall) -> str:
        return "x"

    before = len(conv.events())
    with pytest.raises(convlog.InvalidInput):
        conv.resume([calls.tier("session/resume", raises=ConnectionError()),
                     convlog.Tier("session/new", run)])
    assert calls.seen == []
    assert len(conv.events()) == before


def test_an_unknown_format_is_rejected_before_any_tier_runs(
        log: convlog.ConversationLog) -> None:
    conv = log.conversation("c")
    history(conv)
    calls = Calls()
    with pytest.raises(convlog.InvalidInput) as caught:
        conv.resume([calls.tier("session/new", "fresh-1")], format="html")
    assert caught.value.field == "format"
    assert calls.seen == []
    assert trail(conv) == []


@pytest.mark.filterwarnings("ignore:coroutine .* was never awaited:RuntimeWarning")
def test_a_coroutine_returning_tier_is_not_a_silent_success_on_the_sync_api(
        log: convlog.ConversationLog) -> None:
    conv = log.conversation("c")
    conv.bind_native_session("n")

    async def resume_session(session_id: str | None) -> None:
        raise ConnectionError("agent is down")

    try:
        outcome = conv.resume([convlog.Tier(
            "session/resume", lambda call: resume_session(call.native_session_id))])
    except convlog.InvalidInput:
        outcome = None
    assert outcome is None or not outcome.ok
    assert not any(isinstance(r.event, ResumeSucceeded) for r in conv.events())


def test_tier_and_tiers_are_checked(log: convlog.ConversationLog) -> None:
    def ok(call: convlog.TierCall) -> None:
        return None

    with pytest.raises(convlog.InvalidInput):
        convlog.Tier("  ", ok)
    with pytest.raises(convlog.InvalidInput):
        convlog.Tier("session/new", "not callable")  # type: ignore[arg-type]
    with pytest.raises(convlog.InvalidInput):
        convlog.Tier("session/new", ok, timeout=0)
    with pytest.raises(convlog.InvalidInput):
        convlog.TierFailed("flaky")  # type: ignore[arg-type]
    with pytest.raises(convlog.InvalidInput) as caught:
        log.resume("c", [])
    assert caught.value.field == "tiers"
    with pytest.raises(convlog.InvalidInput) as caught:
        log.resume("c", [ok])  # type: ignore[list-item]
    assert caught.value.field == "tiers[0]"
    assert not log.exists("c")


@pytest.mark.parametrize(("strategy", "fresh"), [
    ("session/new", True), ("new", True), ("session/resume", False), ("session/load", False),
    ("sdk:resume=", False)])
def test_fresh_is_inferred_from_the_strategy_name(strategy: str, fresh: bool) -> None:
    assert convlog.Tier(strategy, print).is_fresh is fresh
    assert convlog.Tier(strategy, print, fresh=not fresh).is_fresh is (not fresh)


# ------------------------------------------------------------------ async


def arun(main: Callable[[convlog.AsyncConversationLog], Any], url: str) -> None:
    async def wrapper() -> None:
        async with await convlog.open_async(url) as alog:
            await main(alog)
    asyncio.run(wrapper())


@pytest.fixture(params=["memory", "sqlite"])
def aurl(request: pytest.FixtureRequest, sqlite_url: str) -> str:
    return "memory://" if request.param == "memory" else sqlite_url


async def async_events(alog: convlog.AsyncConversationLog, key: str) -> list[Any]:
    return [r.event for r in await alog.events(key)]


def test_async_tiers_in_order_with_injection(aurl: str) -> None:
    seen: list[tuple[str, str | None]] = []

    async def native(call: convlog.TierCall) -> None:
        seen.append((call.strategy, call.native_session_id))
        await asyncio.sleep(0.01)
        raise convlog.TierFailed("not_found", "agent forgot the session")

    def load(call: convlog.TierCall) -> bool:  # a sync tier on the async API: fine
        seen.append((call.strategy, call.native_session_id))
        return False

    async def new(call: convlog.TierCall) -> str:
        seen.append((call.strategy, call.native_session_id))
        return "fresh-async"

    async def main(alog: convlog.AsyncConversationLog) -> None:
        conv = await alog.conversation("c", agent="copilot")
        await conv.bind_native_session("old-native")
        await conv.append_turn([convlog.user("remember the password is swordfish", id="1"),
                                convlog.assistant("noted", id="2")])
        outcome = await conv.resume([convlog.Tier("session/resume", native),
                                     convlog.Tier("session/load", load),
                                     convlog.Tier("session/new", new)])
        assert seen == [("session/resume", "old-native"), ("session/load", "old-native"),
                        ("session/new", None)]
        assert outcome.ok and outcome.fresh and outcome.native_session_id == "fresh-async"
        assert [(a.ok, a.reason) for a in outcome.attempts] == [
            (False, "not_found"), (False, "error"), (True, None)]
        assert outcome.attempts[0].latency_ms is not None
        assert outcome.attempts[0].latency_ms >= 5
        assert all(a.latency_ms is not None and a.latency_ms > 0 for a in outcome.attempts)
        assert outcome.injection is not None and "swordfish" in outcome.injection.text
        events = await async_events(alog, "c")
        [injected] = [e for e in events if isinstance(e, HistoryInjected)]
        assert injected.text == outcome.injection.text
        assert injected.native_session_id == "fresh-async"
        again = await conv.resume([convlog.Tier("session/new", new)])
        assert again.already_injected and again.injection is None
        assert len([e for e in await async_events(alog, "c")
                    if isinstance(e, HistoryInjected)]) == 1

    arun(main, aurl)


def test_async_native_success_and_routing(aurl: str) -> None:
    seen: list[str | None] = []

    async def native(call: convlog.TierCall) -> None:
        seen.append(call.native_session_id)

    async def main(alog: convlog.AsyncConversationLog) -> None:
        await alog.conversation("a", agent="x")
        await alog.conversation("b", agent="x")
        await alog.bind_native_session("a", "nA")
        await alog.bind_native_session("b", "nB")
        await alog.append_turn("a", [convlog.user("hi", id="1")])
        out_b = await alog.resume("b", [convlog.Tier("session/resume", native)])
        out_a = await alog.resume("a", [convlog.Tier("session/resume", native),
                                        convlog.Tier("session/new", native)])
        assert seen == ["nB", "nA"]
        assert out_a.ok and out_a.injection is None and out_b.ok
        assert not any(isinstance(e, HistoryInjected) for e in await async_events(alog, "a"))

    arun(main, aurl)


def test_async_timeouts_for_coroutine_and_thread_tiers(aurl: str,
                                                       release: threading.Event) -> None:
    async def hang(call: convlog.TierCall) -> None:
        await asyncio.sleep(10)

    def hang_in_thread(call: convlog.TierCall) -> None:
        release.wait(10)

    async def main(alog: convlog.AsyncConversationLog) -> None:
        await alog.bind_native_session("c", "n")
        outcome = await alog.resume("c", [
            convlog.Tier("session/resume", hang, timeout=0.2),
            convlog.Tier("session/load", hang_in_thread, timeout=0.2)])
        release.set()  # let the worker thread go before the loop shuts its executor down
        assert not outcome.ok  # a tier that was not cut off would have answered None: ok
        assert [a.reason for a in outcome.attempts] == ["timeout", "timeout"]
        for attempt in outcome.attempts:  # each waited its timeout out, no less
            assert attempt.latency_ms is not None and attempt.latency_ms >= 180
        failed = [e for e in await async_events(alog, "c") if isinstance(e, ResumeFailed)]
        assert [(e.strategy, e.reason) for e in failed] == [
            ("session/resume", "timeout"), ("session/load", "timeout")]

    arun(main, aurl)


def test_async_unknown_key_and_all_failing(aurl: str) -> None:
    async def broken(call: convlog.TierCall) -> None:
        raise RpcError(-32601)

    async def main(alog: convlog.AsyncConversationLog) -> None:
        with pytest.raises(convlog.UnknownConversation):
            await alog.resume("ghost", [convlog.Tier("session/new", broken)])
        assert not await alog.exists("ghost")
        await alog.conversation("ghost")
        outcome = await alog.resume("ghost", [convlog.Tier("session/resume", broken),
                                              convlog.Tier("session/new", broken)])
        assert not outcome.ok and outcome.injection is None
        assert [a.reason for a in outcome.attempts] == ["not_found", "unsupported"]

    arun(main, aurl)


@pytest.mark.filterwarnings("ignore:coroutine .* was never awaited:RuntimeWarning")
def test_async_tier_behind_a_lambda_is_awaited() -> None:
    async def resume_session(session_id: str | None) -> None:
        raise ConnectionError("agent is down")

    async def main(alog: convlog.AsyncConversationLog) -> None:
        await alog.bind_native_session("c", "n")
        outcome = await alog.resume("c", [convlog.Tier(
            "session/resume", lambda call: resume_session(call.native_session_id))])
        assert not outcome.ok
        assert [a.reason for a in outcome.attempts] == ["transient"]

    arun(main, "memory://")


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_two_processes_injecting_into_one_native_session_record_it_once(
        backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Two logs on one database stand for two processes (each has its own cache): the
    second to record an injection for the same native session learns it lost, even
    though the state it had read before did not show the first one's injection."""
    url = (request.getfixturevalue("pg_url") if backend == "postgres"
           else f"sqlite:///{tmp_path / 'c.db'}")
    views = str(tmp_path / "views.duckdb")
    with convlog.open(url, views=views) as first, convlog.open(url, views=views) as second:
        history(first.conversation("c"))
        context = second.context("c", budget=convlog.Budget(tokens=1000))
        second.state("c")  # cached before the other process writes
        assert first.record_injection("c", context, "fresh-1")
        assert not second.record_injection("c", context, "fresh-1")
        assert second.record_injection("c", context, "fresh-2")
        assert second.record_injection("c", context, None)  # nothing to deduplicate on
        natives = [r.event.native_session_id for r in first.events("c")
                   if isinstance(r.event, HistoryInjected)]
        assert natives == ["fresh-1", "fresh-2", None]


def test_an_archived_conversation_is_not_resumed_until_reactivated(
        log: convlog.ConversationLog) -> None:
    """It injected anyway (issue 26): now no tier runs and nothing is recorded."""
    conv = log.conversation("arch")
    conv.append_turn([convlog.user("remember PELICAN"), convlog.assistant("ok")])
    conv.archive()
    before = len(log.events("arch"))
    called: list[str] = []
    def fresh(call: convlog.TierCall) -> str:
        called.append(call.strategy)
        return "s1"

    tiers = [convlog.Tier("session/new", fresh)]
    with pytest.raises(convlog.ArchivedConversation, match="is archived"):
        conv.resume(tiers)
    with pytest.raises(convlog.ArchivedConversation):
        asyncio.run(convlog.AsyncConversationLog(log).resume("arch", tiers))
    assert called == [] and len(log.events("arch")) == before
    conv.reactivate()
    outcome = conv.resume(tiers)
    assert called == ["session/new"] and outcome.injection is not None
    assert "PELICAN" in outcome.injection.text
