"""The ASGI application: the endpoints on Starlette, behind the limits.

Starlette, not FastAPI: bodies are decoded by msgspec into the Structs `convlog record`
already uses, and the OpenAPI document is generated from them, so FastAPI's pydantic
layer would only add a second, slower copy of the same types. Measured on this
machine (uvicorn, one worker, wrk with 32 connections posting a two-message turn to a
handler that only decodes it): Starlette 21,795 requests/s, p99 4.6 ms; FastAPI with
a pydantic body 9,141/s, p99 7.2 ms; FastAPI reading the body with msgspec 10,581/s.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

import convlog
from convlog.domain.errors import InvalidInput
from convlog.http import (
    analytics,
    compaction,
    conversations,
    export,
    memory,
    resume,
    retention,
    stream,
)
from convlog.http.auth import Auth
from convlog.http.endpoint import MAX_BATCH, Call, Endpoint, Server, json_response
from convlog.http.guard import Guard
from convlog.http.idempotency import HEADER, REUSED, fingerprint, scope_digest
from convlog.http.idempotency import check_key as check_idempotency_key
from convlog.http.limits import BODY_TIMEOUT, MAX_BODY, MAX_REQUESTS, Limits
from convlog.http.openapi import encoded
from convlog.http.problems import ProblemError, handle, to_problem
from convlog.http.schedule import run_schedule
from convlog.http.schema import Health
from convlog.services.application import Application
from convlog.services.log import host_api
from convlog.services.requests import Answer, RequestRecorded, recording
from convlog.services.retention import Schedule

WAIT_STEPS, WAIT_STEP = 50, 0.1
"""A retry racing its first request waits this long at most for the first answer."""

# Each endpoint names its own operationId (see Endpoint): the order here is free.
ENDPOINTS: list[Endpoint] = [*conversations.ENDPOINTS, *resume.ENDPOINTS, *stream.ENDPOINTS,
                             *analytics.ENDPOINTS, *memory.ENDPOINTS,
                             *compaction.ENDPOINTS, *retention.ENDPOINTS, *export.ENDPOINTS]


def _view(server: Server, endpoint: Endpoint) -> Any:
    async def view(request: Request) -> Response:
        try:
            principal = server.auth.authenticate(request.headers.get("authorization"))
            call = Call(request, server, principal)
            idem = check_idempotency_key(request.headers.get(HEADER)) if (
                endpoint.method == "POST") else None
            if idem is None:
                return _answer(await endpoint.handler(call))
            return await _keyed(call, endpoint, idem)
        except Exception as exc:
            return to_problem(exc, request.url.path)
    view.__name__ = endpoint.handler.__name__
    return view


async def _keyed(call: Call, endpoint: Endpoint, idem: str) -> Response:
    """A POST under an Idempotency-Key (convlog.http.idempotency): the first answer
    again, from the store, or the request run with its key marked in its write, and
    its answer kept once it succeeded."""
    request, claims = call.request, call.server.app.requests
    scope = scope_digest((call.principal.user or "", endpoint.path, request.url.path, idem))
    mine = fingerprint(request.method, request.url.path, await request.body())
    found = await call.run(claims.answer, scope)
    if found is not None:
        return _replayed(found, mine)
    try:
        with recording(scope):
            response = _answer(await endpoint.handler(call))
    except RequestRecorded:  # another server, or this one before a crash, recorded it
        for _ in range(WAIT_STEPS):
            found = await call.run(claims.answer, scope)
            if found is not None:
                return _replayed(found, mine)
            await anyio.sleep(WAIT_STEP)
        raise ProblemError(409, "request-in-progress", "a request under this "
                           "Idempotency-Key was recorded and its answer is not kept yet; "
                           "nothing was recorded again: retry later", field=HEADER,
                           headers={"Retry-After": "1"}) from None
    if 200 <= response.status_code < 300:  # refused requests keep nothing
        kept = await call.run(claims.keep, scope, Answer(
            mine, response.status_code, bytes(response.body)), call.principal.user)
        if kept.fingerprint != mine:
            raise InvalidInput(REUSED, field=HEADER)
    return response


def _replayed(found: Answer, mine: str) -> Response:
    if found.fingerprint != mine:
        raise InvalidInput(REUSED, field=HEADER)
    return Response(found.answer, status_code=found.status, media_type="application/json",
                    headers={"Idempotent-Replayed": "true"})


def _answer(value: Any) -> Response:
    return value if isinstance(value, Response) else json_response(value)


def create_app(app: Application, *, auth: Auth | None = None,
               max_body: int = MAX_BODY, body_timeout: float = BODY_TIMEOUT,
               max_requests: int = MAX_REQUESTS, poll_interval: float = 0.25,
               max_streams_per_token: int = 100, max_streams: int = 500,
               max_batch: int = MAX_BATCH,
               allow_origins: Sequence[str] = (),
               host_names: Sequence[str] = (),
               endpoints: Sequence[Endpoint] = ENDPOINTS,
               retention: Schedule | None = None,
               retention_poll: float = 1.0,
               ) -> Any:
    """The ASGI app serving the log of `app` (which the caller opens and closes).
    `retention`: when to carry out the retention policy (convlog.http.schedule;
    None: never), looked at every `retention_poll` seconds."""
    server = Server(app=app, log=host_api(app), auth=auth or Auth(),
                    poll_interval=poll_interval,
                    inline_writes=app.config.backend == "sqlite",
                    max_streams_per_token=max_streams_per_token, max_streams=max_streams,
                    max_batch=max_batch)
    version = convlog.__version__
    document = encoded(endpoints, version)

    async def openapi(request: Request) -> Response:
        return Response(document, media_type="application/json")

    async def health(request: Request) -> Response:
        return json_response(Health(ok=True, version=version, backend=app.config.backend))

    schedule = retention

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        server.stopping = anyio.Event()
        try:
            async with anyio.create_task_group() as tasks:
                if schedule is not None:
                    tasks.start_soon(run_schedule, schedule, server.stopping,
                                     retention_poll)
                yield
                server.stopping.set()
        finally:
            server.stopping.set()

    routes = [Route(e.path, _view(server, e), methods=[e.method])
              for e in endpoints]
    routes += [Route("/openapi.json", openapi, methods=["GET"]),
               Route("/health", health, methods=["GET"])]
    asgi = Starlette(routes=routes, lifespan=lifespan,
                     exception_handlers={HTTPException: handle, Exception: handle})
    # Starlette answers a path with a stray trailing slash with a redirect to a URL
    # built from the request's Host header (to evil.example, unauthenticated): a 404.
    asgi.router.redirect_slashes = False
    asgi.state.server = server
    asgi.state.retention = schedule
    limited = Limits(asgi, max_body=max_body, body_timeout=body_timeout,
                     max_requests=max_requests,
                     uncounted=["/health", *(e.path for e in endpoints if e.stream)])
    return Guard(limited, open_mode=not server.auth.required, allow_origins=allow_origins,
                 names=host_names)


def openapi_document() -> bytes:
    """The document `create_app` serves, without opening a log."""
    return encoded(ENDPOINTS, convlog.__version__)


__all__ = ["ENDPOINTS", "create_app", "openapi_document"]
