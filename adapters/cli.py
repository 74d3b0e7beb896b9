"""The `convlog` command line.

Exit status: 0 on success, 2 on a usage error (argparse), 1 on any other error, with
one line on stderr and no traceback. Every command takes ``--db URL`` and ``--json``
(one JSON document on stdout, for scripts).
"""

from __future__ import annotations

import argparse
import csv
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

import msgspec

import convlog
from convlog.analytics import COST_GROUPS
from convlog.domain.errors import ConvlogError
from convlog.jsonlines import LINE_TYPES, parse_lines
from convlog.log import ConversationLog
from convlog.projections.context import Budget
from convlog.projections.formats import FORMATS
from convlog.render import print_json, print_table, wrap_text
from convlog.storage import DEFAULT_URL, ENV_VAR
from convlog.telemetry import TELEMETRY_GROUPS


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

    p = command("export", "write every view to files for other analytics tools")
    p.add_argument("--parquet", metavar="DIR", required=True, help="one .parquet per view")

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

    p = command("replay", "every event of a conversation: the debugging view")
    p.add_argument("key")
    p.add_argument("--until", metavar="VERSION|ISO-TIME",
                   help="stop at this position, or at this time (UTC unless it has an offset)")

    p = command("context", "the history a fresh agent session would get, cut to a budget")
    p.add_argument("key")
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

    for name, help in (("archive", "archive a conversation (nothing is deleted)"),
                       ("reactivate", "make an archived conversation resumable again"),
                       ("clear", "start a new epoch: later context starts empty")):
        p = command(name, help)
        p.add_argument("key")
        if name != "reactivate":
            p.add_argument("--reason")
    return parser


MAX_VERSION = 2**63 - 1  # SQLite's largest integer


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


def parse_until(text: str | None) -> int | datetime | None:
    if text is None:
        return None
    if text.isascii() and text.isdigit():
        return min(int(text), MAX_VERSION)  # past the last position means "everything"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"--until: {text!r} is neither a version number nor an ISO time"
                         ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


# ------------------------------------------------------------------- commands


def cmd_record(log: ConversationLog, args: argparse.Namespace) -> None:
    if args.file == "-":
        data, source = sys.stdin.buffer.read(), "stdin"
    else:
        try:
            with open(args.file, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise ConvlogError(f"cannot read {args.file}: {exc.strerror}") from None
        source = args.file
    commands, origins = parse_lines(data, source)
    if not commands:
        raise ConvlogError(f"{source}: no events to record")
    result = log.execute(args.key, commands, origins)
    if args.json:
        print_json({"key": args.key, **msgspec.structs.asdict(result)})
    else:
        skipped = f", {len(result.skipped)} known message(s) skipped" if result.skipped else ""
        print(f"recorded {result.events} event(s) in {args.key!r} "
              f"(now at version {result.version}){skipped}")


def cmd_sessions(log: ConversationLog, args: argparse.Namespace) -> None:
    rows = log.sessions(include_archived=args.all, user=args.user, agent=args.agent,
                        limit=args.limit)
    if args.json:
        print_json(rows)
        return
    print_table(
        ["KEY", "USER", "AGENT", "CHANNEL", "STATUS", "MESSAGES", "TOKENS", "COST USD",
         "LAST ACTIVE", "TITLE"],
        [[r.key, r.user, r.agent, r.channel, r.status, r.message_count,
          r.input_tokens + r.output_tokens + r.cache_read_tokens + r.cache_write_tokens,
          _usd(r.cost_usd, r.cost_incomplete), _when(r.last_active_at), r.title]
         for r in rows],
        empty="no conversations" + ("" if args.all else " (--all includes archived ones)"))


def cmd_costs(log: ConversationLog, args: argparse.Namespace) -> None:
    rows = log.costs(by=args.by, since=args.since)
    if args.json:
        print_json(rows)
        return
    print_table(
        [args.by.upper(), "MESSAGES", "AGENT TURNS", "INPUT", "OUTPUT", "CACHE READ",
         "CACHE WRITE", "COST USD", "PRICES"],
        [[r.group, r.messages, r.agent_interactions, r.input_tokens, r.output_tokens,
          r.cache_read_tokens, r.cache_write_tokens, _usd(r.cost_usd, r.cost_incomplete),
          ", ".join(r.price_versions)] for r in rows], empty="no messages")
    if any(r.cost_incomplete for r in rows):
        print("(* some usage has no known price: that cost is a lower bound; set prices "
              "with $CONVLOG_PRICES)")


def cmd_telemetry(log: ConversationLog, args: argparse.Namespace) -> None:
    rows = log.telemetry(by=args.by, since=args.since)
    if args.chart:
        from convlog.chart import SERIES_SQL, render

        _, series = log.sql(SERIES_SQL)
        render(series, Path(args.chart))
    if args.json:
        print_json(rows)
        return
    print_table(
        [args.by.upper(), "ATTEMPTS", "OK", "FAILED", "SUCCESS", "P50 MS", "P95 MS",
         "RESUMES", "FALLBACK", "TOKENS/FALLBACK", "MEMORY LOST"],
        [[r.group, r.attempts, r.succeeded, r.failed, _pct(r.success_rate),
          _num(r.p50_latency_ms), _num(r.p95_latency_ms), r.resumes, _pct(r.fallback_rate),
          _num(r.injected_tokens_per_fallback), r.memory_lost] for r in rows],
        empty="no resume attempts recorded")
    if args.chart:
        print(f"chart written to {args.chart}")


def cmd_sql(log: ConversationLog, args: argparse.Namespace) -> None:
    names, rows = log.sql(args.query)
    if args.json:
        print_json([dict(zip(names, row, strict=True)) for row in rows])
    elif args.csv:
        writer = csv.writer(sys.stdout)
        writer.writerow(names)
        writer.writerows(rows)
    else:
        print_table(names or ["(no columns)"], rows, empty="no rows")


def cmd_export(log: ConversationLog, args: argparse.Namespace) -> None:
    files = log.export_parquet(args.parquet)
    if args.json:
        print_json({"files": [str(f) for f in files]})
    else:
        for f in files:
            print(f)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def cmd_expire(log: ConversationLog, args: argparse.Namespace) -> None:
    rows = log.expire(idle_days=args.idle_days, dry_run=args.dry_run)
    if args.json:
        print_json({"archived": [] if args.dry_run else [r.key for r in rows],
                    "idle": [r.key for r in rows], "dry_run": args.dry_run})
        return
    verb = "would archive" if args.dry_run else "archived"
    for r in rows:
        print(f"{verb} {r.key} (last active {_when(r.last_active_at)})")
    print(f"{len(rows)} conversation(s) idle for {args.idle_days:g}+ days {verb}"
          if rows else f"no conversation idle for {args.idle_days:g}+ days")


def cmd_views(log: ConversationLog, args: argparse.Namespace) -> None:
    count = (log.rebuild_views() if args.action == "rebuild" else log.refresh_views())
    if not args.follow:
        if args.json:
            print_json({"action": args.action, "events": count})
        else:
            print(f"views {args.action}: {count:,} event(s) applied")
        return
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    if not args.json:
        print(f"following {log.config.url}: {count:,} event(s) applied; "
              "stop with Ctrl-C or SIGTERM", file=sys.stderr, flush=True)

    def report(applied: int) -> None:
        if not args.json:
            print(f"applied {applied:,} event(s)", file=sys.stderr, flush=True)

    count += log.follow_views(stop, interval=args.interval, on_batch=report)
    if args.json:
        print_json({"action": "follow", "events": count})
    else:
        print(f"stopped after {count:,} event(s); the next run resumes from here",
              file=sys.stderr)


def _usd(value: float | None, incomplete: bool) -> str:
    text = "-" if value is None else f"{value:.4f}"
    return text + "*" if incomplete else text


def cmd_show(log: ConversationLog, args: argparse.Namespace) -> None:
    lines = log.transcript(args.key)
    if args.json:
        print_json(lines)
        return
    info = log.info(args.key)
    print(f"{info.key}  ({info.message_count} messages, {info.status}"
          + (f", user {info.user}" if info.user else "")
          + (f", agent {info.agent}" if info.agent else "") + ")")
    for line in lines:
        who = {"user": "user", "assistant": "agent", "tool": "tool", "marker": "----"}[line.role]
        extra = f"  [{line.model}]" if line.model else ""
        print(wrap_text(f"#{line.version:<4} {_when(line.at)}  {who:>5}: ", line.text + extra))


def cmd_replay(log: ConversationLog, args: argparse.Namespace) -> None:
    rows = log.timeline(args.key, until=args.until)
    if args.json:
        print_json([{"version": r.version, "at": r.at, "type": r.type,
                     "details": r.details, "event": r.event} for r in rows])
        return
    print_table(["POS", "TIME (UTC)", "TYPE", "DETAILS"],
                [[r.version, r.at.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3], r.type, r.details]
                 for r in rows], empty="no events")


def cmd_context(log: ConversationLog, args: argparse.Namespace) -> None:
    budget = Budget(tokens=args.tokens, messages=args.messages, chars=args.chars)
    context = log.context(args.key, budget=budget, format=args.format,
                          exclude=args.exclude, model=args.model)
    if args.json:
        print_json(context)
    elif context.messages is not None:
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(context.messages)).decode()
                         + "\n")
    else:
        sys.stdout.write(context.text if context.text.endswith("\n") else context.text + "\n")
    if sys.stderr.isatty() and not args.json:
        print(f"({context.message_count} messages, {context.tokens} tokens by "
              f"{context.counter}, {context.omitted} left out)", file=sys.stderr)


def _state_change(name: str) -> Callable[[ConversationLog, argparse.Namespace], None]:
    def run(log: ConversationLog, args: argparse.Namespace) -> None:
        log.get(args.key)  # unknown keys are an error, not a new conversation
        method = getattr(log, name)
        result = method(args.key, args.reason) if hasattr(args, "reason") else method(args.key)
        if args.json:
            print_json({"key": args.key, "changed": result.events > 0,
                        "version": result.version, "status": log.info(args.key).status})
        else:
            done = {"archive": "archived", "reactivate": "reactivated", "clear": "cleared"}[name]
            print(f"{args.key}: {done}" if result.events else f"{args.key}: nothing to do")
    return run


def _when(moment: datetime | None) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M") if moment else "-"


COMMANDS: dict[str, Callable[[ConversationLog, argparse.Namespace], None]] = {
    "record": cmd_record,
    "sessions": cmd_sessions,
    "show": cmd_show,
    "replay": cmd_replay,
    "context": cmd_context,
    "costs": cmd_costs,
    "expire": cmd_expire,
    "telemetry": cmd_telemetry,
    "sql": cmd_sql,
    "export": cmd_export,
    "views": cmd_views,
    "archive": _state_change("archive"),
    "reactivate": _state_change("reactivate"),
    "clear": _state_change("clear"),
}
CREATES_DATABASE = {"record"}


def _fail(message: str, status: int) -> NoReturn:
    print(f"convlog: error: {message}", file=sys.stderr)
    raise SystemExit(status)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "replay":  # usage errors come before opening anything
            args.until = parse_until(args.until)
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
