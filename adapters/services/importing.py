"""Importing history that other agent tools already wrote: the contract of an importer.

An importer turns one tool's files (Claude Code transcripts, OpenAI message lists,
Codex rollouts...) into `ImportedConversation`s: a key, what is known about the
conversation, and its messages with stable ids taken from the records themselves, so
importing a file again, or after it grew, adds only what is new. It never writes:
the driver (`convlog.services.import_run`) records each conversation as ONE batch.

Importers are found by format name through the ``convlog.importers`` entry points,
so a new tool is one module plus one line of packaging, in convlog or in any other
installed distribution; the services never import an importer's module themselves.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import msgspec

from convlog.domain.errors import ConvlogError, InvalidInput
from convlog.domain.messages import Message

ENTRY_POINT_GROUP = "convlog.importers"


class ImportedConversation(msgspec.Struct, kw_only=True):
    """One conversation read from a tool's files, ready to record as one batch.

    `origins[i]` says where `messages[i]` came from (``file:line``), so an invalid
    message is reported at its line. `skipped` counts records that were read but are
    not messages (by record type): they are never fatal."""

    key: str
    messages: list[Message]
    origins: list[str]
    source: str
    agent: str | None = None
    title: str | None = None
    workspace: str | None = None
    metadata: dict[str, Any] = {}
    skipped: Counter[str] = msgspec.field(default_factory=Counter)


class ImportFailure(msgspec.Struct, frozen=True, kw_only=True):
    """A conversation (or a whole file) that could not be read: nothing of it is
    written. `where` is ``file:line`` when the culprit is one line."""

    source: str
    error: str
    key: str | None = None


@runtime_checkable
class Importer(Protocol):
    """What a format module provides (see `convlog.importers.claude_code`)."""

    name: str
    """The format name users type: ``convlog import NAME PATH``."""

    def files(self, path: Path) -> Iterator[Path]:
        """The transcript files under `path`: itself when it is a file, else the
        files of this format found in the directory tree, in a stable order."""
        ...

    def conversations(self, path: Path) -> Iterator[ImportedConversation | ImportFailure]:
        """Read one file, streaming it (never the whole file in memory at once, except
        formats that are one JSON document). A bad line yields an ImportFailure for
        the conversations it spoils, located at ``file:line``; reading goes on when
        the other conversations of the file can still be read correctly."""
        ...


class ImportFailed(ConvlogError):
    """An import stopped at a conversation that could not be read (the message says
    where); the conversations before it are recorded, each one whole."""


# ------------------------------------------------------------ reading progress

_reading: ContextVar[Callable[[int], None] | None] = ContextVar("convlog_import_reading",
                                                               default=None)


def note_read(offset: int) -> None:
    """An importer says how far into the file it is reading it has got (bytes), so a
    progress bar moves within a large file. Optional: an importer that never calls it
    has its file counted as read once it yields its first conversation."""
    observer = _reading.get()
    if observer is not None:
        observer(offset)


@contextmanager
def reading(observer: Callable[[int], None]) -> Iterator[None]:
    """`note_read` calls go to `observer` in this context (the import driver's, around
    each file it reads)."""
    token = _reading.set(observer)
    try:
        yield
    finally:
        _reading.reset(token)


def available_formats() -> list[str]:
    from importlib.metadata import entry_points  # ~10 ms: only when importing

    return sorted({ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)})


def find_importer(format: str | Importer, *, max_line_bytes: int | None = None) -> Importer:
    """The importer registered under `format` (or `format` itself, if it is one);
    `max_line_bytes` is passed to its constructor when given."""
    from importlib.metadata import entry_points

    if not isinstance(format, str):
        if not isinstance(format, Importer):
            raise InvalidInput(f"not an importer: {type(format).__name__}", field="format")
        return format
    found = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == format]
    if not found:
        known = ", ".join(available_formats()) or "none installed"
        raise InvalidInput(f"unknown import format {format!r}; known formats: {known}",
                           field="format")
    factory = found[0].load()
    options = {} if max_line_bytes is None else {"max_line_bytes": max_line_bytes}
    importer = factory(**options) if isinstance(factory, type) else factory
    if not isinstance(importer, Importer):
        raise ConvlogError(f"entry point {found[0].value!r} is not a convlog importer")
    return importer


# ------------------------------------------------------------- following a file


class Position(msgspec.Struct, frozen=True, kw_only=True):
    """Where reading a growing file stopped: after `line` lines, `offset` bytes (always
    just after a newline), and `state`, what the format must remember of the lines
    before it (Codex: the session id and the model; in the format's own encoding)."""

    offset: int = 0
    line: int = 0
    state: bytes = b""


class Followed(msgspec.Struct, kw_only=True):
    """What one read of a growing file gave: its conversations (messages of the lines
    read, each conversation ready to record as one batch) and where to read next.

    `failure` is a line that could not be read: the conversations hold what came
    before it, and `position` is past it. `held` says complete lines were left for
    later because the response they belong to may still be written (its final usage
    comes with a later line); `more` says lines may follow that were not read yet
    (reading stopped at the size limit, or at a bad line)."""

    conversations: list[ImportedConversation]
    position: Position
    failure: ImportFailure | None = None
    held: bool = False
    more: bool = False


@runtime_checkable
class Follower(Protocol):
    """An importer that can also follow files as they grow (`convlog watch`)."""

    name: str

    def home(self) -> Path:
        """The folder the tool writes its transcripts to (the default to watch)."""
        ...

    def matches(self, path: Path) -> bool:
        """Whether `path` is a transcript file of this format (by its name)."""
        ...

    def follow(self, path: Path, start: Position, *, final: bool = False,
               max_bytes: int = 8 * 2**20) -> Followed:
        """Read the complete lines of `path` from `start` (a half-written last line is
        left for later), at most about `max_bytes`. Unless `final`, lines of a
        response that may not be finished are left for later too."""
        ...


def find_follower(format: str) -> Follower:
    """The importer registered under `format`, if it can follow growing files."""
    importer = find_importer(format)
    if not isinstance(importer, Follower):
        raise InvalidInput(f"the {format!r} format cannot be followed (it is read whole); "
                           "use `convlog import`", field="format")
    return importer
