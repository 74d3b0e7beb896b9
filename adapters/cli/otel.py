"""`convlog export --otel`: send the log to an OpenTelemetry receiver (OTLP/HTTP).

Once (what was not sent yet, then exit), or `--follow` (until SIGINT/SIGTERM). The
endpoint and headers come from the standard OTEL_EXPORTER_OTLP_* variables. Exit
status 1 when the receiver refused a batch (nothing after it was marked sent).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from pathlib import Path

from convlog.cli.render import print_json
from convlog.domain.errors import MissingExtra
from convlog.domain.numbers import whole_number
from convlog.services.application import Application
from convlog.services.log import host_api
from convlog.services.sidecar import sidecar_path

GRACE = 60.0
"""Seconds an open turn or a resume outcome is waited for (convlog.otel.exporter)."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--follow", action="store_true",
                   help="with --otel: keep sending as the log grows, until SIGINT/SIGTERM")
    p.add_argument("--from", dest="from_position", type=_position, metavar="POSITION",
                   help="with --otel: send the events after this log position (0: all), "
                        "instead of those after the last one sent")
    p.add_argument("--with-content", action="store_true",
                   help="with --otel: include message content (gen_ai.input.messages, "
                        "gen_ai.output.messages); never for a forgotten user")
    p.add_argument("--state", metavar="FILE",
                   help="with --otel: where the position sent so far is kept (default: "
                        "beside a SQLite log, convlog.otel.sqlite)")
    p.add_argument("--interval", type=float, default=1.0, metavar="SECONDS",
                   help="with --follow: how often a SQLite log is checked (default 1)")
    p.add_argument("--grace", type=_seconds, default=GRACE, metavar="SECONDS",
                   help="with --otel: how long a turn still going on (or a resume's "
                        "outcome without its injection) is waited for before it is sent "
                        f"as it is (default {GRACE:g})")


def given(args: argparse.Namespace) -> bool:
    """Whether an option of --otel was given."""
    return bool(args.follow or args.from_position is not None or args.with_content
                or args.state or args.interval != 1.0 or args.grace != GRACE)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds (0 or more), "
                                         f"got {text!r}")
    return value


def _position(text: str) -> int:
    position = whole_number(text)
    if position is None:
        raise argparse.ArgumentTypeError(f"expected a log position (0 or more), got {text!r}")
    return position


def cmd_export_otel(app: Application, args: argparse.Namespace) -> None:
    try:
        from convlog.otel.sdk import Sender, endpoint
    except ImportError as exc:
        raise MissingExtra("convlog export --otel needs the 'otel' extra: pip install "
                           f"'convlog[otel]' ({exc})") from None
    from convlog.otel.exporter import Exporter
    from convlog.otel.tracking import TrackingFile

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="convlog export: %(message)s")
    state = (Path(args.state) if args.state
             else sidecar_path(app.config, "otel", "CONVLOG_OTEL_STATE"))
    tracking, sender = TrackingFile(state), Sender()
    try:
        exporter = Exporter(host_api(app), tracking, sender.send, endpoint(),
                            with_content=args.with_content, grace=args.grace)
        if args.from_position is not None:
            exporter.start_from(args.from_position)
        if args.follow:
            stop = threading.Event()
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, lambda *_: stop.set())
            if not args.json:
                print(f"sending {app.config.display} to {endpoint()} from position "
                      f"{exporter.position}; stop with Ctrl-C or SIGTERM", file=sys.stderr,
                      flush=True)
            report = exporter.follow(stop, interval=args.interval)
        else:
            report = exporter.run()
    finally:
        sender.close()
        tracking.close()
    if args.json:
        print_json(report)
        return
    held = (" (a turn still going on, or a resume's outcome waiting for its injection, "
            f"is held up to {args.grace:g} s: the next run sends it)" if report.held else "")
    print(f"sent {report.spans:,} span(s) for {report.events:,} event(s) to "
          f"{report.destination}; position {report.position:,}{held}")
