"""The master key: where it comes from and what it must look like.

The key is 32 random bytes (AES-256), written as 64 hex digits or as base64 (44
characters, standard or URL-safe alphabet). It comes from ``CONVLOG_KEY`` or from the
file named by ``CONVLOG_KEY_FILE``, never from a command-line argument (arguments are
visible to every user of the machine in ``ps`` and land in shell histories).
A short or malformed key is refused with a `BadKey` naming where it came from, so a
truncated key file can never be mistaken for a different, valid key.
"""

from __future__ import annotations

import base64
import binascii
import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from convlog.crypto.errors import BadKey

KEY_BYTES = 32
ENV_KEY = "CONVLOG_KEY"
ENV_KEY_FILE = "CONVLOG_KEY_FILE"
ENV_NEW_KEY = "CONVLOG_NEW_KEY"
ENV_NEW_KEY_FILE = "CONVLOG_NEW_KEY_FILE"


def generate_key() -> str:
    """A new master key as text (64 hex digits), for a key file or a secret store."""
    return secrets.token_hex(KEY_BYTES)


def parse_key(text: str, source: str) -> bytes:
    """The 32 key bytes of `text`; `source` names where it came from in errors."""
    text = text.strip()
    if not text:
        raise BadKey(f"{source} is empty: expected a 32-byte key as 64 hex digits or base64")
    raw: bytes | None = None
    if len(text) == 2 * KEY_BYTES and all(c in "0123456789abcdefABCDEF" for c in text):
        raw = bytes.fromhex(text)
    else:
        try:
            raw = base64.b64decode(text.replace("-", "+").replace("_", "/"), validate=True)
        except (binascii.Error, ValueError):
            raw = None
    if raw is None:
        raise BadKey(f"{source} is not a key: expected 64 hex digits or base64 of 32 bytes "
                     f"({len(text)} characters found)")
    if len(raw) != KEY_BYTES:
        raise BadKey(f"{source} holds {len(raw)} bytes, a key has {KEY_BYTES}: the key is "
                     "truncated or not a convlog key")
    return raw


def load_key(env: Mapping[str, str] | None = None, *, var: str = ENV_KEY,
             file_var: str = ENV_KEY_FILE) -> bytes | None:
    """The master key from `var` or the file named by `file_var`; None when neither is
    set. Both set is an error: which one wins would be a guess."""
    env = os.environ if env is None else env
    text, path = env.get(var), env.get(file_var)
    if text and path:
        raise BadKey(f"both {var} and {file_var} are set: set only one")
    if text:
        return parse_key(text, var)
    if path:
        try:
            content = Path(path).read_text(encoding="ascii")
        except (OSError, UnicodeDecodeError) as exc:
            raise BadKey(f"{file_var}={path}: cannot read the key file "
                         f"({exc.__class__.__name__}: {exc})") from None
        return parse_key(content, f"{file_var}={path}")
    return None
