"""Every `convlog` command, declared once: its name and help, the arguments it takes,
the checks made before anything is opened, what runs it, and whether it may create a
database. The parser and `main` are built from this table only, so a command is
added here, in one place (its functions live where they belong: `commands`,
`arguments`, or a module of its own).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from convlog.cli import (
    acp,
    arguments,
    commands,
    compact,
    copying,
    importing,
    keys,
    pages,
    retention,
    serve,
    views,
    watch,
)
from convlog.services.application import Application
from convlog.services.log import ConversationLog

Arguments = Callable[[argparse.ArgumentParser], None]
Check = Callable[[argparse.Namespace], None]
Run = Callable[[ConversationLog, argparse.Namespace], None]
RunApp = Callable[[Application, argparse.Namespace], None]
RunOnUrl = Callable[[str | None, argparse.Namespace], None]


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    arguments: Arguments
    run: Run | None = None
    """Runs with the log opened from --db (the host API: what a host does)."""
    run_app: RunApp | None = None
    """Instead of `run`: runs with the application of the log opened from --db
    (convlog.services.application), for what needs more than the host API: the
    commands API (`record`), the views' upkeep, the servers and followers, which take
    it as their dependency."""
    run_on_url: RunOnUrl | None = None
    """Instead of `run`: opens the store itself from the --db URL (`keys enable` must
    open it without a key)."""
    creates_database: bool = False
    """Writing commands may create the database; reading ones never do."""
    public_only: bool = False
    """Reads only fields that stay readable in an encrypted store (counts, tokens,
    costs, telemetry): runs without the master key when none is set."""
    check: Check | None = None
    """Usage checks before anything is opened (UsageError: exit status 2)."""
    prints_data: bool = True
    """Offers --json (one JSON document on stdout). False for the long-running servers,
    whose stdout is a protocol or a log, never a result."""

    def __post_init__(self) -> None:
        runs = (self.run, self.run_app, self.run_on_url)
        assert sum(r is not None for r in runs) == 1, self.name


COMMANDS: tuple[Command, ...] = (
    Command("record", "record JSON Lines events (stdin or FILE) as ONE atomic batch",
            arguments.record, run_app=commands.cmd_record, creates_database=True,
            check=commands.check_record),
    Command("import", "import other tools' history (Claude Code, OpenAI messages, Codex)",
            importing.add_arguments, importing.cmd_import, creates_database=True,
            check=importing.check),
    Command("watch", "record a tool's transcripts as they are written, until stopped "
                     "(needs convlog[watch])",
            watch.add_arguments, run_app=watch.cmd_watch, creates_database=True),
    Command("sessions", "the session catalog: resumable conversations, newest first",
            arguments.sessions, commands.cmd_sessions),
    Command("costs", "tokens and USD, grouped", arguments.costs, commands.cmd_costs,
            public_only=True),
    Command("telemetry", "resume success per tier, fallback rate and cost, memory lost",
            arguments.telemetry, commands.cmd_telemetry, public_only=True),
    Command("sql", "run SQL over the views (tables and views: see docs/analytics.md)",
            arguments.sql, commands.cmd_sql, public_only=True),
    Command("export", "write every view to Parquet files, or send the log to an "
                      "OpenTelemetry receiver (--otel, needs convlog[otel])",
            arguments.export, run_app=commands.cmd_export, check=arguments.check_export),
    Command("expire", "carry out the retention policy now: archive and erase what it "
                      "asks (--dry-run lists it); --idle-days N: archive what is idle",
            retention.expire_arguments, retention.cmd_expire),
    Command("retention", "show or set the retention policy of the store or of a "
                         "conversation",
            retention.arguments, retention.cmd_retention, check=retention.check),
    Command("info", "the store: where, encrypted or not, its retention policy",
            retention.info_arguments, run_app=retention.cmd_info),
    Command("views", "the DuckDB read models: catch up, rebuild, or follow the log",
            arguments.views, run_app=commands.cmd_views),
    Command("show", "the messages of a conversation as the user saw them",
            arguments.key, commands.cmd_show),
    Command("summary", "a conversation at a glance: status (active, paused, archived), "
                       "dates, messages, tokens, cost, agents, latest summary",
            arguments.summary, commands.cmd_summary),
    Command("replay", "every event of a conversation (the debugging view), or with "
                      "--view what the user saw / what the agent received",
            arguments.replay, commands.cmd_replay, check=arguments.check_at),
    Command("diff", "where the user's and the agent's views part: messages missing "
                    "from the agent's context, injected text, resumes that injected "
                    "nothing",
            arguments.diff, views.cmd_diff, check=arguments.check_at),
    Command("context", "the history a fresh agent session would get, cut to a budget; "
                       "with --user/--workspace, across their recent conversations",
            arguments.context, commands.cmd_context),
    Command("acp", "a stdio ACP proxy in front of an agent: records every "
                   "conversation, and resumes sessions the agent forgot",
            acp.add_arguments, run_app=acp.cmd_acp, creates_database=True, prints_data=False,
            check=acp.check),
    Command("html", "one self-contained HTML page: timeline, the user's and the "
                    "agent's views side by side",
            arguments.html, pages.cmd_html),
    Command("report", "an HTML report: every conversation (filterable, sortable) and "
                      "resume health as charts",
            arguments.report, pages.cmd_report),
    Command("archive", "archive a conversation (nothing is deleted)",
            arguments.key_and_reason, commands.state_change("archive")),
    Command("reactivate", "make an archived conversation resumable again",
            arguments.key, commands.state_change("reactivate")),
    Command("clear", "start a new epoch: later context starts empty",
            arguments.key_and_reason, commands.state_change("clear")),
    Command("compact", "replace old messages, for the model, by your model's summary "
                       "(--plan, then --summary): nothing is deleted",
            compact.add_arguments, compact.cmd_compact),
    Command("rewind", "go back to a message, for the model: the later ones are "
                      "abandoned (nothing is deleted)",
            compact.add_rewind_arguments, compact.cmd_rewind),
    Command("fork", "a new conversation continuing one's history after a message "
                    "(by reference: nothing is copied)",
            compact.add_fork_arguments, compact.cmd_fork),
    Command("serve", "the log as an HTTP service (needs convlog[http])",
            serve.add_arguments, run_app=serve.cmd_serve, creates_database=True,
            prints_data=False,
            check=serve.check),
    Command("copy", "copy every event of a store into another (SQLite <-> PostgreSQL, "
                    "into an encrypted store), resumable, verified by a digest",
            copying.arguments, run_on_url=copying.run),
    Command("keys", "encryption at rest: generate a key, show status, encrypt a store "
                    "(enable), rotate the master key",
            keys.keys_arguments, run_on_url=keys.run_keys),
    Command("forget", "erase a user: destroy their data key (crypto-shredding); counts "
                      "and costs stay",
            keys.forget_arguments, keys.cmd_forget),
)
BY_NAME = {c.name: c for c in COMMANDS}
