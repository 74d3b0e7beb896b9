"""Running the application: uvicorn on a socket we bind, with the process's limits.

uvicorn (with httptools and uvloop from `uvicorn[standard]`) is the server, with our
own connection protocol (`transport`: header timeout and limits, idle connections
shed, every refusal a problem document): the event loop serves every connection,
blocking log calls run in worker threads. The socket is bound here, before uvicorn
starts, so `--port 0` works and the line ``convlog serve: listening on
http://HOST:PORT`` names the real port.
"""

from __future__ import annotations

import os
import socket
import sys
from dataclasses import dataclass

import uvicorn

from convlog.domain.errors import InvalidInput
from convlog.http.app import create_app
from convlog.http.auth import Auth, is_loopback, load_user_tokens
from convlog.http.endpoint import MAX_BATCH
from convlog.http.limits import BODY_TIMEOUT, MAX_BODY
from convlog.http.transport import (
    HEADER_TIMEOUT,
    WRITE_TIMEOUT,
    TransportLimits,
    protocol_class,
)
from convlog.services.application import Application
from convlog.services.log import host_api
from convlog.services.retention import Schedule

TOKEN_VAR = "CONVLOG_TOKEN"


@dataclass(frozen=True)
class Options:
    host: str = "127.0.0.1"
    port: int = 8765
    user_tokens: str | None = None
    max_body: int = MAX_BODY
    body_timeout: float = BODY_TIMEOUT
    max_connections: int = 1000
    keep_alive: float = 5.0
    header_timeout: float = HEADER_TIMEOUT
    write_timeout: float = WRITE_TIMEOUT
    max_streams_per_token: int | None = None  # None: a tenth of max_connections
    max_streams: int | None = None  # None: half of max_connections
    max_batch: int = MAX_BATCH
    allow_origins: tuple[str, ...] = ()
    retention_interval: float | None = 3600.0  # None: never (docs/settings.md#retention)

    @property
    def streams_per_token(self) -> int:
        return self.max_streams_per_token or max(1, self.max_connections // 10)

    @property
    def streams_in_all(self) -> int:
        return self.max_streams or max(1, self.max_connections // 2)


def make_auth(options: Options) -> Auth:
    """The tokens; refuses an open server on a non-loopback address."""
    users = load_user_tokens(options.user_tokens) if options.user_tokens else None
    auth = Auth(os.environ.get(TOKEN_VAR) or None, users)
    if not auth.required and not is_loopback(options.host):
        raise InvalidInput(f"serving on {options.host} needs a token: set ${TOKEN_VAR} (and/or "
                           "--user-tokens), or bind to 127.0.0.1", field="host")
    return auth


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise InvalidInput(f"cannot listen on {host}:{port}: {exc.strerror}",
                           field="port") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def serve(app: Application, options: Options,
          sock: socket.socket | None = None) -> None:
    """Serve until SIGINT/SIGTERM, on `sock` when it is given (bound by the caller,
    e.g. before it opened the log), else on one bound to the options' address.
    `app`: the open log's application (services.application), opened and closed by
    the caller."""
    auth = make_auth(options)
    asgi = create_app(app, auth=auth, max_body=options.max_body,
                      body_timeout=options.body_timeout, max_requests=options.max_connections,
                      max_streams_per_token=options.streams_per_token,
                      max_streams=options.streams_in_all, max_batch=options.max_batch,
                      allow_origins=options.allow_origins, host_names=(options.host,),
                      retention=None if options.retention_interval is None else Schedule(
                          host_api(app).enforce_retention, app.clock,
                          options.retention_interval))
    sock = sock if sock is not None else bind(options.host, options.port)
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        asgi, log_level="warning", access_log=False, server_header=False,
        # uvicorn's own connection limit answers in plain text and counts idle sockets:
        # the protocol sheds idle connections instead (transport.py)
        http=protocol_class(TransportLimits(header_timeout=options.header_timeout,
                                            max_open=2 * options.max_connections,
                                            write_timeout=options.write_timeout)),
        ws="none", limit_concurrency=None,
        timeout_keep_alive=int(options.keep_alive),
        timeout_graceful_shutdown=3, lifespan="on")
    host = f"[{options.host}]" if ":" in options.host else options.host
    print(f"convlog serve: listening on http://{host}:{port} ({app.config.url}"
          f"{', tokens required' if auth.required else ', no token: loopback only'})",
          file=sys.stderr, flush=True)
    uvicorn.Server(config).run(sockets=[sock])
