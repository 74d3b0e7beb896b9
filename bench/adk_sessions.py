"""The Google ADK section of bench/sdks.py: convlog's `ConvlogSessionService` against
ADK's own `DatabaseSessionService` on SQLite (``sqlite+aiosqlite``), same workloads,
one run, the workloads ADK users report as slow (issue 30):

- ``get_session`` of a session holding 3,000 events (``--quick``: 300);
- ``list_sessions`` of an app with 5,000 and 10,000 sessions (``--quick``: 500 and
  1,000), each session holding one turn (a user event and a model event, ~250
  characters each, a state delta);
- ``append_event`` of one event onto the 3,000-event session.

SQLAlchemy (which `DatabaseSessionService` needs) is a benchmark peer, installed in
.venv-bench only (bench/requirements-peers.txt), so this section runs there:
``.venv-bench/bin/python -m bench.sdks --sdk adk [--quick]``.
"""

from __future__ import annotations

import asyncio
import gc
from typing import Any

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions import BaseSessionService, Session
from google.genai import types

from bench.sdks import median_ms
from convlog.integrations.google_adk import ConvlogSessionService

WORDS = ("session", "token", "budget", "resume", "agent", "history", "restart", "cost")
APP = "bench"


def event(i: int, author: str) -> Event:
    text = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(40))[:250]
    role = "user" if author == "user" else "model"
    return Event(author=author, invocation_id=f"inv-{i // 2}",
                 content=types.Content(role=role, parts=[types.Part(text=f"{i}: {text}")]),
                 actions=EventActions(state_delta={"turns": i // 2, "last": author}))


async def fill_session(service: BaseSessionService, events: int) -> Session:
    session = await service.create_session(app_name=APP, user_id="u0", session_id="big",
                                           state={"user:lang": "fr", "cart": []})
    for i in range(events):
        await service.append_event(session, event(i, "user" if i % 2 == 0 else "helper"))
    return session


async def fill_many(service: BaseSessionService, sessions: int, have: int) -> None:
    for n in range(have, sessions):
        session = await service.create_session(app_name=APP, user_id=f"u{n % 50}",
                                               session_id=f"s{n}", state={"n": n})
        await service.append_event(session, event(2 * n, "user"))
        await service.append_event(session, event(2 * n + 1, "helper"))


async def measure(service: BaseSessionService, events: int, lists: tuple[int, ...],
                  repeat: int) -> dict[str, float]:
    session = await fill_session(service, events)
    gc.collect()
    for _ in range(3):
        await service.get_session(app_name=APP, user_id="u0", session_id="big")
    result = {f"get_session_{events}_ms": await median_ms(
        lambda: service.get_session(app_name=APP, user_id="u0", session_id="big"),
        max(5, repeat // 10))}
    counter = iter(range(events, 10**9))

    async def append() -> None:
        await service.append_event(session, event(next(counter), "helper"))

    result["append_event_ms"] = await median_ms(append, repeat)
    have = 0
    for size in lists:
        await fill_many(service, size, have)
        have = size
        gc.collect()
        await service.list_sessions(app_name=APP)
        # 3 calls: at 10k sessions, one call takes seconds
        result[f"list_sessions_{size}_ms"] = await median_ms(
            lambda: service.list_sessions(app_name=APP), 3)
    return result


def run(tmp: str, quick: bool) -> dict[str, Any]:
    """Both services on SQLite files in `tmp`; medians in ms and convlog/ADK ratios."""
    from google.adk.sessions import DatabaseSessionService

    events, lists, repeat = (300, (500, 1_000), 100) if quick else (3_000, (5_000, 10_000), 200)

    async def theirs() -> dict[str, float]:
        service = DatabaseSessionService(f"sqlite+aiosqlite:///{tmp}/adk-db.db")
        try:
            return await measure(service, events, lists, repeat)
        finally:
            await service.close()

    async def ours() -> dict[str, float]:
        service = ConvlogSessionService(f"sqlite:///{tmp}/adk-convlog.db")
        try:
            return await measure(service, events, lists, repeat)
        finally:
            await service.close()

    convlog_ms = asyncio.run(ours())
    adk_ms = asyncio.run(theirs())
    return {"repeat": repeat, "convlog": convlog_ms, "database_session_service": adk_ms,
            "ratio": {k: round(convlog_ms[k] / adk_ms[k], 2) for k in convlog_ms}}


def report(row: dict[str, Any]) -> None:
    print("ConvlogSessionService vs ADK's DatabaseSessionService (sqlite+aiosqlite), "
          f"medians, ms; {row['repeat']} appends")
    print(f"{'operation':<26}{'convlog':>10}{'ADK DB':>10}{'ratio':>8}")
    for name, value in row["convlog"].items():
        print(f"{name.removesuffix('_ms'):<26}{value:>10}"
              f"{row['database_session_service'][name]:>10}{row['ratio'][name]:>8}")
