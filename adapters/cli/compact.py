"""`convlog compact KEY`, `convlog rewind KEY --to ID` and `convlog fork KEY --at ID
--key NEW`: the history operations from the shell (issue 47).

A shell has no summarizer function, so compaction is two steps, as over HTTP: `--plan`
prints what would be replaced (the messages to summarize, the previous summary to
fold in, `through_message_id`), then `--summary TEXT` (or `-`: stdin) records the
summary your model wrote; with `--through ID` (the plan's) it is refused, exit 1,
when the range has moved since. Nothing is ever deleted."""

from __future__ import annotations

import argparse
import sys

from convlog.cli.arguments import add_key
from convlog.cli.render import print_json
from convlog.services.log import ConversationLog


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_key(p)
    p.add_argument("--keep-last", type=int, default=10, metavar="N",
                   help="keep the newest N messages as they are (default 10; more when "
                        "the cut would split a tool call from its result)")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--plan", action="store_true",
                      help="print what would be compacted (the messages to summarize); "
                           "record nothing")
    what.add_argument("--summary", metavar="TEXT",
                      help="the summary your model wrote ('-': read it from stdin)")
    p.add_argument("--through", metavar="MESSAGE_ID",
                   help="the plan's through_message_id: refuse if the range has moved")
    p.add_argument("--reason")
    p.add_argument("--summarizer", metavar="NAME", help="who made the summary")


def cmd_compact(log: ConversationLog, args: argparse.Namespace) -> None:
    log.get(args.key)  # an unknown key is an error, not a new conversation
    if args.plan:
        plan = log.compaction_plan(args.key, keep_last=args.keep_last)
        if args.json:
            print_json(plan)
            return
        if plan.through_message_id is None:
            print(f"{args.key}: nothing to compact")
            return
        print(f"{args.key}: {plan.compacted} messages to summarize, {plan.kept} kept; "
              f"through {plan.through_message_id}")
        if plan.previous_summary:
            print(f"previous summary: {plan.previous_summary}")
        for m in plan.messages:
            print(f"[{m.role}] {m.text}")
        return
    summary = sys.stdin.read() if args.summary == "-" else args.summary
    done = log.compact(args.key, summary, keep_last=args.keep_last, reason=args.reason,
                       summarizer_name=args.summarizer, through=args.through)
    if args.json:
        print_json({"compaction": done})
    elif done is None:
        print(f"{args.key}: nothing to compact")
    else:
        print(f"{args.key}: compacted {done.compacted} messages ({done.message_count} in "
              f"all) into a summary of {done.tokens_after} tokens ({done.tokens_before} "
              f"before); {done.kept} kept; nothing deleted")


def add_rewind_arguments(p: argparse.ArgumentParser) -> None:
    add_key(p)
    p.add_argument("--to", required=True, metavar="MESSAGE_ID",
                   help="the message to go back to: those after it are abandoned")
    p.add_argument("--reason")


def cmd_rewind(log: ConversationLog, args: argparse.Namespace) -> None:
    log.get(args.key)  # an unknown key is an error, not a new conversation
    done = log.rewind(args.key, args.to, reason=args.reason)
    if args.json:
        print_json({"rewound": done})
    elif done is None:
        print(f"{args.key}: nothing after {args.to}: nothing to do")
    else:
        print(f"{args.key}: rewound to {done.to_message_id}: {done.abandoned} later "
              "messages abandoned for the agent; nothing deleted")


def add_fork_arguments(p: argparse.ArgumentParser) -> None:
    add_key(p)
    p.add_argument("--at", required=True, metavar="MESSAGE_ID",
                   help="the parent's message the fork continues after")
    p.add_argument("--key", dest="new_key", required=True, metavar="NEW_KEY",
                   help="the new conversation's key")
    p.add_argument("--user", help="its owner (default: the parent's user)")
    p.add_argument("--title", help="its title (default: the parent's)")


def cmd_fork(log: ConversationLog, args: argparse.Namespace) -> None:
    done = log.fork(args.key, at=args.at, new_key=args.new_key, user=args.user,
                    title=args.title)
    if args.json:
        print_json({"forked": done})
    else:
        print(f"{done.key}: forked from {done.parent} at {done.fork_at} (by reference: "
              "the parent's messages up to it, then its own)")
