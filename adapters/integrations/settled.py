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
import threading
from collections.abc import Callable
from typing import TypeVar, TypeVarTuple

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


async def write_in_thread(func: Callable[[*Ts], T], *args: *Ts) -> T:
    """`func(*args)` in asyncio's default executor with the caller's context (the
    hop `asyncio.to_thread` makes, and the OpenAI Agents SDK's own sessions), awaited
    to its end by a cancelled caller too: behind a shield, since a task and
    `asyncio.wait` per call cost ~30 us more, a fifth of a small write (issue 30)."""
    loop = asyncio.get_running_loop()
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


async def write_in_worker(func: Callable[[*Ts], T], *args: *Ts) -> T:
    """`func(*args)` in anyio's worker thread (asyncio or trio: the SDKs built on anyio,
    and the hop their own example stores make), awaited to its end by a cancelled
    caller too. Under trio anyio's call is shielded already; under asyncio a native
    `task.cancel()` reaches the caller at once, so the write says when it starts and
    ends: a caller cancelled before it started abandons it (anyio's worker skips a
    cancelled call, and `_Handshake` makes sure it cannot start after), else the
    caller polls for its end (the rare path; the usual one costs a lock and an event,
    not a task per call). anyio is imported here: the OpenAI session does not use it."""
    from anyio import get_cancelled_exc_class, sleep, to_thread

    handshake = _Handshake()
    try:
        return await to_thread.run_sync(handshake.run, func, *args)
    except BaseException:
        if handshake.abandon():
            raise
        while not handshake.finished.is_set():
            with contextlib.suppress(get_cancelled_exc_class()):
                await sleep(0.002)
        raise


class _Handshake:
    """Whether a write in a worker thread has started, under a lock, so that the
    waiting side can abandon it for good only if it has not."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._started = self._abandoned = False
        self.finished = threading.Event()

    def run(self, func: Callable[[*Ts], T], *args: *Ts) -> T:
        with self._lock:
            if self._abandoned:
                raise RuntimeError("the caller abandoned this write before it started")
            self._started = True
        try:
            return func(*args)
        finally:
            self.finished.set()

    def abandon(self) -> bool:
        """True when the write had not started (and now never will)."""
        with self._lock:
            if not self._started:
                self._abandoned = True
            return self._abandoned
