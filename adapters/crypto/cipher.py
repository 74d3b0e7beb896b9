"""AES-GCM, as convlog stores it: sealed payloads, wrapped data keys, the key check.

WARNING: this module is a STORED FORMAT (golden files in tests/golden/crypto_*).

A sealed payload is ``0x01 | key id (16) | nonce (12) | ciphertext + tag (16)``:
the version byte says how to read the rest, the key id names the data key in the
store's key table (so a reader never guesses a key), and the nonce is random per
payload (96 bits: ~2^32 payloads per key before a repeat gets likely; a data key
belongs to one user). The associated data (authenticated, not stored) binds the
payload to its place: the stream id, the position in the stream, the stored event
name and the event's unencrypted fields. A payload moved to another row, another
stream or next to altered public fields fails authentication.

A wrapped data key is ``0x01 | nonce (12) | ciphertext + tag``: the data key under
the master key, bound to the store id, its key id and its user.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING
from uuid import UUID

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

FORMAT = 1
KEY_ID_BYTES = 16
NONCE_BYTES = 12
TAG_BYTES = 16
HEADER_BYTES = 1 + KEY_ID_BYTES + NONCE_BYTES
CHECK_PLAINTEXT = b"convlog key check"


class Unauthentic(Exception):
    """Decryption failed: wrong key, or the bytes or their place were changed."""


_AAD_PREFIX = b"convlog/payload/1\x00"


# `cryptography` loads when a key is first used, not with convlog: a host whose store
# is not encrypted never pays its ~10 ms of import and its resident memory. An
# `except` clause evaluates its class only when an exception is on its way.
def aesgcm(key: bytes) -> AESGCM:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    return AESGCM(key)


def new_key() -> bytes:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    return AESGCM.generate_key(256)


def _invalid_tag() -> type[Exception]:
    from cryptography.exceptions import InvalidTag

    return InvalidTag


def payload_aad(stream: UUID, version: int, topic: str, public: bytes | memoryview) -> bytes:
    """The associated data of a payload: its place, its event name, its public JSON
    (as stored: everything before the sealed field)."""
    return b"".join((_AAD_PREFIX, stream.bytes, version.to_bytes(8, "big"), topic.encode(),
                     b"\x00", public))


def seal(aead: AESGCM, key_id: bytes, plaintext: bytes, aad: bytes) -> bytes:
    """The payload of `plaintext`; `aad` is authenticated after the header."""
    nonce = os.urandom(NONCE_BYTES)
    header = bytes((FORMAT,)) + key_id + nonce
    return header + aead.encrypt(nonce, plaintext, header + aad)


def open_payload(aead: AESGCM, blob: bytes, stream: UUID, version: int, topic: str,
                 public: memoryview) -> bytes:
    """`unseal(aead, blob, payload_aad(...))` in one step: the read path of every
    encrypted event, so it builds the associated data once, header included."""
    try:
        return aead.decrypt(blob[1 + KEY_ID_BYTES:HEADER_BYTES], blob[HEADER_BYTES:], b"".join((
            blob[:HEADER_BYTES], _AAD_PREFIX, stream.bytes, version.to_bytes(8, "big"),
            topic.encode(), b"\x00", public)))
    except _invalid_tag():
        raise Unauthentic("authentication failed: the payload was altered, or moved from "
                          "another position, stream or store") from None


def key_id_of(blob: bytes) -> bytes:
    """The data key id a sealed payload names (checked for shape, not authenticity)."""
    if len(blob) < HEADER_BYTES + TAG_BYTES:
        raise Unauthentic(f"a sealed payload has at least {HEADER_BYTES + TAG_BYTES} bytes, "
                          f"this one {len(blob)}")
    if blob[0] != FORMAT:
        raise Unauthentic(f"unknown sealed payload format {blob[0]} (this convlog reads "
                          f"{FORMAT}): written by a newer convlog?")
    return blob[1:1 + KEY_ID_BYTES]


def unseal(aead: AESGCM, blob: bytes, aad: bytes) -> bytes:
    key_id_of(blob)
    header = blob[:HEADER_BYTES]
    try:
        return aead.decrypt(blob[1 + KEY_ID_BYTES:HEADER_BYTES], blob[HEADER_BYTES:],
                            header + aad)
    except _invalid_tag():
        raise Unauthentic("authentication failed: the payload was altered, or moved from "
                          "another position, stream or store") from None


def _key_aad(store_id: str, key_id: str, user: str) -> bytes:
    return b"".join((b"convlog/key/1\x00", store_id.encode(), b"\x00", key_id.encode(),
                     b"\x00", user.encode()))


def wrap(master: bytes, data_key: bytes, *, store_id: str, key_id: str, user: str) -> bytes:
    nonce = os.urandom(NONCE_BYTES)
    return bytes((FORMAT,)) + nonce + aesgcm(master).encrypt(
        nonce, data_key, _key_aad(store_id, key_id, user))


def unwrap(master: bytes, wrapped: bytes, *, store_id: str, key_id: str, user: str) -> bytes:
    if len(wrapped) < 1 + NONCE_BYTES + TAG_BYTES or wrapped[0] != FORMAT:
        raise Unauthentic(f"wrapped key {key_id} has an unknown format")
    try:
        return aesgcm(master).decrypt(wrapped[1:1 + NONCE_BYTES], wrapped[1 + NONCE_BYTES:],
                                      _key_aad(store_id, key_id, user))
    except _invalid_tag():
        raise Unauthentic(f"wrapped key {key_id} does not open with this master key") from None


def check_value(master: bytes, store_id: str) -> bytes:
    """What the store keeps to recognise its master key: a known text sealed under it."""
    nonce = os.urandom(NONCE_BYTES)
    return bytes((FORMAT,)) + nonce + aesgcm(master).encrypt(
        nonce, CHECK_PLAINTEXT, b"convlog/check/1\x00" + store_id.encode())


def opens(master: bytes, store_id: str, check: bytes) -> bool:
    """True when `master` is the key `check` was made with, for this store."""
    try:
        plain = aesgcm(master).decrypt(check[1:1 + NONCE_BYTES], check[1 + NONCE_BYTES:],
                                       b"convlog/check/1\x00" + store_id.encode())
    except (_invalid_tag(), ValueError):
        return False
    return plain == CHECK_PLAINTEXT
