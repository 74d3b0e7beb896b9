"""Errors as RFC 9457 problem documents (`application/problem+json`).

Every error the server answers is one typed document: a stable `type` URN a client
can switch on, a `title`, the HTTP `status`, a `detail` for humans and, whenever the
client sent something wrong, the `field` it concerns (``messages[2].role``). The
mapping from convlog's typed errors to statuses lives here and only here.
"""

from __future__ import annotations

import logging

import msgspec
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

import convlog
from convlog.domain.errors import (
    ArchivedConversation,
    CompactedMeanwhile,
    ConversationForgotten,
    InvalidInput,
    UnknownConversation,
    UnknownUser,
)
from convlog.domain.memory import MemoryCooling
from convlog.http.schema import Problem
from convlog.services.jsonstrict import MalformedJSON, validation_error

PROBLEM_TYPE = "application/problem+json"
log = logging.getLogger("convlog.http")

TITLES = {
    400: "Bad request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    408: "Request timeout",
    409: "Conflict",
    410: "Gone",
    413: "Content too large",
    415: "Unsupported media type",
    421: "Misdirected request",
    422: "Invalid input",
    429: "Too many requests",
    431: "Request header fields too large",
    500: "Internal server error",
    503: "Service unavailable",
}


class ProblemError(Exception):
    """Raise anywhere in a request to answer with this problem."""

    def __init__(self, status: int, slug: str, detail: str, *, field: str | None = None,
                 headers: dict[str, str] | None = None):
        super().__init__(detail)
        self.status = status
        self.slug = slug
        self.detail = detail
        self.field = field
        self.headers = headers or {}


def problem_response(status: int, slug: str, detail: str, *, field: str | None = None,
                     instance: str | None = None,
                     headers: dict[str, str] | None = None) -> Response:
    body = Problem(type=f"urn:convlog:problem:{slug}", title=TITLES.get(status, "Error"),
                   status=status, detail=detail, field=field, instance=instance)
    return Response(msgspec.json.encode(body), status_code=status, media_type=PROBLEM_TYPE,
                    headers=headers)


def validation_field(text: str) -> tuple[str, str | None]:
    """msgspec's "Expected `int`, got `str` - at `$.budget.tokens`" -> (message, field),
    as `convlog record` says it (convlog.services.jsonstrict.validation_error); the
    body as a whole when no field is named."""
    error = validation_error(text)
    return error.reason, error.field or "body"


def to_problem(exc: BaseException, instance: str | None = None) -> Response:
    """The one mapping from an exception to the answer a client gets."""
    if isinstance(exc, ProblemError):
        return problem_response(exc.status, exc.slug, exc.detail, field=exc.field,
                                instance=instance, headers=exc.headers)
    if isinstance(exc, msgspec.ValidationError):
        message, field = validation_field(str(exc))
        return problem_response(422, "invalid-input", message, field=field, instance=instance)
    if isinstance(exc, msgspec.DecodeError | UnicodeDecodeError):
        return problem_response(400, "malformed-json", f"the body is not valid JSON: {exc}",
                                instance=instance)
    if isinstance(exc, RecursionError):
        return problem_response(400, "malformed-json", "JSON nested too deeply",
                                instance=instance)
    if isinstance(exc, MalformedJSON):
        return problem_response(400, "malformed-json", f"the body is not valid JSON: "
                                f"{exc.reason}", field=exc.field, instance=instance)
    if isinstance(exc, InvalidInput):
        detail = f"{exc.where}: {exc.reason}" if exc.where else exc.reason
        slug = "memory-cooling" if isinstance(exc, MemoryCooling) else "invalid-input"
        return problem_response(422, slug, detail, field=exc.field, instance=instance)
    if isinstance(exc, CompactedMeanwhile):
        return problem_response(409, "compacted-meanwhile", str(exc), instance=instance)
    if isinstance(exc, ArchivedConversation):
        return problem_response(409, "conversation-archived", str(exc), field="key",
                                instance=instance)
    if isinstance(exc, UnknownUser):
        return problem_response(404, "unknown-user", str(exc),
                                field="user" if exc.user is not None else "workspace",
                                instance=instance)
    if isinstance(exc, UnknownConversation):
        return problem_response(404, "unknown-conversation", str(exc), field="key",
                                instance=instance)
    if isinstance(exc, ConversationForgotten):  # documented: it records nothing more
        return problem_response(410, "conversation-forgotten", str(exc), field="key",
                                instance=instance)
    if isinstance(exc, convlog.WrongKey):  # the master key was rotated by another process
        return problem_response(409, "key-rotated", str(exc), instance=instance)
    if isinstance(exc, convlog.ConcurrencyError):
        return problem_response(409, "write-conflict", str(exc), instance=instance,
                                headers={"Retry-After": "1"})
    if isinstance(exc, convlog.StorageError):
        log.error("storage error: %s", exc)
        return problem_response(503, "storage-unavailable", str(exc), instance=instance,
                                headers={"Retry-After": "1"})
    if isinstance(exc, ClientDisconnect):  # gone (or cut off by transport): nobody reads it
        return problem_response(400, "client-disconnected", "the client went away before "
                                "its request was read", instance=instance)
    if isinstance(exc, HTTPException):
        slug = {404: "no-such-route", 405: "method-not-allowed"}.get(exc.status_code, "http")
        return problem_response(exc.status_code, slug, str(exc.detail), instance=instance,
                                headers=dict(exc.headers or {}))
    log.exception("internal error", exc_info=exc)
    return problem_response(500, "internal", f"internal error: {type(exc).__name__}",
                            instance=instance)


async def handle(request: Request, exc: Exception) -> Response:
    """Starlette exception handler: every error leaves as a problem document."""
    return to_problem(exc, request.url.path)
