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
import logging
import os
import secrets
import stat
from collections.abc import Mapping

from convlog.crypto.errors import BadKey

KEY_BYTES = 32
ENV_KEY = "CONVLOG_KEY"
ENV_KEY_FILE = "CONVLOG_KEY_FILE"
ENV_NEW_KEY = "CONVLOG_NEW_KEY"
ENV_NEW_KEY_FILE = "CONVLOG_NEW_KEY_FILE"
MAX_KEY_FILE_BYTES = 4096
"""A key is 64 characters; the bound leaves room for whitespace and stops a wrong
path (a log file, a disk image) from being read whole."""

_log = logging.getLogger("convlog.crypto")


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
        raise BadKey(f"{source} is not a key ({len(text)} characters found): expected 64 "
                     "hex digits or base64 (see `convlog keys generate`)")
    if len(raw) != KEY_BYTES:
        raise BadKey(f"{source} holds {len(raw)} bytes, a key has {KEY_BYTES}: the key is "
                     "truncated or not a convlog key: expected 64 hex digits or base64 "
                     "(see `convlog keys generate`)")
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
        text, mode = read_key_file(path, file_var)
        key = parse_key(text, f"{file_var}={path}")
        if mode & 0o077:  # warned once the key is known good: an error says enough
            _log.warning("%s: the key file %s can be read by other users (mode %04o); "
                         "chmod 600 it", file_var, path, mode)
        return key
    return None


def read_key_file(path: str, file_var: str = ENV_KEY_FILE) -> tuple[str, int]:
    """The text and permission bits of a key file, read in bounded memory and time:
    it must be a regular file (a device such as /dev/zero never ends, a FIFO blocks)
    of at most MAX_KEY_FILE_BYTES. A file other users can read works, with a warning
    on the `convlog.crypto` logger (stderr unless logging is configured)."""
    where = f"{file_var}={path}"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not block the open
    except OSError as exc:
        raise BadKey(f"{where}: cannot read the key file "
                     f"({exc.__class__.__name__}: {exc})") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise BadKey(f"{where}: not a regular file; a key file holds one key as text")
        if info.st_size > MAX_KEY_FILE_BYTES:
            raise BadKey(f"{where}: {info.st_size} bytes is too large for a key file "
                         f"(at most {MAX_KEY_FILE_BYTES})")
        data = f.read(MAX_KEY_FILE_BYTES + 1)
    if len(data) > MAX_KEY_FILE_BYTES:  # it grew after fstat
        raise BadKey(f"{where}: too large for a key file (at most {MAX_KEY_FILE_BYTES})")
    try:
        return data.decode("ascii"), stat.S_IMODE(info.st_mode)
    except UnicodeDecodeError:
        raise BadKey(f"{where}: holds raw bytes, not a key written as text: "
                     "expected 64 hex digits or base64 (see `convlog keys generate`)"
                     ) from None
