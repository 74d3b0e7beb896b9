"""The whole log as one ordered feed, for exporters that follow it (`convlog export
--otel`): every recorded event after a position, with its conversation's key.

Positions are the store's notification ids (SQLite row ids, PostgreSQL notification
ids, which may have gaps): the views track the same numbers, so an exporter keeps a
tracking position exactly as they do. Events are decoded as every reader decodes
them: content opened with the store's key, a forgotten user's content replaced by
``[forgotten]``. One transaction's events are contiguous and share their time;
`read` never ends inside one unless the transaction alone is longer than `limit`.
"""

from __future__ import annotations

from collections import OrderedDict
from uuid import UUID

import msgspec

from convlog.domain.events import AnyEvent, ConversationStarted
from convlog.services.application import Application
from convlog.storage.errors import CorruptEvent

KEY_CACHE = 4096


class FeedEvent(msgspec.Struct, frozen=True, kw_only=True):
    position: int
    """The event's place in the whole log (increasing, maybe with gaps)."""
    stream: UUID
    key: str
    version: int
    """Its place in its conversation (1 = session_started)."""
    event: AnyEvent


class EventFeed:
    """Reads the log in order; remembers the keys of recently seen conversations."""

    def __init__(self, app: Application):
        self._store = app.store
        self._starts: OrderedDict[UUID, ConversationStarted] = OrderedDict()

    def last_position(self) -> int:
        """The newest event's position (0 for an empty log)."""
        return self._store.index.max_notification_id() or 0

    def wait(self, timeout: float) -> None:
        """Return when new events may exist (PostgreSQL: at once on NOTIFY)."""
        self._store.wait_for_changes(timeout)

    def read(self, after: int, limit: int) -> list[FeedEvent]:
        """Up to about `limit` events after position `after`, whole transactions only
        (the last one is left for the next read when the page may have cut it)."""
        rows = self._store.index.select_raw(after, limit)
        while len(rows) >= limit:  # the page may end inside a transaction
            tail = _tail_start(rows)
            if tail > 0:
                rows = rows[:tail]
                break
            more = self._store.index.select_raw(rows[-1][0], limit)
            if not more:
                break
            rows += more  # one transaction longer than a page: read all of it
        decode = self._store.codec.decode_row
        out = []
        for position, stream_hex, version, topic, state in rows:
            stream = UUID(hex=stream_hex)
            event = decode(stream, version, topic, state.encode())
            out.append(FeedEvent(position=position, stream=stream,
                                 key=self.start(stream, event).key, version=version,
                                 event=event))
        return out

    def start(self, stream: UUID, event: object = None) -> ConversationStarted:
        """The `session_started` of a conversation: its key, user, agent, channel."""
        found = self._starts.get(stream)
        if found is None:
            if isinstance(event, ConversationStarted):
                found = event
            else:
                first = self._store.first_event(stream)  # its own, not a fork's parent's
                if not isinstance(first, ConversationStarted):
                    raise CorruptEvent(stream, 1, "session_started",
                                       "the conversation has no session_started")
                found = first
            self._starts[stream] = found
            if len(self._starts) > KEY_CACHE:
                self._starts.popitem(last=False)
        else:
            self._starts.move_to_end(stream)
        return found


def _tail_start(rows: list[tuple[int, str, int, str, str]]) -> int:
    """Where the page's last transaction starts: the run of rows of its last stream
    with consecutive versions and the same time. 0 if that is the whole page."""
    last = rows[-1]
    at = _at(last[4])
    i = len(rows) - 1
    while i > 0:
        prev = rows[i - 1]
        if prev[1] != last[1] or prev[2] != rows[i][2] - 1 or _at(prev[4]) != at:
            break
        i -= 1
    return i


class _At(msgspec.Struct):
    at: str = ""


_AT = msgspec.json.Decoder(_At)


def _at(state: str) -> str:
    """The time an event was recorded (a public field, sealed or not)."""
    try:
        return _AT.decode(state).at
    except msgspec.DecodeError:
        return ""
