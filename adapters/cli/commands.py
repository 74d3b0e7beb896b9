"""What each `convlog` command does: one function per command, (log, args) -> None.

The parser and the process-level concerns (exit codes, one-line errors) live in
convlog.cli.main, built from the table of convlog.cli.registry; these functions only
talk to a ConversationLog and print. Commands with a module of their own (import,
watch, acp, serve, keys, html, the otel export) keep their function there.
"""

from __future__ import annotations

import argparse
import csv
import signal
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import msgspec

from convlog.cli.otel import cmd_export_otel
from convlog.cli.render import print_json, print_table, wrap_text
from convlog.cli.views import cmd_replay_view
from convlog.domain.conversation import Conversation, check_key, decide_and_evolve
from convlog.domain.errors import ConvlogError
from convlog.projections.context import Budget
from convlog.projections.money import LEGEND, usd_text
from convlog.services.application import Application
from convlog.services.export_jsonl import conversation_lines
from convlog.services.jsonlines import parse_lines
from convlog.services.log import ConversationLog, host_api
from convlog.services.resume.resumption import span_budget
from convlog.storage.urls import parse_url


def check_record(args: argparse.Namespace) -> None:
    """The batch, read and decoded before the log is opened (`args.batch`): input
    that cannot be recorded creates no database. Into a store that does not exist
    yet, the batch is also decided against a new conversation, so an invalid one
    (a message id given twice, say) fails before the file is made."""
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
    if not parse_url(args.db).exists():
        decide_and_evolve(Conversation(key=check_key(args.key)), commands,
                          datetime.now(UTC), origins)
    args.batch = (commands, origins)


def cmd_record(app: Application, args: argparse.Namespace) -> None:
    commands, origins = args.batch
    result = app.execute(args.key, commands, origins)
    if args.json:
        print_json({"key": args.key, **msgspec.structs.asdict(result)})
    else:
        skipped = f", {len(result.skipped)} known message(s) skipped" if result.skipped else ""
        print(f"recorded {result.events} event(s) in {args.key!r} "
              f"(now at version {result.version}){skipped}")


def cmd_sessions(log: ConversationLog, args: argparse.Namespace) -> None:
    rows = log.conversations(include_archived=args.all, user=args.user, agent=args.agent,
                        limit=args.limit)
    if args.json:
        print_json(rows)
        return
    print_table(
        ["KEY", "USER", "AGENT", "CHANNEL", "STATUS", "MESSAGES", "CONTENT TOKENS",
         "USAGE TOKENS", "COST USD", "LAST ACTIVE", "TITLE"],
        [[r.key, r.user, r.agent, r.channel, r.status, r.message_count, r.content_tokens,
          r.input_tokens + r.output_tokens + r.cache_read_tokens + r.cache_write_tokens,
          usd_text(r.cost_usd, r.cost_incomplete), _when(r.last_active_at),
          "[forgotten]" if r.forgotten else r.title]
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
          r.cache_read_tokens, r.cache_write_tokens, usd_text(r.cost_usd, r.cost_incomplete),
          ", ".join(r.price_versions)] for r in rows], empty="no messages")
    if any(r.cost_incomplete for r in rows):
        print(LEGEND)


def cmd_telemetry(log: ConversationLog, args: argparse.Namespace) -> None:
    rows = log.telemetry(by=args.by, since=args.since)
    if args.chart:
        from convlog.views.chart import SERIES_SQL, render

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


def cmd_export(app: Application, args: argparse.Namespace) -> None:
    if args.format is not None:
        cmd_export_conversations(app, args)
        return
    if args.otel:
        cmd_export_otel(app, args)
        return
    files = host_api(app).export_parquet(args.parquet)
    if args.json:
        print_json({"files": [str(f) for f in files]})
    else:
        for f in files:
            print(f)


def cmd_export_conversations(app: Application, args: argparse.Namespace) -> None:
    """`convlog export --format convlog-jsonl KEY...` (convlog.services.export_jsonl):
    every KEY is read first (an unknown one fails before anything is written); each
    file is written whole, then renamed into place."""
    log = host_api(app)
    keys = [check_key(k) for k in args.keys]
    exported = {key: conversation_lines(log.get(key).events()) for key in keys}
    if args.output is None:
        sys.stdout.buffer.write(exported[keys[0]])
        sys.stdout.flush()
        return
    folder = Path(args.output)
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for key, data in exported.items():
        path = folder / (quote(key, safe="") + ".jsonl")
        partial = path.with_name(path.name + ".partial")
        partial.write_bytes(data)
        partial.replace(path)
        files.append(str(path))
    if args.json:
        print_json({"files": files})
    else:
        for f in files:
            print(f)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def cmd_expire_idle(log: ConversationLog, args: argparse.Namespace) -> None:
    """`convlog expire --idle-days N` (convlog.cli.retention has the command)."""
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


def cmd_views(app: Application, args: argparse.Namespace) -> None:
    catalog = app.catalog
    count = catalog.rebuild() if args.action == "rebuild" else catalog.refresh()
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
        print(f"following {app.config.url}: {count:,} event(s) applied; "
              "stop with Ctrl-C or SIGTERM", file=sys.stderr, flush=True)

    def report(applied: int) -> None:
        if not args.json:
            print(f"applied {applied:,} event(s)", file=sys.stderr, flush=True)

    count += catalog.follow(stop, interval=args.interval, on_batch=report)
    if args.json:
        print_json({"action": "follow", "events": count})
    else:
        print(f"stopped after {count:,} event(s); the next run resumes from here",
              file=sys.stderr)


def cmd_show(log: ConversationLog, args: argparse.Namespace) -> None:
    lines = log.transcript(args.key)
    if args.json:
        print_json(lines)
        return
    info = log.info(args.key)
    print(f"{info.key}  ({info.message_count} messages, {info.status}"
          + (f", user {info.user}" if info.user else "")
          + (f", agent {info.agent}" if info.agent else "")
          + (", FORGOTTEN: content erased" if info.forgotten else "") + ")")
    for line in lines:
        who = {"user": "user", "assistant": "agent", "tool": "tool", "marker": "----"}[line.role]
        extra = f"  [{line.model}]" if line.model else ""
        print(wrap_text(f"#{line.version:<4} {_when(line.at)}  {who:>5}: ", line.text + extra))


def cmd_summary(log: ConversationLog, args: argparse.Namespace) -> None:
    found = log.summary(args.key, paused_after=args.paused_after)
    if args.json:
        print_json(found)
        return
    print(f"{found.key}  {found.status}"
          + (f", user {found.user}" if found.user else "")
          + (f", project {found.workspace}" if found.workspace else ""))
    print(f"  started {_second(found.created_at)}, last active "
          f"{_second(found.last_active_at)}")
    print(f"  {found.message_count} messages, {found.content_tokens} tokens of text, "
          f"{found.input_tokens} in / {found.output_tokens} out, cost "
          f"{usd_text(found.cost_usd, found.cost_incomplete)}")
    if found.agents:
        print(f"  agents: {', '.join(found.agents)}")
    if found.latest_summary:
        print(wrap_text("  summary: ", found.latest_summary))


def cmd_replay(log: ConversationLog, args: argparse.Namespace) -> None:
    if isinstance(args.at, int):  # past the end would silently show everything
        last = log.timeline(args.key)
        if last and args.at > last[-1].version:
            raise ConvlogError(f"--at {args.at} is past the end of {args.key!r}: its last "
                               f"position is #{last[-1].version}")
    if args.view is not None:
        cmd_replay_view(log, args)
        return
    rows = log.timeline(args.key, until=args.until)
    if args.json:
        print_json([{"version": r.version, "at": r.at, "type": r.type,
                     "details": r.details, "event": r.event} for r in rows])
        return
    print_table(["POS", "TIME (UTC)", "TYPE", "DETAILS"],
                [[r.version, r.at.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3], r.type, r.details]
                 for r in rows], empty="no events")


def cmd_context(log: ConversationLog, args: argparse.Namespace) -> None:
    if args.user is not None or args.workspace is not None:
        _span_context(log, args, span_budget(args.tokens, args.messages, args.chars))
        return
    budget = Budget(tokens=args.tokens, messages=args.messages or Budget().messages,
                    chars=args.chars)
    if args.key is None:
        raise ConvlogError("give a conversation KEY, or --user/--workspace")
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


def _span_context(log: ConversationLog, args: argparse.Namespace, budget: Budget) -> None:
    if args.key is not None:
        raise ConvlogError("give either a conversation KEY or --user/--workspace, not both")
    if args.format == "messages" or args.exclude:
        raise ConvlogError("a context across conversations has the formats xml and "
                           "markdown, and no --exclude")
    span = log.resumption_context(user=args.user, workspace=args.workspace,
                                  conversations=args.conversations, budget=budget,
                                  format=args.format, model=args.model)
    if args.json:
        print_json(span)
        return
    sys.stdout.write(span.text if span.text.endswith("\n") else span.text + "\n")
    if sys.stderr.isatty():
        print(f"({span.conversation_count} conversations, {span.message_count} messages, "
              f"{span.tokens} tokens by {span.counter})", file=sys.stderr)


def state_change(name: str) -> Callable[[ConversationLog, argparse.Namespace], None]:
    """`convlog archive|reactivate|clear KEY`."""
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


def _second(moment: datetime | None) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if moment else "-"


def _when(moment: datetime | None) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M") if moment else "-"
