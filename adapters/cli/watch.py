"""`convlog watch FORMAT [DIR]`: record a tool's transcripts as they are written.

Runs until SIGINT or SIGTERM (a systemd user service, see docs/importers.md): a status line
on a terminal, otherwise log lines on stderr only when something goes wrong (and
with -v, one per file read). Exit status 0 after a clean stop, 1 when the folder
cannot be watched, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from pathlib import Path

from convlog.cli.render import print_json
from convlog.domain.errors import InvalidInput
from convlog.services.application import Application
from convlog.services.importing import find_follower
from convlog.services.log import host_api
from convlog.services.sidecar import sidecar_path
from convlog.watch.positions import Positions
from convlog.watch.status import StatusLine
from convlog.watch.watcher import Watcher

FORMATS = ("claude-code", "codex")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("format", metavar="FORMAT", choices=FORMATS,
                   help="claude-code or codex")
    p.add_argument("folder", nargs="?", metavar="DIR",
                   help="the folder to follow (default: the tool's own, "
                        "~/.claude/projects or ~/.codex/sessions)")
    p.add_argument("--settle", type=_seconds, default=1.0, metavar="SECONDS",
                   help="read a changed file once it was quiet this long (default 1)")
    p.add_argument("--hold", type=_seconds, default=30.0, metavar="SECONDS",
                   help="read a response that may not be finished once its file was "
                        "quiet this long (default 30)")
    p.add_argument("--state", metavar="FILE",
                   help="where reading positions are kept (default: beside a SQLite "
                        "log, convlog.watch.sqlite; else ~/.local/state/convlog/)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="log every file read, not only failures")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 86_400:
        raise argparse.ArgumentTypeError(f"expected seconds > 0, got {text!r}")
    return value


def cmd_watch(app: Application, args: argparse.Namespace) -> None:
    follower = find_follower(args.format)
    folder = Path(args.folder).expanduser() if args.folder else follower.home()
    state = (Path(args.state) if args.state
             else sidecar_path(app.config, "watch", "CONVLOG_WATCH_STATE"))
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="convlog watch: %(message)s")  # other libraries: quiet
    logging.getLogger("convlog.watch").setLevel(
        logging.DEBUG if args.verbose else logging.INFO)
    positions = Positions(state)
    try:
        with StatusLine(enabled=None if not args.json else False) as show:
            watcher = Watcher(host_api(app), follower, folder, positions, settle=args.settle,
                              hold=args.hold, on_update=show)
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, lambda *_: watcher.stop())
            stats = watcher.run()
    except InvalidInput as exc:
        raise InvalidInput(f"cannot watch: {exc}") from None
    finally:
        positions.close()
    if args.json:
        print_json(stats)
    else:
        print(f"stopped: {stats.messages:,} message(s) in {stats.conversations:,} "
              f"conversation(s) captured, {stats.failures:,} failure(s); the next run "
              "resumes where this one stopped", file=sys.stderr)
