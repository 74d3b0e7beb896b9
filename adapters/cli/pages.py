"""`convlog html` and `convlog report`: static pages to look at, and to send around."""

from __future__ import annotations

import argparse

from convlog.cli.render import print_json
from convlog.services.log import ConversationLog


def cmd_html(log: ConversationLog, args: argparse.Namespace) -> None:
    from convlog.html import write_conversation_page  # Jinja2 loads only for pages

    log.get(args.key)  # an unknown key is an error, not an empty page
    path = write_conversation_page(log, args.key, args.output)
    if args.json:
        print_json({"key": args.key, "path": str(path), "bytes": path.stat().st_size})
    else:
        print(f"wrote {path} ({path.stat().st_size:,} bytes)")


def cmd_report(log: ConversationLog, args: argparse.Namespace) -> None:
    from convlog.html import write_report

    index = write_report(log, args.output)
    pages = sorted((index.parent / "conversations").glob("*.html"))
    if args.json:
        print_json({"index": str(index), "conversation_pages": len(pages)})
    else:
        print(f"wrote {index} and {len(pages)} conversation pages")
