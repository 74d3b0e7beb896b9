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
from collections.abc import Awaitable, Callable
from typing import TypeVar, TypeVarTuple

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


async def settled(write: Awaitable[T]) -> T:
    """Await `write` to its end even when the caller is cancelled meanwhile, then
    re-raise the cancellation (asyncio)."""
    task = asyncio.ensure_future(write)
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as exc:
            cancelled = cancelled or exc
    if cancelled is not None:
        task.exception()  # retrieved: the cancellation is what the caller must see
        raise cancelled
    return task.result()


async def write_in_thread(func: Callable[[*Ts], T], *args: *Ts) -> T:
    """`func(*args)` in a worker thread (anyio: asyncio or trio), awaited to its end
    by a cancelled caller too. anyio is imported here: the SDKs that use this
    function bring it, the OpenAI session (plain asyncio) does not need it."""
    from anyio import to_thread

    try:
        asyncio.get_running_loop()
    except RuntimeError:  # trio: anyio's thread call is shielded from cancellation
        return await to_thread.run_sync(func, *args)
    return await settled(to_thread.run_sync(func, *args))
