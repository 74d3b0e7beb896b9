"""Erasing a conversation's text in place: what `conversation_erased` promises.

WARNING: the erased states this module writes are a STORED FORMAT (an event's public
fields, plus `ERASED` where a private field is required: tests/golden/erased_*.json).

An erasure keeps every event before it (the log stays append-only in shape: the
same positions, kinds, times, ids, roles, models, token counts and costs) and
replaces each event's stored state with its public fields only, the fields that
`convlog.storage.sealed.SEALED_FIELDS` does not list. The same rule makes both kinds
of store safe:

- in a plain store, the private fields (message text, tool calls and results, native
  payloads, titles, workspaces, metadata, injected and summary text, reasons) are
  removed from the row;
- in an encrypted store, the sealed payload (the ciphertext of those fields) is
  removed from the row. Data keys are per user and shared by all of a user's
  conversations, so destroying one (crypto-shredding, `convlog forget`) would erase
  the user's other conversations too: removing the ciphertext itself erases this
  one conversation and nothing else, and leaves nothing for any key to open.

Then the backend erases the old bytes' copies (`erase(vacuum=True)`: SQLite VACUUM
with secure_delete and a truncated WAL; PostgreSQL VACUUM FULL of the tables). A
reader decodes an erased event like a forgotten one: public fields, and `ERASED`
where a required text was.
"""

from __future__ import annotations

from uuid import UUID

import msgspec

from convlog.storage.recorder import ConvlogRecorder
from convlog.storage.sealed import SEALED_FIELDS, sealed_at

ERASED = "[erased]"
_REQUIRED: dict[str, bytes] = {  # required private fields, once erased
    "message_appended": b'"content":"[erased]"',
    "history_injected": b'"text":"[erased]"',
    "memory_injected": b'"memory_ids":[],"text":"[erased]"',
    "summary_recorded": b'"text":"[erased]"',
    "history_compacted": b'"text":"[erased]"',
    "title_changed": b'"title":"[erased]"',
    "preamble_sent": b'"text":"[erased]"',
}
_decode = msgspec.json.Decoder()
_encode = msgspec.json.Encoder()


def erased_state(topic: str, state: bytes) -> bytes | None:
    """`state` (plain or sealed) with its private fields removed and the required
    ones filled with `ERASED`; None when it holds nothing private (an event kind
    without private fields). An erased state erases to itself."""
    name = topic.partition("@")[0]
    private = SEALED_FIELDS.get(name)
    if not private:
        return None
    at = sealed_at(state)
    if at >= 0:  # the public fields come first, then the sealed one: cut it off
        public = bytes(state[:at])
    else:
        fields = _decode.decode(state)
        if not isinstance(fields, dict):
            return None
        gone = [k for k in fields if k in private]
        if not gone:
            return None
        meta = fields.get("metadata")
        client = meta.get("client") if isinstance(meta, dict) else None
        for k in gone:
            del fields[k]
        if isinstance(client, str):  # the host application's name stays, as when sealed
            fields["metadata"] = {"client": client}
        public = _encode.encode(fields)[:-1]
    filler = _REQUIRED.get(name)
    return public + (b"," + filler if filler else b"") + b"}"


def erase_stream(recorder: ConvlogRecorder, stream: UUID, before: int,
                 snapshot_table: str | None) -> int:
    """Rewrite every event of `stream` before position `before` to its erased state,
    in ONE transaction (its snapshots are dropped in it: a cache, rebuilt on
    demand); returns how many rows changed (0: nothing left to erase, as after a
    finished run). The caller erases the old bytes' copies afterwards."""
    rows = recorder.select_rows(stream, lte=before - 1)
    changed = []
    for version, topic, state in rows:
        new = erased_state(topic, state)
        if new is not None and new != state:
            changed.append((version, new))
    if changed:
        recorder.rewrite_states(stream, changed, snapshot_table)
    return len(changed)
