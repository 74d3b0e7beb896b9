"""What each `convlog` command takes on its command line, and the checks made before
anything is opened. Commands with a module of their own (import, watch, acp, serve,
keys, export --otel) declare their arguments there; convlog.cli.registry names them all.
"""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import Any, NoReturn

from convlog.cli import otel
from convlog.domain.errors import InvalidInput
from convlog.domain.numbers import whole_number
from convlog.projections.formats import FORMATS
from convlog.projections.moment import parse_moment, parse_time
from convlog.projections.replay_views import VIEWS
from convlog.services.export_jsonl import FORMATS as EXPORT_FORMATS
from convlog.services.jsonlines import LINE_TYPES
from convlog.views.analytics import COST_GROUPS
from convlog.views.telemetry import TELEMETRY_GROUPS


class UsageError(Exception):
    """A command line that makes no sense: exit status 2. `usage` is the usage line of
    the (sub)command whose parser refused it, when argparse did."""

    def __init__(self, message: str, usage: str | None = None):
        super().__init__(message)
        self.usage = usage


class Parser(argparse.ArgumentParser):
    """argparse, whose errors are raised (as UsageError) instead of printed, so that
    `main` reports every usage error one way, as JSON under --json. `commands`: the
    parser of each command, by name (filled by convlog.cli.main.build_parser)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.commands: dict[str, argparse.ArgumentParser] = {}

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, self.format_usage())


def positive_int(text: str) -> int:
    number = whole_number(text, minimum=1)
    if number is None:
        raise argparse.ArgumentTypeError(f"expected a whole number > 0, got {text!r}")
    return number


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
        return parse_time(text, "since")
    except InvalidInput:
        raise argparse.ArgumentTypeError(
            f"expected a date like 2026-01-31 or an ISO time, got {text!r}") from None


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
        return parse_moment(text, option)
    except InvalidInput as exc:
        raise UsageError(f"{option}: {exc.reason}") from None


# ---------------------------------------------------------------- arguments


def conversation_keys(prefix: str, parsed_args: argparse.Namespace, **_: object
                      ) -> list[str]:
    """Shell completion of a conversation key (argcomplete): the keys of the catalog
    of the store the command line names (--db, else $CONVLOG_URL, else ./convlog.db),
    archived ones included. A store that does not exist offers nothing, and is not
    created; nor is anything read that needs the master key."""
    from convlog.services.log import ConversationLog
    from convlog.services.options import LogOptions

    try:
        with ConversationLog.with_options(getattr(parsed_args, "db", None),
                                          LogOptions(create=False),
                                          master_key="public") as log:
            rows = log.conversations(include_archived=True)
    except Exception:  # completion never fails the shell
        return []
    return sorted(r.key for r in rows if r.key.startswith(prefix))


def add_key(p: argparse.ArgumentParser, **kwargs: Any) -> None:
    """The positional conversation key, completed from the catalog."""
    action = p.add_argument("key", **kwargs)
    action.completer = conversation_keys  # type: ignore[attr-defined]


def key(p: argparse.ArgumentParser) -> None:
    add_key(p)


def summary(p: argparse.ArgumentParser) -> None:
    add_key(p)
    p.add_argument("--paused-after", metavar="SECONDS", type=float, default=1800.0,
                   help="seconds without activity after which it is paused (default 1800)")


def key_and_reason(p: argparse.ArgumentParser) -> None:
    add_key(p)
    p.add_argument("--reason")


def record(p: argparse.ArgumentParser) -> None:
    add_key(p, help="conversation key, e.g. discord:thread:42")
    p.add_argument("file", nargs="?", default="-", help="JSON Lines file (default: stdin)")
    p.epilog = f"line types: {', '.join(LINE_TYPES)}"


def sessions(p: argparse.ArgumentParser) -> None:
    p.add_argument("--all", action="store_true", help="include archived conversations")
    p.add_argument("--user", help="only this user's conversations")
    p.add_argument("--agent", help="only this agent's conversations")
    p.add_argument("--limit", type=positive_int, metavar="N", help="at most N rows")


def costs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--by", choices=COST_GROUPS, default="model")
    p.add_argument("--since", type=parse_date, metavar="DATE",
                   help="only messages from this day (YYYY-MM-DD, UTC) or time on")


def telemetry(p: argparse.ArgumentParser) -> None:
    p.add_argument("--by", choices=TELEMETRY_GROUPS, default="strategy")
    p.add_argument("--since", type=parse_date, metavar="DATE")
    p.add_argument("--chart", metavar="FILE.png",
                   help="also draw the success rate per strategy over time (needs matplotlib)")


def sql(p: argparse.ArgumentParser) -> None:
    p.add_argument("query")
    p.add_argument("--csv", action="store_true", help="CSV on stdout")


def export(p: argparse.ArgumentParser) -> None:
    to = p.add_mutually_exclusive_group(required=True)
    to.add_argument("--parquet", metavar="DIR", help="one .parquet per view")
    to.add_argument("--otel", action="store_true",
                    help="turns and resume attempts as spans (GenAI conventions) to "
                         "$OTEL_EXPORTER_OTLP_ENDPOINT, each event once")
    to.add_argument("--format", choices=EXPORT_FORMATS,
                    help="conversations KEY... as `convlog record` lines, one file each "
                         "in --output DIR (or stdout for one KEY)")
    p.add_argument("keys", nargs="*", metavar="KEY", help="with --format: the conversations")
    p.add_argument("--output", "-o", metavar="DIR",
                   help="with --format: write DIR/<KEY>.jsonl for each KEY")
    otel.add_arguments(p)


def check_export(args: argparse.Namespace) -> None:
    if args.format is None and (args.keys or args.output):
        raise UsageError("KEY... and --output go with --format")
    if args.format is not None and not args.keys:
        raise UsageError("--format needs the conversations to export: KEY...")
    if args.format is not None and args.output is None and len(args.keys) > 1:
        raise UsageError("several KEYs need --output DIR (one file each)")
    if not args.otel and otel.given(args):
        raise UsageError("--follow, --from, --with-content, --state and --interval "
                         "go with --otel")


def views(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", nargs="?", choices=("refresh", "rebuild"), default="refresh")
    p.add_argument("--follow", action="store_true",
                   help="then keep them current until SIGINT/SIGTERM (PostgreSQL: "
                        "LISTEN/NOTIFY; SQLite: polling)")
    p.add_argument("--interval", type=positive_float, default=0.5, metavar="SECONDS",
                   help="SQLite polling interval with --follow (default 0.5)")


AT_HELP = "as of this position, or this time (UTC unless it has an offset)"


def replay(p: argparse.ArgumentParser) -> None:
    add_key(p)
    p.add_argument("--view", choices=VIEWS,
                   help="user: what the user saw; agent: what the agent received, in order "
                        "(default: every event, one line each)")
    p.add_argument("--at", metavar="VERSION|ISO-TIME", help=AT_HELP)
    p.add_argument("--until", metavar="VERSION|ISO-TIME", help="the same as --at")


def diff(p: argparse.ArgumentParser) -> None:
    add_key(p)
    p.add_argument("--at", metavar="VERSION|ISO-TIME", help=AT_HELP)


def check_at(args: argparse.Namespace) -> None:
    """Usage errors come before opening anything; `args.at` becomes the point."""
    args.at = args.until = parse_at(args)


def context(p: argparse.ArgumentParser) -> None:
    add_key(p, nargs="?", help="the conversation (omit with --user/--workspace)")
    p.add_argument("--user", help="a context across this user's recent conversations")
    p.add_argument("--workspace", help="a context across this workspace's recent "
                                       "conversations (with --user: both must match)")
    p.add_argument("--conversations", type=positive_int, default=3, metavar="N",
                   help="with --user/--workspace: the N most recent (default 3)")
    p.add_argument("--tokens", type=positive_int, default=10_000, metavar="N",
                   help="token budget of the whole text (default 10000)")
    p.add_argument("--messages", type=positive_int, default=None, metavar="N",
                   help="at most N messages (default 30; with --user/--workspace: 20 in "
                        "total)")
    p.add_argument("--chars", type=positive_int, default=2_000, metavar="N",
                   help="cut each message at N characters (default 2000)")
    p.add_argument("--format", choices=FORMATS, default="xml")
    p.add_argument("--exclude", action="append", default=[], metavar="MESSAGE_ID",
                   help="leave this message out (the one being sent now); repeatable")
    p.add_argument("--model", help="count tokens with this model's tokenizer")


def html(p: argparse.ArgumentParser) -> None:
    add_key(p)
    p.add_argument("-o", "--output", required=True, metavar="FILE.html")


def report(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", required=True, metavar="DIR")
