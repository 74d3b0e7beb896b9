"""Google ADK sessions as one row each, so `list_sessions` is one query (issue 30).

ADK's `list_sessions` returns every session of an app with its state (the session's
own, merged with the app's and the user's) and its last update time, without events.
Folding each session's records on every call costs a few milliseconds per session;
this read model keeps the fold: one row per conversation of the ADK session service
(channels ``google-adk`` and ``google-adk-state``) with its current epoch's state and
its last update time, updated batch by batch in the views' catch-up (exactly once,
with the tracking position; rebuilt with the other views).

The fold is the session service's own (`fold_records`): a session's epoch opens with
a session record ``{"adk": "session", "state", "time"}``; each stored event's
session-scoped state delta is folded over it and its timestamp is the last update; a
scope conversation folds its ``{"adk": "state", "delta"}`` records. A clear (ADK's
`delete_session`) starts a new epoch. Each batch's records are folded from the batch
itself (the stored JSON the catch-up already parsed: no read of the event store); a
retracted message (ADK never retracts) makes the row be folded again from the
conversation's whole history. In an encrypted store the records are sealed: no rows
are kept, and the service folds each session itself (as before this view).

Pure: the adapter (convlog.views.adk) feeds it events and writes the rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from convlog.domain.events import ConversationCleared, MessageAppended, MessageRetracted, Recorded
from convlog.projections.views import Column, Table, View

CHANNELS = ("google-adk", "google-adk-state")
SESSION = "session"
STATE = "state"
APP_PREFIX, USER_PREFIX, TEMP_PREFIX = "app:", "user:", "temp:"  # ADK's State prefixes


class AdkRow(msgspec.Struct, kw_only=True):
    """One conversation's fold so far: `kind` is "session" (an epoch opened by a session
    record), "scope" (app/user state records) or None (nothing ADK in this epoch)."""

    version: int = 0
    kind: str | None = None
    state: dict[str, Any] = {}
    updated: float = 0.0


def split_state(state: dict[str, Any]
                ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(app, user, session) parts of an ADK state dict; temp: keys are never stored."""
    app, user, session = {}, {}, {}
    for key, value in state.items():
        if key.startswith(APP_PREFIX):
            app[key.removeprefix(APP_PREFIX)] = value
        elif key.startswith(USER_PREFIX):
            user[key.removeprefix(USER_PREFIX)] = value
        elif not key.startswith(TEMP_PREFIX):
            session[key] = value
    return app, user, session


def fold_record(row: AdkRow, raw: dict[str, Any]) -> None:
    """Fold one live record (a message's raw JSON) into `row`."""
    if row.kind is None:  # the epoch's first record says what the conversation is
        if raw.get("adk") == SESSION:
            row.kind = SESSION
            row.state = dict(raw.get("state") or {})
            row.updated = float(raw.get("time", 0.0))
            return
        row.kind = "scope" if raw.get("adk") == STATE else "other"
    if row.kind == SESSION and "event" in raw:
        event = raw["event"]
        delta = (event.get("actions") or {}).get("state_delta")
        if delta:
            row.state.update(split_state(delta)[2])
        row.updated = float(event["timestamp"])
    elif row.kind == "scope" and raw.get("adk") == STATE:
        row.state.update(raw.get("delta") or {})


def fold_batch(row: AdkRow, events: Iterable[tuple[int, str, dict[str, Any] | None]]
               ) -> bool:
    """Fold (version, stored event name, message raw) rows after `row.version` into
    it; False when a retraction means the conversation must be folded again from its
    whole history (`fold_history`)."""
    for version, topic, raw in events:
        if version <= row.version:
            continue  # already folded (exactly once)
        if topic == "message_appended":
            fold_record(row, raw or {})
        elif topic == "conversation_cleared":
            row.kind, row.state, row.updated = None, {}, 0.0
        elif topic == "message_retracted":
            return False
        row.version = version
    return True


def fold_history(recorded: Iterable[Recorded]) -> AdkRow:
    """The row from a conversation's whole history: its current epoch's live records
    (a retracted message is not live) folded in order."""
    live: list[MessageAppended] = []
    version = 0
    for r in recorded:
        e = r.event
        if isinstance(e, MessageAppended):
            live.append(e)
        elif isinstance(e, MessageRetracted):
            live = [m for m in live if m.message_id != e.message_id]
        elif isinstance(e, ConversationCleared):
            live = []
        version = r.version
    row = AdkRow()
    for m in live:
        fold_record(row, m.raw or {})
    row.version = version
    return row


ADK_SESSIONS = Table(
    "adk_sessions",
    (
        Column("conversation_id", "VARCHAR", "key"),
        Column("version", "BIGINT"),
        Column("kind", "VARCHAR"),
        Column("state", "VARCHAR"),
        Column("updated", "DOUBLE"),
    ),
    select="",  # rows come from `fold_batch` (convlog.views.adk), not SQL
    doc="one row per conversation of the Google ADK session service: its current "
        "epoch's kind (session, scope), folded state (JSON; NULL in an encrypted "
        "store) and last update time (ADK's last_update_time)",
)

ADK = View("adk", (ADK_SESSIONS,), fields={"channel": "VARCHAR", "raw": "JSON"})
"""`fields`: the channel says a conversation is ADK's; `raw` holds its records."""
