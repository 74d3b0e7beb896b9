"""Newline-delimited JSON-RPC frames, hardened for a proxy that must never fall over.

The SDK's own stdio transport logs and skips a line that is not JSON, hands anything
else that parses (an array, a number, an object whose ``method`` is a number) to its
connection, whose receive loop then dies on it, and buffers a frame of any size. This
class implements the SDK's message-level ``Transport`` seam (``send``, ``receive``,
``close``), so the SDK's ``acp.connection.Connection`` still does the JSON-RPC work
(request ids, pending futures, one task per request), but only well-formed envelopes
reach it. Everything else is answered on the spot, as JSON-RPC 2.0 says:

- not JSON: ``-32700 Parse error`` (id null);
- JSON but not a request, notification or response: ``-32600 Invalid request``, with
  the frame's id when it has a usable one;
- a frame longer than ``max_frame`` bytes: skipped as it streams past (never held in
  memory whole) and answered with ``-32600``, with the id read from its first bytes;
  a skipped RESPONSE becomes a ``-32603`` error response for whoever awaits it.

A response that cannot be matched to anything (wrong id type, neither result nor
error) is dropped with a warning: answering a response is not allowed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from typing import Any

import msgspec

log = logging.getLogger("convlog.acp")

DEFAULT_MAX_FRAME = 64 * 1024 * 1024
"""Frames up to 64 MiB pass (the SDK's own stdio reader allows 50 MB)."""

_CHUNK = 1024 * 1024  # the StreamReader's limit: frames are read in pieces of this size
_ID_PREFIX = re.compile(
    rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')

_decode = msgspec.json.Decoder()
_encode = msgspec.json.Encoder()


def _error(code: int, message: str, request_id: Any, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def valid_id(value: Any) -> bool:
    """JSON-RPC ids are strings or integers (null only in an error about a frame)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def check_envelope(message: Any) -> str | None:
    """Why `message` is not a JSON-RPC 2.0 request, notification or response (None: it is)."""
    if not isinstance(message, dict):
        return f"a frame must be a JSON object, not {type(message).__name__}"
    if message.get("jsonrpc", "2.0") != "2.0":
        return "field 'jsonrpc': must be \"2.0\""
    has_id = "id" in message
    if has_id and not valid_id(message["id"]):
        return "field 'id': must be a string or an integer"
    if "method" in message:
        if not isinstance(message["method"], str) or not message["method"]:
            return "field 'method': must be a non-empty string"
        params = message.get("params")
        if params is not None and not isinstance(params, dict | list):
            return "field 'params': must be an object or an array"
        return None
    if not has_id:
        return "a frame needs a 'method' (request, notification) or an 'id' (response)"
    if "result" in message:
        return None
    error = message.get("error")
    if not isinstance(error, dict) or not isinstance(error.get("code"), int) \
            or not isinstance(error.get("message"), str):
        return "a response needs a 'result', or an 'error' with an integer code and a message"
    return None


class FrameTransport:
    """One side of the proxy (the client's stdio, or the agent's pipes) as whole messages.

    `name` says which side in log lines ("client", "agent"). `receive()` returns the
    next well-formed message, or None at end of stream."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *,
                 name: str, max_frame: int = DEFAULT_MAX_FRAME):
        self.name = name
        self._reader = reader
        self._writer = writer
        self._max_frame = max_frame
        self._lock = asyncio.Lock()
        self._closed = False
        self.rejected = 0
        """Frames answered with an error or dropped (for tests and the log)."""

    async def send(self, message: dict[str, Any]) -> None:
        if self._closed:
            raise ConnectionError(f"the {self.name} side is closed")
        data = _encode.encode(message) + b"\n"
        async with self._lock:  # one frame at a time, never interleaved
            try:
                self._writer.write(data)
                await self._writer.drain()
            except (OSError, RuntimeError) as exc:  # broken pipe, transport closed
                self._closed = True
                raise ConnectionError(f"cannot write to the {self.name}: {exc}") from None

    async def _reply(self, message: dict[str, Any]) -> None:
        self.rejected += 1
        with contextlib.suppress(ConnectionError):  # the peer is gone: nobody to tell
            await self.send(message)

    async def receive(self) -> dict[str, Any] | None:
        while True:
            frame = await self._read_frame()
            if frame is None:
                return None
            if isinstance(frame, int):  # too long: skipped; `frame` is its size
                continue
            if isinstance(frame, dict):  # an error standing in for a response too long
                return frame
            if not frame.strip():
                continue
            try:
                message = _decode.decode(frame)
            except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
                log.warning("%s sent a frame that is not JSON: %s", self.name, exc)
                await self._reply(_error(-32700, "Parse error", None,
                                         {"details": f"the frame is not JSON: {exc}"}))
                continue
            problem = check_envelope(message)
            if problem is None:
                return message  # type: ignore[no-any-return]
            request_id = message.get("id") if isinstance(message, dict) else None
            request_id = request_id if valid_id(request_id) else None
            is_response = isinstance(message, dict) and "method" not in message \
                and "id" in message
            log.warning("%s sent an invalid frame (id %r): %s", self.name, request_id, problem)
            if is_response and request_id is not None:
                self.rejected += 1  # never answer a response
                continue
            await self._reply(_error(-32600, "Invalid request", request_id,
                                     {"details": problem}))

    async def _read_frame(self) -> bytes | int | dict[str, Any] | None:
        """The next line; its size (int) when it was longer than the limit and skipped,
        or an error response standing in for a skipped response."""
        chunks: list[bytes] = []
        size = 0
        head = b""
        while True:
            try:
                piece = await self._reader.readuntil(b"\n")
                done = True
            except asyncio.LimitOverrunError as exc:
                piece = await self._reader.readexactly(exc.consumed)
                done = False
            except asyncio.IncompleteReadError as exc:  # end of stream
                piece = exc.partial
                if not piece and not chunks and not size:
                    return None
                done = True
            except (ConnectionError, OSError):
                return None
            if not head:
                head = piece[:512]
            size += len(piece)
            if size <= self._max_frame:
                chunks.append(piece)
            elif chunks:
                chunks.clear()  # over the limit: stop holding it
            if done:
                break
        if size <= self._max_frame:
            return b"".join(chunks)
        match = _ID_PREFIX.match(head)
        request_id: Any = None
        if match:
            request_id = _decode.decode(match.group(1))
        log.warning("%s sent a frame of %d bytes, over the limit of %d: skipped",
                    self.name, size, self._max_frame)
        details = {"details": f"a frame of {size} bytes is over the proxy's limit of "
                              f"{self._max_frame} bytes (convlog acp --max-frame-mb)"}
        if request_id is not None and b'"method"' not in head:
            # most likely a RESPONSE: whoever waits for it gets this error instead of
            # waiting forever (a response is never answered)
            self.rejected += 1
            return _error(-32603, "Internal error", request_id, details)
        await self._reply(_error(-32600, "Invalid request", request_id, details))
        return size

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if self._writer.can_write_eof():
                self._writer.write_eof()
            self._writer.close()
        except (OSError, RuntimeError):
            pass


def reader_limit() -> int:
    """The StreamReader limit to build readers with: frames arrive in pieces this big."""
    return _CHUNK
