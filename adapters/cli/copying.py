"""`convlog copy --from URL --to URL [--batch N]`: move a store to another
(SQLite <-> PostgreSQL, unencrypted -> unencrypted or encrypted, encrypted ->
encrypted with the same keys), resumable after a
kill and verified by a count and a digest at the end (convlog.services.copy_store;
docs/storage.md#copy)."""

from __future__ import annotations

import argparse
import dataclasses
import sys

from convlog.cli.arguments import positive_int
from convlog.cli.render import print_json
from convlog.services.copy_store import CopyProgress, copy


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--from", dest="source", metavar="URL", required=True,
                   help="the store to copy (left as it is)")
    p.add_argument("--to", dest="destination", metavar="URL", required=True,
                   help="the store to copy into: new, or a previous partial copy of the "
                        "same source (continued); encrypted when CONVLOG_KEY is set (an "
                        "encrypted source's key: the copy gets its data keys)")
    p.add_argument("--batch", metavar="N", type=positive_int, default=1000,
                   help="events read at a time; one line of progress each (default 1000)")


def run(db: str | None, args: argparse.Namespace) -> None:
    def progress(done: CopyProgress) -> None:
        if not args.json:
            print(f"copied {done.copied} events (source position {done.position})",
                  file=sys.stderr, flush=True)

    report = copy(args.source, args.destination, batch=args.batch, progress=progress)
    if args.json:
        print_json(dataclasses.asdict(report))
        return
    resumed = f", {report.already} were there from a previous run" if report.already else ""
    sealed = " (sealed: the destination is encrypted)" if report.encrypted else ""
    print(f"copied {report.copied} events{sealed}{resumed}; {report.answers} kept answers")
    print(f"verified: {report.events} events in each store, digest sha256:{report.digest}")
