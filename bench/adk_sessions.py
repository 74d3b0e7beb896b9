"""The Google ADK section of bench/sdks.py: convlog's `ConvlogSessionService` against
ADK's own `DatabaseSessionService` on SQLite (``sqlite+aiosqlite``), same workloads,
one run, the workloads ADK users report as slow (issue 30):

- ``get_session`` of a session holding 3,000 events (``--quick``: 300);
- ``list_sessions`` of an app with 5,000 and 10,000 sessions (``--quick``: 500 and
  1,000), each session holding one turn (a user event and a model event, ~250
  characters each, a state delta);
- ``append_event`` of one event onto the 3,000-event session.

Both services are filled first, then take turns call by call (`timed`).

SQLAlchemy (which `DatabaseSessionService` needs) is a benchmark peer, installed in
.venv-bench only (bench/requirements-peers.txt), so this section runs there:
``.venv-bench/bin/python -m bench.sdks --sdk adk [--quick]``.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions import BaseSessionService, Session
from google.genai import types

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


async def timed(calls: dict[str, Callable[[], Awaitable[Any]]], repeat: int
                ) -> dict[str, float]:
    """Each service's median ms over `repeat` calls, the services taking turns call by
    call (the first of each round alternating): a load change on the machine slows
    both alike. Timed in its own blocks, the same code measured 0.72x and 1.34x."""
    samples: dict[str, list[float]] = {name: [] for name in calls}
    names = list(calls)
    for round_ in range(repeat):
        for name in names if round_ % 2 == 0 else names[::-1]:
            started = time.perf_counter()
            await calls[name]()
            samples[name].append(time.perf_counter() - started)
    return {name: round(statistics.median(found) * 1000, 3)
            for name, found in samples.items()}


async def measure(services: dict[str, BaseSessionService], events: int,
                  lists: tuple[int, ...], repeat: int) -> dict[str, dict[str, float]]:
    """Every workload on every service, both filled before either is timed."""
    result: dict[str, dict[str, float]] = {name: {} for name in services}

    def record(op: str, found: dict[str, float]) -> None:
        for name, value in found.items():
            result[name][op] = value

    sessions = {name: await fill_session(service, events)
                for name, service in services.items()}
    gc.collect()
    for service in services.values():
        for _ in range(3):
            await service.get_session(app_name=APP, user_id="u0", session_id="big")
    record(f"get_session_{events}_ms", await timed({
        name: functools.partial(service.get_session, app_name=APP, user_id="u0",
                                session_id="big")
        for name, service in services.items()}, max(5, repeat // 10)))
    counter = iter(range(events, 10**9))

    def append(name: str) -> Callable[[], Awaitable[Any]]:
        return lambda: services[name].append_event(sessions[name],
                                                   event(next(counter), "helper"))

    record("append_event_ms", await timed({name: append(name) for name in services}, repeat))
    have = 0
    for size in lists:
        for service in services.values():
            await fill_many(service, size, have)
        have = size
        gc.collect()
        for service in services.values():
            await service.list_sessions(app_name=APP)
        # 3 calls each: at 10k sessions, one call takes seconds
        record(f"list_sessions_{size}_ms", await timed({
            name: functools.partial(service.list_sessions, app_name=APP)
            for name, service in services.items()}, 3))
    return result


def run(tmp: str, quick: bool) -> dict[str, Any]:
    """Both services on SQLite files in `tmp`; medians in ms and convlog/ADK ratios."""
    from google.adk.sessions import DatabaseSessionService

    events, lists, repeat = (300, (500, 1_000), 100) if quick else (3_000, (5_000, 10_000), 200)

    async def both() -> dict[str, dict[str, float]]:
        services: dict[str, BaseSessionService] = {
            "convlog": ConvlogSessionService(f"sqlite:///{tmp}/adk-convlog.db"),
            "database_session_service": DatabaseSessionService(
                f"sqlite+aiosqlite:///{tmp}/adk-db.db")}
        try:
            return await measure(services, events, lists, repeat)
        finally:
            for service in services.values():
                await service.close()  # type: ignore[attr-defined]

    found = asyncio.run(both())
    convlog_ms, adk_ms = found["convlog"], found["database_session_service"]
    return {"repeat": repeat, "convlog": convlog_ms, "database_session_service": adk_ms,
            "ratio": {k: round(convlog_ms[k] / adk_ms[k], 2) for k in convlog_ms}}


def report(row: dict[str, Any]) -> None:
    print("ConvlogSessionService vs ADK's DatabaseSessionService (sqlite+aiosqlite), "
          f"medians, ms; {row['repeat']} appends")
    print(f"{'operation':<26}{'convlog':>10}{'ADK DB':>10}{'ratio':>8}")
    for name, value in row["convlog"].items():
        print(f"{name.removesuffix('_ms'):<26}{value:>10}"
              f"{row['database_session_service'][name]:>10}{row['ratio'][name]:>8}")
