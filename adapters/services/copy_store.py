"""`convlog copy --from URL --to URL`: move a store to another (docs/storage.md#copy).

What is carried, and how each store's invariants are kept:

- **Every event**, in the source's global order (its notification log), each at its
  stream and version: the destination's notification log has the same order (its
  own numbers: PostgreSQL's may have gaps). A plain destination gets the stored
  bytes as they are; an encrypted destination gets each event decoded and sealed
  under its conversation user's data key there (made on first use), as a write of
  its own would be. Written through the destination's recorder (`insert_runs`), one
  transaction a batch (`--batch` events of the source's log), never around it.
- **The message-id index**: each message's id with its event, as a write indexes it
  (the index holds exactly those, and the marks of keyed HTTP requests:
  convlog.services.requests), and a conversation's marks with its first event (the
  marks the source has when that event is copied: stop the source's writers first).
- **Kept answers** of keyed requests, with their times (sealed in an encrypted
  destination, under the anonymous data key: `forget` deletes every answer anyway).
- **An encrypted source's key table**: the source is read with its key
  (CONVLOG_KEY), and the destination gets its key rows as they are (the same master
  key, the same data key per user, destroyed keys destroyed), its sealed events and
  answers byte for byte: forgetting a user works on the copy as on the source. A
  destination encrypted under other keys, or holding unencrypted events, is refused.
  Decrypting (an encrypted source into a plain store) is not offered.
- **Snapshots are made, not copied**: a conversation of `SNAPSHOT_INTERVAL` (500)
  events or more gets one of its last state copied, as its turns would have made.
- **Not copied, on purpose**: token counts and views (derived: made again on use,
  the views rebuilt because the destination is another store), and the store's
  identity.

Resuming: the progress IS the destination's events. A batch is one transaction, so a
killed copy leaves a prefix of the source's log; a re-run checks the destination
event by event against the source's (stream, version and decoded event: the digest's
form) and continues after the last one. A destination holding anything else is
refused before anything is written.

The digest (`digest`): SHA-256 over every event in global order, each as its stream
id (hex), its version, and the canonical JSON of its DECODED event (msgspec's
encoding of the typed event: upcast, unsealed), so a sealed and a plain copy of the
same events digest alike. Both stores are read whole at the end, with the same
function.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from uuid import UUID

import msgspec

from convlog.domain.errors import ConvlogError
from convlog.domain.events import MessageAppended
from convlog.services.application import Application, bootstrap
from convlog.services.options import LogOptions
from convlog.services.requests import PREFIX
from convlog.storage.application import SNAPSHOT_INTERVAL, ConversationStore
from convlog.storage.recorder import Run

PAGE = 1000
"""Events read at a time when checking and digesting."""

RawRow = tuple[int, str, int, str, str]
Progress = Callable[["CopyProgress"], None]


class CopyRefused(ConvlogError):
    """A copy that would not be sound: nothing was written."""


@dataclass(frozen=True)
class CopyProgress:
    copied: int
    """Events in the destination now."""
    position: int
    """The source's position of the last event copied."""


@dataclass(frozen=True)
class CopyReport:
    events: int
    """Events in each store at the end (equal, or CopyRefused)."""
    already: int
    """Events found in the destination from a previous run (resumed after them)."""
    copied: int
    """Events written by this run."""
    answers: int
    """Kept answers in the destination."""
    digest: str
    """Both stores' digest (equal, or CopyRefused)."""
    seconds: float
    """Time spent copying events (the checks and digests excluded)."""
    encrypted: bool
    """Whether the destination is encrypted (events sealed there)."""


def copy(source_url: str, destination_url: str, *, batch: int = 1000,
         progress: Progress | None = None) -> CopyReport:
    """Copy the store at `source_url` into `destination_url` (made when missing);
    the destination's key from CONVLOG_KEY / CONVLOG_KEY_FILE (an empty destination
    given a key is made encrypted). See the module's docstring."""
    if batch < 1:
        raise CopyRefused(f"--batch must be at least 1, not {batch}")
    with bootstrap(source_url, LogOptions(create=False), master_key="public") as peek:
        encrypted = peek.store.keyring.enabled
    if not encrypted:
        with bootstrap(source_url, LogOptions(create=False), master_key=None) as src, \
                bootstrap(destination_url, LogOptions(create=True)) as dst:
            return _copy(src, dst, batch, progress, verbatim=False)
    # An encrypted source: read with its key (CONVLOG_KEY); the destination gets its
    # key table (the same master key, the same data keys per user) and its sealed
    # events as they are, so `forget` works on the copy as on the source.
    with bootstrap(source_url, LogOptions(create=False)) as src:
        with bootstrap(destination_url, LogOptions(create=True),
                       master_key="public") as dst:
            _carry_keys(src, dst)
        with bootstrap(destination_url, LogOptions(create=True)) as dst:
            report = _copy(src, dst, batch, progress, verbatim=True)
            _carry_keys(src, dst)  # keys made or destroyed meanwhile
            return report


def _carry_keys(src: Application, dst: Application) -> None:
    """The source's key table into the destination: rows it lacks added as they are
    (wrapped under the same master key), keys destroyed since destroyed there too.
    A destination encrypted under another store's keys, or holding unencrypted
    events, is refused."""
    source, target = src.store, dst.store
    if target.keyring.enabled and target.keyring.store_id != source.keyring.store_id:
        raise CopyRefused(f"{dst.config.display} is encrypted under other keys than "
                          f"{src.config.display}: copy into a new store")
    if not target.keyring.enabled and target.index.has_events():
        raise CopyRefused(f"{dst.config.display} already holds unencrypted events: copy "
                          f"{src.config.display} (encrypted) into a new store")
    theirs = {row.key_id: row for row in target.index.key_rows()}
    for row in source.index.key_rows():
        there = theirs.get(row.key_id)
        if there is None:
            target.index.add_key(row)
        elif row.wrapped is None and there.wrapped is not None:
            target.index.destroy_keys(row.user, row.destroyed_at or "")


def _copy(src: Application, dst: Application, batch: int, progress: Progress | None,
          *, verbatim: bool) -> CopyReport:
    source, target = src.store, dst.store
    if source.index.store_identity() == target.index.store_identity():
        raise CopyRefused(f"{dst.config.display} is the source store itself")
    after, already = _resume_point(source, target, src.config.display,
                                   dst.config.display)
    sealing = target.keyring.enabled and not verbatim
    users: dict[str, str | None] = {}
    lasts: dict[str, int] = {}  # stream -> last version copied by this run
    copied, started = already, time.perf_counter()
    while True:
        rows = source.index.select_raw(after, batch)
        if not rows:
            break
        target.index.insert_runs([_run(source, target, run, sealing, users)
                                  for run in _runs(rows)])
        copied += len(rows)
        after = rows[-1][0]
        lasts.update((row[1], row[2]) for row in rows)
        if progress is not None:
            progress(CopyProgress(copied, after))
    for hex_id, last in lasts.items():  # the snapshots its turns would have made
        if last >= SNAPSHOT_INTERVAL:
            target.snapshot_now(UUID(hex_id))
    seconds = time.perf_counter() - started
    for scope, answer, created in source.index.answer_rows():
        if verbatim:  # sealed under the same data key it is carried with
            target.index.keep_answer(scope, answer, created)
        else:
            target.keep_answer(scope, answer, created, None)
    answers = len(target.index.answer_rows())
    events, digest = digest_of(source)
    events_there, digest_there = digest_of(target)
    if (events, digest) != (events_there, digest_there):
        raise CopyRefused(
            f"verification failed: the source has {events} events (digest {digest}), "
            f"the destination {events_there} ({digest_there}); was the source written "
            "during the copy? Run it again")
    return CopyReport(events, already, copied - already, answers, digest, seconds,
                      target.keyring.enabled)


def _runs(rows: list[RawRow]) -> Iterator[list[RawRow]]:
    """Consecutive rows of one stream: each is written as one transaction."""
    start = 0
    for at in range(1, len(rows) + 1):
        if at == len(rows) or rows[at][1] != rows[start][1]:
            yield rows[start:at]
            start = at


def _run(source: ConversationStore, target: ConversationStore, run: list[RawRow],
         sealing: bool, users: dict[str, str | None]) -> Run:
    """The destination's rows and index entries of one run of the source's rows."""
    hex_id, first = run[0][1], run[0][2]
    stream = UUID(hex_id)
    events = [source.codec.decode_row(stream, version, topic, state.encode())
              for _, _, version, topic, state in run]
    ids = [e.message_id for e in events if isinstance(e, MessageAppended)]
    if first == 1:
        users[hex_id] = getattr(events[0], "user", None)
        ids += [m for m in source.index.index_entries(stream) if m.startswith(PREFIX)]
    if sealing:
        if hex_id not in users:
            ((_, topic, state),) = source.index.select_rows(stream, lte=1)
            users[hex_id] = getattr(source.codec.decode_row(stream, 1, topic, state),
                                    "user", None)
        new_rows = target.codec.rows(stream, first, events, users[hex_id])
    else:
        new_rows = [(hex_id, version, topic, state.encode())
                    for _, _, version, topic, state in run]
    return new_rows, ((stream, ids) if ids else None)


def _canonical(store: ConversationStore, row: RawRow) -> bytes:
    _, hex_id, version, topic, state = row
    event = store.codec.decode_row(UUID(hex_id), version, topic, state.encode())
    return b"%s %d %s\n" % (hex_id.encode(), version, msgspec.json.encode(event))


def _pages(store: ConversationStore) -> Iterator[list[RawRow]]:
    after = 0
    while rows := store.index.select_raw(after, PAGE):
        yield rows
        after = rows[-1][0]


def digest_of(store: ConversationStore) -> tuple[int, str]:
    """(events, SHA-256 hex) of the store: see the module's docstring."""
    hashed, count = hashlib.sha256(), 0
    for rows in _pages(store):
        for row in rows:
            hashed.update(_canonical(store, row))
        count += len(rows)
    return count, hashed.hexdigest()


def _resume_point(source: ConversationStore, target: ConversationStore, source_name: str,
                  target_name: str) -> tuple[int, int]:
    """(the source position to continue after, events already copied): the
    destination must hold exactly a prefix of the source's log, else CopyRefused."""
    after, count = 0, 0
    for rows in _pages(target):
        theirs = source.index.select_raw(after, len(rows))
        for at, row in enumerate(rows):
            if at >= len(theirs) or _canonical(target, row) != _canonical(source, theirs[at]):
                raise CopyRefused(
                    f"{target_name} already holds events that are not a copy of "
                    f"{source_name} (event {count + at + 1} of its log differs): copy "
                    "into a new store")
        after, count = theirs[-1][0], count + len(rows)
    return after, count
