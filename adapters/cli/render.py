"""Terminal and JSON output for the CLI."""

from __future__ import annotations

import shutil
import sys
import textwrap
from collections.abc import Sequence
from typing import Any

import msgspec

_encoder = msgspec.json.Encoder(decimal_format="number")


def print_json(value: Any) -> None:
    """One JSON document on stdout (datetimes as RFC 3339, Decimals as numbers)."""
    sys.stdout.write(_encoder.encode(value).decode() + "\n")


def _cell(value: object) -> str:
    return "-" if value is None or value == "" else str(value)


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
    for paragraph in text.splitlines() or [""]:
        out.extend(textwrap.wrap(paragraph, width - len(prefix)) or [""])
    return prefix + ("\n" + indent).join(out)
