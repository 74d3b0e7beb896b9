"""Issue 28 with the real `google-adk` package: the events `get_session` hands a Runner
hold function calls and responses in pairs (a process that died mid-tool, a response
without call), ADK's own contents builder turns them into model input where each
call is answered, and what ADK legitimately leaves open stays open: long-running
calls, and the calls of an invocation a resumable app re-runs on resume."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("google.adk")
from google.adk.agents import LlmAgent
from google.adk.apps import App, ResumabilityConfig
from google.adk.events.event import Event
from google.adk.flows.llm_flows.contents import _get_contents
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.tools.function_tool import FunctionTool
from google.genai import types

from convlog.integrations.google_adk import ConvlogSessionService
from convlog.projections.pairing import lost_text

RAN: list[str] = []
CRASH_ONCE: set[str] = set()


class Died(BaseException):
    """The process stopping mid-tool (not an Exception: ADK cannot turn it into a
    tool error response)."""


def lookup(sku: str) -> dict[str, Any]:
    """Looks up a product's price."""
    RAN.append(sku)
    if sku == "CRASH" or sku in CRASH_ONCE:
        CRASH_ONCE.discard(sku)
        raise Died
    return {"price": 9.5}


class ToolThenTextLlm(BaseLlm):
    """Offline model: asked to "look up X", it calls `lookup(X)`; otherwise it says
    which tool responses it was shown. Every request's contents are kept."""

    model: str = "gemini-2.0-flash"
    seen: ClassVar[list[list[types.Content]]] = []

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False
                                     ) -> AsyncGenerator[LlmResponse, None]:
        type(self).seen.append(list(llm_request.contents))
        last = llm_request.contents[-1]
        text = next((p.text for p in last.parts or () if p.text), "")
        if last.role == "user" and text.startswith("look up "):
            part = types.Part(function_call=types.FunctionCall(
                name="lookup", args={"sku": text.removeprefix("look up ")}))
        else:
            answers = [p.function_response.response for c in llm_request.contents
                       for p in c.parts or () if p.function_response]
            part = types.Part(text=f"responses seen: {answers}")
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


def gemini_problems(contents: list[types.Content], open_ids: frozenset[str] = frozenset()
                    ) -> list[str]:
    """What Gemini checks: a model turn's function calls are answered, one for one,
    by the next turn's function responses, and a response answers the turn before.
    Calls are told apart by id (by name when ADK stripped its own ids); `open_ids`:
    calls ADK leaves open on purpose (long-running)."""
    def calls(c: types.Content | None) -> list[str]:
        return sorted(p.function_call.id or p.function_call.name or ""
                      for p in (c.parts or () if c else ())
                      if p.function_call and p.function_call.id not in open_ids)

    def answers(c: types.Content | None) -> list[str]:
        return sorted(p.function_response.id or p.function_response.name or ""
                      for p in (c.parts or () if c else ())
                      if p.function_response and p.function_response.id not in open_ids)

    problems = []
    for i, content in enumerate(contents):
        before = contents[i - 1] if i else None
        after = contents[i + 1] if i + 1 < len(contents) else None
        if answers(content) and calls(before) != answers(content):
            problems.append(f"content {i}: responses {answers(content)} do not answer "
                            f"the turn before ({calls(before)})")
        if calls(content) and answers(after) != calls(content):
            problems.append(f"content {i}: calls {calls(content)} answered by {answers(after)}")
    return problems


def call_event(cid: str, inv: str, at: float, *, long_running: bool = False) -> Event:
    return Event(author="helper", invocation_id=inv, timestamp=at, id=f"ev-{cid}",
                 content=types.Content(role="model", parts=[types.Part(
                     function_call=types.FunctionCall(id=cid, name="lookup",
                                                      args={"sku": cid}))]),
                 long_running_tool_ids={cid} if long_running else None)


def answer_event(cid: str, inv: str, at: float, author: str = "helper") -> Event:
    return Event(author=author, invocation_id=inv, timestamp=at, id=f"ev-answer-{cid}-{at}",
                 content=types.Content(role="user", parts=[types.Part(
                     function_response=types.FunctionResponse(id=cid, name="lookup",
                                                              response={"price": 1}))]))


def text_event(author: str, text: str, inv: str, at: float) -> Event:
    return Event(author=author, invocation_id=inv, timestamp=at, id=f"ev-{inv}-{at}",
                 content=types.Content(role="user" if author == "user" else "model",
                                       parts=[types.Part(text=text)]))


def stored(url: str, events: list[Event]) -> list[Event]:
    async def go() -> list[Event]:
        service = ConvlogSessionService(url)
        session = await service.create_session(app_name="shop", user_id="u", session_id="s")
        for event in events:
            await service.append_event(session, event)
        got = await service.get_session(app_name="shop", user_id="u", session_id="s")
        await service.close()
        assert got is not None
        return got.events

    return asyncio.run(go())


def responses(events: list[Event]) -> dict[str, Any]:
    return {r.id or "": r.response for e in events for r in e.get_function_responses()}


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'adk.db'}"


def test_a_process_that_died_mid_tool_leaves_a_call_the_next_turn_sees_answered(
        url: str) -> None:
    """A real Runner: the tool's process dies after ADK stored the call; the next
    turn (a new service on the same file) hands the model the call AND a response
    saying it was lost, where ADK alone would silently drop the call."""
    ToolThenTextLlm.seen = []

    async def turn(text: str) -> None:
        service = ConvlogSessionService(url)
        runner = Runner(agent=LlmAgent(name="helper", model=ToolThenTextLlm(),
                                       tools=[FunctionTool(lookup)]),
                        app_name="shop", session_service=service, auto_create_session=True)
        try:
            async for _ in runner.run_async(user_id="u", session_id="s", new_message=(
                    types.Content(role="user", parts=[types.Part(text=text)]))):
                pass
        finally:
            await service.close()

    with pytest.raises(Died):
        asyncio.run(turn("look up CRASH"))
    asyncio.run(turn("are you there?"))

    async def events() -> list[Event]:
        service = ConvlogSessionService(url)
        got = await service.get_session(app_name="shop", user_id="u", session_id="s")
        await service.close()
        assert got is not None
        return got.events

    got = asyncio.run(events())
    (call,) = [c for e in got for c in e.get_function_calls()]
    (synthetic,) = [e for e in got if e.get_function_responses()]
    assert got.index(synthetic) == next(i for i, e in enumerate(got) if e.get_function_calls()) + 1
    assert synthetic.author == "helper" and synthetic.content is not None
    assert synthetic.content.role == "user"
    assert synthetic.invocation_id == got[0].invocation_id
    assert responses(got) == {call.id: {"error": lost_text("process_died", "lookup")}}
    # the model of the second turn was shown the call and its lost result, in pairs
    contents = ToolThenTextLlm.seen[-1]
    assert gemini_problems(contents) == []
    assert any(p.function_call for c in contents for p in c.parts or ())
    assert "was lost" in str(contents)


def test_a_response_without_call_is_left_out_and_adks_builder_accepts_the_rest(
        url: str) -> None:
    got = stored(url, [text_event("user", "hi", "i1", 1.0), answer_event("ghost", "i1", 2.0),
                       call_event("c1", "i1", 3.0), answer_event("c1", "i1", 4.0),
                       call_event("c2", "i1", 5.0), text_event("helper", "hm", "i1", 6.0),
                       text_event("user", "next", "i2", 7.0)])
    assert responses(got) == {"c1": {"price": 1}, "c2": {
        "error": lost_text("process_died", "lookup")}}
    contents = _get_contents(None, got, "helper")
    assert gemini_problems(contents) == []
    # both calls reach the model (ADK alone would have dropped c2)
    assert sum(1 for c in contents for p in c.parts or () if p.function_call) == 2


def test_a_well_paired_session_comes_back_exactly_as_appended(url: str) -> None:
    events = [text_event("user", "hi", "i1", 1.0), call_event("c1", "i1", 2.0),
              text_event("helper", "working", "i1", 2.5), answer_event("c1", "i1", 3.0),
              call_event("c1", "i2", 4.0), answer_event("c1", "i2", 5.0),  # a reused id
              answer_event("c1", "i2", 5.5),  # answered twice: ADK keeps the last
              # an agent tool: its agent's own call and text sit between the outer call
              # and its response, on the tool's branch
              call_event("outer", "i3", 6.0),
              call_event("inner", "i3", 6.1).model_copy(update={"branch": "helper.sub"}),
              answer_event("inner", "i3", 6.2).model_copy(update={"branch": "helper.sub"}),
              text_event("sub", "found it", "i3", 6.3).model_copy(
                  update={"branch": "helper.sub"}),
              answer_event("outer", "i3", 6.4), text_event("helper", "done", "i3", 6.5)]
    got = stored(url, events)
    assert [e.model_dump(mode="json") for e in got] == [
        e.model_dump(mode="json") for e in events]


def test_long_running_calls_stay_open_and_adk_resumes_them(url: str) -> None:
    """An unanswered long-running call is ADK's to answer (the user sends its
    response later): it is not repaired, and a real Runner then takes the response."""
    ToolThenTextLlm.seen = []
    stored(url, [text_event("user", "approve?", "i1", 1.0),
                 call_event("lro-1", "i1", 2.0, long_running=True),
                 text_event("helper", "waiting for approval", "i1", 3.0),
                 text_event("user", "meanwhile, hello", "i2", 4.0),
                 text_event("helper", "hello", "i2", 5.0)])

    async def answer() -> list[Event]:
        service = ConvlogSessionService(url)
        before = await service.get_session(app_name="shop", user_id="u", session_id="s")
        assert before is not None and responses(before.events) == {}
        runner = Runner(agent=LlmAgent(name="helper", model=ToolThenTextLlm(),
                                       tools=[FunctionTool(lookup)]),
                        app_name="shop", session_service=service)
        async for _ in runner.run_async(user_id="u", session_id="s", new_message=(
                types.Content(role="user", parts=[types.Part(
                    function_response=types.FunctionResponse(
                        id="lro-1", name="lookup", response={"approved": True}))]))):
            pass
        after = await service.get_session(app_name="shop", user_id="u", session_id="s")
        await service.close()
        assert after is not None
        return after.events

    after = asyncio.run(answer())
    assert responses(after) == {"lro-1": {"approved": True}}
    assert gemini_problems(ToolThenTextLlm.seen[-1]) == []
    assert "approved" in str(ToolThenTextLlm.seen[-1])


def test_a_resumable_invocation_keeps_its_unanswered_call_and_adk_re_runs_it(
        url: str) -> None:
    """Resumability, for real: a resumable app's first turn ends normally (ADK records
    agent states: that is how the service sees the app is resumable); in the second,
    the process dies after ADK stored the call. Reading the session leaves that call
    open, so resuming the invocation re-runs the tool (ADK's crash recovery) instead
    of reading a lost result; the model then gets the call and its real response."""
    ToolThenTextLlm.seen = []
    RAN.clear()

    async def run(**how: Any) -> None:
        service = ConvlogSessionService(url)
        app = App(name="shop", root_agent=LlmAgent(
            name="helper", model=ToolThenTextLlm(), tools=[FunctionTool(lookup)]),
            resumability_config=ResumabilityConfig(is_resumable=True))
        runner = Runner(app=app, session_service=service, auto_create_session=True)
        try:
            async for _ in runner.run_async(user_id="u", session_id="s", **how):
                pass
        finally:
            await service.close()

    def say(text: str) -> types.Content:
        return types.Content(role="user", parts=[types.Part(text=text)])

    async def events() -> list[Event]:
        service = ConvlogSessionService(url)
        got = await service.get_session(app_name="shop", user_id="u", session_id="s")
        await service.close()
        assert got is not None
        return got.events

    asyncio.run(run(new_message=say("hello")))
    CRASH_ONCE.add("B-2")
    with pytest.raises(Died):
        asyncio.run(run(new_message=say("look up B-2")))
    before = asyncio.run(events())
    assert any(e.actions.end_of_agent for e in before)  # what makes it resumable
    assert responses(before) == {}  # the call is left open
    asyncio.run(run(invocation_id=before[-1].invocation_id))
    assert RAN == ["B-2", "B-2"]  # the tool ran again on resume
    after = asyncio.run(events())
    assert list(responses(after).values()) == [{"price": 9.5}]
    assert gemini_problems(ToolThenTextLlm.seen[-1]) == []


KINDS = st.lists(st.sampled_from(["user", "text", "call", "call2", "answer", "ghost",
                                  "long", "new_invocation"]), max_size=25)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=KINDS)
def test_any_stored_session_reads_back_paired(tmp_path_factory: Any, script: list[str]
                                              ) -> None:
    """Random sessions (calls answered or not, parallel calls, responses without call,
    long-running calls, several invocations): every call of an older invocation is
    answered after it, every response has its call before it, and ADK's builder
    turns the events into model input Gemini accepts."""
    url = f"sqlite:///{tmp_path_factory.mktemp('p') / 'adk.db'}"
    events: list[Event] = []
    inv, open_calls, n = 1, [], 0
    for kind in script:
        n += 1
        at, i = float(n), f"i{inv}"
        if kind == "new_invocation":
            inv += 1
            events.append(text_event("user", "again", f"i{inv}", at))
        elif kind == "user":
            events.append(text_event("user", "hi", i, at))
        elif kind == "text":
            events.append(text_event("helper", "ok", i, at))
        elif kind in ("call", "long"):
            events.append(call_event(f"c{n}", i, at, long_running=kind == "long"))
            open_calls.append(f"c{n}")
        elif kind == "call2":
            events.append(Event(author="helper", invocation_id=i, timestamp=at, id=f"p{n}",
                                content=types.Content(role="model", parts=[types.Part(
                                    function_call=types.FunctionCall(id=f"c{n}{x}",
                                                                     name="lookup"))
                                    for x in "ab"])))
            open_calls += [f"c{n}a", f"c{n}b"]
        elif kind == "answer" and open_calls:
            events.append(answer_event(open_calls.pop(0), i, at))
        elif kind == "ghost":
            events.append(answer_event(f"ghost{n}", i, at))
    events.append(text_event("user", "last", f"i{inv + 1}", float(n + 1)))
    got = stored(url, events)
    long_running = {c for e in got for c in e.long_running_tool_ids or ()}
    seen: set[str] = set()
    for k, event in enumerate(got):
        for r in event.get_function_responses():
            assert r.id in seen, f"response {r.id} without call before it"
        for c in event.get_function_calls():
            seen.add(c.id or "")
            if c.id not in long_running:
                assert any(r.id == c.id for later in got[k + 1:]
                           for r in later.get_function_responses()), f"call {c.id} unanswered"
    assert gemini_problems(_get_contents(None, got, "helper", preserve_function_call_ids=True),
                           frozenset(long_running)) == []


def test_a_reused_call_id_is_paired_within_its_invocation(url: str) -> None:
    """Issue 41 (ADK's own rule too): a call id reused in a later invocation is a call
    of its own. The first `c1` died mid-tool and gets a lost response; the second
    keeps its own response, and ADK's builder accepts the whole."""
    first = call_event("c1", "i1", 2.0)
    again = call_event("c1", "i2", 4.0).model_copy(update={"id": "ev-c1-again"})
    got = stored(url, [text_event("user", "hi", "i1", 1.0), first,
                       text_event("user", "again", "i2", 3.0), again,
                       answer_event("c1", "i2", 5.0), text_event("helper", "ok", "i2", 6.0)])
    answers = [(e.id, r.response) for e in got for r in e.get_function_responses()]
    assert answers[0][1] == {"error": lost_text("process_died", "lookup")}
    assert answers[1] == ("ev-answer-c1-5.0", {"price": 1})
    assert [e.id for e in got].index(answers[0][0]) == 2  # right after the first call
    assert gemini_problems(_get_contents(None, got, "helper")) == []
