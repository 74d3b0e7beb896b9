"""`convlog replay KEY --view user|agent` and `convlog diff KEY`: the two views, printed.

The terminal shows one entry per block: its log position, time and kind, then its
text. In the agent view an entry no longer in the agent's context says why (`gone:`),
and a flagged marker starts with ``!!``. convlog's tool-pairing repairs (issue 28) are
entries of their own (``convlog repair``: a result synthesized for a lost one) or
notes on the message they concern (a result left out: its call is not in context).
`--json` prints the view or the diff as one document (the same Structs the Python API
returns; the repairs as `repairs` fields).
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from convlog.cli.render import print_json, wrap_text
from convlog.projections.replay_views import ConversationView, ViewEntry
from convlog.projections.transcript import shorten
from convlog.projections.view_diff import ViewDiff
from convlog.services.log import ConversationLog

WHO = {"user": "user", "assistant": "agent", "tool": "tool"}
INDENT = "      "


def _when(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def _head(entry: ViewEntry) -> str:
    """``#12`` for an entry in the agent's context (and in the user's view), ``~12``
    for one that has left it."""
    if entry.kind == "message":
        label = WHO.get(entry.role or "", entry.role or "message")
    elif entry.kind == "marker":
        label = "!!" if entry.alert else "----"
    else:
        label = {"injection": "injected history", "summary": "summary",
                 "memory": "memory block", "repair": "convlog repair",
                 "preamble": "preamble"
                 }.get(entry.kind, entry.kind)
    sign = "~" if entry.gone else "#"
    return f"{sign}{entry.version:<4} {_when(entry.at)}  {label:>5}"


def entry_lines(entry: ViewEntry) -> list[str]:
    head = _head(entry)
    if entry.kind == "marker":
        return [wrap_text(f"{head}: ", entry.text)]
    if entry.kind == "repair":
        return [wrap_text(f"{head}: ", f"{entry.text}   ({entry.note})")]
    if entry.kind == "message":
        return [wrap_text(f"{head}: ", entry.text + (f"   ({entry.note})" if entry.note
                                                    else ""))]
    out = [head + (f"  ({entry.note})" if entry.note else "")]
    out.extend(INDENT + line for line in entry.text.splitlines() or [""])
    return out


def print_view(v: ConversationView) -> None:
    if v.view == "agent":
        where = f"agent session {v.session}" if v.session else "an unnamed agent session"
        since = f", whose context began at #{v.since}" if v.since else ""
        print(f"{v.key}: what the agent received, up to #{v.version} (now in {where}{since};"
              " ~ marks what has left its context)")
    else:
        print(f"{v.key}: what the user saw, up to #{v.version}")
    if not v.entries:
        print("(nothing)")
    reason = None
    for entry in v.entries:
        if entry.gone and entry.gone != reason:
            print(f"{INDENT}~ left the agent's context: {entry.gone}")
        reason = entry.gone
        for line in entry_lines(entry):
            print(line)


def print_diff(d: ViewDiff) -> None:
    where = f"agent session {d.session}" if d.session else "the agent"
    print(f"{d.key} at #{d.version}: of {d.user_messages} messages the user saw, "
          f"{where} has {d.in_context} directly and {d.covered} through injected text; "
          f"{len(d.missing)} missing")
    if not d.parted:
        print("the views agree: the agent received exactly what the user saw")
        return
    if d.alerts:
        print("\nflagged:")
        for a in d.alerts:
            print(wrap_text(f"  !! #{a.version:<4} ", a.text))
    if d.missing:
        print("\nmessages the user saw that the agent does not have:")
        reason = None
        for m in d.missing:
            if m.reason != reason:
                print(f"  why: {m.reason}")
                reason = m.reason
            who = WHO.get(m.role or "", m.role or "?")
            print(wrap_text(f"    #{m.version:<4} {who:>5}: ", shorten(m.text, 90)))
    if d.extra:
        print("\ntext the agent received that the user never saw:")
        for e in d.extra:
            state = "in context" if e.live else f"gone: {e.gone}"
            print(wrap_text(f"  #{e.version:<4} {e.kind:>9}: ",
                            f"{shorten(e.text, 70)}  [{e.note}; {state}]"))


def cmd_replay_view(log: ConversationLog, args: argparse.Namespace) -> None:
    found = log.view(args.key, args.view, at=args.at)
    if args.json:
        print_json(found)
    else:
        print_view(found)


def cmd_diff(log: ConversationLog, args: argparse.Namespace) -> None:
    found = log.diff(args.key, at=args.at)
    if args.json:
        print_json({**_fields(found), "parted": found.parted})
    else:
        print_diff(found)


def _fields(d: ViewDiff) -> dict[str, object]:
    return {name: getattr(d, name) for name in d.__struct_fields__}
