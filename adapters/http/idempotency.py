"""The `Idempotency-Key` header: a retried POST is answered, not applied again.

Three layers. In the store: the first request under a key leaves its body's
fingerprint there (`ConversationLog.claim_request`, kept 24 hours), so the same key
with a different body is a 422, as the IETF idempotency-key draft asks, from every
server on the database and after a restart. Durable too: in a turn, a message
without an `id` gets one derived from the key (``KEY#0``, ``KEY#1``...), and message
ids are deduplicated by the log itself, so a retried turn appends nothing, even
through another server process. Per process: the answer to every POST with a key is
remembered (bounded, least recently used out first) and a retry with the same body
gets the same answer with ``Idempotent-Replayed: true``.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass

from convlog.domain.errors import InvalidInput

HEADER = "Idempotency-Key"
REUSED = "this Idempotency-Key was used for a different request"
MAX_KEY_CHARS = 255


@dataclass(frozen=True)
class Stored:
    fingerprint: bytes
    status: int
    body: bytes


def check_key(value: str | None) -> str | None:
    if value is None:
        return None
    if not value or len(value) > MAX_KEY_CHARS or not value.isprintable():
        raise InvalidInput(f"must be 1 to {MAX_KEY_CHARS} printable characters", field=HEADER)
    return value


def scope_digest(scope: tuple[str, ...]) -> str:
    """What the store keeps of (user, route, path, key): a digest, none of them."""
    return hashlib.sha256("\x00".join(scope).encode("utf-8", "surrogatepass")).hexdigest()


def message_id(key: str, index: int) -> str:
    """The id of the `index`th message of a turn sent under `key` without an id."""
    return f"{key}#{index}"


class IdempotencyCache:
    def __init__(self, size: int = 10_000):
        self.size = size
        self._lock = threading.Lock()
        self._answers: OrderedDict[tuple[str, ...], Stored] = OrderedDict()

    @staticmethod
    def fingerprint(method: str, path: str, body: bytes) -> bytes:
        return hashlib.sha256(b"%s %s\n%s" % (method.encode(), path.encode(), body)).digest()

    def get(self, scope: tuple[str, ...], fingerprint: bytes) -> Stored | None:
        with self._lock:
            found = self._answers.get(scope)
            if found is None:
                return None
            self._answers.move_to_end(scope)
        if found.fingerprint != fingerprint:
            raise InvalidInput(REUSED, field=HEADER)
        return found

    def put(self, scope: tuple[str, ...], stored: Stored) -> None:
        with self._lock:
            self._answers[scope] = stored
            self._answers.move_to_end(scope)
            while len(self._answers) > self.size:
                self._answers.popitem(last=False)
