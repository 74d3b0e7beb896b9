"""Limits that keep one client from hurting the others (a pure ASGI middleware).

It also gives the router a path in which a conversation key is one segment whatever
it contains (`routing_path`).

- Request size: a body over `max_body` bytes is refused with 413, from its
  Content-Length before any byte is read, or as soon as a chunked body passes it.
- Load: past `max_requests` requests in flight, a 503 problem with Retry-After,
  before any work is done. Streams (which last as long as their client wants) and
  /health (which does no work) are not counted: streams have their own budget
  (`stream`), and a server full of either still answers /health and takes writes.
- Slow clients: the whole body must arrive within `body_timeout` seconds, else 408.
  Endpoints read the body before they touch the log, and the server is asynchronous,
  so a trickling client holds one connection, never a worker thread. (Headers, idle
  and total connections are bounded one layer down, in `transport`.)
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from convlog.domain.numbers import whole_number
from convlog.http.problems import ProblemError, problem_response

MAX_BODY = 8 * 1024 * 1024
BODY_TIMEOUT = 10.0
MAX_REQUESTS = 1000


class Limits:
    def __init__(self, app: ASGIApp, *, max_body: int = MAX_BODY,
                 body_timeout: float = BODY_TIMEOUT, max_requests: int = MAX_REQUESTS,
                 uncounted: Sequence[str] = ()):
        self.app = app
        self.max_body = max_body
        self.body_timeout = body_timeout
        self.max_requests = max_requests
        self.in_flight = 0
        # path templates ("/v1/conversations/{key}/stream") not counted in flight
        self.uncounted = re.compile("|".join(map(_pattern, uncounted)) or "(?!)")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        scope = {**scope, "path": routing_path(scope)}
        if self.uncounted.fullmatch(scope["path"]):
            await self._limited(scope, receive, send)
            return
        if self.in_flight >= self.max_requests:
            await self._refuse(scope, send, ProblemError(
                503, "overloaded", f"more than {self.max_requests} requests in flight "
                "(--max-connections)",
                headers={"Retry-After": "1"}))
            return
        self.in_flight += 1
        try:
            await self._limited(scope, receive, send)
        finally:
            self.in_flight -= 1

    async def _limited(self, scope: Scope, receive: Receive, send: Send) -> None:
        length = _content_length(scope)
        if length is not None and length > self.max_body:
            await self._refuse(scope, send, self._too_large())
            return
        if length == -1:
            await self._refuse(scope, send, ProblemError(
                400, "bad-request", "Content-Length is not a number", field="Content-Length"))
            return
        deadline = asyncio.get_running_loop().time() + self.body_timeout
        received = 0
        done = False

        async def limited() -> Message:
            nonlocal received, done
            if done:  # the body is in: what follows is the disconnect notice
                return await receive()
            try:
                async with asyncio.timeout_at(deadline):  # no task per receive, unlike wait_for
                    message = await receive()
            except TimeoutError:
                raise ProblemError(408, "request-timeout", "the body did not arrive within "
                                   f"{self.body_timeout:g}s (--body-timeout)",
                                   headers={"Connection": "close"}) from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body:
                    raise self._too_large()
                done = not message.get("more_body", False)
            else:
                done = True
            return message

        await self.app(scope, limited, send)

    def _too_large(self) -> ProblemError:
        return ProblemError(413, "too-large", f"the body is larger than {self.max_body} bytes "
                            "(--max-body)",
                            headers={"Connection": "close"})

    async def _refuse(self, scope: Scope, send: Send, exc: ProblemError) -> None:
        response = problem_response(exc.status, exc.slug, exc.detail, field=exc.field,
                                    instance=scope.get("path"), headers=exc.headers)
        await response(scope, _no_receive, send)


async def _no_receive() -> Any:
    return {"type": "http.disconnect"}


def _pattern(template: str) -> str:
    """``/v1/conversations/{key}/stream`` -> a regex matching it, any key."""
    return "".join("[^/]+" if part.startswith("{") else re.escape(part)
                   for part in re.split(r"(\{[^}]*\})", template))


def routing_path(scope: Scope) -> str:
    """The path with each segment decoded on its own, and a "/" or "%" inside a segment
    kept escaped: a conversation key may contain "/" (``slack/C42/1700.5``), sent as
    ``%2F``, and must stay ONE path segment, or ``.../a%2Fmessages`` would route to
    the messages of ``a``. `Call.key` unescapes it."""
    raw = scope.get("raw_path")
    if not raw:
        return str(scope["path"])
    segments = raw.decode("latin-1").split("?", 1)[0].split("/")
    return "/".join(unquote(s).replace("%", "%25").replace("/", "%2F") for s in segments)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            length = whole_number(value.decode("latin-1"))
            return -1 if length is None else length
    return None
