"""In-memory storage (``memory://``): eventsourcing's POPO persistence plus the
message-id index, for tests and throwaway hosts. Nothing survives the process."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any
from uuid import UUID

import msgspec
from eventsourcing.persistence import ApplicationRecorder, IntegrityError, StoredEvent
from eventsourcing.popo import POPOApplicationRecorder, POPOFactory

from convlog.crypto.keyring import KeyRow
from convlog.storage.recorder import PortableRows
from convlog.storage.requests import Answer
from convlog.storage.token_counts import MemoryTokenCounts


class POPOConvlogRecorder(POPOApplicationRecorder, MemoryTokenCounts, PortableRows):
    def __init__(self) -> None:
        POPOApplicationRecorder.__init__(self)
        MemoryTokenCounts.__init__(self)
        self._message_ids: set[tuple[UUID, str]] = set()
        self._keys: dict[str, KeyRow] = {}
        self._answers: dict[str, Answer] = {}
        self._identity = uuid.uuid4().hex

    def store_identity(self) -> str:
        """See convlog.storage.sqlite.SQLiteConvlogRecorder.store_identity."""
        return self._identity

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

    def index_entries(self, conversation: UUID) -> list[str]:
        """See SQLiteConvlogRecorder.index_entries."""
        with self._database_lock:
            return sorted(m for c, m in self._message_ids if c == conversation)

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


    # ------------------------------------------------- key table (see sqlite_keys)

    def key_rows(self) -> list[KeyRow]:
        with self._database_lock:
            return list(self._keys.values())

    def add_key(self, row: KeyRow) -> bool:
        with self._database_lock:
            if row.key_id in self._keys or any(
                    r.kind == row.kind and r.user == row.user and r.wrapped is not None
                    for r in self._keys.values()):
                return False
            self._keys[row.key_id] = row
            return True

    def destroy_keys(self, user: str, at: str) -> list[str]:
        with self._database_lock:
            ids = [k for k, r in self._keys.items()
                   if r.kind == "data" and r.user == user and r.wrapped is not None]
            for key_id in ids:
                self._keys[key_id] = self._keys[key_id]._replace(wrapped=None, destroyed_at=at)
            return ids

    def replace_wrapped(self, rows: Sequence[tuple[str, bytes]]) -> None:
        with self._database_lock:
            for key_id, wrapped in rows:
                self._keys[key_id] = self._keys[key_id]._replace(wrapped=wrapped)

    def has_events(self) -> bool:
        return bool(self.max_notification_id())

    def streams_of_user(self, user: str) -> list[UUID]:
        return [UUID(str(n.originator_id)) for n in self.select_notifications(1, 1 << 62)
                if ((n.originator_version == 1 and n.topic == "session_started")
                    or n.topic == "conversation_forked")
                and msgspec.json.decode(n.state).get("user") == user]

    def all_streams(self) -> list[UUID]:
        return [UUID(str(n.originator_id)) for n in self.select_notifications(1, 1 << 62)
                if n.originator_version == 1 or n.topic == "conversation_forked"]

    def rewrite_states(self, stream: UUID, states: Sequence[tuple[int, bytes]],
                       snapshot_table: str | None) -> None:
        with self._database_lock:
            index = self._stored_events_index[str(stream)]
            for version, state in states:
                old = self._stored_events[index[version]]
                self._stored_events[index[version]] = StoredEvent(
                    originator_id=old.originator_id, originator_version=version,
                    topic=old.topic, state=state)

    def find_answer(self, scope: str, now: float) -> Answer | None:
        """See convlog.storage.requests (nothing outlives the process: no expiry)."""
        with self._database_lock:
            return self._answers.get(scope)

    def keep_answer(self, scope: str, found: Answer, now: float) -> Answer:
        with self._database_lock:
            return self._answers.setdefault(scope, found)

    def answer_rows(self) -> list[tuple[str, Answer, float]]:
        """See convlog.storage.requests (no times kept: 0.0 each)."""
        with self._database_lock:
            return [(scope, answer, 0.0) for scope, answer in self._answers.items()]

    def drop_answers(self) -> None:
        with self._database_lock:
            self._answers.clear()

    def erase(self, vacuum: bool = False) -> None:
        """Nothing outlives the process: nothing to erase."""


class Factory(POPOFactory):
    def application_recorder(self) -> ApplicationRecorder:
        return POPOConvlogRecorder()
