"""Reading transcript files line by line, with every line's position, in bounded memory.

A line is read with a size limit (`MAX_LINE_BYTES`, 64 MiB by default): a longer one
is an error naming ``file:line`` and its size, found without ever holding more than
the limit (the rest of the line is skipped in small chunks), so a 200 MB line costs
64 MiB at most, never the line twice. Decoding errors are typed and located too.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, TypeVar

import msgspec

from convlog.domain.errors import InvalidInput
from convlog.services.importing import note_read

MAX_LINE_BYTES = 64 * 2**20
_CHUNK = 2**20
T = TypeVar("T")


def read_lines(path: Path, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of every non-blank line. Raises InvalidInput at
    ``file:line`` for a line longer than `max_line_bytes`."""
    with path.open("rb") as f:
        number = offset = 0
        while raw := f.readline(max_line_bytes + 1):
            number += 1
            if len(raw) > max_line_bytes and not raw.endswith(b"\n"):
                size = len(raw) + _skip_line(f)
                raise InvalidInput(
                    f"line is {size:,} bytes, longer than the limit of {max_line_bytes:,} "
                    "(raise it with --max-line-mb)", where=f"{path}:{number}")
            offset += len(raw)
            note_read(offset)  # the progress bar's position within the file
            if raw.strip():
                yield number, raw


def read_document(path: Path, max_bytes: int = MAX_LINE_BYTES) -> bytes:
    """A whole JSON document (formats that are one document cannot be streamed):
    refused past `max_bytes`, before it is read."""
    size = path.stat().st_size
    if size > max_bytes:
        raise InvalidInput(f"a JSON document of {size:,} bytes is over the limit of "
                           f"{max_bytes:,}; write it as JSON Lines to stream it",
                           where=str(path))
    data = path.read_bytes()
    note_read(len(data))
    return data


def _skip_line(f: BinaryIO) -> int:
    skipped = 0
    while chunk := f.readline(_CHUNK):
        skipped += len(chunk)
        if chunk.endswith(b"\n"):
            break
    return skipped


def decode(raw: bytes, type: type[T], where: str) -> T:
    """`raw` decoded as `type`, or InvalidInput at `where` naming the field."""
    try:
        return msgspec.json.decode(raw, type=type)
    except msgspec.ValidationError as exc:
        message, _, path = str(exc).partition(" - at `")
        field = path.rstrip("`").removeprefix("$.").removeprefix("$") or None
        raise InvalidInput(message[:1].lower() + message[1:], field=field, where=where) from None
    except UnicodeDecodeError:
        raise InvalidInput("invalid UTF-8 in a string", where=where) from None
    except msgspec.DecodeError as exc:
        raise InvalidInput(f"not valid JSON ({exc})", where=where) from None
    except RecursionError:
        raise InvalidInput("JSON nested too deeply", where=where) from None


def located(exc: InvalidInput, where: str) -> InvalidInput:
    """`exc` at `where`, unless it already says where it is."""
    return exc if exc.where else exc.located(where)
