"""The proxy's sessions: its own ids, their conversations, and the agent sessions behind.

The proxy gives the client its OWN session ids (a uuid per session). Each is a
conversation in the log under the key ``acp:<id>``, and the agent's session id is
bound to it (`native_session_bound`). The agent's ids cannot be shown to the client:
a restarted agent may hand out the same ids again ("0", "1", ...) for other
conversations, and after a restart the client's id must still name THIS conversation.

Attaching a session to the running agent is convlog's tiered resume
(`conv.resume([...Tier...])`): native `session/resume` when the agent advertises it,
then native `session/load`, then `session/new` with the budgeted history, which the
proxy puts before the user's text in the next prompt it forwards, exactly once.
Every tier is recorded (resume_attempted / succeeded / failed), so `convlog
telemetry --by agent` shows how often each agent's own resume works.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import convlog
from convlog.acp.downstream import AgentExited, Downstream
from convlog.acp.turns import Turn
from convlog.domain.conversation import RecordFact
from convlog.domain.events import HistoryInjected
from convlog.services.application import Application

log = logging.getLogger("convlog.acp")

KEY_PREFIX = "acp:"


def key_of(session_id: str) -> str:
    return KEY_PREFIX + session_id


@dataclass
class Session:
    id: str
    """The id the client knows."""
    native_id: str | None = None
    """The agent's session id in the agent process of `generation` (None: not attached)."""
    generation: int = 0
    cwd: str = "/"
    where: dict[str, Any] = field(default_factory=dict)
    """The client's own parameters of its last new/load/resume of this session (cwd,
    mcpServers, additionalDirectories, _meta...), sent again on every tier."""
    injection: str | None = None
    """History to put before the user's text in the next forwarded prompt (once)."""
    turn: Turn | None = None
    cost_base: Decimal | None = None
    """The agent's last cumulative USD cost of this session (usage_update), if known."""
    model: str | None = None
    opened: bool = True
    """The client opened (new) or reopened (load/resume) this session and has not
    prompted it since: its next prompt may start with the host's preamble."""
    preamble: list[Any] | None = None
    """The host's last preamble on this session, in memory only: sent again in front
    of the history when the agent process died and a new one takes over (the host
    does not know, so it does not send it again)."""

    @property
    def key(self) -> str:
        return key_of(self.id)


class Sessions:
    """Which client session is which conversation and which agent session."""

    def __init__(self, log: convlog.AsyncConversationLog, app: Application,
                 agent: Downstream, budget: convlog.Budget):
        self.log, self.app = log, app
        self.agent = agent
        self.budget = budget
        self.by_id: dict[str, Session] = {}
        self.by_native: dict[str, Session] = {}
        self.loading: set[str] = set()
        """Agent sessions being loaded natively: their replay is not forwarded (the
        client gets the replay from the log, once) nor recorded."""

    def attached(self, session: Session) -> bool:
        return session.native_id is not None and session.generation == self.agent.generation \
            and self.agent.alive

    def bind(self, session: Session, native_id: str) -> None:
        if session.native_id is not None:
            self.by_native.pop(session.native_id, None)
        session.native_id, session.generation = native_id, self.agent.generation
        self.by_id[session.id] = session
        self.by_native[native_id] = session

    def forget(self, session: Session) -> None:
        """The client closed `session`: the proxy stops tracking it (the log keeps it,
        and a later load attaches it again)."""
        self.by_id.pop(session.id, None)
        if session.native_id is not None:
            self.by_native.pop(session.native_id, None)

    def detach_all(self) -> None:
        """The agent process is gone: none of its sessions exists any more."""
        for session in self.by_id.values():
            session.native_id = None
        self.by_native.clear()

    def native(self, native_id: Any) -> Session | None:
        return self.by_native.get(native_id) if isinstance(native_id, str) else None

    async def attach(self, session: Session) -> dict[str, Any]:
        """Give `session` a live agent session by tiers; returns the answer of the tier
        that worked (its modes, models, config options) for the client."""
        from acp import RequestError

        try:
            await self.agent.start()
        except AgentExited as exc:
            raise RequestError.internal_error({"details": str(exc)}) from None
        answer: dict[str, Any] = {}
        where = {"mcpServers": [], **session.where, "cwd": session.cwd}
        where.pop("sessionId", None)

        async def native_resume(call: convlog.TierCall) -> str | None:
            if not self.agent.capability("sessionCapabilities", "resume"):
                raise convlog.TierFailed("unsupported", "the agent does not advertise "
                                         "session/resume")
            answer.update(await self._ask("session/resume",
                                          {"sessionId": call.native_session_id, **where}))
            return call.native_session_id

        async def native_load(call: convlog.TierCall) -> str | None:
            if not self.agent.capability("loadSession"):
                raise convlog.TierFailed("unsupported", "the agent does not advertise "
                                         "session/load")
            native = call.native_session_id or ""
            self.loading.add(native)
            try:
                answer.update(await self._ask("session/load", {"sessionId": native, **where}))
            finally:
                self.loading.discard(native)
            return native

        async def new_session(call: convlog.TierCall) -> str:
            result = await self._ask("session/new", where)
            native = result.get("sessionId")
            if not isinstance(native, str) or not native:
                raise convlog.TierFailed("error", "the agent's session/new answer has no "
                                         "sessionId")
            answer.update(result)
            return native

        # a host loading a session is the user reopening it: an archived conversation
        # (`convlog expire`) is reactivated, recorded, before it is resumed
        with contextlib.suppress(convlog.UnknownConversation):  # a new one starts below
            await self.log.reactivate(session.key)
        outcome = await self.log.resume(session.key, [
            convlog.Tier("session/resume", native_resume),
            convlog.Tier("session/load", native_load),
            convlog.Tier("session/new", new_session),
        ], budget=self.budget)
        if not outcome.ok or outcome.native_session_id is None:
            reasons = "; ".join(f"{a.strategy}: {a.reason} ({a.error})"
                                for a in outcome.attempts)
            raise RequestError.internal_error(
                {"details": f"could not attach session {session.id} to the agent: {reasons}"})
        self.bind(session, outcome.native_session_id)
        injection = outcome.injection
        if outcome.fresh and outcome.already_injected:
            injection = await self._inject_again(session.key, outcome.native_session_id)
        session.injection = injection.text if injection else None
        session.cost_base = Decimal(0) if outcome.fresh else None
        log.info("session %s attached by %s (%s)", session.id, outcome.strategy,
                 "history injected" if outcome.injection else "no injection")
        answer.pop("sessionId", None)
        return answer

    async def _inject_again(self, key: str, native: str) -> convlog.Context | None:
        """History for an agent session that convlog thinks already had it.

        convlog injects at most once per native session id. But an ACP `session/new`
        answer is a new, empty session by definition, and many agents count their ids
        from "0" in every process: after a second restart, "0" is NOT the session that
        got the history the first time. So the proxy injects again, and records it as
        convlog does (`history_injected`), through the log's own command."""
        context = await self.log.context(key, budget=self.budget)
        if context.message_count == 0 and not context.summarized:
            return None
        fact = RecordFact(event=HistoryInjected(
            at=datetime.now(UTC), from_version=context.from_version,
            to_version=context.to_version, message_count=context.message_count,
            tokens=context.tokens, format=context.format, text=context.text,
            native_session_id=native))
        await asyncio.to_thread(self.app.execute, key, [fact])
        return context

    async def _ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        from acp import RequestError

        try:
            result = await self.agent.request(method, params)
        except RequestError as exc:  # keep the agent's details in the recorded error
            detail = f"{exc} {json.dumps(exc.data, default=str)}" if exc.data else str(exc)
            raise RequestError(exc.code, f"{method}: {detail}", exc.data) from None
        return result if isinstance(result, dict) else {}
