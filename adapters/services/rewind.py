"""Rewind, the use case: back to a message, for the model, without deleting a word.

The message is found among the live messages of the epoch (after its latest
compaction), walking the log backwards from its newest event: inside the write's
retry loop, against the state being written to, as a retraction chooses its
message, so a turn appended meanwhile is counted among the abandoned or the write
retries. The decision (convlog.domain.conversation.decide_rewind) checks the range.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from convlog.domain.conversation import Command, Conversation, Rewind
from convlog.domain.errors import InvalidInput
from convlog.domain.events import HistoryRewound, MessageAppended
from convlog.domain.records import is_record
from convlog.services.items import newest_live
from convlog.services.writer import Writer

__all__ = ["Rewound", "rewind"]


class Rewound(msgspec.Struct, frozen=True, kw_only=True):
    """A rewind recorded: `abandoned` messages after `to_message_id` are gone for
    the model (the log keeps them)."""

    key: str
    version: int
    to_message_id: str
    to_version: int
    abandoned: int
    reason: str | None = None


def rewind(writer: Writer, key: str, to: str, reason: str | None) -> Rewound | None:
    """Rewind `key` to message `to`; None when nothing comes after it."""
    if not isinstance(to, str) or not to.strip():
        raise InvalidInput("must be a message id", field="to")

    def commands(state: Conversation, fresh: bool) -> Sequence[Command]:
        if not state.started:
            return [Rewind(to_message_id=to, to_version=0, abandoned=0, reason=reason)]
        floor = max(state.epoch_start_version, state.compacted_version)
        after = 0
        for r in newest_live(writer.store, state, page=64):
            if r.version <= floor:
                break
            event = r.event
            assert isinstance(event, MessageAppended)
            if event.message_id == to and not is_record(event):
                return [Rewind(to_message_id=to, to_version=r.version, abandoned=after,
                               reason=reason)]
            if not is_record(event):
                after += 1
        raise InvalidInput(f"no live message {to!r} after the latest clear or compaction "
                           f"(#{floor}): an abandoned or retracted message, or one "
                           "recorded before a compaction, cannot be rewound to",
                           field="to")

    _, saved = writer.decide(key, commands)
    found = next((r for r in saved if isinstance(r.event, HistoryRewound)), None)
    if found is None:
        return None
    e = found.event
    assert isinstance(e, HistoryRewound)
    return Rewound(key=key, version=found.version, to_message_id=e.to_message_id,
                   to_version=e.to_version, abandoned=e.abandoned, reason=e.reason)
