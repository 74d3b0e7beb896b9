"""One prompt turn at a time per session, in the order the prompts came.

ACP allows one prompt turn per session at a time, but nothing stops a host from
sending a second `session/prompt` before the first is answered. Forwarded at once,
both would run at the agent together and the updates of the two turns could not be
told apart, so the second would go unrecorded (issue 43). The proxy instead holds
the second until the first is answered, then runs it: both reach the agent, both
answers reach the host, and each is recorded as its own turn, in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

log = logging.getLogger("convlog.acp")


class TurnQueue:
    """A FIFO lock per client session id, dropped once nobody holds or waits for it."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, list[int]]] = {}

    @contextlib.asynccontextmanager
    async def at_a_time(self, session_id: str) -> AsyncIterator[None]:
        lock, users = self._locks.setdefault(session_id, (asyncio.Lock(), [0]))
        if lock.locked():
            log.info("session %s: a prompt came while a turn is running; it runs when "
                     "that turn is answered (one prompt turn at a time)", session_id)
        users[0] += 1
        try:
            async with lock:  # asyncio.Lock wakes its waiters first come, first served
                yield
        finally:
            users[0] -= 1
            if not users[0]:
                del self._locks[session_id]
