"""The `convlog` command line.

Exit status: 0 on success, 2 on a usage error, 1 on any other error, with one line on
stderr and no traceback (convlog.cli.failures: under ``--json``, that line is a JSON
document). Every command takes ``--db URL`` and ``--json`` (one JSON document on
stdout, for scripts). A command that fails before it runs (a usage error, a missing
extra, bad input) opens no store, so it creates no database.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from contextlib import nullcontext
from typing import Any

import convlog
from convlog.cli import retention
from convlog.cli.arguments import Parser, UsageError
from convlog.cli.failures import fail, fail_usage
from convlog.cli.registry import BY_NAME, COMMANDS
from convlog.cli.render import visible_output
from convlog.domain.errors import ConvlogError
from convlog.services.application import bootstrap
from convlog.services.log import host_api
from convlog.services.options import ENV_CAP, ENV_DEPTH, LogOptions, memory_policy
from convlog.storage.urls import DEFAULT_URL, ENV_VAR


def _common(parser: argparse.ArgumentParser, *, top: bool, json: bool = True) -> None:
    default: Any = None if top else argparse.SUPPRESS
    parser.add_argument("--db", metavar="URL", default=default,
                        help=f"storage URL (default: ${ENV_VAR}, else {DEFAULT_URL})")
    parser.add_argument("--max-injected-blocks-in-history", metavar="N", type=int,
                        default=default, help=f"memory blocks live in every context, "
                        f"recorded with this process's writes (default: ${ENV_CAP}, else 3)")
    parser.add_argument("--context-window-depth", metavar="N", type=int, default=default,
                        help=f"turns before a memory id may be injected again "
                        f"(default: ${ENV_DEPTH}, else 10)")
    retention.add_options(parser, default)
    if not json:
        return
    parser.add_argument("--json", action="store_true",
                        default=False if top else argparse.SUPPRESS,
                        help="print one JSON document instead of a table")


def build_parser() -> Parser:
    """The parser of every command of convlog.cli.registry, in its order."""
    parser = Parser(
        prog="convlog", description="An event-sourced conversation log for AI agent hosts.")
    parser.add_argument("-V", "--version", action="version",
                        version=f"convlog {convlog.__version__}")
    _common(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        p = sub.add_parser(command.name, help=command.help, description=command.help)
        parser.commands[command.name] = p
        _common(p, top=False, json=command.prints_data)
        command.arguments(p)
    return parser


# ------------------------------------------------------------------- commands


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    if "_ARGCOMPLETE" in os.environ:  # the shell asks for completions (see docs/cli.md)
        import argcomplete

        argcomplete.autocomplete(parser)  # prints them and exits
    given = sys.argv[1:] if argv is None else list(argv)
    if not given:  # a newcomer's first try: the help, not a usage error
        parser.print_help()
        return 0
    as_json = "--json" in given[:given.index("--")] if "--" in given else "--json" in given
    try:
        args = parser.parse_args(given)
    except UsageError as exc:
        fail_usage(exc, parser.format_usage(), as_json=as_json)
    command = BY_NAME[args.command]
    # text for a terminal: no control sequence from the log reaches it (render.visible)
    terminal = command.prints_data and not args.json and not getattr(args, "csv", False)
    as_json = bool(args.json)
    try:
        if args.json and not command.prints_data:
            raise UsageError(f"convlog {command.name} prints no data: --json does not apply")
        if command.check is not None:  # usage errors come before opening anything
            command.check(args)
        if command.run_on_url is not None:
            with visible_output() if terminal else nullcontext():
                command.run_on_url(args.db, args)
        else:
            # Reading commands never create a database as a side effect.
            keyless = command.public_only and not (
                os.environ.get("CONVLOG_KEY") or os.environ.get("CONVLOG_KEY_FILE"))
            cap, depth = memory_policy(args.max_injected_blocks_in_history,
                                       args.context_window_depth)
            # a process's retention options, checked before anything is opened
            kept = retention.options(args) if (command.creates_database or command.name
                                               == "expire") and not keyless else None
            # the composition root: one application, handed to the command (or its
            # host API, to the commands that do what a host does)
            with bootstrap(args.db, LogOptions(create=command.creates_database,
                                               max_injected_blocks_in_history=cap,
                                               context_window_depth=depth),
                           master_key="public" if keyless else "env") as app, \
                    visible_output() if terminal else nullcontext():
                if kept is not None:  # recorded unless a policy was set on purpose
                    host_api(app).set_store_retention_policy(kept, pinned=False)
                if command.run_app is not None:
                    command.run_app(app, args)
                else:
                    assert command.run is not None
                    command.run(host_api(app), args)
    except UsageError as exc:
        fail_usage(exc, parser.commands[command.name].format_usage(), as_json=as_json)
    except ConvlogError as exc:
        fail(exc, str(exc).splitlines()[0] if str(exc) else type(exc).__name__, 1,
             as_json=as_json)
    except BrokenPipeError:
        sys.stderr.close()  # `convlog replay KEY | head` is fine
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug of ours: still one line, the traceback on request
        if os.environ.get("CONVLOG_DEBUG"):
            raise
        fail(exc, f"internal error: {type(exc).__name__}: {exc} (set CONVLOG_DEBUG=1 for "
             "a traceback, and please report it)", 1, as_json=as_json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
