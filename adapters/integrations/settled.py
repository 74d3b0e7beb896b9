"""Writes that a cancelled caller still waits for.

An SDK store's write runs in a worker thread (the log is blocking: sqlite3, psycopg),
and a thread cannot be stopped. If the caller's task is cancelled meanwhile and the
cancellation reached it at once, the caller would believe the write did not happen
while it may still commit, and an SDK that retries what failed would write it twice
or read a log that changes under it. So a cancelled caller waits for the write's end,
then sees its cancellation. anyio's `to_thread` already behaves so under its own
cancel scopes and under trio, but not against a plain asyncio `task.cancel()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Callable
from typing import TypeVar, TypeVarTuple

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


async def write_in_thread(func: Callable[[*Ts], T], *args: *Ts) -> T:
    """`func(*args)` in a worker thread, awaited to its end by a cancelled caller too
    (asyncio or trio). Under asyncio: the default executor, with the caller's context
    (as `asyncio.to_thread`), behind a shield: a task and `asyncio.wait` per call cost
    ~30 us more, a fifth of a one-entry Claude append (issue 30). Under trio: anyio's
    thread call, already shielded from cancellation (imported here: the SDKs that run
    under trio bring anyio; the OpenAI session, plain asyncio, does not need it)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        from anyio import to_thread
        return await to_thread.run_sync(func, *args)
    write = loop.run_in_executor(None, contextvars.copy_context().run, func, *args)
    try:
        return await asyncio.shield(write)
    except asyncio.CancelledError:
        while not write.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({write})
        if not write.cancelled():
            write.exception()  # retrieved: the cancellation is what the caller must see
        raise
