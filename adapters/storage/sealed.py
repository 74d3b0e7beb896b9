"""Sealed events: the private fields of an event encrypted, the rest left readable.

WARNING: this module is a STORED FORMAT (tests/golden/crypto_*.json).

In an encrypted store, an event's stored JSON keeps its PUBLIC fields as they are
(type, time, ids, role, model, agent, token counts, costs, strategies, latencies,
the user and the conversation key) and replaces its PRIVATE fields (`SEALED_FIELDS`:
message content and tool calls, titles, workspaces, metadata, injected and summary
text, error and reason texts) with one last field::

    {"type":"message_appended",...public fields...,"$sealed":"<base64 payload>"}

where the payload (convlog.crypto.cipher) is the private fields' JSON sealed under the
conversation user's data key, bound to the stream, the position, the event name and
the public JSON. Why split rather than encrypt whole events: counts, tokens, costs
and telemetry must survive a user's erasure (the issue's rule), and the DuckDB views
keep reading public fields in SQL without ever holding a key or any content.

One private field keeps a public copy: `metadata.client`, the host application's name
(an ACP client, a bot), which the catalog and resume telemetry group by. The public
JSON then carries ``"metadata":{"client":...}`` and the sealed one the whole
metadata; the merged JSON a reader decodes names `metadata` twice, and the later
(sealed, whole) one wins in msgspec's decoding (tested by the property tests).

Forgotten payloads (the data key destroyed) read back with their public fields and a
"[forgotten]" placeholder for required private fields, so a transcript shows where
content was, never an error.
"""

from __future__ import annotations

import binascii
from datetime import datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

import msgspec

from convlog.crypto import cipher
from convlog.crypto.errors import UnknownDataKey
from convlog.crypto.keyring import Keyring

SNAPSHOT_TOPIC = "conversation_state"
FORGOTTEN = "[forgotten]"
# Every event type is listed, those with nothing private too, and a test checks it:
# a new event type must say what of it is sealed, or its text would go to disk readable.
SEALED_FIELDS: dict[str, frozenset[str]] = {
    "session_started": frozenset({"title", "workspace", "metadata"}),
    "message_appended": frozenset({"content", "tool_calls", "raw"}),
    "message_retracted": frozenset({"reason"}),
    "history_injected": frozenset({"text"}),
    "memory_injected": frozenset({"memory_ids", "text"}),
    "summary_recorded": frozenset({"text"}),
    "resume_failed": frozenset({"error"}),
    "session_archived": frozenset({"reason"}),
    "conversation_cleared": frozenset({"reason"}),
    "native_session_bound": frozenset(),
    "resume_attempted": frozenset(),
    "resume_succeeded": frozenset(),
    "session_reactivated": frozenset(),
    "user_forgotten": frozenset(),  # who asked and when, never what
    "agent_session_closed": frozenset(),
    "conversation_deleted": frozenset({"reason"}),
    "title_changed": frozenset({"title", "update"}),
    "context_window_reported": frozenset({"update"}),  # the agent's own payload (_meta)
    "memory_policy_set": frozenset(),
    "preamble_sent": frozenset({"text", "blocks"}),
    "retention_policy_set": frozenset(),
    "conversation_erased": frozenset(),  # why, never what
    "retention_cap_reached": frozenset(),
    "history_compacted": frozenset({"text", "reason"}),
    "history_rewound": frozenset({"reason"}),
    "conversation_forked": frozenset({"title", "workspace", "metadata"}),
    SNAPSHOT_TOPIC: frozenset({"title", "workspace", "recent_memories"}),
}
_PLACEHOLDERS: dict[str, bytes] = {  # required private fields, once forgotten
    "message_appended": b'"content":"[forgotten]"',
    "history_injected": b'"text":"[forgotten]"',
    "memory_injected": b'"memory_ids":[],"text":"[forgotten]"',
    "summary_recorded": b'"text":"[forgotten]"',
    "history_compacted": b'"text":"[forgotten]"',
    "title_changed": b'"title":"[forgotten]"',
    "preamble_sent": b'"text":"[forgotten]"',
}
MARK = b',"$sealed":"'
_MARK_LEN = len(MARK)
_MIN_BLOB = cipher.HEADER_BYTES + cipher.TAG_BYTES
_KEY_END = 1 + cipher.KEY_ID_BYTES
_BUILTINS = (datetime, Decimal, UUID)


class SealError(Exception):
    """A sealed state that cannot be opened (the mapper makes it a CorruptEvent)."""


def sealed_at(state: bytes) -> int:
    """Where the sealed field starts in `state`, or -1 for a plain (unsealed) state.
    The field is always last and its value base64 (no quote), so a look from the end
    decides; a "$sealed" key inside a host's metadata cannot pass for it."""
    if not state.endswith(b'"}'):
        return -1
    at = state.rfind(MARK)
    if at < 0 or state.find(b'"', at + len(MARK), len(state) - 2) >= 0:
        return -1
    return at


class Sealer:
    def __init__(self, keyring: Keyring, encoder: msgspec.json.Encoder) -> None:
        self.keyring = keyring
        self._encode = encoder.encode
        self._ciphers = keyring.known  # the key ring's own cache: forgetting updates it

    def seal(self, stream: UUID, version: int, topic: str, payload: Any,
             user: str | None) -> bytes | None:
        """The sealed state of `payload`; None when it has nothing private to seal."""
        private = SEALED_FIELDS.get(topic.partition("@")[0])
        if not private:
            return None
        fields = msgspec.to_builtins(payload, builtin_types=_BUILTINS)
        secret = {k: v for k, v in fields.items() if k in private}  # in field order
        if not secret:
            return None
        for name in secret:
            del fields[name]
        client = secret.get("metadata", {}).get("client") if "metadata" in secret else None
        if isinstance(client, str):  # the host application's name stays readable
            fields["metadata"] = {"client": client}
        public = memoryview(self._encode(fields))[:-1]  # the closing brace comes last
        key_id, aead = self.keyring.key_for(user)
        blob = cipher.seal(aead, key_id, self._encode(secret),
                           cipher.payload_aad(stream, version, topic, public))
        return b"".join((public, MARK, binascii.b2a_base64(blob, newline=False), b'"}'))

    def can_open(self, state: bytes, at: int) -> bool:
        """Whether this process holds the key of the sealed `state` (its field at
        `at`): False when the key was destroyed (a forgotten user) or the store was
        opened without its key, where `open` gives placeholders."""
        try:
            blob = binascii.a2b_base64(memoryview(state)[at + _MARK_LEN:at + _MARK_LEN + 24])
        except (binascii.Error, ValueError):
            return False
        if len(blob) < _KEY_END:
            return False
        self.keyring.refresh()
        key_id = blob[1:_KEY_END]
        aead = self._ciphers.get(key_id)
        if aead is None and key_id not in self._ciphers:
            try:
                aead = self.keyring.cipher_of(key_id)
            except UnknownDataKey:
                return False
        return aead is not None

    def open(self, stream: UUID, version: int, topic: str, state: bytes, at: int) -> bytes:
        """The plain JSON of a sealed `state` (its field at `at`): public and private
        fields merged, or the public ones and placeholders when the key is destroyed.
        The hot path of reading an encrypted store: kept to a few C calls."""
        view = memoryview(state)
        public = view[:at]
        try:  # not strict: a stray character fails authentication below anyway
            blob = binascii.a2b_base64(view[at + _MARK_LEN:-2])
        except (binascii.Error, ValueError) as exc:
            raise SealError(f"sealed field is not base64 ({exc})") from None
        if len(blob) < _MIN_BLOB or blob[0] != cipher.FORMAT:
            try:
                cipher.key_id_of(blob)
            except cipher.Unauthentic as exc:
                raise SealError(str(exc)) from None
        key_id = blob[1:_KEY_END]
        self.keyring.refresh()  # another process may have forgotten this key's user
        aead = self._ciphers.get(key_id)
        if aead is None:
            aead = self.keyring.cipher_of(key_id)
            if aead is None:  # destroyed: the user was forgotten
                filler = _PLACEHOLDERS.get(topic.partition("@")[0])
                return b"".join((public, b",", filler, b"}")) if filler else bytes(public) + b"}"
        try:
            secret = cipher.open_payload(aead, blob, stream, version, topic, public)
        except cipher.Unauthentic as exc:
            raise SealError(str(exc)) from None
        return b"".join((public, b",", memoryview(secret)[1:]))
