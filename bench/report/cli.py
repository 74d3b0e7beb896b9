"""The command line: ``python -m bench.report [--check] [--date YYYY-MM-DD]``.

Why: ``make bench`` ends with a rewrite of every generated block, and ``--check`` tells
whether the committed files are what the committed results render to; both go through
here, and a block that cannot be rendered is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from bench.report.render import FILES, render_text
from bench.report.results import REPO, RESULTS, ReportError, scan

# The first line of the package docstring, as `--help` has always shown it.
DESCRIPTION = ("Render the benchmark figures in BENCHMARKS.md and the docs from "
               "``bench/results/``.")


def main(argv: Sequence[str] | None = None) -> int:
    """Rewrite (or with ``--check`` compare) every file's blocks: 0 done or up to date,
    1 a file is not up to date, 2 a block cannot be rendered."""
    parser = argparse.ArgumentParser(prog="python -m bench.report", description=DESCRIPTION)
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 if a file differs from what would be written")
    parser.add_argument("--date", help="use the full runs of this UTC date (YYYY-MM-DD)")
    parser.add_argument("--results", type=Path, default=RESULTS, help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, default=REPO, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.date:
        datetime.strptime(args.date, "%Y-%m-%d")
    runs = scan(args.results)
    stale = []
    try:
        for name in FILES:
            path = args.root / name
            text = path.read_text()
            new = render_text(text, runs, args.date)
            if new == text:
                continue
            if args.check:
                stale.append(name)
            else:
                path.write_text(new)
                print(f"rewrote {name}")
    except ReportError as error:
        print(f"bench.report: {error}", file=sys.stderr)
        return 2
    if stale:
        print(f"bench.report --check: not up to date: {', '.join(stale)}; run "
              "`.venv/bin/python -m bench.report`", file=sys.stderr)
        return 1
    return 0
