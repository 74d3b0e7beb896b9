"""`convlog serve`: the log as an HTTP service (needs the `http` extra)."""

from __future__ import annotations

import argparse

from convlog.domain.errors import ConvlogError
from convlog.services.log import ConversationLog

EXTRA_HINT = "convlog serve needs the http extra: pip install 'convlog[http]'"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; any other needs a token)")
    p.add_argument("--port", type=int, default=8765, help="port (default 8765; 0: any free)")
    p.add_argument("--user-tokens", metavar="FILE",
                   help='JSON {"user": "token"}: tokens that see only their user\'s '
                        "conversations (the admin token is $CONVLOG_TOKEN)")
    p.add_argument("--max-body", type=int, default=8 * 1024 * 1024, metavar="BYTES",
                   help="largest request body (default 8 MiB)")
    p.add_argument("--max-connections", type=int, default=1000, metavar="N",
                   help="requests in flight (streams included) before answering 503 "
                        "(default 1000)")
    p.add_argument("--header-timeout", type=float, default=10.0, metavar="SECONDS",
                   help="a request's line and headers must arrive within this time "
                        "(default 10); open connections are capped at twice "
                        "--max-connections, the oldest idle one closed to make room")
    p.add_argument("--max-streams-per-token", type=int, default=None, metavar="N",
                   help="live streams one token may hold (default a tenth of "
                        "--max-connections)")
    p.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                   help="a web origin (https://ui.example) whose pages may call the API "
                        "(CORS); repeatable. Requests from any other Origin are refused")
    p.add_argument("--body-timeout", type=float, default=10.0, metavar="SECONDS",
                   help="a request body must arrive within this time (default 10)")


def cmd_serve(log: ConversationLog, args: argparse.Namespace) -> None:
    try:
        from convlog.http import server
    except ImportError as exc:
        raise ConvlogError(f"{EXTRA_HINT} ({exc})") from None
    if args.port < 0 or args.port > 65535:
        raise ConvlogError(f"--port: expected 0 to 65535, got {args.port}")
    for name in ("max_body", "max_connections", "body_timeout", "header_timeout",
                 "max_streams_per_token"):
        if getattr(args, name) is not None and not getattr(args, name) > 0:
            raise ConvlogError(f"--{name.replace('_', '-')}: expected a number > 0")
    server.serve(log, server.Options(
        host=args.host, port=args.port, user_tokens=args.user_tokens,
        max_body=args.max_body, body_timeout=args.body_timeout,
        max_connections=args.max_connections, header_timeout=args.header_timeout,
        max_streams_per_token=args.max_streams_per_token,
        allow_origins=tuple(_origin(o) for o in args.allow_origin)))


def _origin(value: str) -> str:
    """An origin as browsers send it: scheme://host[:port], nothing after."""
    scheme, sep, rest = value.rstrip("/").partition("://")
    if scheme not in ("http", "https") or not sep or not rest or "/" in rest:
        raise ConvlogError(f"--allow-origin: expected http(s)://HOST[:PORT], got {value!r}")
    return f"{scheme}://{rest}"
