"""The real agent behind the proxy: its process, and the SDK connection to it.

The agent is spawned with the SDK's `spawn_stdio_transport` (stdin closed first on
stop, then terminate, then kill) and spoken to through the SDK's JSON-RPC
`Connection` over a `FrameTransport`, so a misbehaving agent (garbage on stdout, a
huge frame) is answered with protocol errors instead of breaking the connection.

The process can die at any time. Pending requests then fail with ConnectionError
(the proxy records the cut-off turn and answers the client with an error), the
sessions it held are gone, and the next request that needs the agent starts a new
process, initialized with the client's own `initialize` parameters, and resumes the
session by tiers. The agent's stderr is the proxy's stderr: the host's log.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

from convlog.acp.wire import DEFAULT_MAX_FRAME, FrameTransport, reader_limit

log = logging.getLogger("convlog.acp")

Handler = Callable[[str, Any, bool], Awaitable[Any]]


class AgentExited(ConnectionError):
    """The agent process is gone (or could not be started)."""


DEFAULT_INIT_TIMEOUT = 60.0
"""Seconds an agent has to answer `initialize` before the host is told it will not."""


class Downstream:
    """The agent process (restartable) and the connection to it."""

    def __init__(self, command: list[str], handler: Handler, *,
                 max_frame: int = DEFAULT_MAX_FRAME, cwd: str | None = None,
                 init_timeout: float = DEFAULT_INIT_TIMEOUT):
        if not command:
            raise ValueError("no agent command")
        self.command = command
        self._handler = handler
        self._max_frame = max_frame
        self._cwd = cwd
        self.init_timeout = init_timeout
        self._stack: contextlib.AsyncExitStack | None = None
        self._conn: Any = None
        self._process: asyncio.subprocess.Process | None = None
        self._starting: asyncio.Lock = asyncio.Lock()
        self.generation = 0
        """How many agent processes were started; a native session id belongs to one."""
        self.initialize_params: Any = None
        self.initialize_result: dict[str, Any] = {}
        self.on_exit: Callable[[int], None] | None = None

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.returncode is None \
            and self._conn is not None

    @property
    def returncode(self) -> int | None:
        return None if self._process is None else self._process.returncode

    async def start(self) -> None:
        """Spawn the agent (once per generation); initialize it again after a restart."""
        async with self._starting:
            if self.alive:
                return
            await self._close()
            from acp.connection import Connection
            from acp.transports import spawn_stdio_transport

            stack = contextlib.AsyncExitStack()
            try:
                reader, writer, process = await stack.enter_async_context(spawn_stdio_transport(
                    self.command[0], *self.command[1:], env=dict(os.environ), cwd=self._cwd,
                    stderr=None, limit=reader_limit()))
            except OSError as exc:
                await stack.aclose()
                raise AgentExited(f"cannot start the agent {self.command[0]!r}: "
                                  f"{exc.strerror or exc}") from None
            transport = FrameTransport(reader, writer, name="agent", max_frame=self._max_frame)
            self._conn = Connection(self._handler, transport)
            self._stack, self._process = stack, process
            self.generation += 1
            asyncio.get_running_loop().create_task(self._watch(process, self.generation))
            log.info("started agent %s (pid %d)", self.command, process.pid)
            if self.initialize_params is not None and self.generation > 1:
                result = await self._initialize_within(
                    self._conn.send_request("initialize", self.initialize_params))
                self.initialize_result = result if isinstance(result, dict) else {}

    async def _watch(self, process: asyncio.subprocess.Process, generation: int) -> None:
        code = await process.wait()
        if generation == self.generation and self._conn is not None:
            log.warning("the agent process exited with code %s", code)
            await self._conn.close()  # fail what is pending at once, not at EOF
            if self.on_exit is not None:
                self.on_exit(code)

    async def initialize(self, params: Any) -> dict[str, Any]:
        self.initialize_params = params
        await self.start()
        result = await self._initialize_within(self.request("initialize", params))
        self.initialize_result = result if isinstance(result, dict) else {}
        return self.initialize_result

    async def _initialize_within(self, answer: Awaitable[Any]) -> Any:
        """The agent's `initialize` answer, or AgentExited after `init_timeout`: an agent
        that never answers would otherwise leave the host waiting forever. The silent
        process is stopped, so the next request starts a fresh one."""
        try:
            return await asyncio.wait_for(answer, self.init_timeout)
        except TimeoutError:
            text = (f"the agent did not answer initialize within {self.init_timeout:g} s "
                    "(convlog acp --init-timeout)")
            log.error("%s; stopping it", text)
            await self.stop()
            raise AgentExited(text) from None

    async def request(self, method: str, params: Any) -> Any:
        if not self.alive:
            raise AgentExited(self.exit_text())
        try:
            return await self._conn.send_request(method, params)
        except ConnectionError:
            await self.wait_exit(1.0)  # its stdout closes just before its exit status
            raise AgentExited(self.exit_text()) from None

    async def notify(self, method: str, params: Any) -> None:
        if not self.alive:
            return  # a notification to a dead agent has nobody to reach
        with contextlib.suppress(ConnectionError):
            await self._conn.send_notification(method, params)

    def exit_text(self) -> str:
        code = self.returncode
        return "the agent process is not running" if code is None \
            else f"the agent process exited (code {code})"

    async def wait_exit(self, timeout: float) -> int | None:
        if self._process is None:
            return None
        with contextlib.suppress(TimeoutError):
            return await asyncio.wait_for(self._process.wait(), timeout)
        return None

    def capability(self, *path: str) -> bool:
        """Whether the agent's initialize answer advertises `path` (e.g. loadSession)."""
        node: Any = self.initialize_result.get("agentCapabilities")
        for name in path:
            if not isinstance(node, dict):
                return False
            node = node.get(name)
        return node is not None and node is not False

    async def _close(self) -> None:
        conn, stack = self._conn, self._stack
        self._conn = self._stack = None
        if conn is not None:
            await conn.close()
        if stack is not None:
            with contextlib.suppress(Exception):
                await stack.aclose()

    async def stop(self) -> None:
        """Close the agent's stdin, give it 2 s to exit, then terminate, then kill."""
        self.generation += 1  # the watcher of this process must not report it
        await self._close()
