"""convlog's `BaseSessionService` for Google ADK, with the real `google-adk` package,
offline. ADK's sdist ships no session-service tests, so its own reference
implementation is the oracle: one script of operations runs against ADK's
InMemorySessionService and against convlog's, and every observation must agree.
Then a real Runner with an offline model, across a reopened log, and costs."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import convlog

pytest.importorskip("google.adk")
from google.adk.agents import LlmAgent
from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.runners import Runner
from google.adk.sessions import BaseSessionService, InMemorySessionService
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types

from convlog.integrations.google_adk import ConvlogSessionService
from tests.sdks.adk_fake import USAGE, EchoHistoryLlm


def text_event(author: str, text: str, at: float, **delta: Any) -> Event:
    role = "user" if author == "user" else "model"
    return Event(author=author, invocation_id="inv-1", timestamp=at, id=f"ev-{at}",
                 content=types.Content(role=role, parts=[types.Part(text=text)]),
                 actions=EventActions(state_delta=delta))


def tool_events(at: float) -> list[Event]:
    call = types.FunctionCall(id="fc-1", name="lookup", args={"sku": "A-1", "n": 2})
    answer = types.FunctionResponse(id="fc-1", name="lookup", response={"price": 9.5})
    return [Event(author="helper", invocation_id="inv-2", timestamp=at, id="ev-call",
                  content=types.Content(role="model", parts=[types.Part(function_call=call)]),
                  long_running_tool_ids={"fc-1"}),
            Event(author="helper", invocation_id="inv-2", timestamp=at + 1, id="ev-answer",
                  content=types.Content(role="user",
                                        parts=[types.Part(function_response=answer)]))]


def shape(session: Any) -> Any:
    if session is None:
        return None
    return (session.app_name, session.user_id, session.id, session.state,
            [e.model_dump(mode="json") for e in session.events])


async def script(service: BaseSessionService) -> list[Any]:
    """The same operations on any session service; what each returned."""
    seen: list[Any] = []
    s = await service.create_session(app_name="shop", user_id="u1", session_id="s1",
                                     state={"cart": [], "app:theme": "dark",
                                            "user:lang": "fr", "temp:scratch": 1})
    seen.append(shape(s))
    try:
        await service.create_session(app_name="shop", user_id="u1", session_id="s1")
    except AlreadyExistsError:
        seen.append("already exists")
    for event in [text_event("user", "add A-1", 1000.0),
                  text_event("helper", "added", 1001.0, cart=["A-1"], **{
                      "user:lang": "de", "app:theme": "light", "temp:t": 2}),
                  *tool_events(1002.0),
                  text_event("helper", "partial", 1005.0)]:
        if event.content and event.content.parts and event.content.parts[0].text == "partial":
            event.partial = True
        seen.append((await service.append_event(s, event)).model_dump(mode="json"))
    seen.append(shape(s))  # the caller's session object after the appends
    await service.create_session(app_name="shop", user_id="u2", session_id="s2",
                                 state={"user:lang": "it"})
    await service.create_session(app_name="other", user_id="u1", session_id="s3")
    for config in (None, GetSessionConfig(num_recent_events=0),
                   GetSessionConfig(num_recent_events=2),
                   GetSessionConfig(num_recent_events=5),  # one more than it holds: all
                   GetSessionConfig(after_timestamp=1001.5),
                   GetSessionConfig(num_recent_events=1, after_timestamp=1000.0)):
        seen.append(shape(await service.get_session(app_name="shop", user_id="u1",
                                                    session_id="s1", config=config)))
    seen.append(await service.get_session(app_name="shop", user_id="u9", session_id="s1"))
    for user in ("u1", None, "nobody"):
        listed = await service.list_sessions(app_name="shop", user_id=user)
        seen.append(sorted((x.user_id, x.id, tuple(sorted(x.state.items())), len(x.events))
                           for x in listed.sessions))
    seen.append(await service.get_user_state(app_name="shop", user_id="u1"))
    await service.delete_session(app_name="shop", user_id="u1", session_id="s1")
    await service.delete_session(app_name="shop", user_id="u1", session_id="never")
    seen.append(await service.get_session(app_name="shop", user_id="u1", session_id="s1"))
    try:
        await service.append_event(s, text_event("user", "after delete", 1006.0))
    except SessionNotFoundError:
        seen.append("not found")
    again = await service.create_session(app_name="shop", user_id="u1", session_id="s1")
    seen.append(shape(again))  # a fresh session under the same id: no old events
    return seen


def test_it_agrees_with_adks_own_in_memory_service(tmp_path: Path) -> None:
    ours = ConvlogSessionService(f"sqlite:///{tmp_path / 'adk.db'}")
    expected = asyncio.run(script(InMemorySessionService()))
    assert asyncio.run(script(ours)) == expected
    asyncio.run(ours.close())


def test_an_encrypted_store_agrees_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                       ) -> None:
    """Sealed rows are opened before the lean read of each record (issue 30)."""
    monkeypatch.setenv("CONVLOG_KEY", "44" * 32)
    ours = ConvlogSessionService(f"sqlite:///{tmp_path / 'sealed.db'}")
    expected = asyncio.run(script(InMemorySessionService()))
    assert asyncio.run(script(ours)) == expected
    asyncio.run(ours.close())
    assert b"add A-1" not in (tmp_path / "sealed.db").read_bytes()


def test_a_stale_session_object_is_refused(tmp_path: Path) -> None:
    async def go() -> None:
        service = ConvlogSessionService(f"sqlite:///{tmp_path / 'adk.db'}")
        s = await service.create_session(app_name="a", user_id="u", session_id="s")
        other = await service.get_session(app_name="a", user_id="u", session_id="s")
        assert other is not None
        await service.append_event(other, text_event("user", "newer", s.last_update_time + 5))
        with pytest.raises(StaleSessionError):
            await service.append_event(s, text_event("user", "stale", s.last_update_time + 6))
        await service.close()

    asyncio.run(go())


def test_a_runner_remembers_across_a_reopened_log_and_costs_work(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'adk.db'}"

    async def turn(session_id: str | None, text: str) -> tuple[str, str]:
        service = ConvlogSessionService(url)  # a new service on the same file each turn
        runner = Runner(agent=LlmAgent(name="helper", model=EchoHistoryLlm()),
                        app_name="shop", session_service=service)
        if session_id is None:
            session_id = (await service.create_session(app_name="shop", user_id="u1")).id
        replies = [e.content.parts[0].text async for e in runner.run_async(
            user_id="u1", session_id=session_id,
            new_message=types.Content(role="user", parts=[types.Part(text=text)]))
            if e.content and e.content.parts and e.content.parts[0].text]
        await service.close()
        return session_id, replies[-1]

    sid, first = asyncio.run(turn(None, "my codeword is PELICAN"))
    assert first == "I have heard: my codeword is PELICAN"
    _, second = asyncio.run(turn(sid, "what is it?"))
    assert second == "I have heard: my codeword is PELICAN | what is it?"
    with convlog.open(url) as log:
        (row,) = [r for r in log.costs(by="model") if r.group == "gemini-2.0-flash"]
        assert row.output_tokens == 2 * USAGE["candidates"]
        assert row.cache_read_tokens == 2 * USAGE["cached"]
        assert row.cost_usd is not None and row.cost_usd > 0
        (session,) = [s for s in log.conversations() if s.channel == "google-adk"]
        assert "PELICAN" in log.context(session.key).text


class SlowWrites(ConvlogSessionService):
    """A real service whose appends take a while in their worker thread."""

    def _append(self, session: Any, event: Event) -> None:
        import time
        time.sleep(0.3)
        super()._append(session, event)


def test_a_cancelled_append_event_is_awaited_to_its_end(tmp_path: Path) -> None:
    """The worker thread cannot be stopped: a caller cancelled under asyncio sees its
    cancellation only once the write has ended, never while it may still commit."""
    async def cancelled_then_read() -> Any:
        service = SlowWrites(f"sqlite:///{tmp_path / 'adk.db'}")
        session = await service.create_session(app_name="app", user_id="u1")
        task = asyncio.ensure_future(service.append_event(session, text_event("user", "hi", 1.0)))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        found = await service.get_session(app_name="app", user_id="u1", session_id=session.id)
        await service.close()
        return found

    found = asyncio.run(cancelled_then_read())
    assert found is not None and [e.id for e in found.events] == ["ev-1.0"]
