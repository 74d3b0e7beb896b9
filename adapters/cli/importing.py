"""`convlog import FORMAT PATH...`: other tools' history into the log, with a progress
bar on a terminal and a summary at the end.

Exit status: 0 when every conversation was imported; 1 when one could not be read
(without --keep-going the import stops there; with it, the rest is imported and every
failure is listed); 2 for a usage error, such as an unknown FORMAT.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from convlog.cli.arguments import UsageError
from convlog.cli.render import print_json
from convlog.domain.errors import ConvlogError
from convlog.domain.numbers import whole_number
from convlog.projections.money import usd_text
from convlog.services.import_run import ImportProgress, ImportSummary, collect_files
from convlog.services.importing import available_formats, find_importer
from convlog.services.log import ConversationLog


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("format", metavar="FORMAT", help="claude-code, openai or codex")
    p.add_argument("paths", nargs="+", metavar="PATH", help="files or directory trees")
    p.add_argument("--keep-going", action="store_true",
                   help="import the other conversations when one fails; list every "
                        "failure at the end (exit status 1)")
    p.add_argument("--max-line-mb", type=_megabytes, default=64, metavar="MB",
                   help="a longer line is an error, found without reading it whole "
                        "(default 64)")


def check(args: argparse.Namespace) -> None:
    """Before a database is created for nothing: a known format, paths that exist
    and are regular files or directories holding files of the format."""
    if args.format not in available_formats():
        raise UsageError(f"unknown import format {args.format!r}; known formats: "
                         + ", ".join(available_formats()))
    for path in args.paths:
        if not Path(path).expanduser().exists():
            raise ConvlogError(f"{path}: no such file or directory")
    collect_files(find_importer(args.format), args.paths)


def _megabytes(text: str) -> int:
    megabytes = whole_number(text, minimum=1, maximum=1 << 20)
    if megabytes is None:
        raise argparse.ArgumentTypeError(f"expected a whole number of MB > 0, got {text!r}")
    return megabytes


def cmd_import(log: ConversationLog, args: argparse.Namespace) -> None:
    with _progress(enabled=not args.json and sys.stderr.isatty()) as progress:
        summary = log.import_(args.format, args.paths, keep_going=args.keep_going,
                              progress=progress, max_line_bytes=args.max_line_mb * 2**20)
    if args.json:
        print_json(summary)
    else:
        print_summary(summary)
    if summary.failures:
        raise ConvlogError(f"{len(summary.failures)} conversation(s) or file(s) could not "
                           "be imported (listed above); the others were")


def print_summary(s: ImportSummary) -> None:
    mb = s.bytes / 1e6
    rate = f", {mb / s.seconds:.1f} MB/s" if s.seconds > 0 else ""
    print(f"imported {s.conversations:,} conversation(s) ({s.conversations_changed:,} "
          f"changed), {s.messages:,} new message(s), {s.messages_known:,} already recorded; "
          f"{s.files:,} file(s), {mb:,.1f} MB in {s.seconds:.1f} s{rate}")
    print(f"tokens: {s.input_tokens:,} input, {s.output_tokens:,} output, "
          f"{s.cache_read_tokens:,} cache read, {s.cache_write_tokens:,} cache write; "
          f"cost {_cost(s)}"
          + (f" (no price known for {', '.join(s.unpriced_models)})"
             if s.unpriced_models else ""))
    if s.skipped:
        print("skipped records: " + ", ".join(f"{k} {v:,}" for k, v in s.skipped.items()))
    for failure in s.failures:
        print(f"failed: {failure.error}", file=sys.stderr)


def _cost(s: ImportSummary) -> str:
    """The import's USD as every surface writes it; nothing priced and some usage
    without a price is "unknown", not $0."""
    unknown = bool(s.unpriced_models)
    return usd_text(None if unknown and not s.cost_usd else s.cost_usd, unknown)


@contextmanager
def _progress(*, enabled: bool) -> Iterator[Callable[[ImportProgress], None] | None]:
    if not enabled:
        yield None
        return
    from rich.console import Console  # rich loads only for a terminal
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    columns = (TextColumn("importing"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
               TextColumn("{task.fields[files]} files, {task.fields[messages]:,} messages"),
               TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("import", total=None, files="0", messages=0)

        def update(p: ImportProgress) -> None:
            bar.update(task, completed=p.bytes_done, total=p.bytes_total,
                       files=f"{p.files_done}/{p.files_total}", messages=p.messages)

        yield update
