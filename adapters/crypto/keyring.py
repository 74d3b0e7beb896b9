"""Per-user data keys, wrapped by the master key, kept in the store's own database.

Envelope encryption: every user's payloads are sealed under a data key of their own
(conversations without a user share one store key, user ``""``); the key table keeps
each data key only wrapped by the master key. So:

* forgetting a user destroys their wrapped key (crypto-shredding): their payloads
  stay in the append-only log but nobody can open them again, master key or not;
* rotating the master key re-wraps the few data keys, never the events;
* a wrong master key is recognised at open, from the store's check value, before
  anything is written;
* other processes' forgets and rotations reach this one within `REFRESH_SECONDS`:
  a destroyed key stops opening anything here too, and after a rotation elsewhere
  this process makes no new data key under its old master key (it would strand it).

The SQL lives with each storage backend (`KeyTable`); a process caches unwrapped
keys, and asks the table again on a miss (another process may have made a key).
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol

from convlog.crypto import cipher
from convlog.crypto.errors import MissingKey, NotEncrypted, UnknownDataKey, WrongKey
from convlog.crypto.keys import ENV_KEY, ENV_KEY_FILE
from convlog.domain.clock import SYSTEM_CLOCK, Clock

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

REFRESH_SECONDS = 1.0
"""How often a process re-reads the (small) key table while it is in use."""
ANONYMOUS = ""
"""The user name of the store key: conversations recorded without a user."""


class KeyRow(NamedTuple):
    """One row of the key table. `kind` is ``check`` (one row: `key_id` is the store
    id, `wrapped` the check value) or ``data`` (`wrapped` is None once destroyed)."""

    key_id: str
    kind: str
    user: str
    wrapped: bytes | None
    created_at: str
    destroyed_at: str | None = None


class KeyTable(Protocol):
    """What a storage backend provides, in the same database as the events."""

    def key_rows(self) -> list[KeyRow]: ...

    def add_key(self, row: KeyRow) -> bool:
        """Insert; False (nothing written) when the key id exists or the user already
        has a live data key (another process made one first)."""
        ...

    def destroy_keys(self, user: str, at: str) -> list[str]:
        """Drop the wrapped bytes of `user`'s live data keys, and the bytes' copies the
        database keeps (free pages, write-ahead log); returns the key ids."""
        ...

    def replace_wrapped(self, rows: Sequence[tuple[str, bytes]]) -> None:
        """Rewrite the wrapped bytes of these key ids in ONE transaction (and erase
        the old bytes' copies)."""
        ...

    def has_events(self) -> bool: ...


def now_text(clock: Clock) -> str:
    """A key row's stamp, on the log's one clock (convlog.domain.clock)."""
    return clock.now().isoformat()


class Keyring:
    """The master key and the data keys it opens, for one store."""

    def __init__(self, table: KeyTable, master: bytes | None, store_id: str | None,
                 where: str = "the store", check: bytes | None = None,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.table = table
        self.clock = clock
        self._master = master
        self.store_id = store_id
        self.where = where
        self._lock = threading.Lock()
        self._by_user: dict[str, tuple[bytes, AESGCM]] = {}
        self._by_id: dict[bytes, AESGCM | None] = {}
        self._check_seen = check
        self._rotated_elsewhere = False
        self._fresh_until = time.monotonic() + REFRESH_SECONDS

    @property
    def known(self) -> dict[bytes, AESGCM | None]:
        """This process's cache, key id -> cipher (None: destroyed). Readers look here
        first and call `cipher_of` on a miss; `forget` marks keys None in place."""
        return self._by_id

    @property
    def enabled(self) -> bool:
        return self.store_id is not None

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, table: KeyTable, master: bytes | None, where: str,
             public_only: bool = False, clock: Clock = SYSTEM_CLOCK) -> Keyring:
        """The key ring of the store at `where` (named in errors). An unencrypted store
        without a key stays unencrypted; a new, empty store given a key is encrypted
        from its first event; every other mismatch is one clear error, before any
        write. `public_only` opens an encrypted store without its key for what needs
        no plaintext (counts, tokens, costs, telemetry): sealed fields then read as
        placeholders and every write is a MissingKey."""
        check = _check_row(table.key_rows())
        if check is None:
            if master is None:
                return cls(table, None, None, clock=clock)
            if table.has_events():
                raise NotEncrypted(
                    f"{where} holds unencrypted events and a key is set: run `convlog "
                    "keys enable` to encrypt the store (new and existing events), or "
                    f"unset {ENV_KEY}/{ENV_KEY_FILE} to use it unencrypted")
            return cls.enable(table, master, where, clock)
        if master is None and public_only:  # counts and costs: no data key is opened
            return cls(table, None, check.key_id, where, check.wrapped, clock)
        if master is None:
            raise MissingKey(f"{where} is encrypted (store {check.key_id}): set {ENV_KEY} or "
                             f"{ENV_KEY_FILE} to its master key")
        _require_opens(master, check, where)
        return cls(table, master, check.key_id, where, check.wrapped, clock)

    @classmethod
    def enable(cls, table: KeyTable, master: bytes, where: str,
               clock: Clock = SYSTEM_CLOCK) -> Keyring:
        """Make the store encrypted under `master` (kept if it already is, with it)."""
        store_id = uuid.uuid4().hex
        table.add_key(KeyRow(store_id, "check", ANONYMOUS, cipher.check_value(master, store_id),
                             now_text(clock)))
        check = _check_row(table.key_rows())
        assert check is not None
        _require_opens(master, check, where)  # another process may have enabled it first
        return cls(table, master, check.key_id, where, check.wrapped, clock)

    # -------------------------------------------------------------- data keys

    def key_for(self, user: str | None) -> tuple[bytes, AESGCM]:
        """The live data key of `user` (made on first use): (key id, cipher)."""
        if self._master is None:
            raise MissingKey(f"{self.where} is encrypted and was opened without its key "
                             f"(public fields only): writing needs {ENV_KEY} or "
                             f"{ENV_KEY_FILE}")
        name = user or ANONYMOUS
        self.refresh()
        found = self._by_user.get(name)
        if found is not None:
            return found
        with self._lock:
            for _ in range(3):
                rows = self.table.key_rows()
                self._sync(rows)
                live = [r for r in rows
                        if r.kind == "data" and r.user == name and r.wrapped is not None]
                if live:
                    found = (bytes.fromhex(live[0].key_id), self._unwrap(live[0]))
                    self._by_user[name] = found
                    self._by_id[found[0]] = found[1]
                    return found
                self._new_key(name)
        raise UnknownDataKey(f"could not make a data key for user {name!r}")

    def _new_key(self, user: str) -> None:
        assert self._master is not None and self.store_id is not None
        if self._rotated_elsewhere:
            raise WrongKey(f"the master key of {self.where} was rotated by another process: "
                           "restart with the new key (nothing was written)")
        key_id = os.urandom(cipher.KEY_ID_BYTES).hex()
        wrapped = cipher.wrap(self._master, cipher.new_key(), store_id=self.store_id,
                              key_id=key_id, user=user)
        self.table.add_key(KeyRow(key_id, "data", user, wrapped, now_text(self.clock)))

    def refresh(self, force: bool = False) -> None:
        """Take in other processes' forgets and rotations, at most once per
        `REFRESH_SECONDS` (a clock read otherwise: this runs on every event read)."""
        if not force and time.monotonic() < self._fresh_until:
            return
        with self._lock:
            self._sync(self.table.key_rows())

    def _sync(self, rows: list[KeyRow]) -> None:
        """Forget destroyed keys; notice a rotation made elsewhere (under the lock)."""
        self._fresh_until = time.monotonic() + REFRESH_SECONDS
        check = _check_row(rows)
        if check is not None and check.wrapped != self._check_seen:
            self._check_seen = check.wrapped
            self._rotated_elsewhere = not (self._master and check.wrapped and cipher.opens(
                self._master, check.key_id, check.wrapped))
        dead = {bytes.fromhex(r.key_id) for r in rows if r.kind == "data" and r.wrapped is None}
        for key_id in dead:
            self._by_id[key_id] = None
        for name, (key_id, _) in list(self._by_user.items()):
            if key_id in dead:
                del self._by_user[name]

    def cipher_of(self, key_id: bytes) -> AESGCM | None:
        """The cipher of data key `key_id`; None when it was destroyed (forgotten)."""
        if key_id in self._by_id:
            return self._by_id[key_id]
        if self._master is None:  # opened for public fields only
            return None
        with self._lock:
            rows = {r.key_id: r for r in self.table.key_rows() if r.kind == "data"}
            row = rows.get(key_id.hex())
            if row is None:
                raise UnknownDataKey(
                    f"data key {key_id.hex()} is not in this store's key table (a row "
                    "copied from another store, or a damaged key table)")
            aead = None if row.wrapped is None else self._unwrap(row)
            self._by_id[key_id] = aead
            return aead

    def _unwrap(self, row: KeyRow) -> AESGCM:
        assert self._master is not None and self.store_id is not None and row.wrapped
        try:
            return cipher.aesgcm(cipher.unwrap(self._master, row.wrapped, store_id=self.store_id,
                                        key_id=row.key_id, user=row.user))
        except cipher.Unauthentic as exc:
            raise UnknownDataKey(f"{exc} (the key table was altered)") from None

    # ------------------------------------------------------------- operations

    def forget(self, user: str) -> list[str]:
        """Destroy every data key of `user`; returns their ids."""
        with self._lock:
            destroyed = self.table.destroy_keys(user, now_text(self.clock))
            self._by_user.pop(user, None)
            for key_id in destroyed:
                self._by_id[bytes.fromhex(key_id)] = None
            return destroyed

    def rotate(self, new_master: bytes) -> int:
        """Re-wrap every live data key (and the check value) under `new_master`, in
        one transaction; returns how many data keys. The events are not touched."""
        assert self._master is not None and self.store_id is not None
        with self._lock:
            rows = self.table.key_rows()
            out: list[tuple[str, bytes]] = [
                (self.store_id, cipher.check_value(new_master, self.store_id))]
            for row in rows:
                if row.kind == "data" and row.wrapped is not None:
                    data_key = cipher.unwrap(self._master, row.wrapped, store_id=self.store_id,
                                             key_id=row.key_id, user=row.user)
                    out.append((row.key_id, cipher.wrap(new_master, data_key,
                                                        store_id=self.store_id,
                                                        key_id=row.key_id, user=row.user)))
            self.table.replace_wrapped(out)
            self._master = new_master
            self._check_seen = out[0][1]
            return len(out) - 1

    def status(self) -> dict[str, int]:
        rows = [r for r in self.table.key_rows() if r.kind == "data"]
        return {"live": sum(r.wrapped is not None for r in rows),
                "destroyed": sum(r.wrapped is None for r in rows),
                "users": len({r.user for r in rows if r.user})}


def _check_row(rows: list[KeyRow]) -> KeyRow | None:
    return next((r for r in rows if r.kind == "check"), None)


def _require_opens(master: bytes, check: KeyRow, where: str) -> None:
    if check.wrapped is None or not cipher.opens(master, check.key_id, check.wrapped):
        raise WrongKey(f"the master key does not open {where} (store {check.key_id}): a "
                       "wrong or old key, or the key of another store; nothing was written")
