"""`AgentSessions`: session/load for an ACP agent written in Python with the SDK.

An agent that keeps its sessions in memory forgets them when its process ends. With
this helper its sessions live in the log instead, in a few lines:

    sessions = convlog.acp.AgentSessions(log, agent="my-agent")
    # new_session:  session_id = await sessions.new(cwd)
    # load_session: loaded = await sessions.load(self.conn, session_id)
    #               (the conversation is replayed to the client, as the spec requires;
    #                `loaded.text` is the budgeted history to give the model)
    # prompt:       ... await sessions.record(session_id, prompt, sent_updates, stop)

The session id the client sees IS the conversation (key ``acp:<id>``), so the mapping
between ACP ids and conversations needs no table of its own, and the proxy's
`session/list` and the helper's agree. Unknown ids raise the protocol's error
(-32002) so the client falls back to `session/new`.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import convlog
from convlog.acp.preamble import sent, split
from convlog.acp.replay import replay_updates
from convlog.acp.sessions import key_of
from convlog.acp.turns import Turn
from convlog.domain.conversation import AppendMessages, RecordFact
from convlog.services.log import application


def _wire(value: Any) -> Any:
    """An SDK model (or a wire dict) as the wire dict."""
    dump = getattr(value, "model_dump", None)
    return dump(mode="json", by_alias=True, exclude_none=True) if dump else value


NATIVE, HISTORY = "native", "history"
"""The two strategies of `AgentSessions.load`: the agent's own resume, or convlog's
history given to a fresh model session."""


@dataclass(frozen=True)
class Loaded:
    """What `AgentSessions.load` found: how the session goes on."""

    strategy: str
    """``native`` (the agent resumed its own session: give the model no history) or
    ``history`` (give the model `text` with the next prompt, once)."""
    native_session_id: str | None
    """The agent's own session id bound to this conversation (resumed natively, or
    the one to try), None when none was ever bound."""
    context: convlog.Context | None = None
    """The budgeted history, when the strategy is ``history`` (recorded as injected)."""

    @property
    def text(self) -> str:
        """The history to give the model ("" when resumed natively or nothing to give)."""
        return self.context.text if self.context is not None else ""


class AgentSessions:
    def __init__(self, log: convlog.AsyncConversationLog, *, agent: str,
                 budget: convlog.Budget | None = None, format: str = "xml"):
        self.log = log
        self.app = application(log.sync)
        self.agent = agent
        self.budget = budget or convlog.Budget()
        self.format = format

    async def new(self, cwd: str, *, client: str | None = None,
                  session_id: str | None = None) -> str:
        """A new session (a new conversation); returns the id to answer `session/new`."""
        session_id = session_id or uuid.uuid4().hex
        metadata = {"client": client} if client else {}
        await self.log.conversation(key_of(session_id), agent=self.agent, channel="acp",
                                    workspace=cwd, metadata=metadata)
        return session_id

    async def exists(self, session_id: str) -> bool:
        return await self.log.exists(key_of(session_id))

    async def bind(self, session_id: str, native_session_id: str) -> None:
        """Record the agent's own session id for this session (e.g. the Claude Agent
        SDK's session id after its first query), for a later native resume."""
        await self.log.bind_native_session(key_of(session_id), native_session_id, self.agent)

    async def load(self, client: Any, session_id: str, *,
                   native_resume: Callable[[str], Awaitable[bool]] | None = None
                   ) -> Loaded:
        """Replay the session to `client` (the SDK connection from `on_connect`) as
        `session/update` notifications, then resume it, recorded: `native_resume`
        (with the bound native session id) first when given, else or when it fails,
        the history for a fresh model session."""
        from acp import RequestError

        key = key_of(session_id)
        if not await self.log.exists(key):
            raise RequestError(-32002, "Resource not found", {"sessionId": session_id})
        for update in replay_updates([r.event for r in await self.log.events(key)]):
            await client.session_update(session_id=session_id, update=_update_model(update))
        tiers = []
        if native_resume is not None:
            async def native(call: convlog.TierCall) -> str:
                assert call.native_session_id is not None  # convlog fails the tier before
                if not await native_resume(call.native_session_id):
                    raise convlog.TierFailed("not_found", "the agent could not resume its "
                                             "own session")
                return call.native_session_id
            tiers.append(convlog.Tier(NATIVE, native, fresh=False))
        async def history(call: convlog.TierCall) -> None:
            return None  # the model starts empty: it gets the history
        tiers.append(convlog.Tier(HISTORY, history, fresh=True))
        with contextlib.suppress(convlog.UnknownConversation):
            await self.log.reactivate(key)  # reopening an archived session, as the proxy
        outcome = await self.log.resume(key, tiers, budget=self.budget, format=self.format)
        if outcome.strategy == NATIVE:
            return Loaded(NATIVE, outcome.native_session_id)
        state = await self.log.state(key)
        context = outcome.injection
        if context is None:  # already handed to this native session once: again, as
            context = await self.log.context(key, budget=self.budget, format=self.format)
        return Loaded(HISTORY, state.native_session_id, context)

    async def record(self, session_id: str, prompt: Iterable[Any], updates: Iterable[Any],
                     stop_reason: str = "end_turn", *, model: str | None = None,
                     usage: Any = None) -> None:
        """One turn as one atomic write: the prompt's content blocks as the user message,
        and the updates the agent sent (message and thought chunks, tool calls) as one
        assistant message, each keeping what went over the wire for `load`'s replay.
        Blocks the host marked as meant for the model (convlog.acp.preamble) are
        recorded as the preamble, before the turn. SDK models or wire dicts are both
        fine."""
        cut = split([_wire(b) for b in prompt], "none", opened=False)
        turn = Turn(prompt=cut.user, agent=self.agent, model=model)
        for update in updates:
            turn.add(_wire(update), None)
        messages = turn.close(stop_reason, _wire(usage))
        preamble = sent(cut.preamble, cut.how, None)
        if not messages:
            return
        if preamble is None:
            await self.log.append_turn(key_of(session_id), messages)
            return
        await asyncio.to_thread(self.app.execute, key_of(session_id), [
            RecordFact(event=preamble), AppendMessages(messages=messages)])


def _update_model(update: dict[str, Any]) -> Any:
    """A wire update as the SDK model its `session_update` expects."""
    import acp.schema
    from pydantic import TypeAdapter

    return TypeAdapter(acp.schema.SessionNotification).validate_python(
        {"sessionId": "-", "update": update}).update
