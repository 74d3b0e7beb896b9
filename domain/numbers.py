"""THE reading of a whole number from text, for every surface (flags, URL options,
environment variables, query strings, headers, cursors).

Written by hand it went wrong in two ways: ``str.isdigit`` is true of ``"²"`` and
``"٣"``, which ``int()`` then refuses or reads as another digit, and ``int()`` of a
few thousand digits raises (Python's limit on digits) or is slow. Here only ASCII
digits are read, and a number longer than the largest allowed is not parsed at all.
"""

from __future__ import annotations

INT64_MAX = 2**63 - 1
"""The largest value by default: what the stores (SQLite, PostgreSQL bigint) hold."""


def whole_number(text: str, *, minimum: int = 0, maximum: int | None = INT64_MAX
                 ) -> int | None:
    """The number `text` spells in ASCII digits, when it lies in [minimum, maximum];
    else None (the caller raises its own typed error, naming its field). `maximum`
    None: no upper bound, and a number past `INT64_MAX` reads as `INT64_MAX` (for
    "a version past the end", which means the end)."""
    if not (text.isascii() and text.isdigit()):
        return None
    digits = text.lstrip("0") or "0"
    bound = INT64_MAX if maximum is None else maximum
    if len(digits) > len(str(bound)):
        return INT64_MAX if maximum is None else None
    value = int(digits)
    if value < minimum:
        return None
    if maximum is None:
        return min(value, INT64_MAX)
    return value if value <= maximum else None
