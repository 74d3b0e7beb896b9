"""What msgspec lets through or explains badly in a JSON line, said plainly.

msgspec keeps the last of two equal keys without a word (`{"content": "a",
"content": "b"}` would silently store "b"), calls a lone surrogate escape
(`"\\ud800"`) "Input data was truncated", and a UTF-8 byte order mark "invalid
character". Each becomes an InvalidInput naming the field. The duplicate check parses
the line a second time with the standard library (about 6 us for a 700-byte line,
next to the ~1 us of msgspec): a silently dropped value is worth that.
"""

from __future__ import annotations

import json
from typing import Any

from convlog.domain.errors import InvalidInput

BOM = b"\xef\xbb\xbf"


class _Duplicate(Exception):
    def __init__(self, key: str):
        self.key = key


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Duplicate(key)
            seen.add(key)
    return out


def check_bom(raw: bytes) -> None:
    if raw.startswith(BOM):
        raise InvalidInput("the line starts with a UTF-8 byte order mark (BOM); write "
                           "JSON Lines without one")


def check_duplicate_keys(raw: bytes) -> None:
    """InvalidInput naming the first key given twice in one object."""
    try:
        json.loads(raw, object_pairs_hook=_pairs)
    except _Duplicate as dup:
        raise InvalidInput(f"key {dup.key!r} is given twice in one object",
                           field=dup.key) from None
    except (ValueError, RecursionError):  # msgspec decoded it; nothing more to say
        return


def explain_decode_error(raw: bytes) -> InvalidInput | None:
    """A clearer error for a line msgspec could not decode, when there is one: a lone
    surrogate escape, located by its field. None when the standard library cannot
    parse the line either (msgspec's own message is then the better one)."""
    try:
        value = json.loads(raw, object_pairs_hook=_pairs)
    except _Duplicate as dup:
        return InvalidInput(f"key {dup.key!r} is given twice in one object", field=dup.key)
    except (ValueError, RecursionError):
        return None
    field = _lone_surrogate(value, "")
    if field is None:
        return None
    return InvalidInput("a \\uXXXX escape is a lone surrogate (half of a UTF-16 pair), "
                        "which is not valid Unicode", field=field or None)


def _lone_surrogate(value: Any, path: str) -> str | None:
    if isinstance(value, str):
        return path if _broken(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else key
            if _broken(key):
                return where
            found = _lone_surrogate(item, where)
            if found is not None:
                return found
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = _lone_surrogate(item, f"{path}[{i}]")
            if found is not None:
                return found
    return None


def _broken(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
