"""Server-sent events: a conversation's new events, as they are recorded.

For a UI that follows a conversation live. Each event is one SSE message: `id` is
its position in the conversation, `event` its stored name (`message_appended`...),
`data` the JSON of {version, event}. A client that reconnects sends `Last-Event-ID`
(browsers' EventSource do it by themselves) or `?after=N` and misses nothing.

New events are found by polling the conversation's own index (one indexed query per
interval, `events(after=N)`): it works the same on SQLite, which has no
notifications, and across server processes on PostgreSQL. A comment line every
`ping_interval` keeps proxies from closing an idle stream. The stream ends when the
client goes away or the server stops.

Each caller (a token; with no token, everyone is one caller) may hold at most
`max_streams_per_token` streams at once (one more is a 429), and the server at most
`max_streams` in all (one more is a 503). Streams do not count among the requests in
flight (`--max-connections`, see `limits`): a stream lasts for as long as its client
wants, so streams held by one token, or by everyone, can never take the room that
writes, reads and /health need.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import anyio
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from convlog.domain.errors import InvalidInput, UnknownConversation
from convlog.domain.numbers import whole_number
from convlog.http.endpoint import Call, Endpoint, Param, Server, encode
from convlog.http.problems import ProblemError
from convlog.http.schema import EventOut

PAGE = 500


def _start(call: Call) -> int:
    header = call.request.headers.get("last-event-id")
    query = call.q_int("after", minimum=0)
    if header is not None:
        position = whole_number(header)
        if position is None:
            raise InvalidInput(f"expected an event position, got {header!r}",
                               field="Last-Event-ID")
        return position
    return query or 0


class CountedStream(StreamingResponse):
    """A stream that holds one of its caller's slots for as long as it is served."""

    def __init__(self, server: Server, caller: str, *args: object, **kwargs: object):
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.server = server
        self.caller = caller

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.server.streams_open -= 1
            left = self.server.streams[self.caller] - 1
            if left:
                self.server.streams[self.caller] = left
            else:
                del self.server.streams[self.caller]


def _take_slot(server: Server, caller: str) -> None:
    held = server.streams.get(caller, 0)
    if held >= server.max_streams_per_token:
        raise ProblemError(429, "too-many-streams", f"this token already holds {held} "
                           "streams (the most one token may hold, --max-streams-per-token)",
                           headers={"Retry-After": "1"})
    if server.streams_open >= server.max_streams:
        raise ProblemError(503, "too-many-streams", f"{server.streams_open} streams are "
                           "open, the most this server holds (--max-streams)",
                           headers={"Retry-After": "1"})
    server.streams[caller] = held + 1
    server.streams_open += 1


async def follow(call: Call) -> StreamingResponse:
    key = await call.readable()
    if not await call.run(call.log.exists, key):  # 404 before the stream, not inside it
        raise UnknownConversation(key)
    after = _start(call)
    server = call.server

    async def events() -> AsyncIterator[bytes]:
        nonlocal after
        yield b": following " + key.encode() + b"\n\n"
        last_sent = time.monotonic()
        while server.stopping is None or not server.stopping.is_set():
            rows = await call.run(call.log.events, key, after=after, limit=PAGE)
            for r in rows:
                after = r.version
                data = encode(EventOut(version=r.version, event=r.event))
                yield b"id: %d\nevent: %s\ndata: %s\n\n" % (
                    r.version, r.event.event_name().encode(), data)
                last_sent = time.monotonic()
            if len(rows) == PAGE:
                continue
            if time.monotonic() - last_sent >= server.ping_interval:
                yield b": ping\n\n"
                last_sent = time.monotonic()
            with anyio.move_on_after(server.poll_interval):
                if server.stopping is not None:
                    await server.stopping.wait()
                else:
                    await anyio.sleep(server.poll_interval)

    caller = call.principal.user or ""
    _take_slot(server, caller)  # from here, the response's __call__ gives it back
    return CountedStream(server, caller, events(), media_type="text/event-stream",
                         headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


ENDPOINTS = [
    Endpoint("GET", "/v1/conversations/{key}/stream", follow,
             "Server-sent events: the conversation's new events, live",
             operation_id="followConversation", answer=EventOut,
             stream=True, query=(Param("after", {"type": "integer", "minimum": 0},
                                       "start after this position (or send Last-Event-ID)"),)),
]
