"""Reading a transcript that is still being written: from a position, complete lines
only, and never past a response that may not be finished.

A format's reader (`LineReader`) takes lines one at a time; after each it says whether
the lines so far end on a *safe point*: every message read is final (Claude Code: the
last record is not part of an assistant response that may get more blocks; Codex:
every assistant message got the `token_count` that follows it). Reading stops at the
end of the last complete line (a half-written one is waited for) and, unless told the
file is `final` (quiet for a while), hands back only what precedes the last safe
point, so usage repeated on a response's lines is read from its final line. A line
that cannot be read ends the read: what precedes it is handed back, and the position
moves past it, so one bad line never blocks the lines after it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO, Protocol

from convlog.domain.errors import InvalidInput
from convlog.importers.lines import located
from convlog.services.importing import (
    Followed,
    ImportedConversation,
    ImportFailure,
    Position,
)


class LineReader(Protocol):
    def line(self, number: int, raw: bytes, where: str) -> None:
        """Read one non-blank line; InvalidInput when it cannot be read."""
        ...

    def safe(self) -> bool:
        """Every message read so far is final: a read may stop here."""
        ...

    def checkpoint(self) -> bytes:
        """What a later read, starting after the lines read so far, must know."""
        ...

    def mark(self) -> object:
        """An opaque mark of what was read so far, for `done`."""
        ...

    def done(self, mark: object | None) -> list[ImportedConversation]:
        """The conversations read (up to `mark`, when given)."""
        ...


class _Safe:
    __slots__ = ("line", "mark", "offset", "state")

    def __init__(self, offset: int, line: int, state: bytes, mark: object):
        self.offset, self.line, self.state, self.mark = offset, line, state, mark

    def position(self) -> Position:
        return Position(offset=self.offset, line=self.line, state=self.state)


def open_regular(path: Path) -> BinaryIO:
    """`path` opened for reading, if it is a regular file: a FIFO or a device found
    where a transcript was expected is refused without blocking on it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InvalidInput(f"cannot open: {exc.strerror or exc}", where=str(path)) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InvalidInput("not a regular file", where=str(path))
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def follow_lines(path: Path, start: Position, reader: LineReader, *, max_line_bytes: int,
                 max_bytes: int, final: bool) -> Followed:
    """Feed `reader` the complete lines of `path` after `start`; see the module."""
    with open_regular(path) as f:
        f.seek(start.offset)
        return _follow(f, path, start, reader, max_line_bytes, max_bytes, final)


def _follow(f: BinaryIO, path: Path, start: Position, reader: LineReader,
            max_line_bytes: int, max_bytes: int, final: bool) -> Followed:
    offset, number = start.offset, start.line
    safe = _Safe(offset, number, start.state, reader.mark())
    more = False
    while True:
        if offset - start.offset >= max_bytes:
            more = True
            break
        raw = f.readline(max_line_bytes + 1)
        if not raw.endswith(b"\n"):
            if len(raw) <= max_line_bytes:
                break  # the end of the file, or a line still being written: wait for it
            skipped = _skip_line(f)
            if skipped is None:
                break  # an over-long line still being written: decided once it ends
            number += 1
            offset += len(raw) + skipped
            return _failed(path, reader, offset, number, InvalidInput(
                f"line is {len(raw) + skipped:,} bytes, longer than the limit of "
                f"{max_line_bytes:,} (raise it with --max-line-mb)",
                where=f"{path}:{number}"))
        number += 1
        offset += len(raw)
        if raw.strip():
            where = f"{path}:{number}"
            try:
                reader.line(number, raw, where)
            except InvalidInput as exc:
                return _failed(path, reader, offset, number, located(exc, where))
        if reader.safe():
            safe = _Safe(offset, number, reader.checkpoint(), reader.mark())
    if final or reader.safe() or (more and safe.offset == start.offset):
        # everything read is handed back: the file is quiet, the lines end on a safe
        # point, or one response is longer than a read (it is read in parts then)
        position = Position(offset=offset, line=number, state=reader.checkpoint())
        return Followed(conversations=reader.done(None), position=position, more=more)
    return Followed(conversations=reader.done(safe.mark), position=safe.position(),
                    held=safe.offset < offset, more=more)


def _failed(path: Path, reader: LineReader, offset: int, number: int,
            exc: InvalidInput) -> Followed:
    """What came before a bad line, and the position past it."""
    return Followed(conversations=reader.done(None),
                    position=Position(offset=offset, line=number, state=reader.checkpoint()),
                    failure=ImportFailure(source=str(path), error=str(exc)), more=True)


def _skip_line(f: BinaryIO) -> int | None:
    """Skip to the end of an over-long line; its size, or None if it has no end yet."""
    skipped = 0
    while chunk := f.readline(2**20):
        skipped += len(chunk)
        if chunk.endswith(b"\n"):
            return skipped
    return None

