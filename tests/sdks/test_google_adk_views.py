"""`get_session` plans the pairing of a session (issue 28) on small views of its
events (`pairing_view`) and decodes each whole event only to validate it (issue 30).
That is only right if the views lead `paired_events` to the same answer as the
whole events: "nothing to repair" (the list itself back) for exactly the same
sessions. Random sessions of every kind of event pairing reads."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("google.adk")
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

from convlog.integrations.adk_pairs import paired_events, pairing_view

KINDS = st.lists(st.sampled_from([
    "user", "text", "call", "call2", "answer", "ghost", "long", "interrupt", "no_id",
    "mixed", "new_invocation", "end_of_agent", "agent_state", "answer_twice"]), max_size=25)


def dump(event: Event) -> dict[str, Any]:
    return event.model_dump(mode="json", exclude_none=True)  # as append_event stores it


def session(script: list[str]) -> list[dict[str, Any]]:
    events: list[Event] = []
    inv, open_calls, answered = 1, [], []

    def add(n: int, parts: list[types.Part], **more: Any) -> None:
        events.append(Event(author="helper", invocation_id=f"i{inv}", timestamp=float(n),
                            id=f"e{n}", content=types.Content(role="model", parts=parts),
                            **more))

    def call(cid: str | None, name: str = "lookup") -> types.Part:
        return types.Part(function_call=types.FunctionCall(id=cid, name=name))

    def answer(cid: str) -> types.Part:
        return types.Part(function_response=types.FunctionResponse(
            id=cid, name="lookup", response={"ok": True}))

    for n, kind in enumerate(script):
        if kind == "new_invocation":
            inv += 1
        if kind in ("user", "new_invocation"):
            events.append(Event(author="user", invocation_id=f"i{inv}", timestamp=float(n),
                                content=types.Content(role="user",
                                                      parts=[types.Part(text="hi")])))
        elif kind == "text":
            add(n, [types.Part(text="ok")])
        elif kind in ("call", "long", "interrupt"):
            cid = f"c{n}"
            add(n, [call(cid, "adk_request_input" if kind == "interrupt" else "lookup")],
                long_running_tool_ids={cid} if kind == "long" else None)
            open_calls.append(cid)
        elif kind == "call2":
            add(n, [call(f"c{n}a"), call(f"c{n}b")])
            open_calls += [f"c{n}a", f"c{n}b"]
        elif kind == "no_id":
            add(n, [call(None)])
        elif kind == "mixed":
            add(n, [types.Part(text="let me look"), call(f"c{n}")])
            open_calls.append(f"c{n}")
        elif kind == "answer" and open_calls:
            answered.append(open_calls.pop(0))
            add(n, [answer(answered[-1])])
        elif kind == "answer_twice" and answered:
            add(n, [answer(answered[-1])])
        elif kind == "ghost":
            add(n, [answer(f"ghost{n}")])
        elif kind == "end_of_agent":
            add(n, [], actions=EventActions(end_of_agent=True))
        elif kind == "agent_state":
            add(n, [], actions=EventActions(agent_state={}))
    return [dump(e) for e in events]


@settings(max_examples=300, deadline=None)
@given(script=KINDS)
def test_the_views_need_repairs_exactly_when_the_events_do(script: list[str]) -> None:
    events = session(script)
    views = [pairing_view(e) for e in events]
    assert (paired_events(views) is views) == (paired_events(events) is events)


def test_both_answers_occur() -> None:
    """The property above is not vacuous: sessions of either answer exist."""
    fine = session(["user", "call", "answer", "text"])
    broken = session(["user", "call", "new_invocation", "text"])
    assert paired_events(fine) is fine
    assert paired_events(broken) is not broken
    views = [pairing_view(e) for e in broken]
    assert paired_events(views) is not views
