"""What every file-based importer shares, so that a format's module holds only its
format: the bound on a line's size, which files of a tree it reads, and how a file
that cannot be read becomes a located failure instead of an exception."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Iterator
from pathlib import Path

from convlog.domain.errors import InvalidInput
from convlog.importers.lines import MAX_LINE_BYTES, located
from convlog.services.importing import ImportedConversation, ImportFailure


class FileImporter:
    """A base for an `Importer` reading files: give `name`, `pattern` (the glob of
    the files it reads in a tree) and `read(path)`; `wanted` narrows the glob."""

    name: str
    pattern: str = "*"

    def __init__(self, max_line_bytes: int = MAX_LINE_BYTES):
        self.max_line_bytes = max_line_bytes

    def wanted(self, path: Path) -> bool:
        return True

    def matches(self, path: Path) -> bool:
        """Whether `path` is one of this format's files, by its name (what `files`
        would pick in a tree)."""
        return fnmatch.fnmatchcase(path.name, self.pattern) and self.wanted(path)

    def files(self, path: Path) -> Iterator[Path]:
        """`path` itself, or the matching files under it, sorted: an import of a tree
        walks it in the same order every time."""
        if path.is_file():
            yield path
        else:
            yield from sorted(p for p in path.rglob(self.pattern)
                              if p.is_file() and self.wanted(p))

    def read(self, path: Path) -> Iterable[ImportedConversation | ImportFailure]:
        raise NotImplementedError

    def conversations(self, path: Path) -> Iterator[ImportedConversation | ImportFailure]:
        """The file's conversations; an unreadable one ends them with a failure at
        ``file:line`` (what was yielded before it is whole)."""
        try:
            yield from self.read(path)
        except InvalidInput as exc:
            yield ImportFailure(source=str(path), error=str(located(exc, str(path))))
