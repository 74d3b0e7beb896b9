"""The two views and their diff over conversations written by convlog's own resume,
summarizer and clear, on every storage backend (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest

import convlog
from convlog.projections.context import ContextMessage

BUDGET = convlog.Budget(tokens=400, messages=4)


def forgot(call: convlog.TierCall) -> str:
    raise convlog.TierFailed("not_found", f"no session {call.native_session_id}")


def talk(conv: convlog.ConversationHandle, *pairs: tuple[str, str]) -> None:
    for asked, answered in pairs:
        conv.append_turn([convlog.user(asked), convlog.assistant(answered)])


def versions(entries: list[convlog.ViewEntry], **match: object) -> list[int]:
    return [e.version for e in entries if all(getattr(e, k) == v for k, v in match.items())]


def test_native_resume_keeps_the_agents_context(log: convlog.ConversationLog) -> None:
    conv = log.conversation("k")
    conv.bind_native_session("s1")
    talk(conv, ("deploy key?", "ops/deploy"))
    outcome = conv.resume([convlog.Tier("session/resume", lambda call: call.native_session_id)])
    assert outcome.ok and not outcome.fresh
    talk(conv, ("branch?", "release"))
    agent = conv.view("agent")
    assert [e.text for e in agent.entries if e.live] == [
        "deploy key?", "ops/deploy", "branch?", "release"]
    assert not conv.diff().parted


def test_failed_resume_with_injection_then_a_resume_that_injected_nothing(
        log: convlog.ConversationLog) -> None:
    conv = log.conversation("k")
    conv.bind_native_session("0")
    talk(conv, ("key in vault ops/deploy", "noted"), ("release branch only", "ok"),
         ("staging at staging.test", "got it"))
    tiers = [convlog.Tier("session/resume", forgot), convlog.Tier("session/new", lambda c: "0")]
    first = conv.resume(tiers, budget=BUDGET)
    assert first.injection is not None
    talk(conv, ("where is the key?", "vault, ops/deploy"))
    at_first = conv.state.version
    second = conv.resume(tiers, budget=BUDGET)
    assert second.already_injected and second.injection is None  # the agent's "0" again
    talk(conv, ("which branch?", "I don't know"))

    middle = conv.diff(at=at_first)
    assert [m.text for m in middle.missing] == ["key in vault ops/deploy", "noted"]
    assert all("left out of the history injected" in m.reason for m in middle.missing)
    assert middle.covered == 4 and middle.in_context == 2 and not middle.alerts

    end = conv.diff()
    assert len(end.alerts) == 1 and "nothing was injected" in end.alerts[0].text
    assert "session/resume failed (not_found)" in end.alerts[0].text
    assert len(end.missing) == 8 and end.in_context == 2 and end.covered == 0
    injected = [e for e in end.extra if e.kind == "injection"]
    assert len(injected) == 1 and not injected[0].live
    assert first.injection.text == injected[0].text

    agent = conv.view("agent")
    assert [e.text for e in agent.entries if e.live] == ["which branch?", "I don't know"]
    assert agent.session == "0" and agent.since == end.alerts[0].version
    user = conv.view("user")
    assert len(user.entries) == 10 and all(e.kind == "message" for e in user.entries)


def test_summary_and_clear(log: convlog.ConversationLog) -> None:
    conv = log.conversation("k")
    talk(conv, *[(f"q{i}", f"a{i}") for i in range(6)])
    seen: list[list[ContextMessage]] = []

    def summarize(previous: str | None, messages: list[ContextMessage]) -> str:
        seen.append(messages)
        return f"SUMMARY of {len(messages)} messages"

    outcome = conv.resume([convlog.Tier("session/new", lambda c: "s2")], budget=BUDGET,
                          summarizer=summarize)
    assert outcome.injection is not None and outcome.injection.summarized
    agent = conv.view("agent")
    assert not [e for e in agent.entries if e.kind == "summary"]  # inside the injection
    (injection,) = [e for e in agent.entries if e.kind == "injection"]
    assert "includes the summary" in (injection.note or "")
    assert "SUMMARY of 8 messages" in injection.text
    assert not conv.diff().missing and conv.diff().covered == 12

    cleared = conv.clear("new topic").version
    talk(conv, ("fresh start", "yes"))
    agent = conv.view("agent")
    assert versions(agent.entries)[0] == cleared
    assert [e.text for e in agent.entries if e.live] == ["fresh start", "yes"]
    d = conv.diff()
    assert len(d.missing) == 12 and {m.reason for m in d.missing} == {
        f"before the clear at #{cleared}"}


def test_view_at_a_time_and_bad_points(log: convlog.ConversationLog) -> None:
    conv = log.conversation("k")
    talk(conv, ("a", "b"))
    first = conv.events()[-1].event.at
    talk(conv, ("c", "d"))
    assert [e.text for e in conv.view("user", at=first).entries] == ["a", "b"]
    naive = (first + timedelta(microseconds=0)).replace(tzinfo=None).isoformat()
    assert [e.text for e in conv.view("agent", at=naive).entries] == ["a", "b"]
    assert [e.text for e in log.view("k", "user", at="3").entries] == ["a", "b"]
    with pytest.raises(convlog.InvalidInput, match="'soon'"):
        conv.view("agent", at="soon")
    with pytest.raises(convlog.InvalidInput, match="unknown view"):
        conv.view("bot")
    with pytest.raises(convlog.UnknownConversation):
        log.view("nobody", "user")
    with pytest.raises(convlog.UnknownConversation):
        log.diff("nobody")


def test_async_handle(tmp_path: Path) -> None:
    async def main() -> None:
        async with await convlog.open_async(f"sqlite:///{tmp_path / 'a.db'}") as alog:
            conv = await alog.conversation("k")
            await conv.append_turn([convlog.user("a"), convlog.assistant("b")])
            await conv.clear()
            await conv.append_turn([convlog.user("c")])
            agent = await conv.view("agent")
            assert [e.text for e in agent.entries if e.live] == ["c"]
            d = await conv.diff(at=3)
            assert not d.parted
            assert len((await alog.diff("k")).missing) == 2
            assert (await alog.view("k", "user")).version == 5

    asyncio.run(main())


def test_live_memory_blocks_in_the_agent_view(log: convlog.ConversationLog) -> None:
    conv = log.conversation("k")
    versions = []
    for i in range(4):
        versions.append(conv.inject_memory(f"fact {i}", [f"m{i}"]).version)
        talk(conv, (f"q{i}", f"a{i}"))
    agent = conv.view("agent")
    memory = [e for e in agent.entries if e.kind == "memory"]
    assert [e.version for e in memory] == versions
    live = [e.version for e in memory if e.live]
    assert live == [b.version for b in conv.live_memory()] == versions[1:]  # the cap is 3
    assert memory[0].gone == f"evicted at #{versions[3]} (at most 3 blocks stay live)"
    assert [e.kind for e in conv.diff().extra] == ["memory"] * 4
