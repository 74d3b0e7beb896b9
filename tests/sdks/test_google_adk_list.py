"""ADK `list_sessions` from the ``adk_sessions`` read model (issue 30): what it lists
is what `get_session` says of each session (state merged with app and user state,
last update time), after state deltas, deletes, re-creates, retractions, across two
services on one file; the read model holds one row per session and is rebuildable."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import convlog

pytest.importorskip("google.adk")
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

from convlog.integrations.google_adk import ConvlogSessionService, session_key
from convlog.services.log import application


def event(author: str, at: float, **delta: Any) -> Event:
    return Event(author=author, invocation_id="i", timestamp=at,
                 content=types.Content(role="user" if author == "user" else "model",
                                       parts=[types.Part(text=f"{author} {at}")]),
                 actions=EventActions(state_delta=delta))


async def listed_vs_got(service: ConvlogSessionService, app: str
                        ) -> tuple[list[Any], list[Any]]:
    listed = (await service.list_sessions(app_name=app)).sessions
    got = [await service.get_session(app_name=app, user_id=s.user_id, session_id=s.id)
           for s in listed]
    return ([(s.user_id, s.id, s.state, s.last_update_time, len(s.events)) for s in listed],
            [(s.user_id, s.id, s.state, s.last_update_time, 0) for s in got if s])


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_list_agrees_with_get_session_across_two_services(
        backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = (f"sqlite:///{tmp_path / 'adk.db'}" if backend == "sqlite"
           else request.getfixturevalue("pg_url"))
    logs = [convlog.open(url, views=str(tmp_path / f"{n}.duckdb")) for n in "ab"]

    async def go() -> None:  # two hosts on one store, each with its own views file
        a, b = ConvlogSessionService(logs[0]), ConvlogSessionService(logs[1])
        s1 = await a.create_session(app_name="shop", user_id="u1", session_id="s1",
                                    state={"cart": [], "user:lang": "fr", "app:v": 1})
        assert [x.id for x in (await b.list_sessions(app_name="shop")).sessions] == ["s1"]
        await a.append_event(s1, event("user", 1000.0, cart=["A"], step=1))
        await a.append_event(s1, event("bot", 1001.0, **{"user:lang": "de", "app:v": 2,
                                                         "temp:x": 3, "step": None}))
        s2 = await a.create_session(app_name="shop", user_id="u2", session_id="s2",
                                    state={"n": 2})
        await a.create_session(app_name="other", user_id="u1", session_id="s3")
        listed, got = await listed_vs_got(b, "shop")  # b reads a's writes
        assert listed == got
        assert [x[:3] for x in listed] == [
            ("u1", "s1", {"cart": ["A"], "step": None, "user:lang": "de", "app:v": 2}),
            ("u2", "s2", {"n": 2, "app:v": 2})]
        assert listed[0][3] == 1001.0
        await b.delete_session(app_name="shop", user_id="u1", session_id="s1")
        assert [x.id for x in (await a.list_sessions(app_name="shop")).sessions] == ["s2"]
        await b.create_session(app_name="shop", user_id="u1", session_id="s1",
                               state={"fresh": True})
        await b.append_event(s2, event("user", 2000.0, n=3))
        listed, got = await listed_vs_got(a, "shop")
        assert listed == got
        assert sorted((x[1], x[2]) for x in listed) == [
            ("s1", {"fresh": True, "user:lang": "de", "app:v": 2}),
            ("s2", {"n": 3, "app:v": 2})]
        assert [x.id for x in (await a.list_sessions(app_name="shop", user_id="u2")
                               ).sessions] == ["s2"]
        with convlog.open(url) as log:  # a message retracted through the log's API
            log.retract_last(session_key("shop", "u2", "s2"))
        listed, got = await listed_vs_got(b, "shop")
        assert listed == got
        assert [x[2] for x in listed if x[1] == "s2"] == [{"n": 2, "app:v": 2}]

    asyncio.run(go())
    for log in logs:
        log.close()


def test_the_read_model_holds_one_row_per_session_and_is_rebuilt(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'adk.db'}"

    async def go() -> list[Any]:
        service = ConvlogSessionService(url)
        for n in range(3):
            s = await service.create_session(app_name="shop", user_id=f"u{n}",
                                             session_id=f"s{n}", state={"n": n})
            await service.append_event(s, event("user", 100.0 + n, seen=n))
        listed = [(s.id, s.state, s.last_update_time)
                  for s in (await service.list_sessions(app_name="shop")).sessions]
        await service.close()
        return listed

    listed = asyncio.run(go())
    assert listed == [(f"s{n}", {"n": n, "seen": n}, 100.0 + n) for n in range(3)]
    query = ("SELECT s.key, a.kind, a.state, a.updated FROM adk_sessions a "
             "JOIN sessions s USING (conversation_id) WHERE s.channel = 'google-adk' "
             "ORDER BY s.key")
    with convlog.open(url) as log:
        _, rows = log.sql(query)
        assert rows == [(session_key("shop", f"u{n}", f"s{n}"), "session",
                         f'{{"n":{n},"seen":{n}}}', 100.0 + n) for n in range(3)]
        application(log).catalog.rebuild(progress=False)
        assert log.sql(query)[1] == rows


def test_an_encrypted_store_lists_without_copying_state_to_the_views(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONVLOG_KEY", "33" * 32)
    url = f"sqlite:///{tmp_path / 'sealed.db'}"

    async def go() -> tuple[list[Any], list[Any]]:
        service = ConvlogSessionService(url)
        s = await service.create_session(app_name="shop", user_id="u1", session_id="s1",
                                         state={"secret": "CANARY-7f3a", "user:k": 1})
        await service.append_event(s, event("user", 100.0, step=1, **{"app:a": 2}))
        await service.create_session(app_name="shop", user_id="u2", session_id="s2")
        found = await listed_vs_got(service, "shop")
        await service.close()
        return found

    listed, got = asyncio.run(go())
    assert listed == got
    assert [x[2] for x in listed if x[1] == "s2"] == [{"app:a": 2}]
    assert [x[2] for x in listed if x[1] == "s1"] == [
        {"secret": "CANARY-7f3a", "step": 1, "user:k": 1, "app:a": 2}]
    with convlog.open(url) as log:
        assert log.sql("SELECT count(*) FROM adk_sessions")[1] == [(0,)]
    assert b"CANARY-7f3a" not in (tmp_path / "sealed.duckdb").read_bytes()


def test_a_store_made_encrypted_drops_the_rows_folded_before(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONVLOG_KEY", raising=False)
    monkeypatch.delenv("CONVLOG_KEY_FILE", raising=False)
    log = convlog.open(f"sqlite:///{tmp_path / 'later.db'}")

    async def go() -> tuple[list[Any], list[Any]]:
        service = ConvlogSessionService(log)
        s = await service.create_session(app_name="shop", user_id="u1", session_id="s1",
                                         state={"step": 0})
        assert [x.state for x in (await service.list_sessions(app_name="shop")).sessions
                ] == [{"step": 0}]
        assert log.enable_encryption(bytes.fromhex(convlog.generate_key())) > 0
        await service.append_event(s, event("user", s.last_update_time + 1, step=1))
        return await listed_vs_got(service, "shop")

    listed, got = asyncio.run(go())
    assert listed == got and listed[0][2] == {"step": 1}
    assert log.sql("SELECT count(*) FROM adk_sessions")[1] == [(0,)]
    log.close()
