"""The `convlog` command line.

Exit status: 0 on success, 2 on a usage error (argparse), 1 on any other error, with
one line on stderr and no traceback. Every command takes ``--db URL`` and ``--json``
(one JSON document on stdout, for scripts).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

import convlog
from convlog.cli import importing, otel, serve, watch
from convlog.cli.acp import add_parser as add_acp_parser
from convlog.cli.commands import COMMANDS
from convlog.cli.keys import add_parsers as add_key_parsers
from convlog.cli.keys import run_keys
from convlog.domain.errors import ConvlogError, InvalidInput
from convlog.projections.formats import FORMATS
from convlog.projections.replay_views import VIEWS, parse_point
from convlog.services.importing import available_formats
from convlog.services.jsonlines import LINE_TYPES
from convlog.storage.urls import DEFAULT_URL, ENV_VAR
from convlog.views.analytics import COST_GROUPS
from convlog.views.telemetry import TELEMETRY_GROUPS


class UsageError(Exception):
    """A command line that makes no sense: exit status 2."""


def _common(parser: argparse.ArgumentParser, *, top: bool) -> None:
    default: Any = None if top else argparse.SUPPRESS
    parser.add_argument("--db", metavar="URL", default=default,
                        help=f"storage URL (default: ${ENV_VAR}, else {DEFAULT_URL})")
    parser.add_argument("--json", action="store_true",
                        default=False if top else argparse.SUPPRESS,
                        help="print one JSON document instead of a table")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="convlog", description="An event-sourced conversation log for AI agent hosts.")
    parser.add_argument("--version", action="version", version=f"convlog {convlog.__version__}")
    _common(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help)
        _common(p, top=False)
        return p

    p = command("record", "record JSON Lines events (stdin or FILE) as ONE atomic batch")
    p.add_argument("key", help="conversation key, e.g. discord:thread:42")
    p.add_argument("file", nargs="?", default="-", help="JSON Lines file (default: stdin)")
    p.epilog = f"line types: {', '.join(LINE_TYPES)}"

    importing.add_arguments(command(
        "import", "import other tools' history (Claude Code, OpenAI messages, Codex)"))
    watch.add_arguments(command(
        "watch", "record a tool's transcripts as they are written, until stopped "
                 "(needs convlog[watch])"))

    p = command("sessions", "the session catalog: resumable conversations, newest first")
    p.add_argument("--all", action="store_true", help="include archived conversations")
    p.add_argument("--user", help="only this user's conversations")
    p.add_argument("--agent", help="only this agent's conversations")
    p.add_argument("--limit", type=positive_int, metavar="N", help="at most N rows")

    p = command("costs", "tokens and USD, grouped")
    p.add_argument("--by", choices=COST_GROUPS, default="model")
    p.add_argument("--since", type=parse_date, metavar="DATE",
                   help="only messages from this day (YYYY-MM-DD, UTC) or time on")

    p = command("telemetry", "resume success per tier, fallback rate and cost, memory lost")
    p.add_argument("--by", choices=TELEMETRY_GROUPS, default="strategy")
    p.add_argument("--since", type=parse_date, metavar="DATE")
    p.add_argument("--chart", metavar="FILE.png",
                   help="also draw the success rate per strategy over time (needs matplotlib)")

    p = command("sql", "run SQL over the views (tables and views: see the README)")
    p.add_argument("query")
    p.add_argument("--csv", action="store_true", help="CSV on stdout")

    p = command("export", "write every view to Parquet files, or send the log to an "
                          "OpenTelemetry receiver (--otel, needs convlog[otel])")
    to = p.add_mutually_exclusive_group(required=True)
    to.add_argument("--parquet", metavar="DIR", help="one .parquet per view")
    to.add_argument("--otel", action="store_true",
                    help="turns and resume attempts as spans (GenAI conventions) to "
                         "$OTEL_EXPORTER_OTLP_ENDPOINT, each event once")
    otel.add_arguments(p)

    p = command("expire", "archive conversations idle for N days (deletes nothing)")
    p.add_argument("--idle-days", type=positive_float, required=True, metavar="N")
    p.add_argument("--dry-run", action="store_true", help="only list what would be archived")

    p = command("views", "the DuckDB read models: catch up, rebuild, or follow the log")
    p.add_argument("action", nargs="?", choices=("refresh", "rebuild"), default="refresh")
    p.add_argument("--follow", action="store_true",
                   help="then keep them current until SIGINT/SIGTERM (PostgreSQL: "
                        "LISTEN/NOTIFY; SQLite: polling)")
    p.add_argument("--interval", type=positive_float, default=0.5, metavar="SECONDS",
                   help="SQLite polling interval with --follow (default 0.5)")

    p = command("show", "the messages of a conversation as the user saw them")
    p.add_argument("key")

    p = command("replay", "every event of a conversation (the debugging view), or with "
                          "--view what the user saw / what the agent received")
    p.add_argument("key")
    p.add_argument("--view", choices=VIEWS,
                   help="user: what the user saw; agent: what the agent received, in order "
                        "(default: every event, one line each)")
    p.add_argument("--at", metavar="VERSION|ISO-TIME",
                   help="as of this position, or this time (UTC unless it has an offset)")
    p.add_argument("--until", metavar="VERSION|ISO-TIME", help="the same as --at")

    p = command("diff", "where the user's and the agent's views part: messages missing "
                        "from the agent's context, injected text, resumes that injected "
                        "nothing")
    p.add_argument("key")
    p.add_argument("--at", metavar="VERSION|ISO-TIME",
                   help="as of this position, or this time (UTC unless it has an offset)")

    p = command("context", "the history a fresh agent session would get, cut to a budget; "
                           "with --user/--workspace, across their recent conversations")
    p.add_argument("key", nargs="?", help="the conversation (omit with --user/--workspace)")
    p.add_argument("--user", help="a context across this user's recent conversations")
    p.add_argument("--workspace", help="a context across this workspace's recent "
                                       "conversations (with --user: both must match)")
    p.add_argument("--conversations", type=positive_int, default=3, metavar="N",
                   help="with --user/--workspace: the N most recent (default 3)")
    p.add_argument("--tokens", type=positive_int, default=10_000, metavar="N",
                   help="token budget of the whole text (default 10000)")
    p.add_argument("--messages", type=positive_int, default=30, metavar="N",
                   help="at most N messages (default 30)")
    p.add_argument("--chars", type=positive_int, default=2_000, metavar="N",
                   help="cut each message at N characters (default 2000)")
    p.add_argument("--format", choices=FORMATS, default="xml")
    p.add_argument("--exclude", action="append", default=[], metavar="MESSAGE_ID",
                   help="leave this message out (the one being sent now); repeatable")
    p.add_argument("--model", help="count tokens with this model's tokenizer")

    add_acp_parser(command)

    p = command("html", "one self-contained HTML page: timeline, the user's and the "
                        "agent's views side by side")
    p.add_argument("key")
    p.add_argument("-o", "--output", required=True, metavar="FILE.html")

    p = command("report", "an HTML report: every conversation (filterable, sortable) and "
                          "resume health as charts")
    p.add_argument("-o", "--output", required=True, metavar="DIR")

    for name, help in (("archive", "archive a conversation (nothing is deleted)"),
                       ("reactivate", "make an archived conversation resumable again"),
                       ("clear", "start a new epoch: later context starts empty")):
        p = command(name, help)
        p.add_argument("key")
        if name != "reactivate":
            p.add_argument("--reason")
    serve.add_arguments(command("serve", "the log as an HTTP service (needs convlog[http])"))
    add_key_parsers(command)
    return parser




def positive_int(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"expected a whole number > 0, got {text!r}")
    return int(text)


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def parse_date(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a date like 2026-01-31 or an ISO time, got {text!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def parse_at(args: argparse.Namespace) -> int | datetime | None:
    """`--at` (or its older name `--until`): a version, or a time (naive = UTC)."""
    given = [(o, getattr(args, d, None)) for o, d in (("--at", "at"), ("--until", "until"))
             if getattr(args, d, None) is not None]
    if len(given) > 1:
        raise UsageError("give --at or --until, not both (they mean the same)")
    if not given:
        return None
    option, text = given[0]
    try:
        return parse_point(text, option)
    except InvalidInput as exc:
        raise UsageError(f"{option}: {exc.reason}") from None


# ------------------------------------------------------------------- commands


CREATES_DATABASE = {"record", "import", "acp", "serve", "watch"}


def _fail(message: str, status: int) -> NoReturn:
    print(f"convlog: error: {message}", file=sys.stderr)
    raise SystemExit(status)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "export" and not args.otel and otel.given(args):
            raise UsageError("--follow, --from, --with-content, --state and --interval "
                             "go with --otel")
        if args.command in ("replay", "diff"):  # usage errors come before opening anything
            args.at = args.until = parse_at(args)
        if args.command == "keys":  # opens the store itself (unencrypted, for `enable`)
            run_keys(args.db, args)
            return 0
        if args.command == "import":  # before a database is created for nothing
            if args.format not in available_formats():
                raise UsageError(f"unknown import format {args.format!r}; known formats: "
                                 + ", ".join(available_formats()))
            for path in args.paths:
                if not Path(path).expanduser().exists():
                    raise ConvlogError(f"{path}: no such file or directory")
        # Reading commands never create a database as a side effect.
        with convlog.open(args.db, create=args.command in CREATES_DATABASE) as log:
            COMMANDS[args.command](log, args)
    except UsageError as exc:
        parser.print_usage(sys.stderr)
        _fail(str(exc), 2)
    except ConvlogError as exc:
        _fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__, 1)
    except BrokenPipeError:
        sys.stderr.close()  # `convlog replay KEY | head` is fine
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug of ours: still one line, the traceback on request
        if os.environ.get("CONVLOG_DEBUG"):
            raise
        _fail(f"internal error: {type(exc).__name__}: {exc} (set CONVLOG_DEBUG=1 for "
              "a traceback, and please report it)", 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
