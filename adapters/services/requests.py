"""A request's idempotency key, carried into the write the request makes.

An HTTP POST sent again under the same `Idempotency-Key` must record nothing again,
on any server of the database and after a restart (issue 42). So the write a keyed
request makes carries a mark of the key in the SAME transaction as its events: an
entry in the conversation's message-id index under `PREFIX` + the key's digest (a
prefix no host message id can collide with by accident, and nothing but dedupe
reads the index). A second write under the same key conflicts on that entry, and
`Writer` raises `RequestRecorded` instead of recording anything: the caller answers
with the first request's answer, kept in the store once it was made.

The key travels in a context variable (`recording`), so the services and the facade
keep their signatures; `asyncio.to_thread` and anyio's worker threads copy it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from convlog.domain.errors import ConvlogError
from convlog.storage.requests import Answer

__all__ = ["PREFIX", "Answer", "Claim", "RequestRecorded", "current", "recording"]
# Answer: a kept answer, for the HTTP service (which reaches storage through here)

PREFIX = "\x1frequest:"


class RequestRecorded(ConvlogError):
    """The write of a request under this idempotency key was recorded already."""


@dataclass
class Claim:
    entry: str
    """The index entry that marks the request's write."""
    used: bool = False
    """Its write was saved: a later write of the same request carries no mark."""


_current: ContextVar[Claim | None] = ContextVar("convlog_request", default=None)


@contextmanager
def recording(digest: str) -> Iterator[Claim]:
    """Writes made inside carry the mark of the request whose key's digest this is."""
    claim = Claim(PREFIX + digest)
    token = _current.set(claim)
    try:
        yield claim
    finally:
        _current.reset(token)


def current() -> Claim | None:
    """The request being recorded, when its write has not been saved yet."""
    claim = _current.get()
    return None if claim is None or claim.used else claim
