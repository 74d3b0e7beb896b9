"""Terminal and JSON output for the CLI.

Anyone who can write to the log (a user token, an agent, an imported transcript)
chooses the text these commands print, so no human-readable output carries a control
character to the operator's terminal: `visible` shows C0 and C1 controls (but line
feed and tab), DEL and the bidirectional overrides as ``\\x1b``/``\\u202e`` escapes,
in table cells (so columns stay aligned) and, through `visible_output`, in anything
else a command prints. JSON escapes them itself; `--csv` is data, left as it is.
"""

from __future__ import annotations

import re
import shutil
import sys
import textwrap
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any

import msgspec

_encoder = msgspec.json.Encoder(decimal_format="number")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` with every character that could drive a terminal shown as an escape."""
    return _CONTROL.sub(_escape, text)


class _Visible:
    """A text stream that writes `visible` text to the one it wraps."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(visible(text))

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding...
        return getattr(self._stream, name)


@contextmanager
def visible_output() -> Iterator[None]:
    """While inside, whatever is printed to stdout and stderr is `visible`."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Visible(out), _Visible(err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


def print_json(value: Any) -> None:
    """One JSON document on stdout (datetimes as RFC 3339, Decimals as numbers)."""
    sys.stdout.write(_encoder.encode(value).decode() + "\n")


def _cell(value: object) -> str:
    return "-" if value is None or value == "" else visible(str(value))


def print_table(headers: Sequence[str], rows: Sequence[Sequence[object]], *, empty: str) -> None:
    """Aligned columns; the last column takes what is left of the terminal's width."""
    if not rows:
        print(f"({empty})")
        return
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    total = shutil.get_terminal_size((120, 24)).columns
    fixed = sum(widths[:-1]) + 2 * (len(widths) - 1)
    widths[-1] = max(10, min(widths[-1], total - fixed)) if sys.stdout.isatty() else widths[-1]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    for row in cells:
        last = row[-1]
        if len(last) > widths[-1]:
            last = last[: widths[-1] - 1] + "…"
        print("  ".join([*(c.ljust(w) for c, w in zip(row[:-1], widths, strict=False)), last])
              .rstrip())


def wrap_text(prefix: str, text: str) -> str:
    """`prefix` then `text`, continuation lines indented under the text."""
    indent = " " * len(prefix)
    width = max(40, shutil.get_terminal_size((100, 24)).columns)
    out: list[str] = []
    for paragraph in visible(text).splitlines() or [""]:
        out.extend(textwrap.wrap(paragraph, width - len(prefix)) or [""])
    return prefix + ("\n" + indent).join(out)
