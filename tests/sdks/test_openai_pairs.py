"""Issue 28 with the real `agents` package: whatever `ConvlogSession.get_items` hands
the Runner holds function calls and outputs in pairs, whatever was stored (a crash
mid-tool, a cancelled turn, `pop_item`, a limit cut, an output without call), and the
SDK's own converter turns it into chat messages a model API accepts."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

agents = pytest.importorskip("agents")

import convlog  # noqa: E402
from convlog.integrations.openai_agents import ConvlogSession  # noqa: E402
from tests.sdks.openai_checks import chat_problems  # noqa: E402


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def call(cid: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": cid, "name": "grep", "arguments": "{}"}


def output(cid: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": cid, "output": "found"}


def answer(text: str) -> dict[str, Any]:
    return {"id": f"msg_{text}", "type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'convlog.db'}"


def items_of(url: str, adds: list[list[Any]], *, pop: int = 0,
             limit: int | None = None) -> list[Any]:
    async def go() -> list[Any]:
        session = ConvlogSession("s", url)
        try:
            for batch in adds:
                await session.add_items(batch)
            for _ in range(pop):
                await session.pop_item()
            return await session.get_items(limit)
        finally:
            session.close()
    return asyncio.run(go())


def test_a_call_whose_process_died_gets_a_lost_output(url: str) -> None:
    items = items_of(url, [[user("find it"), call("c1")]])
    assert items[:2] == [user("find it"), call("c1")]
    assert items[2]["type"] == "function_call_output" and items[2]["call_id"] == "c1"
    assert "lost" in items[2]["output"]
    assert chat_problems(items) == []


def test_a_popped_output_is_answered_and_the_user_can_go_on(url: str) -> None:
    items = items_of(url, [[user("find it"), call("c1"), output("c1")], [user("again")]],
                     pop=2)
    assert [i.get("type", "message") for i in items] == [
        "message", "function_call", "function_call_output"]
    assert chat_problems(items) == []


def test_a_limit_never_starts_with_an_output_whose_call_it_cut(url: str) -> None:
    items = items_of(url, [[user("find it"), call("c1"), output("c1"), answer("done")]],
                     limit=2)
    assert items == [answer("done")]


def test_an_output_without_call_is_left_out(url: str) -> None:
    items = items_of(url, [[user("hi"), output("ghost"), answer("hello")]])
    assert items == [user("hi"), answer("hello")]
    assert chat_problems(items) == []


def test_a_well_paired_history_comes_back_exactly(url: str) -> None:
    stored = [user("find it"), call("c1"), call("c2"), output("c1"), output("c2"),
              answer("done")]
    assert items_of(url, [stored]) == stored


ids = itertools.count()
turn = st.sampled_from(["chat", "tool", "cancelled", "orphan", "parallel"])
op = st.one_of(st.tuples(st.just("add"), turn), st.just(("pop",)), st.just(("clear",)))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(op, max_size=10), st.one_of(st.none(), st.integers(1, 8)))
def test_every_history_the_session_returns_is_accepted(
        url: str, ops: list[tuple[str, ...]], limit: int | None) -> None:
    key = f"p{next(ids)}"

    async def go() -> list[Any]:
        session = ConvlogSession(key, url)
        try:
            for o in ops:
                if o[0] == "pop":
                    await session.pop_item()
                elif o[0] == "clear":
                    await session.clear_session()
                else:
                    n = next(ids)
                    batch: list[Any] = {"chat": [user("q"), answer("a")],
                             "tool": [user("q"), call(f"c{n}"), output(f"c{n}"), answer("a")],
                             "cancelled": [user("q"), call(f"c{n}")],
                             "orphan": [output(f"x{n}")],
                             "parallel": [call(f"c{n}"), call(f"d{n}"), output(f"d{n}")],
                             }[o[1]]
                    await session.add_items(batch)
            return await session.get_items(limit)
        finally:
            session.close()

    items = asyncio.run(go())
    assert chat_problems(items) == [], (ops, limit, items)
    assert limit is None or len(items) <= limit


def test_a_call_id_reused_after_a_restart_keeps_its_own_output(url: str) -> None:
    """Issue 41 with the SDK's real Runner: a model numbering its calls per process
    makes `call-1` in every process. Each run's call keeps its own output: the next
    run's model gets every call answered, in pairs the SDK's converter accepts, and
    a reused id handed back renamed (`call-1~2`), since model APIs refuse an id
    used twice; the first keeps its own."""
    from agents import Agent, Runner, function_tool, set_tracing_disabled

    from tests.sdks.openai_fake import ToolCallingModel

    set_tracing_disabled(True)
    weather = iter(["21C clear", "18C rain", "15C fog"])

    @function_tool
    def fetch_weather(city: str) -> str:
        """The weather in a city."""
        return next(weather)

    models = []
    for text in ("weather?", "and now?", "and now?"):  # three processes
        session = ConvlogSession("restarts", url)
        try:
            model = ToolCallingModel()
            models.append(model)
            agent = Agent(name="helper", model=model, tools=[fetch_weather])
            asyncio.run(Runner.run(agent, text, session=session))
        finally:
            session.close()
    history = models[2].inputs[0]  # what the third process's model got first
    assert chat_problems(history) == [], history
    calls = [i["call_id"] for i in history if i.get("type") == "function_call"]
    outputs = [(i["call_id"], i["output"]) for i in history
               if i.get("type") == "function_call_output"]
    assert calls == ["call-1", "call-1~2"]
    assert outputs == [("call-1", "21C clear"), ("call-1~2", "18C rain")]
    session = ConvlogSession("restarts", url)  # and the whole session, as a 4th would
    try:
        items: list[Any] = asyncio.run(session.get_items())
    finally:
        session.close()
    assert chat_problems(items) == [], items
    assert [i["call_id"] for i in items if i.get("type") == "function_call_output"] == [
        "call-1", "call-1~2", "call-1~3"]
    with convlog.open(url) as log:  # the log keeps the ids as the SDK gave them
        stored = [m.raw for m in log.messages("restarts") if m.raw is not None]
    assert [i["call_id"] for i in stored if i.get("type") == "function_call"] == ["call-1"] * 3
