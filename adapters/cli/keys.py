"""`convlog keys generate|status|enable|rotate` and `convlog forget --user U`.

Keys never come from the command line (they would show in `ps` and shell
histories): the master key from ``CONVLOG_KEY`` or ``CONVLOG_KEY_FILE``, the new
one of a rotation from ``CONVLOG_NEW_KEY`` or ``CONVLOG_NEW_KEY_FILE``.
"""

from __future__ import annotations

import argparse

from convlog.cli.render import print_json
from convlog.crypto.errors import MissingKey, NotEncrypted
from convlog.crypto.keys import (
    ENV_KEY,
    ENV_KEY_FILE,
    ENV_NEW_KEY,
    ENV_NEW_KEY_FILE,
    generate_key,
    load_key,
)
from convlog.services.application import bootstrap
from convlog.services.log import ConversationLog
from convlog.services.options import LogOptions

KEY_ACTIONS = ("generate", "status", "enable", "rotate")


def keys_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=KEY_ACTIONS)


def forget_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--user", required=True, help="the user to forget")
    p.add_argument("--requested-by", metavar="WHO", help="recorded in user_forgotten")


def run_keys(db: str | None, args: argparse.Namespace) -> None:
    """`convlog keys ACTION`: opens the store itself (enable must open it unencrypted)."""
    if args.action == "generate":
        print(generate_key())
        return
    if args.action == "enable":
        _enable(db, args)
        return
    with bootstrap(db, LogOptions(create=False)) as app:
        if args.action == "status":
            status = app.keys.status()
            if args.json:
                print_json(status)
            elif not status.encrypted:
                print(f"{app.config.display}: not encrypted (`convlog keys enable`)")
            else:
                print(f"{app.config.display}: encrypted (store {status.store_id}); data keys: "
                      f"{status.live_keys} live, {status.destroyed_keys} destroyed; "
                      f"{status.users} user(s)")
            return
        new = load_key(var=ENV_NEW_KEY, file_var=ENV_NEW_KEY_FILE)
        if new is None:
            raise MissingKey(f"rotation needs the new key in {ENV_NEW_KEY} or "
                             f"{ENV_NEW_KEY_FILE} (the current one in {ENV_KEY}/{ENV_KEY_FILE})")
        count = app.keys.rotate(new)
        if args.json:
            print_json({"rewrapped": count})
        else:
            print(f"re-wrapped {count} data key(s) under the new master key: the old key "
                  f"opens nothing now; set {ENV_KEY}/{ENV_KEY_FILE} to the new key")


def _enable(db: str | None, args: argparse.Namespace) -> None:
    master = load_key()
    if master is None:
        raise MissingKey(f"`keys enable` needs the master key in {ENV_KEY} or {ENV_KEY_FILE} "
                         "(`convlog keys generate` makes one)")
    try:
        log = ConversationLog(db, create=False, preload_tokenizer=False, master_key=master)
    except NotEncrypted:  # the usual case: events written before encryption
        log = ConversationLog(db, create=False, preload_tokenizer=False, master_key=None)

    def report(key: str, events: int) -> None:
        if not args.json:
            print(f"{key}: {events} event(s) encrypted", flush=True)

    with log:
        total = log.enable_encryption(master, report)
    if args.json:
        print_json({"encrypted_events": total})
    else:
        print(f"store encrypted: {total} event(s) re-encrypted by this run")


def cmd_forget(log: ConversationLog, args: argparse.Namespace) -> None:
    result = log.forget(user=args.user, requested_by=args.requested_by)
    if args.json:
        print_json(result)
    else:
        print(f"forgot user {result.user!r}: {len(result.conversations)} conversation(s) "
              f"marked forgotten, {result.keys_destroyed} data key(s) destroyed")

