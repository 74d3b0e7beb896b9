"""Errors of the outside world: storage, URLs, stored data that cannot be read."""

from __future__ import annotations

from uuid import UUID

from convlog.domain.errors import ConvlogError


class StorageError(ConvlogError):
    """The event store could not be opened, read or written."""


class StorageUnavailable(StorageError):
    """The database cannot be reached now (an outage, a restart): worth retrying
    later, unlike a broken file or a corrupt event. Followers wait it out."""


class UnsupportedURL(StorageError, ValueError):
    """A storage URL convlog cannot use, with the forms it accepts."""


class CorruptEvent(StorageError):
    """A stored event that cannot be decoded: names the stream, position and topic."""

    def __init__(self, originator_id: UUID | str, version: int, topic: str, detail: str):
        self.originator_id = originator_id
        self.version = version
        self.topic = topic
        super().__init__(
            f"stored event {topic!r} at position {version} of stream {originator_id} "
            f"cannot be decoded: {detail}"
        )


class WriteLockBusy(StorageError):
    """Another process holds the store's write lock, and the caller asked not to wait
    for it (`ConversationStore.not_waiting`): nothing was written."""


class ConcurrencyError(StorageError):
    """Other writers kept winning the race for a conversation; nothing was written."""
