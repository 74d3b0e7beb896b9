"""`ConvlogSessionStore`: the Claude Agent SDK's `SessionStore` on a convlog log.

    from claude_agent_sdk import ClaudeAgentOptions
    from convlog.integrations.claude_agent_sdk import ConvlogSessionStore

    options = ClaudeAgentOptions(session_store=ConvlogSessionStore("sqlite:///convlog.db"))

Every session key (project, session, optional subagent subpath) is one conversation,
keyed ``claude:<project>/<session>[/<subpath>]`` with each part percent-encoded, so no
two keys collide however the parts are spelt. How the protocol maps, and why:

- `append`: one write (one transaction); the entry's ``uuid`` is the message
  id, so a retried batch is skipped by convlog's own dedupe, in the same write. A
  ``summary`` entry (Claude Code's title for the session) also titles the
  conversation (`title_changed`), as the importer does.
- `load`: the live entries of the current epoch, each exactly as appended (`raw`);
  None for a key never written or deleted (the protocol allows both).
- `list_sessions`, `list_subkeys`: from the session catalog (channel
  ``claude-agent-sdk``, workspace = project key); `mtime` is the conversation's last
  write, in epoch milliseconds.
- `list_session_summaries`: the SDK's own `fold_session_summary` over the stored
  entries, stamped with that same mtime. Folding at read time makes the summary a
  projection of the log: it can never disagree with it, and no sidecar write can race.
- `delete`: a new epoch plus archive, in one transaction (cascading to subkeys for a
  main key). Nothing is erased: the log keeps what the agent saw, for replay.
"""

from __future__ import annotations

import functools
import uuid
from datetime import UTC, datetime
from urllib.parse import quote, unquote

import convlog
from convlog.domain.conversation import (
    AppendMessages,
    Archive,
    Clear,
    Command,
    Conversation,
    RecordFact,
    StartConversation,
)
from convlog.domain.errors import InvalidInput, UnknownConversation
from convlog.domain.events import ConversationStarted, TitleChanged
from convlog.domain.messages import Message
from convlog.integrations.claude_entries import paired_entries, sound_entries, to_message
from convlog.integrations.extras import require
from convlog.integrations.settled import write_in_worker
from convlog.projections.pair_causes import imported
from convlog.services.log import application

require("claude-agent-sdk", "claude_agent_sdk", "convlog.integrations.claude_agent_sdk")

from anyio import to_thread  # noqa: E402  (the SDK's own async layer: asyncio or trio)
from claude_agent_sdk import (  # noqa: E402  (after the extra's check)
    SessionKey,
    fold_session_summary,
)
from claude_agent_sdk.types import (  # noqa: E402
    SessionListSubkeysKey,
    SessionStoreEntry,
    SessionStoreListEntry,
    SessionSummaryEntry,
)

CHANNEL = "claude-agent-sdk"
PREFIX = "claude:"


def conversation_key(key: SessionKey | SessionListSubkeysKey) -> str:
    """The conversation key of a session key (subpath optional)."""
    try:
        project, session = key["project_key"], key["session_id"]
    except (KeyError, TypeError):
        raise InvalidInput("a session key needs 'project_key' and 'session_id'",
                           field="key") from None
    subpath = key.get("subpath")
    if subpath is not None and not subpath:
        raise InvalidInput("an empty subpath is invalid: omit it for the main transcript",
                           field="key.subpath")
    if type(project) is str and type(session) is str and (subpath is None
                                                          or type(subpath) is str):
        return _joined(project, session, subpath)
    return _join(project, session, subpath)


@functools.lru_cache(maxsize=4096)
def _joined(project: str, session: str, subpath: str | None) -> str:
    # Cached: every append and load of a session names the same key again, and its
    # percent-encoding was a tenth of a one-entry append's own work (issue 30).
    return _join(project, session, subpath)


def _join(project: object, session: object, subpath: object) -> str:
    parts = (project, session) if subpath is None else (project, session, subpath)
    return PREFIX + "/".join(quote(str(p), safe="") for p in parts)


def _title(entries: list[SessionStoreEntry]) -> str | None:
    """The title Claude Code's newest `summary` entry gives the session (the importer's
    rule, convlog.importers.claude_code): the conversation's title in the catalog, the
    page and `sessions`, while the entry itself stays a record for `load`."""
    found = None
    for entry in entries:
        if isinstance(entry, dict) and entry.get("type") == "summary":
            text = entry.get("summary")
            if isinstance(text, str) and text.strip():
                found = text
    return found


def _millis(moment: datetime | None) -> int:
    return int(moment.timestamp() * 1000) if moment is not None else 0


class ConvlogSessionStore:
    """Claude Agent SDK transcripts in a convlog log. `log`: an open `ConversationLog`
    (shared, not closed here) or a URL (opened here; `close()` closes it)."""

    def __init__(self, log: convlog.ConversationLog | str | None = None, *,
                 agent: str | None = "claude", user: str | None = None) -> None:
        self._owns_log = not isinstance(log, convlog.ConversationLog)
        self.log = log if isinstance(log, convlog.ConversationLog) else convlog.open(log)
        self.app = application(self.log)
        """Its application (services.application): this store's writes."""
        self.agent, self.user = agent, user

    def close(self) -> None:
        if self._owns_log:
            self.log.close()

    # ------------------------------------------------------------------ required

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        if entries:
            await write_in_worker(self._append, key, entries)

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        return await to_thread.run_sync(self._load, key)

    # ------------------------------------------------------------------ optional

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        rows = await to_thread.run_sync(self._catalog, project_key)
        return [{"session_id": parts[1], "mtime": _millis(moment)}
                for parts, moment in rows if len(parts) == 2]

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        return await to_thread.run_sync(self._summaries, project_key)

    async def delete(self, key: SessionKey) -> None:
        await write_in_worker(self._delete, key)

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        rows = await to_thread.run_sync(self._catalog, key["project_key"])
        return [parts[2] for parts, _ in rows
                if len(parts) == 3 and parts[1] == key["session_id"]]

    # ------------------------------------------------------------------- helpers

    def _append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """One write; the epoch (see `_messages`) is read from the state being written
        to, inside the write, rather than by a query of its own before it (issue 30)."""
        batches: dict[int, AppendMessages] = {}

        title = _title(entries)

        def commands(state: Conversation, fresh: bool) -> list[Command]:
            epoch = state.epoch if state.started else 0
            if epoch not in batches:  # built once, unless a retry meets a new epoch
                batches[epoch] = AppendMessages(messages=self._messages(entries, epoch))
            titled: list[Command] = [] if title is None or title == state.title else [
                RecordFact(event=TitleChanged(at=datetime.now(UTC), title=title))]
            if state.started and (self.user is None or self.user == state.user):
                return [batches[epoch], *titled]  # the start would decide nothing (issue 30)
            return [StartConversation(channel=CHANNEL, user=self.user, agent=self.agent,
                                      workspace=key["project_key"],
                                      metadata={k: v for k, v in key.items()
                                                if isinstance(v, str)}),
                    batches[epoch], *titled]

        self.app.decide(conversation_key(key), commands)

    def _messages(self, entries: list[SessionStoreEntry], epoch: int) -> list[Message]:
        """The entries as messages. A uuid is an idempotency key within one epoch, so
        a session deleted (a new epoch) and written again keeps every entry."""
        seen: set[str] = set()
        messages = []
        for entry in entries:
            given = entry.get("uuid") if isinstance(entry, dict) else None
            if isinstance(given, str) and given.strip():
                if given in seen:
                    continue  # the same entry twice in one batch: once, like a retry
                seen.add(given)
                message_id = given if epoch == 0 else f"{given}@{epoch}"
            else:
                message_id = uuid.uuid4().hex  # no uuid: appended without dedupe
            messages.append(to_message(entry, message_id, agent=self.agent))
        return messages

    def _load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        target = conversation_key(key)
        try:
            # read lean (issue 30): an entry's row is decoded to its id and the entry,
            # not to a whole message (content, usage, tokens, times); a well-paired
            # transcript (the usual one) is handed back as it is
            sound = sound_entries(self.log.live_items(target, raw_only=True))
            if sound is not None:
                return sound or None  # type: ignore[return-value]
            # some tool_use/tool_result to repair: read again, whole, what pairing and
            # the causes of a lost result read (the texts near a lost call, which a
            # lean RawItem skips; that read is the answer)
            messages = self.log.live_messages(target)
        except UnknownConversation:
            return None

        def was_imported() -> bool:  # one indexed read, only when a result is lost
            start = next((r.event for r in self.log.events(target, upto=1)), None)
            return isinstance(start, ConversationStarted) and imported(start)

        # tool_use/tool_result in pairs, a lost result saying why (issue 28)
        entries = paired_entries(messages, imported=was_imported)
        return entries or None  # type: ignore[return-value]

    def _catalog(self, project_key: str) -> list[tuple[list[str], datetime | None]]:
        """(decoded key parts, last write) of the project's live conversations."""
        _, rows = self.log.sql(
            "SELECT key, last_active_at FROM sessions WHERE channel = ? AND workspace = ? "
            "AND status = 'active' AND starts_with(key, ?)",
            [CHANNEL, project_key, PREFIX + quote(project_key, safe="") + "/"])
        return [([unquote(p) for p in key.removeprefix(PREFIX).split("/")], moment)
                for key, moment in rows]

    def _summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        found: list[SessionSummaryEntry] = []
        for parts, moment in self._catalog(project_key):
            if len(parts) != 2:
                continue
            key: SessionKey = {"project_key": project_key, "session_id": parts[1]}
            entries = self._load(key)
            if entries is None:
                continue
            summary = fold_session_summary(None, key, entries)
            summary["mtime"] = _millis(moment)
            found.append(summary)
        return found

    def _delete(self, key: SessionKey) -> None:
        targets = [conversation_key(key)]
        if key.get("subpath") is None:
            targets += [conversation_key({**key, "subpath": sub})
                        for parts, _ in self._catalog(key["project_key"])
                        if len(parts) == 3 and parts[1] == key["session_id"]
                        for sub in parts[2:]]
        for target in targets:
            if self.log.exists(target):
                self.app.execute(target, [Clear(reason="SessionStore.delete"),
                                          Archive(reason="SessionStore.delete")])

