"""`convlog serve`: the log as an HTTP service (needs the `http` extra).

Everything that can refuse to serve (the extra, the numbers, tokens on a non-loopback
address, the user tokens file, the port) is checked before the log is opened, so a
serve that cannot start creates no database.
"""

from __future__ import annotations

import argparse

from convlog.cli.arguments import positive_float, positive_int
from convlog.domain.errors import ConvlogError
from convlog.domain.numbers import whole_number
from convlog.services.application import Application

EXTRA_HINT = "convlog serve needs the http extra: pip install 'convlog[http]'"


def port_number(text: str) -> int:
    port = whole_number(text, maximum=65535)
    if port is None:
        raise argparse.ArgumentTypeError(f"expected 0 to 65535, got {text!r}")
    return port


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; any other needs a token)")
    p.add_argument("--port", type=port_number, default=8765,
                   help="port (default 8765; 0: any free)")
    p.add_argument("--user-tokens", metavar="FILE",
                   help='JSON {"user": "token"}: tokens that see only their user\'s '
                        "conversations (the admin token is $CONVLOG_TOKEN)")
    p.add_argument("--max-body", type=positive_int, default=8 * 1024 * 1024, metavar="BYTES",
                   help="largest request body (default 8 MiB); one more byte is a 413")
    p.add_argument("--max-batch", type=positive_int, default=1_000, metavar="N",
                   help="most messages in one turn, or events in one record batch "
                        "(default 1,000); one more is a 413. A batch is one "
                        "transaction, which the server's other writes wait for")
    p.add_argument("--max-connections", type=positive_int, default=1000, metavar="N",
                   help="requests in flight before answering 503 (default 1000; streams "
                        "and /health have budgets of their own)")
    p.add_argument("--header-timeout", type=positive_float, default=10.0, metavar="SECONDS",
                   help="a request's line and headers must arrive within this time "
                        "(default 10); open connections are capped at twice "
                        "--max-connections, the oldest idle one closed to make room")
    p.add_argument("--max-streams-per-token", type=positive_int, default=None, metavar="N",
                   help="live streams one token may hold (default a tenth of "
                        "--max-connections); one more is a 429")
    p.add_argument("--max-streams", type=positive_int, default=None, metavar="N",
                   help="live streams in all (default half of --max-connections); one "
                        "more is a 503. Streams never take the requests' room")
    p.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                   help="a web origin (https://ui.example) whose pages may call the API "
                        "(CORS); repeatable. Requests from any other Origin are refused")
    p.add_argument("--retention-interval", type=non_negative_float, default=3600.0,
                   metavar="SECONDS",
                   help="carry out the retention policy at start and every SECONDS "
                        "(default 3600; 0: never), as `convlog expire` does")
    p.add_argument("--body-timeout", type=positive_float, default=10.0, metavar="SECONDS",
                   help="a request body must arrive within this time (default 10)")
    p.add_argument("--write-timeout", type=positive_float, default=10.0, metavar="SECONDS",
                   help="a client must read at least 64 KiB of a pending answer in every "
                        "such time, else it is cut off and its buffer freed (default 10)")


def check(args: argparse.Namespace) -> None:
    """Before a database is created for nothing: the extra, the options, the tokens
    (and the user tokens file), and the socket, bound now (`args.socket`)."""
    try:
        from convlog.http import server
    except ImportError as exc:
        raise ConvlogError(f"{EXTRA_HINT} ({exc})") from None
    args.options = server.Options(
        host=args.host, port=args.port, user_tokens=args.user_tokens,
        max_body=args.max_body, body_timeout=args.body_timeout, max_batch=args.max_batch,
        max_connections=args.max_connections, header_timeout=args.header_timeout,
        write_timeout=args.write_timeout,
        max_streams_per_token=args.max_streams_per_token, max_streams=args.max_streams,
        allow_origins=tuple(_origin(o) for o in args.allow_origin),
        retention_interval=args.retention_interval or None)
    server.make_auth(args.options)
    args.socket = server.bind(args.host, args.port)


def cmd_serve(app: Application, args: argparse.Namespace) -> None:
    from convlog.http import server

    server.serve(app, args.options, sock=args.socket)


def _origin(value: str) -> str:
    """An origin as browsers send it: scheme://host[:port], nothing after."""
    scheme, sep, rest = value.rstrip("/").partition("://")
    if scheme not in ("http", "https") or not sep or not rest or "/" in rest:
        raise ConvlogError(f"--allow-origin: expected http(s)://HOST[:PORT], got {value!r}")
    return f"{scheme}://{rest}"
