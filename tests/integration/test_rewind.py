"""Rewind as a history operation (issue 47): later messages abandoned for the model,
appends continuing from the rewind point, nothing deleted, replays before it intact."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import convlog
from convlog.domain.events import HistoryRewound


def turns(conv: Any, n: int, start: int = 1) -> None:
    for i in range(start, start + n):
        conv.append_turn([convlog.user(f"Question {i}?", id=f"q{i}"),
                          convlog.assistant(f"Answer {i}.", id=f"a{i}")])


@pytest.fixture
def log(tmp_path: Path) -> Any:
    with convlog.open(f"sqlite:///{tmp_path / 'c.db'}") as opened:
        yield opened


def test_the_model_continues_from_the_rewind_point(log: Any) -> None:
    conv = log.conversation("k")
    turns(conv, 3)
    before = conv.state.version
    done = conv.rewind("a1", reason="the user edited question 2")
    assert done is not None and (done.to_message_id, done.abandoned) == ("a1", 4)
    conv.append_turn([convlog.user("Question 2, edited?", id="q2b"),
                      convlog.assistant("Answer 2b.", id="a2b")])
    for fmt in ("xml", "markdown", "messages"):
        text = conv.context(format=fmt).text
        assert "Answer 1." in text and "Question 2, edited?" in text, fmt
        assert "Question 2?" not in text and "Answer 3." not in text, fmt
        assert 'omitted="' not in text or 'omitted="0"' in text, fmt
    assert [m.message_id for m in conv.live_messages()] == ["q1", "a1", "q2b", "a2b"]
    assert [m.message_id for m in conv.live_messages(last=3)] == ["a1", "q2b", "a2b"]
    assert len(conv.messages()) == 8  # nothing deleted
    # the user's view shows the abandoned messages struck; the agent's omits them
    user = conv.view("user")
    struck = [e.message_id for e in user.entries if e.gone]
    assert struck == ["q2", "a2", "q3", "a3"]
    agent = conv.view("agent")
    said = [e.message_id for e in agent.entries if e.kind == "message"]
    assert said == ["q1", "a1", "q2b", "a2b"]
    assert any("rewound to message a1" in e.text for e in agent.entries)
    gone = {m.message_id: m.reason for m in conv.diff().missing}
    assert gone["q3"] == f"abandoned by the rewind at #{done.version}"
    # a replay before the rewind shows what was there
    then = conv.view("agent", at=before)
    assert "a3" in [e.message_id for e in then.entries if e.kind == "message"]
    assert conv.timeline()[done.version - 1].type == "history_rewound"
    assert (conv.info().compactions, conv.info().rewinds) == (0, 1)


def test_a_pop_after_a_rewind_takes_the_rewind_point(log: Any) -> None:
    conv = log.conversation("k")
    turns(conv, 2)
    conv.rewind("q2")
    popped = conv.retract_last()
    assert popped is not None and popped.message_id == "q2"
    assert [m.message_id for m in conv.live_messages()] == ["q1", "a1"]


def test_rewinds_nested_and_refused(log: Any) -> None:
    conv = log.conversation("k")
    turns(conv, 3)
    assert conv.rewind("a3") is None  # nothing after it
    conv.rewind("a2")
    with pytest.raises(convlog.InvalidInput, match="no live message 'q3'"):
        conv.rewind("q3")  # abandoned
    with pytest.raises(convlog.InvalidInput, match="field 'to'"):
        conv.rewind("nope")
    conv.rewind("q1")
    assert [m.message_id for m in conv.live_messages()] == ["q1"]
    conv.compact(lambda previous, messages: "s", keep_last=0)
    turns(conv, 1, start=7)
    with pytest.raises(convlog.InvalidInput, match="no live message 'q1'"):
        conv.rewind("q1")  # compacted: a rewind never undoes a compaction
    with pytest.raises(convlog.UnknownConversation):
        log.rewind("nobody", "q1")
    assert sum(isinstance(r.event, HistoryRewound) for r in conv.events()) == 2


def test_a_compaction_after_a_rewind_leaves_the_abandoned_out(log: Any) -> None:
    conv = log.conversation("k")
    turns(conv, 3)
    conv.rewind("a1")
    turns(conv, 2, start=4)
    seen: list[str] = []

    def summarize(previous: str | None, messages: list[Any]) -> str:
        seen.extend(m.text for m in messages)
        return "s"

    conv.compact(summarize, keep_last=2)
    assert seen == ["Question 1?", "Answer 1.", "Question 4?", "Answer 4."]


def test_the_openai_session_reads_from_the_rewind_point(log: Any) -> None:
    pytest.importorskip("agents")
    from convlog.integrations.openai_agents import ConvlogSession

    async def main() -> None:
        session = ConvlogSession("s", log)
        await session.add_items([{"role": "user", "content": "one"},
                                 {"role": "assistant", "content": "1"},
                                 {"role": "user", "content": "two"},
                                 {"role": "assistant", "content": "2"}])
        first = log.messages("s")[1].message_id
        log.rewind("s", first)
        await session.add_items([{"role": "user", "content": "three"}])
        items: list[Any] = await session.get_items()
        assert [i["content"] for i in items] == ["one", "1", "three"]
        for limit in (1, 2, 3):
            assert await session.get_items(limit=limit) == (
                await session.get_items())[-limit:]

    asyncio.run(main())


def test_the_async_log_rewinds(tmp_path: Path) -> None:
    async def main() -> None:
        log = await convlog.open_async(f"sqlite:///{tmp_path / 'a.db'}")
        conv = await log.conversation("k")
        await conv.append_turn([convlog.user("hi", id="u"),
                                convlog.assistant("Welcome back.", id="a")])
        done = await conv.rewind("u")
        assert done is not None and done.abandoned == 1
        assert "Welcome back." not in (await conv.context()).text
        await log.close()

    asyncio.run(main())
