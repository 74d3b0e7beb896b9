"""What a web page must not make the server do (a pure ASGI middleware, outermost).

Without a token every request is the admin, and any web page the operator visits can
make the browser send requests to loopback. So, with no token configured:

- the `Host` header must name the bound address or ``localhost``, with the bound
  port or none: a page on ``evil.example`` that re-points its name at 127.0.0.1 (DNS
  rebinding) sends ``Host: evil.example`` and is refused (421). A browser always
  sends the port of a page that is not on port 80, so leaving it out is no way in
  (some HTTP libraries leave it out for every port);
- a request with a body must say ``Content-Type: application/json`` (415): a browser
  sends a cross-site form or ``text/plain`` (or untyped) body without asking first,
  but never a JSON one.

And always, token or not: a request whose `Origin` is neither this server's own nor
one given with ``--allow-origin`` is refused (403). Allowed origins also get CORS
answers (preflight and ``Access-Control-Allow-Origin``), so a browser UI served from
them can call the API.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from convlog.http.problems import problem_response

ALLOWED_HEADERS = ["Authorization", "Content-Type", "Idempotency-Key", "Last-Event-ID"]


class Guard:
    def __init__(self, app: ASGIApp, *, open_mode: bool,
                 allow_origins: Sequence[str] = (), names: Sequence[str] = ()):
        self.open_mode = open_mode
        self.allow_origins = {o.rstrip("/") for o in allow_origins}
        self.names = {"localhost", *(n.strip("[]").lower() for n in names)}
        self.app: ASGIApp = CORSMiddleware(
            app, allow_origins=sorted(self.allow_origins), allow_methods=["GET", "POST"],
            allow_headers=ALLOWED_HEADERS, expose_headers=["Retry-After", "Idempotent-Replayed"],
        ) if self.allow_origins else app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        refusal = self._check(scope, headers)
        if refusal is not None:
            status, slug, detail, field = refusal
            response = problem_response(status, slug, detail, field=field,
                                        instance=scope.get("path"))
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _check(self, scope: Scope, headers: dict[bytes, bytes]
               ) -> tuple[int, str, str, str] | None:
        host = headers.get(b"host", b"").decode("latin-1")
        origin = headers.get(b"origin")
        wrong = self._wrong_host(scope, host) if self.open_mode else None
        if wrong is not None:
            return (421, "wrong-host", f"Host {host!r} {wrong}", "Host")
        if origin is not None:
            text = origin.decode("latin-1").rstrip("/")
            if text not in self.allow_origins and text != f"http://{host}":
                return (403, "cross-origin", f"requests from {text!r} are not allowed "
                        "(convlog serve --allow-origin ORIGIN allows one)", "Origin")
        if self.open_mode and _has_body(scope, headers) and not _is_json(
                headers.get(b"content-type", b"")):
            return (415, "unsupported-media-type", "the body must be sent as "
                    "Content-Type: application/json", "Content-Type")
        return None

    def _wrong_host(self, scope: Scope, host: str) -> str | None:
        """What is wrong with `host` for this server (None: nothing), said exactly."""
        address, bound = scope.get("server") or ("", None)
        names = sorted({*self.names, str(address).lower()})
        name, port = _split_host(host)
        if name not in names:
            return (f"is refused: {name!r} is not a name of this server (without a token "
                    f"it answers only to {', '.join(names)}, with or without :{bound})")
        if port != "" and port != str(bound):
            return f"is refused: it names port {port}, but this server listens on port {bound}"
        return None


def _split_host(host: str) -> tuple[str, str]:
    """``[::1]:8765`` -> ("::1", "8765"); no port is ""."""
    if host.startswith("["):
        name, _, rest = host[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else rest
    elif host.count(":") == 1:
        name, _, port = host.partition(":")
    else:
        name, port = host, ""
    return name.lower(), port


def _headers(scope: Scope) -> dict[bytes, Any]:
    return {k: v for k, v in scope.get("headers", ())}


def _has_body(scope: Scope, headers: dict[bytes, bytes]) -> bool:
    length = headers.get(b"content-length")
    return b"transfer-encoding" in headers or (length is not None and length != b"0")


def _is_json(content_type: bytes) -> bool:
    media = content_type.split(b";", 1)[0].strip().lower()
    return media == b"application/json" or (
        media.startswith(b"application/") and media.endswith(b"+json"))
