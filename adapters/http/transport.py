"""The connection layer: uvicorn's httptools protocol, with the limits it lacks.

uvicorn bounds neither how long a client may take to send its headers nor how large
they may be (httptools buffers a header value whole), and its `limit_concurrency`
answers every request past the limit with a plain-text 503, `/health` included, as
long as idle sockets hold the slots. So this protocol adds, per connection:

- a header-read timeout: the request line and headers must arrive within
  `header_timeout` seconds of the connection opening (or of the previous answer on a
  kept-alive connection), however slowly they trickle, else 408;
- header limits: more than `max_header_bytes` of request line and headers, or more
  than `max_headers` header lines, is a 431; trailers (the header lines after a
  chunked body) count in the same line limit and have the same byte limit of their
  own, checked while they arrive (httptools buffers a trailer value whole, in time
  quadratic in its size: a 60 MB one held the event loop for seconds);

- a write timeout: while an answer waits to be written (more of it is buffered than
  the transport's high-water mark), the client must read at least `MIN_PROGRESS`
  bytes of it every `write_timeout` seconds, else the connection is dropped and its
  buffer freed at once (a closed connection would still hold it, for as long as its
  client never reads: 40 such clients of a 7 MB transcript held ~270 MB);

and, across the server, a cap on open connections where an idle one (no request in
progress: headers not finished, or kept alive between requests) is closed to make
room, oldest first, so idle sockets can never starve a client with a real request.
Only when every open connection is busy is the new one refused (503).

Every refusal written here is a problem document, like the application's own, and so
is httptools' "invalid request" (uvicorn's is plain text). After a refusal the
connection is half-closed and what the client still sends is read and dropped for a
moment (a "lingering close"), so the client reads the answer instead of a reset.
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import socket
import struct
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import msgspec
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from convlog.http.problems import PROBLEM_TYPE, TITLES
from convlog.http.schema import Problem

HEADER_TIMEOUT = 10.0
WRITE_TIMEOUT = 10.0
MIN_PROGRESS = 64 * 1024
MAX_HEADER_BYTES = 64 * 1024
MAX_HEADERS = 100
LINGER = 2.0


@dataclass(frozen=True)
class TransportLimits:
    header_timeout: float = HEADER_TIMEOUT
    max_header_bytes: int = MAX_HEADER_BYTES
    max_headers: int = MAX_HEADERS
    max_open: int = 2000
    write_timeout: float = WRITE_TIMEOUT


@dataclass
class Connections:
    """The server-wide view: which connections are idle, oldest first."""

    limits: TransportLimits
    idle: OrderedDict[ConvlogProtocol, None] = field(default_factory=OrderedDict)
    shed: int = 0
    stalled: int = 0  # connections dropped by the write timeout


class _TooManyHeaders(Exception):
    pass


def raw_problem(status: int, slug: str, detail: str) -> bytes:
    """A whole HTTP/1.1 response carrying a problem document, closing the connection."""
    body = msgspec.json.encode(Problem(type=f"urn:convlog:problem:{slug}",
                                       title=TITLES.get(status, "Error"), status=status,
                                       detail=detail))
    phrase = http.HTTPStatus(status).phrase
    head = (f"HTTP/1.1 {status} {phrase}\r\ncontent-type: {PROBLEM_TYPE}\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n")
    if status == 503:
        head += "retry-after: 1\r\n"
    return head.encode("ascii") + b"\r\n" + body


class ConvlogProtocol(HttpToolsProtocol):
    """One connection. `connections` is set on the subclass `protocol_class` makes."""

    connections_state: Connections

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.state = self.connections_state
        self.in_headers = True  # waiting for (the rest of) a request's headers
        self.header_bytes = 0
        self.header_count = 0
        self.in_last_chunk = False  # a chunk began and no body came: trailers, if any
        self.trailer_bytes = 0
        self.served = 0  # requests answered on this connection
        self.refused = False
        self.header_timer: asyncio.TimerHandle | None = None
        self.write_timer: asyncio.TimerHandle | None = None
        self.write_pending = 0  # buffered bytes at the last write check

    # ------------------------------------------------------------ life cycle

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._wait_for_headers()
        if len(self.connections) > self.state.limits.max_open and not self._shed_one():
            self.refuse(503, "overloaded", f"{len(self.connections) - 1} connections are open "
                        "and none of them is idle (twice --max-connections)")

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        self._cancel_write_timer()
        self.state.idle.pop(self, None)
        super().connection_lost(exc)

    def _wait_for_headers(self) -> None:
        self.in_headers = True
        self.header_bytes = self.header_count = 0
        self.state.idle[self] = None
        self.state.idle.move_to_end(self)
        self._cancel_header_timer()
        self.header_timer = self.loop.call_later(self.state.limits.header_timeout,
                                                 self._header_timeout)

    def _cancel_header_timer(self) -> None:
        if self.header_timer is not None:
            self.header_timer.cancel()
            self.header_timer = None

    def _header_timeout(self) -> None:
        self.header_timer = None
        if self.in_headers and not self.refused and not self.transport.is_closing():
            self.refuse(408, "request-timeout", "the request line and headers did not "
                        f"arrive within {self.state.limits.header_timeout:g}s "
                        "(--header-timeout)")

    # ---------------------------------------------------------------- writes

    def pause_writing(self) -> None:
        """The transport buffers more than its high-water mark: watch it drain."""
        super().pause_writing()
        if self.write_timer is None:
            self.write_pending = self.transport.get_write_buffer_size()
            self.write_timer = self.loop.call_later(self.state.limits.write_timeout,
                                                    self._check_writes)

    def resume_writing(self) -> None:
        super().resume_writing()
        self._cancel_write_timer()

    def _cancel_write_timer(self) -> None:
        if self.write_timer is not None:
            self.write_timer.cancel()
            self.write_timer = None

    def _check_writes(self) -> None:
        self.write_timer = None
        pending = self.transport.get_write_buffer_size()
        if not pending:
            return
        if self.write_pending - pending < MIN_PROGRESS:
            self.state.stalled += 1
            self._reset()
            return
        self.write_pending = pending
        self.write_timer = self.loop.call_later(self.state.limits.write_timeout,
                                                self._check_writes)

    def _reset(self) -> None:
        """Drop the connection and everything it still had to send: abort() frees this
        process's buffer (close() would wait to send it), and a zero linger makes the
        kernel reset the connection rather than keep trying to send its own buffer
        (up to a few MB) to a client that reads nothing."""
        sock = self.transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.transport.abort()

    def _shed_one(self) -> bool:
        """Close the oldest idle connection (not this one); False if none is idle."""
        for victim in self.state.idle:
            if victim is not self:
                break
        else:
            return False
        self.state.shed += 1
        if victim.served and victim.header_bytes == 0:  # kept alive between requests
            victim.state.idle.pop(victim, None)
            victim.transport.close()
        else:
            victim.refuse(408, "request-timeout", "closed to make room: no complete request "
                          f"while {len(self.connections)} connections were open")
        return True

    # -------------------------------------------------------------- parsing

    def data_received(self, data: bytes) -> None:
        if self.refused:
            return  # lingering after a refusal: read and drop
        if self.in_headers:
            self.header_bytes += len(data)
        elif self.in_last_chunk:
            self.trailer_bytes += len(data)
        super().data_received(data)
        limit = self.state.limits.max_header_bytes
        if self.refused:
            return
        if self.in_headers and self.header_bytes > limit:
            self.refuse(431, "headers-too-large", "the request line and headers are larger "
                        f"than {limit} bytes")
        elif self.in_last_chunk and self.trailer_bytes > limit:
            self.refuse(431, "headers-too-large", f"the trailers are larger than {limit} bytes")

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.in_headers = True
        self.header_count = 0

    def on_header(self, name: bytes, value: bytes) -> None:
        self.header_count += 1  # trailers included
        if self.header_count > self.state.limits.max_headers:
            raise _TooManyHeaders
        if self.in_headers:  # a trailer is dropped: nothing reads them, and the
            super().on_header(name, value)  # request's scope was handed over already

    def on_chunk_header(self) -> None:
        # httptools calls this after each chunk's size line; the last chunk (size 0)
        # has no body, and its trailers come before on_chunk_complete
        self.in_last_chunk = True
        self.trailer_bytes = 0

    def on_body(self, body: bytes) -> None:
        self.in_last_chunk = False
        super().on_body(body)

    def on_chunk_complete(self) -> None:
        self.in_last_chunk = False

    def on_headers_complete(self) -> None:
        self.in_headers = False
        self.header_bytes = 0
        self._cancel_header_timer()
        self.state.idle.pop(self, None)
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        self.served += 1
        super().on_response_complete()
        if not self.transport.is_closing() and not self.pipeline and not self.refused:
            self._wait_for_headers()

    def send_400_response(self, msg: str) -> None:
        if self.header_count > self.state.limits.max_headers:
            self.refuse(431, "headers-too-large",
                        f"more than {self.state.limits.max_headers} header lines")
        else:
            self.refuse(400, "malformed-request", "not a valid HTTP/1.1 request")

    # -------------------------------------------------------------- refusal

    def refuse(self, status: int, slug: str, detail: str) -> None:
        """Answer with a problem and close, after draining what the client still sends.
        A request whose application is running (its trailers refused) sees a
        disconnect, and what it would answer is dropped; one already answering is
        cut off."""
        if self.refused or self.transport.is_closing():
            return
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True
            cycle.message_event.set()
            if cycle.response_started:
                self.transport.close()
                return
        self.refused = True
        self._cancel_header_timer()
        self.state.idle.pop(self, None)
        self.transport.write(raw_problem(status, slug, detail))
        if self.transport.can_write_eof():
            self.transport.write_eof()
            self.flow.resume_reading()
            self.loop.call_later(LINGER, self.transport.close)
        else:
            self.transport.close()


def protocol_class(limits: TransportLimits) -> type[ConvlogProtocol]:
    """A protocol class for one server (uvicorn instantiates it per connection)."""
    return type("ConvlogServerProtocol", (ConvlogProtocol,),
                {"connections_state": Connections(limits)})
