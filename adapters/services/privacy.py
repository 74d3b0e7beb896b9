"""Erasure and key management, as application operations on an open log.

* `forget(user)`: records `user_forgotten` in each of the user's conversations,
  keeps the token counts of their messages not counted yet (a count survives the
  erasure of the text it was made from: convlog.views.token_counts), then destroys the
  user's data keys (crypto-shredding) and erases the database's copies of the wrapped
  keys. Re-running it is safe: it finishes what a crash interrupted.
* `rotate(new_master)`: re-wraps the data keys under a new master key; the events
  are not rewritten, and the old master key opens nothing afterwards.
* `enable(master)`: makes an unencrypted store encrypted. New events are sealed at
  once; existing ones are re-encrypted conversation by conversation, each in ONE
  transaction, skipping rows already sealed: a killed migration is resumed by
  running it again. Finally the files are vacuumed; `ConversationLog.enable_encryption`
  then deletes the views (a cache that held plaintext titles), so no plaintext copy
  remains.

Each takes the log's `Writer`: erasure records through the same write steps as any
other write, and re-encryption holds the same lock.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from convlog.crypto.errors import NotEncrypted
from convlog.crypto.keyring import Keyring
from convlog.domain.conversation import Forget
from convlog.domain.errors import InvalidInput
from convlog.services.writer import Writer
from convlog.storage.sealed import sealed_at
from convlog.views.token_counts import keep_stream_counts


class ForgetResult(msgspec.Struct, frozen=True, kw_only=True):
    user: str
    conversations: list[str]
    """Keys of the conversations now marked forgotten (including earlier runs')."""
    keys_destroyed: int


class KeyStatus(msgspec.Struct, frozen=True, kw_only=True):
    encrypted: bool
    store_id: str | None
    live_keys: int
    destroyed_keys: int
    users: int


def _require_encrypted(writer: Writer, what: str) -> Keyring:
    keyring = writer.store.keyring
    if not keyring.enabled:
        raise NotEncrypted(f"{writer.store.where} is not encrypted: {what} needs encryption "
                           "(set CONVLOG_KEY or CONVLOG_KEY_FILE and run `convlog keys enable`)")
    return keyring


def forget(writer: Writer, user: str, requested_by: str | None = None) -> ForgetResult:
    """Erase `user`, atomic in effect: their data keys are destroyed FIRST, in one
    transaction, so from that instant no reader (show, context, replay, the views,
    HTML, SQL, exports) can open any of their content, whatever happens next; then
    every conversation of theirs is marked forgotten. A run cut short leaves either
    nothing destroyed (every reader still shows the content and nothing says it was
    erased) or nothing readable; running it again finishes the marks. A key made for
    the user while the marks were written (another process appending to one of their
    conversations in between) is destroyed at the end too, as is its content."""
    if not isinstance(user, str) or not user:
        raise InvalidInput("the user to forget must be a non-empty string", field="user")
    keyring = _require_encrypted(writer, "forgetting a user")
    store = writer.store
    streams = store.keys.streams_of_user(user)
    for stream in streams:  # while the texts can still be read (issue 45)
        keep_stream_counts(store, stream)  # counts survive the erasure
    destroyed = keyring.forget(user)
    keys = []
    for stream in store.keys.streams_of_user(user):  # one started meanwhile too
        key = store.load(stream, "", fresh=True).key
        writer.execute(key, [Forget(user=user, requested_by=requested_by)])
        keys.append(key)
    destroyed += keyring.forget(user)  # made meanwhile (see above)
    store.drop_answers()  # kept HTTP answers may hold their text (convlog.storage.requests)
    store.keys.erase()  # also when no key was left: a previous run may have been cut short
    return ForgetResult(user=user, conversations=keys, keys_destroyed=len(destroyed))


def rotate(writer: Writer, new_master: bytes) -> int:
    """Returns how many data keys were re-wrapped."""
    return _require_encrypted(writer, "key rotation").rotate(new_master)


def status(writer: Writer) -> KeyStatus:
    keyring = writer.store.keyring
    counts = keyring.status() if keyring.enabled else {"live": 0, "destroyed": 0, "users": 0}
    return KeyStatus(encrypted=keyring.enabled, store_id=keyring.store_id,
                     live_keys=counts["live"], destroyed_keys=counts["destroyed"],
                     users=counts["users"])


def enable(writer: Writer, master: bytes,
           progress: Callable[[str, int], None] | None = None) -> int:
    """Encrypt the store opened (without a key) behind `writer`; returns how many
    events were re-encrypted by this run. `progress(key, events)` after each
    conversation. The caller deletes the views afterwards (they may hold plaintext)."""
    store = writer.store
    store.enable_encryption(master)
    codec, total = store.codec, 0
    for stream in store.keys.all_streams():
        with writer.lock:  # one writer per process, as for appends
            rows = store.recorder.select_events(stream)
            user = None
            plain = []
            for row in rows:
                event = codec.decode(row)
                if row is rows[0]:  # its start (a fork's starts after its parent's position)
                    user = getattr(event, "user", None)
                if sealed_at(row.state) < 0:
                    state = codec.store(stream, row.originator_version, event, user).state
                    if state != row.state:
                        plain.append((row.originator_version, state))
            if plain:
                store.keys.rewrite_states(stream, plain, store.snapshot_table)
                total += len(plain)
        if progress is not None:
            progress(store.load(stream, "").key, len(plain))
    store.keys.erase(vacuum=True)
    return total
