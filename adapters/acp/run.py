"""Running the proxy on this process's stdio until the client goes away.

The client's stdin closing (or SIGINT/SIGTERM) is a clean shutdown: turns still
running are cancelled at the agent and given `grace` seconds to end, any that do not
are recorded as cut off, every write is waited for, and the agent is stopped
(stdin closed, then terminate, then kill). Nothing but protocol frames is ever
written to stdout; logs go to stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import stat

import convlog
from convlog.acp.downstream import DEFAULT_INIT_TIMEOUT, AgentExited
from convlog.acp.preamble import DEFAULT_MODE
from convlog.acp.proxy import Proxy
from convlog.acp.wire import DEFAULT_MAX_FRAME, FrameTransport, reader_limit
from convlog.domain.errors import ConvlogError
from convlog.services.application import Application

log = logging.getLogger("convlog.acp")


async def serve(proxy: Proxy, reader: asyncio.StreamReader,
                writer: asyncio.StreamWriter) -> None:
    """Serve one client on (reader, writer) until it closes or a signal comes."""
    from acp.connection import Connection

    transport = FrameTransport(reader, writer, name="client", max_frame=proxy.max_frame)
    proxy.client = Connection(proxy.from_client, transport, listening=False)
    await proxy.agent.start()
    loop = asyncio.get_running_loop()
    main = asyncio.ensure_future(proxy.client.main_loop())
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, main.cancel)
    try:
        with contextlib.suppress(asyncio.CancelledError):
            await main
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
        await proxy.shutdown("the client disconnected" if main.done() and not main.cancelled()
                             else "the proxy was stopped")
        await proxy.client.close()


def _streamable(fd: int) -> bool:
    """Whether asyncio can watch `fd` (a regular file or /dev/null cannot be)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


def check_stdio() -> None:
    """The proxy's stdin and stdout must be streams an ACP client talks on; the CLI
    checks it before it opens the log, so a wrong start creates no database."""
    for fd, name in ((0, "stdin"), (1, "stdout")):
        if not _streamable(fd):
            raise ConvlogError(f"{name} must be a pipe, a socket or a terminal: convlog acp "
                               "is started by an ACP client (an editor or a desktop host)")


async def run_stdio(app: Application, command: list[str], *,
                    budget: convlog.Budget | None = None, agent_name: str | None = None,
                    max_frame: int = DEFAULT_MAX_FRAME,
                    init_timeout: float = DEFAULT_INIT_TIMEOUT,
                    preamble: str = DEFAULT_MODE) -> int:
    """`convlog acp`: the proxy on stdin/stdout. Returns the exit status."""
    from acp import stdio_streams

    proxy = Proxy(app, command, budget=budget, agent_name=agent_name, max_frame=max_frame,
                  init_timeout=init_timeout, preamble=preamble)
    check_stdio()
    try:
        await proxy.agent.start()  # a wrong agent command fails now, not at initialize
        reader, writer = await stdio_streams(limit=reader_limit())
    except AgentExited as exc:
        raise ConvlogError(str(exc)) from None
    except (OSError, ValueError) as exc:
        await proxy.agent.stop()
        raise ConvlogError(f"stdin and stdout must be pipes or sockets, as an ACP client "
                           f"starts an agent ({exc})") from None
    await serve(proxy, reader, writer)
    return 1 if proxy.recorder.failures else 0
