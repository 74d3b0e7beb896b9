"""Writes of the proxy to the log: a session's start, and one turn per prompt.

Each turn is ONE `append_turn` (all or nothing). Writes run in worker threads (the
async API); the proxy keeps every write it started, and waits for all of them before
it exits, so a turn the agent finished is never lost to a shutdown. A write that
fails (the database is unreachable) is reported on stderr and the session goes on:
the user's conversation is worth more than its record.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import Any

import convlog
from convlog.domain.conversation import AppendMessages, Command, RecordFact
from convlog.domain.events import ContextWindowReported, PreambleSent
from convlog.services.application import Application

log = logging.getLogger("convlog.acp")


class Recorder:
    def __init__(self, log: convlog.AsyncConversationLog, app: Application):
        self.log, self.app = log, app
        self._writes: set[asyncio.Future[Any]] = set()
        self.failures = 0

    async def start(self, key: str, *, agent: str | None, cwd: str,
                    metadata: dict[str, Any], native: str) -> None:
        """A new conversation, started with where it runs and who talks, and bound to
        the agent's own session id."""
        await self._write(self._start(key, agent, cwd, metadata, native), key)

    async def _start(self, key: str, agent: str | None, cwd: str, metadata: dict[str, Any],
                     native: str) -> None:
        await self.log.conversation(key, agent=agent, channel="acp", workspace=cwd,
                                    metadata=metadata)
        await self.log.bind_native_session(key, native, agent)

    async def fork(self, key: str, *, parent: str, at: str, agent: str | None,
                   metadata: dict[str, Any], native: str) -> None:
        """A fork of `parent` at its message `at` (its history by reference:
        convlog.services.fork), bound to the agent's own session id."""
        await self._write(self._fork(key, parent, at, agent, metadata, native), key)

    async def _fork(self, key: str, parent: str, at: str, agent: str | None,
                    metadata: dict[str, Any], native: str) -> None:
        await self.log.fork(parent, at=at, new_key=key, agent=agent, channel="acp",
                            metadata=metadata)
        await self.log.bind_native_session(key, native, agent)

    async def turn(self, key: str, messages: list[convlog.Message] | None,
                   facts: Sequence[ContextWindowReported] = (), *,
                   first: Sequence[PreambleSent] = ()) -> None:
        """Record one turn's messages (None: it was already recorded), with `facts`
        about it (its context window) after them and `first` (the preamble the agent
        got with the prompt) before them, in the same transaction."""
        if not messages:
            return
        if not facts and not first:
            await self._write(self.log.append_turn(key, messages), key)
            return
        commands: list[Command] = [*(RecordFact(event=f) for f in first),
                                   AppendMessages(messages=list(messages)),
                                   *(RecordFact(event=f) for f in facts)]
        await self._write(asyncio.to_thread(self.app.execute, key, commands), key)

    async def fact(self, key: str, write: Any) -> None:
        """One fact about a session (a close, a title...), written like a turn."""
        await self._write(write, key)

    def fact_soon(self, key: str, write: Any) -> None:
        """A fact written without waiting for it (the agent's update that reported it
        goes on to the host at once); `drain` still waits for it."""
        self._started(write, key)

    def _started(self, write: Any, key: str) -> asyncio.Future[Any]:
        task: asyncio.Future[Any] = asyncio.ensure_future(write)
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)
        task.add_done_callback(lambda done: self._report(done, key))
        return task

    def _report(self, task: asyncio.Future[Any], key: str) -> None:
        if task.cancelled() or task.exception() is None:
            return
        exc = task.exception()
        self.failures += 1
        log.error("could not record to the log (%s): %s: %s", key, type(exc).__name__, exc)

    async def _write(self, write: Any, key: str) -> None:
        task = self._started(write, key)
        with contextlib.suppress(Exception):  # reported by `_report`
            await asyncio.shield(task)  # a cancelled handler does not cancel the write

    async def drain(self) -> None:
        """Wait for every write started so far."""
        while self._writes:
            await asyncio.gather(*list(self._writes), return_exceptions=True)
