"""One JSON decoder for everything a host sends: `convlog record`'s lines and every
HTTP body (issue 42: `/turns` took a key given twice that `record` refused).

`decode(raw, type)` is msgspec's typed decode plus what msgspec lets through or
explains badly, said plainly, each as an InvalidInput naming the field the same way
on every surface (``messages[0].role``, ``colour``).

msgspec keeps the last of two equal keys without a word (`{"content": "a",
"content": "b"}` would silently store "b"), calls a lone surrogate escape
(`"\\ud800"`) "Input data was truncated", and a UTF-8 byte order mark "invalid
character". Each becomes an InvalidInput naming the field. The duplicate check parses
the line a second time with the standard library (about 6 us for a 700-byte line,
next to the ~1 us of msgspec): a silently dropped value is worth that.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

import msgspec

from convlog.domain.errors import InvalidInput

BOM = b"\xef\xbb\xbf"
T = TypeVar("T")


class MalformedJSON(InvalidInput):
    """Not JSON at all (HTTP answers 400 `malformed-json`), as opposed to JSON that
    breaks a rule (422)."""


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
    return MalformedJSON("a \\uXXXX escape is a lone surrogate (half of a UTF-16 pair), "
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


def decode(raw: bytes, kind: type[T] | Any, *, checked: bool = False,
           decoder: msgspec.json.Decoder[Any] | None = None,
           types: tuple[str, ...] = ()) -> T:
    """`raw` as `kind`, or one InvalidInput naming the field: msgspec's typed decode,
    then no key given twice in any object (`checked`: the caller checked an
    enclosing document already). `decoder`: a prebuilt decoder of `kind`; `types`:
    the line types a wrong `type` is told about."""
    check_bom(raw)
    try:
        value: T = decoder.decode(raw) if decoder is not None else msgspec.json.decode(
            raw, type=kind)
    except msgspec.ValidationError as exc:
        raise validation_error(str(exc), types) from None
    except msgspec.DecodeError as exc:
        raise explain_decode_error(raw) or MalformedJSON(f"not a JSON object: {exc}") from None
    except RecursionError:
        raise MalformedJSON("JSON nested too deeply") from None
    if not checked:
        check_duplicate_keys(raw)
    return value


def validation_error(text: str, types: tuple[str, ...] = ()) -> InvalidInput:
    """msgspec's "Expected `int`, got `str` - at `$.budget.tokens`" as an InvalidInput
    whose field is the path (``budget.tokens``); for an unknown or missing field, the
    field is that one (``messages[0].colour``). `types`: the line types, named when
    a `type` is not one of them."""
    message, _, path = text.partition(" - at `")
    field = path.rstrip("`").removeprefix("$.").removeprefix("$")
    for old, new in (("Object missing required field", "missing required field"),
                     ("Object contains unknown field", "unknown field")):
        if message.startswith(old):
            name = message.removeprefix(old).strip().strip("`")
            field = f"{field}.{name}" if field else name
            message = message.replace(old, new)
    if field.rsplit(".", 1)[-1] == "type" and message.startswith("missing required"):
        message += ' (every line names its type: a message is {"type": "message", ...})'
    if types and field.rsplit(".", 1)[-1] == "type" and message.startswith("Invalid value"):
        message = (f"unknown event type {message.removeprefix('Invalid value ')}; "
                   f"expected one of {', '.join(types)}")
    return InvalidInput(message[:1].lower() + message[1:], field=field or None)
