"""The import driver: every conversation an importer reads becomes ONE atomic batch.

Idempotency comes from the log itself: message ids are taken from the records, and a
batch skips the ids the conversation already holds (looked up before the write, so a
re-import writes nothing), so importing a file twice adds nothing and a file that
grew adds only its new records.

An import counts no tokens (issue 45: a count is derived data, made when first
needed). Conversations are written in the order they were read: at most
`READ_AHEAD` + 1 wait in memory (besides the file being read).

Progress is in bytes, and moves within a file: reading a file is half its share and
recording what was read the other half. So a file's bytes done are its size times
how far it has been read (`importing.note_read`) times the mean of 1 (read) and the
share of the messages read from it that are recorded or known: one large transcript
moves the bar while it is read, then as it is written, and a file of many
conversations as it is read and written.
"""

from __future__ import annotations

import functools
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import msgspec

from convlog.accounting.prices import PriceTable
from convlog.domain.conversation import AppendMessages, StartConversation
from convlog.domain.errors import ConvlogError, InvalidInput
from convlog.domain.messages import Message
from convlog.services.import_usage import count_usage
from convlog.services.importing import (
    ImportedConversation,
    Importer,
    ImportFailed,
    ImportFailure,
    reading,
)
from convlog.services.writer import Writer


class ImportSummary(msgspec.Struct, kw_only=True):
    """What an import did. `conversations` were read whole; `messages` were added
    now and `messages_known` were already recorded (a re-import adds 0)."""

    format: str
    files: int = 0
    bytes: int = 0
    conversations: int = 0
    conversations_changed: int = 0
    messages: int = 0
    messages_known: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_models: list[str] = []
    """Models with usage but no known price: `cost_usd` is a lower bound then."""
    skipped: dict[str, int] = {}
    """Records read but not imported as messages, by record type (never fatal)."""
    failures: list[ImportFailure] = []
    seconds: float = 0.0


class ImportProgress(msgspec.Struct, frozen=True, kw_only=True):
    bytes_done: int
    bytes_total: int
    files_done: int
    files_total: int
    conversations: int
    messages: int


ProgressCallback = Callable[[ImportProgress], None]
READ_AHEAD = 4
"""Conversations read ahead of the one being written."""


class _Pending(msgspec.Struct):
    """A conversation read, and which of its messages are new."""

    conv: ImportedConversation
    known: set[str]
    fresh: list[Message]
    file: int = 0
    """The number of the file it was read from (0: not from a file)."""


class _FileRead(msgspec.Struct):
    """Every conversation of file `number` is queued before this marker."""

    number: int
    size: int


class _FileProgress(msgspec.Struct):
    """How far one file is: read (bytes), and its messages read and done with."""

    size: int
    read: int | None = None
    """Bytes read, as the importer reports them (None: it does not)."""
    messages: int = 0
    done: int = 0

    def note(self, offset: int) -> None:
        self.read = offset

    def bytes_done(self) -> int:
        if self.read is None:  # an importer that does not say: read once it yields
            read = 1.0 if self.messages else 0.0
        else:
            read = 1.0 if self.read >= self.size else self.read / self.size
        done = min(1.0, self.done / self.messages) if self.messages else 0.0
        return int(self.size * read * (1.0 + done) / 2)


def collect_files(importer: Importer, paths: Sequence[str | Path]) -> list[tuple[Path, int]]:
    """Every file to read, with its size. A path that does not exist, that is not a
    regular file or directory (a device such as /dev/zero, a FIFO: reading either
    could block or never end), or a directory holding no file of the format, is an
    error before anything is written."""
    found: list[tuple[Path, int]] = []
    for given in paths:
        path = Path(given).expanduser()
        if not path.exists():
            raise InvalidInput("no such file or directory", where=str(path))
        if not (path.is_file() or path.is_dir()):
            raise InvalidInput("not a regular file or directory", where=str(path))
        before = len(found)
        for file in importer.files(path):
            try:
                found.append((file, file.stat().st_size))
            except OSError as exc:
                raise InvalidInput(f"cannot read: {exc.strerror}", where=str(file)) from None
        if path.is_dir() and len(found) == before:
            raise InvalidInput(f"no {importer.name} files in this directory",
                               where=str(path))
    return found


def run_import(writer: Writer, importer: Importer, paths: Sequence[str | Path], *,
               prices: PriceTable, keep_going: bool = False,
               progress: ProgressCallback | None = None) -> ImportSummary:
    """Import `paths` with `importer`. Without `keep_going` the first unreadable
    conversation raises ImportFailed (the ones before it stay recorded, each whole);
    with it, every failure is collected in the summary and the rest is imported."""
    started = time.perf_counter()
    files = collect_files(importer, paths)
    run = _Run(writer, ImportSummary(format=importer.name, files=len(files),
                                  bytes=sum(size for _, size in files)),
               prices, keep_going, progress, len(files))
    run.report(0)
    for number, (file, size) in enumerate(files, start=1):
        share = run.files_read[number] = _FileProgress(size=size)
        try:
            with reading(functools.partial(run.note_read, share)):
                for item in importer.conversations(file):
                    run.queue.append(item if isinstance(item, ImportFailure)
                                     else run.counting(_pending(writer, item), number))
                    run.write(READ_AHEAD)
        except OSError as exc:  # a file that vanished or cannot be read mid-way
            run.queue.append(ImportFailure(source=str(file),
                                           error=f"{file}: {exc.strerror or exc}"))
        share.read = size
        run.queue.append(_FileRead(number=number, size=size))
        run.write(READ_AHEAD)
    run.write(0)
    summary = run.summary
    summary.skipped = dict(run.skipped.most_common())
    summary.unpriced_models = sorted(run.unpriced)
    summary.seconds = round(time.perf_counter() - started, 3)
    return summary


def record_conversations(writer: Writer, format: str,
                         items: Iterable[ImportedConversation | ImportFailure], *,
                         prices: PriceTable) -> ImportSummary:
    """Record conversations an importer already read (a followed file's new lines),
    exactly as `run_import` records them: one batch each, known message ids skipped.
    A conversation that cannot be recorded is a failure in the summary; a storage
    failure raises ImportFailed, and then the caller must read the lines again."""
    started = time.perf_counter()
    run = _Run(writer, ImportSummary(format=format), prices, True, None, 0)
    for item in items:
        run.queue.append(item if isinstance(item, ImportFailure) else _pending(writer, item))
        run.write(READ_AHEAD)
    run.write(0)
    summary = run.summary
    summary.skipped = dict(run.skipped.most_common())
    summary.unpriced_models = sorted(run.unpriced)
    summary.seconds = round(time.perf_counter() - started, 3)
    return summary


def _pending(writer: Writer, conv: ImportedConversation) -> _Pending | ImportFailure:
    """Look the conversation's known ids up: its new messages are what to write."""
    try:
        known = writer.known_message_ids(conv.key, [m.id for m in conv.messages])
    except InvalidInput as exc:  # e.g. a key that cannot be a conversation key
        return _failure(conv, exc)
    return _Pending(conv=conv, known=known,
                    fresh=[m for m in conv.messages if m.id not in known])


def _failure(conv: ImportedConversation, exc: InvalidInput) -> ImportFailure:
    return ImportFailure(source=conv.source, key=conv.key,
                         error=f"{conv.source}: conversation {conv.key!r}: {exc}")


class _Run:
    """The writing end: conversations in the order they were read, one batch each."""

    def __init__(self, writer: Writer, summary: ImportSummary, prices: PriceTable,
                 keep_going: bool, progress: ProgressCallback | None, files: int):
        self.writer, self.summary, self.prices = writer, summary, prices
        self.keep_going, self.progress, self.files = keep_going, progress, files
        self.queue: deque[_Pending | ImportFailure | _FileRead] = deque()
        self.skipped: Counter[str] = Counter()
        self.unpriced: set[str] = set()
        self.bytes_done = 0
        """Bytes of the files whose every conversation is recorded."""
        self.files_read: dict[int, _FileProgress] = {}
        """The files being read or recorded, by number."""
        self.reported = 0
        self.files_done = 0

    def counting(self, item: _Pending | ImportFailure, file: int) -> _Pending | ImportFailure:
        """`item`, read from file `file`, whose messages now count in its progress."""
        if isinstance(item, _Pending):
            item.file = file
            self.files_read[file].messages += len(item.conv.messages)
        return item

    def note_read(self, share: _FileProgress, offset: int) -> None:
        """The importer read a file up to `offset`: the bar moves (by 1% of the whole
        at least, so a line read costs a comparison, not a report)."""
        share.note(offset)
        if self.progress is not None:
            step = max(1, self.summary.bytes // 100)
            done = self.bytes_done + sum(p.bytes_done() for p in self.files_read.values())
            if done - self.reported >= step:
                self.report(self.files_done)

    def _done_with(self, item: _Pending, messages: int) -> None:
        """`messages` more of `item`'s are recorded (or known): the bar moves."""
        progress = self.files_read.get(item.file)
        if progress is not None and messages:
            progress.done += messages
            self.report(self.files_done)

    def write(self, keep: int) -> None:
        """Write queued conversations until at most `keep` are left."""
        while len(self.queue) > keep:
            item = self.queue.popleft()
            if isinstance(item, _FileRead):
                self.files_read.pop(item.number, None)
                self.bytes_done += item.size
                self.files_done = item.number
                self.report(item.number)
                continue
            failure = item if isinstance(item, ImportFailure) else self._record(item)
            if failure is not None:
                if not self.keep_going:
                    raise ImportFailed(failure.error)
                self.summary.failures.append(failure)

    def report(self, files_done: int) -> None:
        if self.progress is not None:
            s = self.summary
            done = self.bytes_done + sum(p.bytes_done() for p in self.files_read.values())
            self.reported = max(self.reported, min(done, s.bytes))  # never backwards
            self.progress(ImportProgress(
                bytes_done=self.reported, bytes_total=s.bytes, files_done=files_done,
                files_total=self.files, conversations=s.conversations, messages=s.messages))

    def _record(self, item: _Pending) -> ImportFailure | None:
        """One conversation, one batch: the start (a no-op when it exists) and its new
        messages."""
        conv, summary = item.conv, self.summary
        self.skipped.update(conv.skipped)
        if not conv.messages:
            self.skipped["empty conversation"] += 1
            return None
        summary.conversations += 1
        self._done_with(item, len(item.known))
        if not item.fresh:
            summary.messages_known += len(item.known)
            return None
        start = StartConversation(agent=conv.agent, title=conv.title, workspace=conv.workspace,
                             metadata=conv.metadata)
        try:
            result = self.writer.execute(conv.key, [start,
                                                    AppendMessages(messages=item.fresh)])
        except InvalidInput as exc:  # decided inside the write: nothing of it recorded
            summary.conversations -= 1
            return _failure(conv, exc)
        except ConvlogError as exc:
            raise ImportFailed(f"{conv.source}: conversation {conv.key!r}: {exc}") from None
        self._done_with(item, len(item.fresh))
        summary.messages += len(result.appended)
        summary.messages_known += len(item.known) + len(result.skipped)
        if result.appended:
            summary.conversations_changed += 1
            count_usage(conv, frozenset(result.appended), summary, self.prices, self.unpriced)
        return None
