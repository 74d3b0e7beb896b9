"""`convlog retention`, `convlog expire` and `convlog info`: the retention policy on
the command line (docs/settings.md#retention).

- `convlog retention [KEY]` shows the policy in force (the store's, or conversation
  KEY's and whose it is); `convlog retention set [KEY] --erase-after-days 30 ...`
  sets it on purpose (pinned: a process's options no longer change it);
  `--keep-everything` sets a policy that asks for nothing.
- Every command takes the same four options as a process's options (with their
  environment variables); a writing command (`serve`, `acp`, `record`, `expire`...)
  records them as the store's policy, unless one was set on purpose.
- `convlog expire` carries out the policy in force now (`--dry-run`: lists exactly
  that, writes nothing); `--idle-days N` keeps its older meaning (archive what is
  idle N days, whatever the policy).
"""

from __future__ import annotations

import argparse

from convlog.cli.arguments import UsageError, positive_float, positive_int
from convlog.cli.render import print_json
from convlog.domain.retention import RetentionPolicy
from convlog.services.application import Application
from convlog.services.log import ConversationLog, host_api
from convlog.services.options import RETENTION_ENV, retention_options
from convlog.services.retention import RetentionInForce, RetentionRun

FLAGS = {name: "--" + name.replace("_", "-") for name in RETENTION_ENV}


def add_options(parser: argparse.ArgumentParser, default: object) -> None:
    """The four retention options every command takes (a process's options)."""
    what = {"archive_after_days": "archive a conversation idle N days",
            "erase_after_days": "erase a conversation idle N days",
            "max_messages": "refuse a turn past N messages in a conversation",
            "max_bytes": "refuse a turn past N bytes of text in a conversation"}
    for name, flag in FLAGS.items():
        parser.add_argument(flag, metavar="N", default=default,
                            type=positive_int if name.startswith("max_") else positive_float,
                            help=f"store retention: {what[name]} (default: "
                                 f"${RETENTION_ENV[name]}, else never)")


def given(args: argparse.Namespace) -> dict[str, float | int | None]:
    return {name: getattr(args, name, None) for name in FLAGS}


def options(args: argparse.Namespace) -> RetentionPolicy | None:
    """The process's retention options (flags, else environment), checked; None
    when none was given. A writing command records them as the store's policy,
    unless a policy was set on purpose (pinned)."""
    return retention_options(given(args))


# ------------------------------------------------------------------- retention


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", nargs="?", choices=("show", "set"), default="show")
    p.add_argument("key", nargs="?", metavar="KEY",
                   help="a conversation (default: the store)")
    p.add_argument("--keep-everything", action="store_true",
                   help="with set: a policy that asks for nothing")


def check(args: argparse.Namespace) -> None:
    flags = [FLAGS[n] for n, v in given(args).items() if v is not None]
    if args.action == "show" and (flags or args.keep_everything):
        raise UsageError(f"{', '.join(flags) or '--keep-everything'}: use `convlog "
                         "retention set` to set a policy")
    if args.action == "set" and bool(flags) == bool(args.keep_everything):
        raise UsageError("retention set takes the policy's options "
                         f"({', '.join(FLAGS.values())}), or --keep-everything")


def policy_text(policy: RetentionPolicy | None) -> str:
    if policy is None or policy.keeps_everything:
        return "keep everything"
    parts = []
    if policy.archive_after_days is not None:
        parts.append(f"archive after {policy.archive_after_days:g} idle days")
    if policy.erase_after_days is not None:
        parts.append(f"erase after {policy.erase_after_days:g} idle days")
    if policy.max_messages is not None:
        parts.append(f"at most {policy.max_messages:,} messages")
    if policy.max_bytes is not None:
        parts.append(f"at most {policy.max_bytes:,} bytes of text")
    if policy.max_messages is not None or policy.max_bytes is not None:
        parts.append(f"past a cap: {policy.over_cap}")
    return ", ".join(parts)


def _in_force_text(found: RetentionInForce) -> str:
    whose = {"conversation": "its own", "store": "the store's", "none": "none set"}
    return f"{policy_text(found.policy)} ({whose[found.source]})"


def cmd_retention(log: ConversationLog, args: argparse.Namespace) -> None:
    if args.action == "set":
        policy = RetentionPolicy() if args.keep_everything else retention_options(
            given(args), env=False)
        assert policy is not None
        if args.key is None:
            log.set_store_retention_policy(policy)
        else:
            log.set_retention_policy(args.key, policy)
    found = (log.store_retention_policy() if args.key is None
             else log.retention_policy(args.key))
    if args.json:
        print_json({"key": args.key, "policy": found.policy, "source": found.source})
        return
    print(f"{args.key or 'store'}: {_in_force_text(found)}")


# ---------------------------------------------------------------------- expire


def expire_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--idle-days", type=positive_float, metavar="N",
                   help="archive what is idle N days, whatever the policy (the older "
                        "meaning; deletes nothing)")
    p.add_argument("--dry-run", action="store_true",
                   help="only list exactly what would be done")


def cmd_expire(log: ConversationLog, args: argparse.Namespace) -> None:
    if args.idle_days is not None:
        from convlog.cli.commands import cmd_expire_idle

        cmd_expire_idle(log, args)
        return
    done = log.enforce_retention(dry_run=args.dry_run)
    if args.json:
        print_json(run_json(done))
        return
    print_run(done)


def run_json(done: RetentionRun) -> dict[str, object]:
    return {"at": done.at, "dry_run": done.dry_run, "store_policy": done.store_policy,
            "conversations": done.conversations, "archived": done.archived,
            "erased": done.erased, "rows_erased": done.rows_erased,
            "actions": done.actions}


def print_run(done: RetentionRun) -> None:
    verb = {"archive": "would archive" if done.dry_run else "archived",
            "erase": "would erase" if done.dry_run else "erased"}
    for a in done.actions:
        idle = "" if a.idle_days is None else f", idle {a.idle_days:g} days"
        whose = "its own" if a.source == "conversation" else "the store's"
        print(f"{verb[a.action]} {a.key} ({whose} policy: {policy_text(a.policy)}{idle})")
    print(f"{done.conversations} conversation(s) looked at: {done.archived} "
          f"{'to archive' if done.dry_run else 'archived'}, {done.erased} "
          f"{'to erase' if done.dry_run else 'erased'}"
          + (f" ({done.rows_erased} stored events lost their text)" if done.rows_erased
             else ""))


# ------------------------------------------------------------------------ info


def info_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("key", nargs="?", metavar="KEY", help="also this conversation's policy")


def cmd_info(app: Application, args: argparse.Namespace) -> None:
    log = host_api(app)
    keys = app.keys.status()
    store = log.store_retention_policy()
    own = log.retention_policy(args.key) if args.key is not None else None
    if args.json:
        print_json({"store": app.config.display, "encrypted": keys.encrypted,
                    "retention": {"policy": store.policy, "source": store.source},
                    "conversation": None if own is None else {
                        "key": args.key, "policy": own.policy, "source": own.source}})
        return
    print(f"store: {app.config.display}")
    print(f"encrypted: {'yes' if keys.encrypted else 'no'}")
    print(f"retention: {_in_force_text(store)}")
    if own is not None:
        print(f"{args.key}: retention {_in_force_text(own)}")
