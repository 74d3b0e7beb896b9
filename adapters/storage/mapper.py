"""Maps convlog events to eventsourcing's stored events and back, with msgspec.

The stock eventsourcing Mapper stores `module:qualname` topics and needs `__dict__`
events; ours stores each event under its stable name (plus ``@N`` for class version
N > 1), encodes msgspec Structs directly, and decodes with a typed decoder built once
per event type, so datetimes, UUIDs and Decimals round-trip exactly.

Codec: JSON, chosen by measurement (`make bench`, "codec" rows of bench.core, run on
2026-11-21): msgpack encodes a typical message event 1.0-1.3x faster, decodes it
1.1-1.2x faster and is 10-15% smaller, but either costs about a microsecond, and
the whole mapper 2-3 us, against ~100 us for one append (p50). JSON keeps the
stored state readable with `sqlite3`/`psql` when debugging a production database,
and lets the DuckDB views parse it in SQL (convlog.projections.views). Readability
and SQL access win over a few percent of an append.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import msgspec
from eventsourcing.persistence import Mapper, StoredEvent, Transcoder

from convlog.crypto.errors import UnknownDataKey
from convlog.domain.conversation import Conversation
from convlog.domain.events import EVENT_TYPES, Event, MessageAppended
from convlog.storage.errors import CorruptEvent
from convlog.storage.raw_items import Lean as Lean
from convlog.storage.raw_items import RawEntry as RawEntry
from convlog.storage.raw_items import RawItem as RawItem
from convlog.storage.raw_items import RawJson as RawJson
from convlog.storage.raw_items import json_item
from convlog.storage.sealed import SNAPSHOT_TOPIC as SNAPSHOT_TOPIC
from convlog.storage.sealed import Sealer, SealError, sealed_at


@dataclass(frozen=True, slots=True)
class Envelope:
    """What eventsourcing stores: a convlog event (or a state snapshot) at a position
    of a stream. The domain never sees this class."""

    originator_id: UUID
    originator_version: int
    event: Any  # an Event, or a Conversation for snapshots


def topic_of(cls: type[Event]) -> str:
    name = cls.event_name()
    return name if cls.class_version == 1 else f"{name}@{cls.class_version}"


def all_topics(cls: type[Event]) -> list[str]:
    """Every topic this event type was ever stored under (for topic filters)."""
    name = cls.event_name()
    return [name] + [f"{name}@{v}" for v in range(2, cls.class_version + 1)]


def _parse_topic(topic: str) -> tuple[str, int]:
    name, _, version = topic.partition("@")
    return name, int(version) if version else 1


class _NullTranscoder(Transcoder):
    """eventsourcing wants a transcoder; msgspec does the work, so this one is unused."""

    def encode(self, obj: Any) -> bytes:
        raise NotImplementedError

    def decode(self, data: bytes) -> Any:
        raise NotImplementedError


class MsgspecMapper(Mapper[UUID]):
    def __init__(self) -> None:
        super().__init__(transcoder=_NullTranscoder())
        self._encoder = msgspec.json.Encoder(decimal_format="number")
        self._by_name: dict[str, type[Event]] = {c.event_name(): c for c in EVENT_TYPES}
        decodable: list[type[Any]] = [*EVENT_TYPES, Conversation]
        self._decoders: dict[type[Any], msgspec.json.Decoder[Any]] = {
            c: msgspec.json.Decoder(c) for c in decodable
        }
        self._untyped = msgspec.json.Decoder()
        self._topics: dict[type[Any], str] = {c: topic_of(c) for c in EVENT_TYPES}
        self._topics[Conversation] = SNAPSHOT_TOPIC
        self._current = {topic: self._decoders[cls] for cls, topic in self._topics.items()}
        self._lean: dict[Lean, msgspec.json.Decoder[Any]] = {
            shape: msgspec.json.Decoder(shape) for shape in (RawItem, RawEntry, RawJson)}
        self._message_topic = self._topics[MessageAppended]
        self.sealer: Sealer | None = None
        """Set by the application on an encrypted store (convlog.storage.sealed)."""

    def to_stored_event(self, domain_event: Any) -> StoredEvent:
        assert isinstance(domain_event, Envelope), domain_event
        payload = domain_event.event
        user = payload.user if isinstance(payload, Conversation) else None  # a snapshot
        return self.store(domain_event.originator_id, domain_event.originator_version,
                          payload, user)

    def store(self, originator_id: UUID, version: int, payload: Any,
              user: str | None = None) -> StoredEvent:
        """The stored form of one event (or snapshot) at `version` of a stream; on an
        encrypted store its private fields are sealed under `user`'s data key."""
        topic, state = self.encode(originator_id, version, payload, user)
        return StoredEvent(originator_id=originator_id, originator_version=version,
                           topic=topic, state=state)

    def encode(self, originator_id: UUID, version: int, payload: Any,
               user: str | None = None) -> tuple[str, bytes]:
        """`store`'s (topic, state), without the StoredEvent: for a recorder that
        takes plain rows (SQLite's `insert_rows`)."""
        topic = self._topics[type(payload)]
        if self.sealer is not None:
            state = self.sealer.seal(originator_id, version, topic, payload, user)
            if state is not None:
                return topic, state
        return topic, self._encoder.encode(payload)

    def rows(self, originator_id: UUID, first_version: int, events: Sequence[Any],
             user: str | None = None) -> list[tuple[str, int, str, bytes]]:
        """`encode` of consecutive events from `first_version`, as the plain rows
        (stream hex, version, topic, state) of `insert_rows`: one call a batch, the
        topic and encoder looked up once (the per-event call and tuple unpacking were
        ~0.3 us an event of an append; issue 30). The same bytes as `encode`."""
        stream = originator_id.hex
        if self.sealer is not None:
            encode = self.encode
            return [(stream, v, *encode(originator_id, v, e, user))
                    for v, e in enumerate(events, first_version)]
        topics, state = self._topics, self._encoder.encode
        return [(stream, v, topics[type(e)], state(e))
                for v, e in enumerate(events, first_version)]

    def to_domain_event(self, stored_event: StoredEvent) -> Any:
        originator_id = stored_event.originator_id
        if not isinstance(originator_id, UUID):
            originator_id = UUID(str(originator_id))
        return Envelope(originator_id, stored_event.originator_version, self.decode(stored_event))

    def decode(self, stored: StoredEvent) -> Any:
        """Decode a stored event's payload, upcasting older versions; typed errors only."""
        return self.decode_row(stored.originator_id, stored.originator_version,
                               stored.topic, stored.state)

    def decode_row(self, originator_id: Any, version: int, topic: str, state: bytes) -> Any:
        """`decode` for a row read as plain values: no StoredEvent is built unless the
        row needs more than one typed decode (reads of a page of messages)."""
        if self.sealer is not None:  # only an encrypted store has sealed rows
            at = sealed_at(state)
            if at >= 0:
                state = self._open_sealed(originator_id, version, topic, state, at)
        current = self._current.get(topic)
        if current is not None:  # the common case: a current version, one typed decode
            try:
                return current.decode(state)
            except Exception:
                pass
        return self._decode_slowly(StoredEvent(originator_id=originator_id,
                                               originator_version=version, topic=topic,
                                               state=state))

    def content_readable(self, state: bytes) -> bool:
        """Whether this process can read the private fields of a stored state: a plain
        one always; a sealed one only with its data key (a forgotten user's content,
        or a store opened without its key, reads as placeholders, which nothing
        derived from the content, such as a token count, may be made from)."""
        at = sealed_at(state)
        if at < 0:
            return True
        return self.sealer is not None and self.sealer.can_open(state, at)

    def decode_item(self, originator_id: Any, version: int, topic: str, state: bytes,
                    shape: Lean = RawItem) -> Any:
        """`decode_row`, except that a current `message_appended` row carrying an SDK
        item comes back as a `RawItem` (id and item only). Anything else (older
        versions that need an upcaster, messages without `raw`, other events) is
        decoded in full, so what callers get is never less than the stored truth.
        `shape`: the lean row to hand back (a `RawEntry`: id and item; a `RawJson`: id
        and the item's JSON, undecoded)."""
        if topic == self._message_topic:
            if self.sealer is not None:
                at = sealed_at(state)
                if at >= 0:
                    state = self._open_sealed(originator_id, version, topic, state, at)
            try:
                item: RawItem | RawEntry | RawJson = self._lean[shape].decode(state)
                if item.raw is not None and (shape is not RawJson or json_item(item.raw)):
                    return item
            except Exception:
                pass  # decoded in full below, with its typed error if it is corrupt
        return self.decode_row(originator_id, version, topic, state)

    def decode_items(self, originator_id: Any, rows: Sequence[tuple[int, str, bytes]],
                     shape: Lean = RawItem) -> list[tuple[int, Any]]:
        """(version, `decode_item`) of each (version, topic, state) row: a page of a
        backwards walk, where the caller needs the versions."""
        return list(zip([row[0] for row in rows],
                        self.decode_events(originator_id, rows, shape), strict=True))

    def decode_events(self, originator_id: Any, rows: Iterable[tuple[int, str | None, bytes]],
                      shape: Lean = RawItem) -> list[Any]:
        """`decode_item` of each (version, topic, state) row, in one loop and without
        the versions: a whole session's `get_items()` decodes every row, and a call
        per row was a tenth of it, a (version, event) pair per row another few
        percent (issue 30). Sealed rows take `decode_item`'s way. `shape`: as
        `decode_item`. A row whose topic is None is a current `message_appended`
        (the recorder's ``NULLIF``: no topic string per row)."""
        message_topic = self._message_topic
        if self.sealer is not None:
            decode_item = self.decode_item
            return [decode_item(originator_id, version, topic or message_topic, state, shape)
                    for version, topic, state in rows]
        lean, decode_row = self._lean[shape].decode, self.decode_row
        present = json_item if shape is RawJson else None
        out: list[Any] = []
        append = out.append
        for version, topic, state in rows:
            if topic is None or topic == message_topic:
                try:
                    item = lean(state)
                except Exception:
                    pass  # decoded in full below, with its typed error
                else:
                    if item.raw is not None and (present is None or present(item.raw)):
                        append(item)
                        continue
                topic = message_topic
            append(decode_row(originator_id, version, topic, state))
        return out

    def _open_sealed(self, originator_id: Any, version: int, topic: str, state: bytes,
                     at: int) -> bytes:
        assert self.sealer is not None
        stream = originator_id if isinstance(originator_id, UUID) else UUID(str(originator_id))
        try:
            return self.sealer.open(stream, version, topic, state, at)
        except (SealError, UnknownDataKey) as exc:
            raise CorruptEvent(originator_id, version, topic, str(exc)) from None

    def _decode_slowly(self, stored: StoredEvent) -> Any:
        """An older version (upcast), a snapshot, or bytes that failed the typed decode."""
        if self.sealer is None and sealed_at(stored.state) >= 0:
            raise CorruptEvent(stored.originator_id, stored.originator_version, stored.topic,
                               "the event is encrypted but this store has no key table")
        try:
            if stored.topic == SNAPSHOT_TOPIC:
                return self._decoders[Conversation].decode(stored.state)
            name, version = _parse_topic(stored.topic)
            cls = self._by_name[name]
            if version == cls.class_version:
                return self._decoders[cls].decode(stored.state)
            if version > cls.class_version:
                msg = f"written by a newer convlog (version {version} > {cls.class_version})"
                raise ValueError(msg)
            if version < 1:
                raise ValueError(f"no class version {version} exists")
            state = self._untyped.decode(stored.state)
            if not isinstance(state, dict):
                raise ValueError("stored state is not an object")
            for v in range(version, cls.class_version):
                getattr(cls, f"upcast_v{v}_v{v + 1}")(state)
            return msgspec.convert(state, cls, strict=False)
        except KeyError:
            raise CorruptEvent(stored.originator_id, stored.originator_version, stored.topic,
                               "unknown event type") from None
        except Exception as exc:  # stored bytes are untrusted: any failure is corruption
            detail = str(exc) or type(exc).__name__
            raise CorruptEvent(stored.originator_id, stored.originator_version, stored.topic,
                               detail[:300]) from None
