"""In-memory storage (``memory://``): eventsourcing's POPO persistence plus the
message-id index, for tests and throwaway hosts. Nothing survives the process."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from eventsourcing.persistence import ApplicationRecorder, IntegrityError, StoredEvent
from eventsourcing.popo import POPOApplicationRecorder, POPOFactory


class POPOConvlogRecorder(POPOApplicationRecorder):
    def __init__(self) -> None:
        super().__init__()
        self._message_ids: set[tuple[UUID, str]] = set()

    def _insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        with self._database_lock:
            message_ids: tuple[UUID, Sequence[str]] | None = kwargs.get("message_ids")
            rows = [(message_ids[0], m) for m in message_ids[1]] if message_ids else []
            if any(row in self._message_ids for row in rows) or len(set(rows)) < len(rows):
                msg = "message id already recorded in this conversation"
                raise IntegrityError(msg)
            ids = super()._insert_events(stored_events, **kwargs)
            self._message_ids.update(rows)
            return ids

    def known_message_ids(self, conversation: UUID, message_ids: Sequence[str]) -> set[str]:
        with self._database_lock:
            return {m for m in message_ids if (conversation, m) in self._message_ids}

    def select_raw(self, after: int, limit: int) -> list[tuple[int, str, int, str, str]]:
        """See SQLiteConvlogRecorder.select_raw."""
        return [(n.id, UUID(str(n.originator_id)).hex, n.originator_version, n.topic,
                 n.state.decode("utf-8", "replace")) for n in self.select_notifications(
                     after + 1, limit)]

    def select_tail(self, originator_id: UUID, topics: Sequence[str], limit: int
                    ) -> list[tuple[int, str, bytes]]:
        """See SQLiteConvlogRecorder.select_tail."""
        found: list[tuple[int, str, bytes]] = []
        for stored in self.select_events(originator_id, desc=True):
            if stored.topic in topics:
                found.append((stored.originator_version, stored.topic, stored.state))
                if len(found) == limit:
                    break
        return found


class Factory(POPOFactory):
    def application_recorder(self) -> ApplicationRecorder:
        return POPOConvlogRecorder()
