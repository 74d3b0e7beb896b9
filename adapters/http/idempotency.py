"""The `Idempotency-Key` header: a retried POST is answered, never applied again.

Every POST takes the header. The answer of the first request under a key is kept in
the store once the request succeeded (the application's `requests.keep`, kept 24
hours), and a retry with the same body gets it back, status and body, with
``Idempotent-Replayed: true``, from every server on the database and after a restart;
the same key with another body is a 422, as the IETF idempotency-key draft asks. A
request that was refused (401, 403, 404, 409, 422...) keeps nothing, so a stream of
refused requests writes nothing.

Nothing is recorded twice even when a retry races the first request, or the first
server died between its write and keeping its answer: the write carries a mark of
the key in its own transaction (convlog.services.requests), and a second write under
the key is refused inside the store. Such a retry waits briefly for the first answer,
and otherwise answers 409 `request-in-progress` (retry later; nothing was recorded
again). In a turn, a message without an `id` also gets one derived from the key
(``KEY#0``, ``KEY#1``...).
"""

from __future__ import annotations

import hashlib

from convlog.domain.errors import InvalidInput

HEADER = "Idempotency-Key"
REUSED = "this Idempotency-Key was used for a different request"
MAX_KEY_CHARS = 255


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


def fingerprint(method: str, path: str, body: bytes) -> str:
    """What identifies a request's content under its key (hex)."""
    return hashlib.sha256(b"%s %s\n%s" % (method.encode(), path.encode(), body)).hexdigest()
