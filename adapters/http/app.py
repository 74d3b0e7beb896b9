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
from convlog.http import analytics, conversations, memory, resume, stream
from convlog.http.auth import Auth
from convlog.http.endpoint import Call, Endpoint, Server, json_response
from convlog.http.guard import Guard
from convlog.http.idempotency import HEADER, REUSED, Stored, scope_digest
from convlog.http.idempotency import check_key as check_idempotency_key
from convlog.http.limits import BODY_TIMEOUT, MAX_BODY, MAX_REQUESTS, Limits
from convlog.http.openapi import encoded
from convlog.http.problems import handle, to_problem
from convlog.http.schema import Health

# Each endpoint names its own operationId (see Endpoint): the order here is free.
ENDPOINTS: list[Endpoint] = [*conversations.ENDPOINTS, *resume.ENDPOINTS, *stream.ENDPOINTS,
                             *analytics.ENDPOINTS, *memory.ENDPOINTS]


def _view(server: Server, endpoint: Endpoint) -> Any:
    async def view(request: Request) -> Response:
        try:
            principal = server.auth.authenticate(request.headers.get("authorization"))
            call = Call(request, server, principal)
            idem = check_idempotency_key(request.headers.get(HEADER)) if (
                endpoint.method == "POST") else None
            if idem is None:
                return _answer(await endpoint.handler(call))
            scope = (principal.user or "", endpoint.path, request.url.path, idem)
            body = await request.body()
            fingerprint = server.idempotency.fingerprint(request.method, request.url.path,
                                                         body)
            found = server.idempotency.get(scope, fingerprint)
            if found is not None:
                return Response(found.body, status_code=found.status,
                                media_type="application/json",
                                headers={"Idempotent-Replayed": "true"})
            # the store decides, for every server on it and across restarts
            recorded = await call.run(server.log.claim_request, scope_digest(scope),
                                      fingerprint.hex())
            if recorded != fingerprint.hex():
                raise InvalidInput(REUSED, field=HEADER)
            response = _answer(await endpoint.handler(call))
            if response.status_code < 500:
                server.idempotency.put(scope, Stored(fingerprint, response.status_code,
                                                     bytes(response.body)))
            return response
        except Exception as exc:
            return to_problem(exc, request.url.path)
    view.__name__ = endpoint.handler.__name__
    return view


def _answer(value: Any) -> Response:
    return value if isinstance(value, Response) else json_response(value)


def create_app(log: convlog.ConversationLog, *, auth: Auth | None = None,
               max_body: int = MAX_BODY, body_timeout: float = BODY_TIMEOUT,
               max_requests: int = MAX_REQUESTS, poll_interval: float = 0.25,
               max_streams_per_token: int = 100, allow_origins: Sequence[str] = (),
               host_names: Sequence[str] = (),
               endpoints: Sequence[Endpoint] = ENDPOINTS
               ) -> Any:
    """The ASGI app serving `log` (which the caller opens and closes)."""
    server = Server(log=log, auth=auth or Auth(), poll_interval=poll_interval,
                    inline_writes=log.config.backend == "sqlite",
                    max_streams_per_token=max_streams_per_token)
    version = convlog.__version__
    document = encoded(endpoints, version)

    async def openapi(request: Request) -> Response:
        return Response(document, media_type="application/json")

    async def health(request: Request) -> Response:
        return json_response(Health(ok=True, version=version, backend=log.config.backend))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        server.stopping = anyio.Event()
        try:
            yield
        finally:
            server.stopping.set()

    routes = [Route(e.path, _view(server, e), methods=[e.method])
              for e in endpoints]
    routes += [Route("/openapi.json", openapi, methods=["GET"]),
               Route("/health", health, methods=["GET"])]
    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={HTTPException: handle, Exception: handle})
    # Starlette answers a path with a stray trailing slash with a redirect to a URL
    # built from the request's Host header (to evil.example, unauthenticated): a 404.
    app.router.redirect_slashes = False
    app.state.server = server
    limited = Limits(app, max_body=max_body, body_timeout=body_timeout,
                     max_requests=max_requests)
    return Guard(limited, open_mode=not server.auth.required, allow_origins=allow_origins,
                 names=host_names)


def openapi_document() -> bytes:
    """The document `create_app` serves, without opening a log."""
    return encoded(ENDPOINTS, convlog.__version__)


__all__ = ["ENDPOINTS", "create_app", "openapi_document"]
