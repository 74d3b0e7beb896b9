"""`ConvlogSessionService`: Google ADK's `BaseSessionService` on a convlog log.

    from google.adk.runners import Runner
    from convlog.integrations.google_adk import ConvlogSessionService

    runner = Runner(agent=agent, app_name="shop",
                    session_service=ConvlogSessionService("sqlite:///convlog.db"))

Semantics follow ADK's own SQLite service; how they map onto the log, and why:

- A session is a conversation keyed ``adk:<app>/<user>/<session>`` (parts
  percent-encoded). `create_session` opens an epoch with a session record holding the
  initial state; its message id names the epoch, so two concurrent creates of one id
  cannot both win: the loser's record is a duplicate, and it gets AlreadyExistsError.
- `append_event`: the event, whole, as a message (one transaction), after ADK's own
  temp-state handling and its stale-session check. State deltas stay in the events:
  the session's state is the fold of its events' deltas over the initial state.
  `app:` and `user:` deltas also go, as records, to the app's and the user's own
  conversations (``adk-state:<app>``, ``adk-state:<app>/<user>``), folded on read.
- `delete_session`: a new epoch plus archive; the events stay in the log for replay.
- `list_sessions`: one query of the session catalog (channel ``google-adk``, agent =
  app name) joined with the ``adk_sessions`` read model (each session's folded state
  and last update: convlog.projections.adk_sessions).
"""

from __future__ import annotations

import time
import uuid
from typing import Any
from urllib.parse import quote, unquote

import msgspec
from anyio import to_thread

import convlog
from convlog.domain.conversation import AppendMessages, Archive, Clear, StartConversation
from convlog.domain.errors import UnknownConversation
from convlog.domain.events import HistoryCompacted, MessageAppended
from convlog.integrations.adk_events import (
    RECORD,
    SESSION,
    STATE,
    Record,
    event_message,
    session_record,
    state_record,
)
from convlog.integrations.adk_pairs import paired_events, pairing_view
from convlog.integrations.extras import require
from convlog.integrations.settled import write_in_worker
from convlog.projections.adk_sessions import split_state
from convlog.services.items import RawJson, json_item, summary_id
from convlog.services.log import application

require("google-adk", "google.adk", "convlog.integrations.google_adk")

from google.adk.errors.already_exists_error import AlreadyExistsError  # noqa: E402
from google.adk.errors.session_not_found_error import SessionNotFoundError  # noqa: E402
from google.adk.events.event import Event  # noqa: E402
from google.adk.sessions import BaseSessionService, Session  # noqa: E402
from google.adk.sessions.base_session_service import (  # noqa: E402
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.state import State  # noqa: E402

CHANNEL = "google-adk"


def session_key(app_name: str, user_id: str, session_id: str) -> str:
    return "adk:" + "/".join(quote(p, safe="") for p in (app_name, user_id, session_id))


def scope_key(app_name: str, user_id: str | None = None) -> str:
    parts = (app_name,) if user_id is None else (app_name, user_id)
    return "adk-state:" + "/".join(quote(p, safe="") for p in parts)


_split = split_state  # (app, user, session) parts; the read model folds with the same
_decode = msgspec.json.Decoder(dict[str, Any]).decode
_encode = msgspec.json.encode


def _record(raw: dict[str, Any] | None) -> Record:
    """A record from a message decoded in full (an older stored version, upcast),
    whose `raw` is already a dict: the same `Record` as from its JSON."""
    return RECORD.decode(_encode(raw)) if raw else Record()


COMPACTION = "compaction"


def compaction_record(event: HistoryCompacted) -> MessageAppended:
    """A compaction as a record of the session's epoch, placed right after the last
    event it covers: `get_session` makes it ADK's own compaction event (`_Read`),
    whose range is the session's events up to there, so ADK's Runner hands its model
    the summary in their place. The events stay in the session (state is folded
    from them, as ADK's own services keep them)."""
    return MessageAppended(at=event.at, message_id=summary_id(event), role="assistant",
                           content=event.text, raw={"adk": COMPACTION, "state": event.text})


def compaction_event(text: str, start: float, end: float) -> dict[str, Any]:
    return {"id": f"convlog-compaction-{end}", "invocation_id": "convlog-compaction",
            "author": "convlog", "timestamp": end,
            "actions": {"compaction": {"start_timestamp": start, "end_timestamp": end,
                                       "compacted_content": {
                                           "role": "model", "parts": [{"text": text}]}}}}


def _every(item: Any) -> bool:
    return True


class _Read:
    """A session's epoch read in one pass over its records, each event decoded in
    turn and let go: the session's own state (the initial state with every event's
    session-scoped deltas folded over it), its last update, and per stored event its
    JSON (undecoded), its timestamp and what pairing reads of it (`pairing_view`)."""

    def __init__(self, records: list[Record]) -> None:
        self.state: dict[str, Any] = dict(records[0].state or {})
        self.raws: list[msgspec.Raw] = []
        self.stamps: list[Any] = []
        self.views: list[dict[str, Any]] = []
        for record in records:
            if record.adk == COMPACTION:  # ADK's own compaction event, over what it covers
                if self.stamps:
                    made = compaction_event(str(record.state), float(self.stamps[0]),
                                            float(self.stamps[-1]))
                    self.raws.append(msgspec.Raw(_encode(made)))
                    self.stamps.append(self.stamps[-1])
                    self.views.append(pairing_view(made))
                continue
            if not json_item(record.event):
                continue
            event = _decode(record.event)
            delta = (event.get("actions") or {}).get("state_delta")
            if delta:
                self.state.update(_split(delta)[2])
            self.raws.append(record.event)
            self.stamps.append(event["timestamp"])
            self.views.append(pairing_view(event))
        # as ADK's SQLite service: the time of the last write, an event's own timestamp
        self.updated = (float(self.stamps[-1]) if self.stamps else float(records[0].time))


def _chosen(stamps: list[Any], config: GetSessionConfig | None) -> list[int]:
    """The indexes of the events `config` asks for, as ADK's services choose them."""
    chosen = list(range(len(stamps)))
    if config is not None:
        if config.after_timestamp is not None:
            chosen = [i for i in chosen if stamps[i] >= config.after_timestamp]
        if config.num_recent_events is not None:
            chosen = chosen[max(0, len(chosen) - config.num_recent_events):] if (
                config.num_recent_events) else []
    return chosen


class ConvlogSessionService(BaseSessionService):
    """ADK sessions in a convlog log. `log`: an open `ConversationLog` (shared, not
    closed here) or a URL (opened here; `close()` closes it)."""

    def __init__(self, log: convlog.ConversationLog | str | None = None) -> None:
        self._owns_log = not isinstance(log, convlog.ConversationLog)
        self.log = log if isinstance(log, convlog.ConversationLog) else convlog.open(log)
        self.app = application(self.log)
        """Its application (services.application): this store's writes."""

    async def close(self) -> None:
        if self._owns_log:
            await to_thread.run_sync(self.log.close)

    # ----------------------------------------------------------------- protocol

    async def create_session(self, *, app_name: str, user_id: str,
                             state: dict[str, Any] | None = None,
                             session_id: str | None = None) -> Session:
        sid = (session_id or "").strip() or uuid.uuid4().hex
        return await write_in_worker(self._create, app_name, user_id, dict(state or {}), sid)

    async def get_session(self, *, app_name: str, user_id: str, session_id: str,
                          config: GetSessionConfig | None = None) -> Session | None:
        return await to_thread.run_sync(self._get, app_name, user_id, session_id.strip(),
                                        config)

    async def list_sessions(self, *, app_name: str, user_id: str | None = None
                            ) -> ListSessionsResponse:
        return await to_thread.run_sync(self._list, app_name, user_id)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        await write_in_worker(self._delete, session_key(app_name, user_id, session_id.strip()))

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        return await to_thread.run_sync(self._scope_state, scope_key(app_name, user_id))

    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:
            return event
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        await write_in_worker(self._append, session, event)
        self._commit_event_to_session(session, event)
        session.last_update_time = event.timestamp
        return event

    # ------------------------------------------------------------------ helpers

    def _create(self, app_name: str, user_id: str, state: dict[str, Any], sid: str) -> Session:
        key = session_key(app_name, user_id, sid)
        app, user, own = _split(state)
        try:
            epoch = self.log.state(key).epoch
        except UnknownConversation:
            epoch = 0
        now = time.time()
        done = self.app.execute(key, [
            StartConversation(channel=CHANNEL, agent=app_name, user=user_id,
                         metadata={"app_name": app_name, "user_id": user_id,
                                   "session_id": sid}),
            AppendMessages(messages=[session_record(f"adk-session@{epoch}", own, now)])])
        if done.skipped:
            raise AlreadyExistsError(f"Session with id {sid} already exists.")
        self._record_scopes(app_name, user_id, app, user)
        return Session(app_name=app_name, user_id=user_id, id=sid, last_update_time=now,
                       state=self._merged(app_name, user_id, own), events=[])

    def _delete(self, key: str) -> None:
        if self.log.exists(key):
            self.app.execute(key, [Clear(reason="delete_session"),
                                   Archive(reason="delete_session")])

    def _records(self, key: str) -> list[Record] | None:
        """The live records of a session's epoch; None when it does not exist."""
        try:  # raw records only: the rest of each message is never decoded (issue 30)
            items = self.log.live_json(key, summarized=compaction_record, kept=_every)
        except UnknownConversation:
            return None
        records = [RECORD.decode(m.raw) if isinstance(m, RawJson) else _record(m.raw)
                   for m in items]
        if not records or records[0].adk != SESSION:
            return None
        return records

    def _get(self, app_name: str, user_id: str, sid: str, config: GetSessionConfig | None
             ) -> Session | None:
        records = self._records(session_key(app_name, user_id, sid))
        if records is None:
            return None
        read = _Read(records)
        # calls and responses in pairs (issue 28), planned on the views: a session
        # needing no repair has its events decoded and validated one at a time
        if paired_events(read.views) is read.views:
            events = [Event.model_validate(_decode(read.raws[i]))
                      for i in _chosen(read.stamps, config)]
        else:
            dumps = paired_events([_decode(raw) for raw in read.raws])
            events = [Event.model_validate(dumps[i])
                      for i in _chosen([e["timestamp"] for e in dumps], config)]
        return Session(app_name=app_name, user_id=user_id, id=sid, events=events,
                       state=self._merged(app_name, user_id, read.state),
                       last_update_time=read.updated)

    def _list(self, app_name: str, user_id: str | None) -> ListSessionsResponse:
        """As ADK's services: every session of the app (or of one user), its state
        merged with the app's and the user's, without events. One query of the
        ``adk_sessions`` read model (convlog.projections.adk_sessions: each session's
        folded state and last update, kept by the views' catch-up); a session it holds
        no state for (an encrypted store) is folded from its records here."""
        mine = "s.channel = ?" + (" AND s.\"user\" = ?" if user_id is not None else "")
        params: list[object] = [app_name, CHANNEL + "-state", CHANNEL]
        if user_id is not None:
            params.append(user_id)
        _, rows = self.log.sql(
            "SELECT s.channel, s.\"user\", s.key, a.kind, a.state, a.updated "
            "FROM sessions s LEFT JOIN adk_sessions a USING (conversation_id) "
            f"WHERE s.agent = ? AND s.status = 'active' AND (s.channel = ? OR ({mine}))",
            params)
        scopes: dict[str, dict[str, Any]] = {}
        for channel, _, key, _, state, _ in rows:
            if channel != CHANNEL:
                scopes[key] = _decode(state) if state is not None else self._scope_state(key)

        def scope(key: str, prefix: str) -> dict[str, Any]:
            # every scope conversation of the app is in `rows`: one not there was
            # never written to
            return {prefix + k: v for k, v in scopes.get(key, {}).items()}

        app_state = scope(scope_key(app_name), State.APP_PREFIX)
        user_states: dict[str, dict[str, Any]] = {}
        found = []
        for channel, user, key, kind, state, updated in rows:
            if channel != CHANNEL:
                continue
            if state is None:  # no row: fold the session's records (encrypted store)
                records = self._records(key)
                if records is None:
                    continue
                read = _Read(records)
                own, updated = read.state, read.updated
            elif kind != SESSION:
                continue  # deleted and not created again
            else:
                own = _decode(state)
            if user not in user_states:
                user_states[user] = scope(scope_key(app_name, user), State.USER_PREFIX)
            found.append(Session(
                app_name=app_name, user_id=user, id=unquote(key.rsplit("/", 1)[1]),
                events=[], last_update_time=updated,
                state={**own, **app_state, **user_states[user]}))
        found.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
        return ListSessionsResponse(sessions=found)

    def _append(self, session: Session, event: Event) -> None:
        key = session_key(session.app_name, session.user_id, session.id)
        try:  # only the newest record: the check costs the same at event 10 or 10,000
            newest = self.log.live_items(key, last=1)
        except UnknownConversation:
            newest = []
        if not newest or not newest[0].raw:
            raise SessionNotFoundError(f"Session {session.id} not found.")
        raw = newest[0].raw
        updated = float(raw["event"]["timestamp"] if "event" in raw else raw.get("time", 0.0))
        if updated > session.last_update_time:
            from google.adk.errors._stale_session_error import StaleSessionError

            raise StaleSessionError(
                "The last_update_time provided in the session object is earlier than the "
                "update_time in storage. Please check if it is a stale session.")
        dumped = event.model_dump(mode="json", exclude_none=True)
        self.log.append(key, event_message(dumped, session.app_name))
        app, user, _ = _split(event.actions.state_delta if event.actions else {})
        self._record_scopes(session.app_name, session.user_id, app, user)

    def _record_scopes(self, app_name: str, user_id: str, app: dict[str, Any],
                       user: dict[str, Any]) -> None:
        for key, delta in ((scope_key(app_name), app), (scope_key(app_name, user_id), user)):
            if delta:
                self.app.execute(key, [
                    StartConversation(channel=CHANNEL + "-state", agent=app_name),
                    AppendMessages(messages=[state_record(delta)])])

    def _scope_state(self, key: str) -> dict[str, Any]:
        state: dict[str, Any] = {}
        try:
            for message in self.log.live_items(key):
                if message.raw and message.raw.get("adk") == STATE:
                    state.update(message.raw.get("delta") or {})
        except UnknownConversation:
            pass
        return state

    def _merged(self, app_name: str, user_id: str, own: dict[str, Any]) -> dict[str, Any]:
        merged = dict(own)
        for prefix, key in ((State.APP_PREFIX, scope_key(app_name)),
                            (State.USER_PREFIX, scope_key(app_name, user_id))):
            merged.update({prefix + k: v for k, v in self._scope_state(key).items()})
        return merged
