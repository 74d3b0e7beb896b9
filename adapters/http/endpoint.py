"""What every endpoint shares: its declaration, the request it gets, the answer.

An endpoint is declared once (`Endpoint`: method, path, body and answer types, query
parameters) and that declaration serves both the router and the OpenAPI document. A
handler receives a `Call`: the authenticated caller, typed access to the body and the
query (each error names its field), and `run` to call the blocking log in a worker
thread so the event loop keeps serving other clients meanwhile.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar
from urllib.parse import unquote

import anyio.to_thread
import msgspec
from starlette.requests import Request
from starlette.responses import Response

import convlog
from convlog.domain.conversation import Command, RequireUser, StartConversation, check_key
from convlog.domain.errors import InvalidInput, UnknownConversation
from convlog.domain.numbers import whole_number
from convlog.http.auth import Auth, Principal
from convlog.http.problems import ProblemError
from convlog.projections.moment import parse_time
from convlog.services.application import Application
from convlog.services.jsonstrict import decode

T = TypeVar("T")
INLINE_MAX = 64 * 1024
MAX_BATCH = 1_000
"""Messages in a turn, events in a record batch. A batch is one transaction, which the
process's other writes wait for, and its cost is mostly per message: on this machine
10,000 small messages took ~600 ms to write, 1,000 of 7.5 KB (7.5 MB) ~90 ms."""
_encoder = msgspec.json.Encoder(decimal_format="number")


@dataclass(frozen=True)
class Param:
    """A query parameter: `schema` is its JSON Schema in the OpenAPI document."""

    name: str
    schema: dict[str, Any]
    description: str
    required: bool = False
    many: bool = False


@dataclass
class Server:
    """What the endpoints share for the life of the process."""

    app: Application
    """The application (services.application): the writes and request claims."""
    log: convlog.ConversationLog
    """The host API over `app`: what each endpoint does."""
    auth: Auth
    poll_interval: float = 0.25
    ping_interval: float = 15.0
    stopping: anyio.Event | None = None
    inline_writes: bool = False
    writes: anyio.CapacityLimiter = field(default_factory=lambda: anyio.CapacityLimiter(1))
    max_streams_per_token: int = 100
    max_streams: int = 500
    max_batch: int = MAX_BATCH
    streams: dict[str, int] = field(default_factory=dict)  # open streams per caller
    streams_open: int = 0  # in all


class Call:
    def __init__(self, request: Request, server: Server, principal: Principal):
        self.request = request
        self.server = server
        self.log = server.log
        self.principal = principal

    @property
    def key(self) -> str:
        return check_key(unquote(self.request.path_params["key"]))  # see routing_path

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))

    async def write(self, key: str, commands: Sequence[Command],
                    origins: Sequence[str] | None = None) -> convlog.AppendResult:
        """Execute commands as one transaction; the event loop never waits for a lock.

        On SQLite a small write runs right here, on the event loop, when it needs no
        waiting (`Writer.execute_at_once`): one file has one writer anyway, a turn
        takes ~70 us (less than a hop to a worker thread), and threads queueing for
        the log's lock only fight over the GIL. Measured by bench.http with 32
        clients: 4,417 messages/s through a one-thread limiter, 6,778 inline. A write
        that would wait (for this process's write in a worker thread, a huge turn
        say; for another process's lock on the file; to back off from a race) runs
        in a worker thread instead, one at a time per process, as does a large one
        and every write on PostgreSQL (a network round trip)."""
        if self.server.inline_writes and len(await self.request.body()) <= INLINE_MAX:
            done = self.server.app.execute_at_once(key, commands, origins)
            if done is not None:
                return done
        return await anyio.to_thread.run_sync(
            functools.partial(self.server.app.execute, key, commands, origins),
            limiter=self.server.writes)

    async def compute(self, fn: Callable[..., T], *args: Any) -> T:
        """CPU work on the request's body: here for a small body, in a worker thread
        for a large one (turning 10,000 messages into Messages took ~0.3 s, which
        every other client would have waited on the event loop)."""
        if len(await self.request.body()) <= INLINE_MAX:
            return fn(*args)
        return await anyio.to_thread.run_sync(functools.partial(fn, *args))

    def check_batch(self, count: int, field: str) -> None:
        """A batch (a turn's messages, a record's events) of at most `max_batch`
        items: a batch is written in one transaction, which the process's other
        writes wait for."""
        if count > self.server.max_batch:
            raise ProblemError(413, "batch-too-large", f"{count} {field} in one batch: the "
                               f"most is {self.server.max_batch} (--max-batch)", field=field)

    async def body(self, kind: type[T]) -> T:
        raw = await self.request.body()
        if not raw.strip():
            raise ProblemError(400, "empty-body", "this endpoint needs a JSON body")
        try:
            # the decoder of `convlog record`: one set of rules
            return await self.compute(decode, raw, kind)
        except InvalidInput as exc:
            if exc.field is None and type(exc) is InvalidInput:  # the body as a whole
                raise InvalidInput(exc.reason, field="body") from None
            raise

    # ---------------------------------------------------------------- query

    def _one(self, name: str) -> str | None:
        values = self.request.query_params.getlist(name)
        if len(values) > 1:
            raise InvalidInput("given more than once", field=name)
        return values[0] if values else None

    def q_str(self, name: str, default: str | None = None,
              choices: Sequence[str] | None = None) -> str | None:
        value = self._one(name)
        if value is None:
            return default
        if choices is not None and value not in choices:
            raise InvalidInput(f"expected one of {', '.join(choices)}, got {value!r}",
                               field=name)
        return value

    def q_int(self, name: str, default: int | None = None, *, minimum: int = 1) -> int | None:
        value = self._one(name)
        if value is None:
            return default
        number = whole_number(value, minimum=minimum)
        if number is None:
            raise InvalidInput(f"expected a whole number >= {minimum}, got {value!r}",
                               field=name)
        return number

    def q_bool(self, name: str) -> bool:
        value = self._one(name)
        if value is None:
            return False
        if value.lower() not in ("true", "false", "1", "0"):
            raise InvalidInput(f"expected true or false, got {value!r}", field=name)
        return value.lower() in ("true", "1")

    def q_time(self, name: str) -> datetime | None:
        value = self._one(name)
        return None if value is None else parse_time(value, name)

    # -------------------------------------------------------- who may see it

    async def readable(self) -> str:
        """The path's key, if this caller may read it (404 otherwise, as a missing one)."""
        key = self.key
        if not self.principal.admin:
            state = await self.run(self.log.state, key)
            if state.user != self.principal.user:
                raise UnknownConversation(key)
        return key

    async def writable(self) -> tuple[str, list[Command]]:
        """The path's key and the commands to put first in the write: a user token
        writing a conversation that does not exist yet starts it as its own."""
        key = self.key
        user = self.principal.user
        if user is None:
            return key, []
        # The guard re-checks ownership inside the write: two users starting the same
        # new key at once cannot both write into it.
        exists = await self.run(self.log.exists, key)
        if not exists:
            return key, [StartConversation(user=user), RequireUser(user=user)]
        return await self.readable(), [RequireUser(user=user)]


Handler = Callable[[Call], Awaitable[Any]]


@dataclass(frozen=True)
class Endpoint:
    """One endpoint, declared once for the router and the OpenAPI document.

    `operation_id` is the name a generated client gives the call (`appendTurn`), so it
    is chosen here, by hand, and never changes: renaming it breaks every client
    generated from the document. It is never derived from the endpoint's position."""

    method: str
    path: str
    handler: Handler
    summary: str
    operation_id: str = field(kw_only=True)
    body: Any = None
    answer: Any = None
    query: tuple[Param, ...] = ()
    admin: bool = False
    stream: bool = False
    tag: str = "conversations"


def json_response(value: Any, status: int = 200, headers: dict[str, str] | None = None
                  ) -> Response:
    return Response(_encoder.encode(value), status_code=status, media_type="application/json",
                    headers=headers)


def encode(value: Any) -> bytes:
    return _encoder.encode(value)
