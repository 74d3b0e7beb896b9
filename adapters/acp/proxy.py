"""`convlog acp -- AGENT...`: an ACP agent to the client, a client to the real agent.

Both sides are the SDK's JSON-RPC `Connection` with raw method handlers, not its
typed `Agent`/`Client` classes: those validate every frame into models and drop what
the schema does not know, while a proxy must pass through unchanged every method,
field and capability it does not understand (extensions, `_meta`, newer protocol
versions). Only the session id is rewritten (the client's id <-> the agent's), and
the methods the proxy serves itself are checked against the SDK's schema models.

Served by the proxy: `initialize` (forwarded; the answer also advertises
`loadSession`, `sessionCapabilities.list`, `.resume`, `.close`, `.delete`, `.fork`),
`session/new` (forwarded, recorded), `session/prompt` (forwarded, recorded as one
turn, the host's preamble recorded as such, not as dialogue: convlog.acp.preamble),
`session/load` and `session/resume` (tiered resume against the agent; load replays
the conversation from the log first), `session/list` (the catalog), `session/close`,
`session/delete` and `session/fork` (convlog.acp.lifecycle). Everything else is
forwarded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from decimal import Decimal
from typing import Any

import convlog
from convlog.acp import lifecycle
from convlog.acp.catalog import (
    advertise,
    command_name,
    current_model,
    list_page,
    negotiated,
)
from convlog.acp.checks import check, check_prompt, check_session_id
from convlog.acp.downstream import DEFAULT_INIT_TIMEOUT, AgentExited, Downstream
from convlog.acp.preamble import DEFAULT_MODE, fingerprint, forwarded, sent, split
from convlog.acp.queue import TurnQueue
from convlog.acp.recorder import Recorder
from convlog.acp.replay import replay_updates
from convlog.acp.sessions import Session, Sessions, key_of
from convlog.acp.turns import Turn
from convlog.acp.wire import DEFAULT_MAX_FRAME
from convlog.services.aio import AsyncConversationLog
from convlog.services.application import Application
from convlog.services.log import host_api

log = logging.getLogger("convlog.acp")


def _with_session(params: Any, session_id: str) -> Any:
    return {**params, "sessionId": session_id} if isinstance(params, dict) else params


class Proxy:
    def __init__(self, app: Application, command: list[str], *,
                 budget: convlog.Budget | None = None, agent_name: str | None = None,
                 max_frame: int = DEFAULT_MAX_FRAME, grace: float = 2.0,
                 init_timeout: float = DEFAULT_INIT_TIMEOUT, preamble: str = DEFAULT_MODE):
        self.agent = Downstream(command, self.from_agent, max_frame=max_frame,
                                init_timeout=init_timeout)
        self.app = app
        """The application (services.application): the proxy's writes beyond the
        host API (a fact recorded with its turn) are its operations."""
        self.log = AsyncConversationLog(host_api(app))
        """The host API over `app`, for everything a host does."""
        self.sessions = Sessions(self.log, app, self.agent, budget or convlog.Budget())
        self.recorder = Recorder(self.log, app)
        self.max_frame = max_frame
        self.grace = grace
        self.agent_name = agent_name
        self.preamble = preamble
        self.client_info: dict[str, Any] = {}
        self.client: Any = None  # the SDK Connection to the client
        self._one_turn = TurnQueue()
        self.agent.on_exit = lambda code: self.sessions.detach_all()

    # ------------------------------------------------------------ client -> agent

    async def from_client(self, method: str, params: Any, is_notification: bool) -> Any:
        if is_notification:
            return await self._client_notification(method, params)
        serve = {"initialize": self.initialize, "session/new": self.new_session,
                 "session/load": self.load_session, "session/resume": self.resume_session,
                 "session/list": self.list_sessions, "session/prompt": self.prompt,
                 "session/close": self.close_session, "session/delete": self.delete_session,
                 "session/fork": self.fork_session}.get(method)
        if serve is not None:
            return await serve(params)
        return await self._forward(method, params)

    async def _forward(self, method: str, params: Any) -> Any:
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        session = self.sessions.by_id.get(session_id) if isinstance(session_id, str) else None
        if session is not None:
            if not self.sessions.attached(session):
                await self.sessions.attach(session)
            params = _with_session(params, session.native_id or "")
        return await self._ask(method, params)

    async def _ask(self, method: str, params: Any) -> Any:
        from acp import RequestError

        try:
            await self.agent.start()  # after a crash, a new agent process
            return await self.agent.request(method, params)
        except AgentExited as exc:
            raise RequestError.internal_error({"details": str(exc)}) from None

    async def _client_notification(self, method: str, params: Any) -> None:
        if isinstance(params, dict):
            session = self.sessions.by_id.get(params.get("sessionId"))  # type: ignore[arg-type]
            if session is not None and session.native_id is not None:
                params = _with_session(params, session.native_id)
        await self.agent.notify(method, params)

    async def initialize(self, params: Any) -> Any:
        check("InitializeRequest", params)
        params = negotiated(params)
        info = params.get("clientInfo")
        self.client_info = info if isinstance(info, dict) else {}
        try:
            result = await self.agent.initialize(params)
        except AgentExited as exc:
            from acp import RequestError

            raise RequestError.internal_error({"details": str(exc)}) from None
        agent_info = result.get("agentInfo")
        if self.agent_name is None:
            name = agent_info.get("name") if isinstance(agent_info, dict) else None
            self.agent_name = name if isinstance(name, str) and name \
                else command_name(self.agent.command)
        return advertise(result)

    async def new_session(self, params: Any) -> Any:
        check("NewSessionRequest", params)
        result = await self._ask("session/new", params)
        native = result.get("sessionId") if isinstance(result, dict) else None
        if not isinstance(native, str) or not native:
            return result  # not a session we can track: the client gets what the agent said
        session = Session(id=uuid.uuid4().hex, cwd=params["cwd"], where=dict(params),
                          cost_base=Decimal(0))  # a new agent session has cost nothing yet
        session.model = current_model(result)
        info = result.get("agentInfo") if isinstance(result.get("agentInfo"), dict) else {}
        await self.recorder.start(session.key, agent=self.agent_name, cwd=session.cwd,
                                  metadata=self._metadata(info), native=native)
        self.sessions.bind(session, native)
        return {**result, "sessionId": session.id}

    def _metadata(self, extra: dict[str, Any]) -> dict[str, Any]:
        agent_info = self.agent.initialize_result.get("agentInfo")
        meta: dict[str, Any] = {"client": self.client_info.get("name"),
                                "client_version": self.client_info.get("version"),
                                "agent_command": self.agent.command, "via": "convlog acp",
                                "preamble": self.preamble}
        if isinstance(agent_info, dict):
            meta["agent_version"] = agent_info.get("version")
        return {k: v for k, v in {**meta, **extra}.items() if v is not None}

    async def load_session(self, params: Any) -> Any:
        check("LoadSessionRequest", params)
        session, answer = await self._reattach(params)
        events = [r.event for r in await self.log.events(session.key)]
        for update in replay_updates(events):
            await self.client.send_notification("session/update",
                                                {"sessionId": session.id, "update": update})
        return answer

    async def resume_session(self, params: Any) -> Any:
        check("ResumeSessionRequest", params)
        _, answer = await self._reattach(params)
        return answer

    async def _reattach(self, params: dict[str, Any]) -> tuple[Session, dict[str, Any]]:
        """The session the client names, attached to the running agent by tiers."""
        from acp import RequestError

        session_id = params["sessionId"]
        session = self.sessions.by_id.get(session_id)
        if session is None:
            check_session_id(session_id)
            if not await self.log.exists(key_of(session_id)):
                raise RequestError(-32002, "Resource not found",
                                   {"sessionId": session_id, "details": "no such session"})
            if (await self.log.state(key_of(session_id))).deleted:
                raise RequestError(-32002, "Resource not found", {
                    "sessionId": session_id, "details": "deleted by session/delete"})
            session = Session(id=session_id)
            self.sessions.by_id[session_id] = session
        session.cwd, session.where = params["cwd"], dict(params)
        session.opened = True  # the host sends its system prompt again
        if self.sessions.attached(session):
            return session, {}
        return session, await self.sessions.attach(session)

    async def close_session(self, params: Any) -> Any:
        return await lifecycle.close_session(self, params)

    async def delete_session(self, params: Any) -> Any:
        return await lifecycle.delete_session(self, params)

    async def fork_session(self, params: Any) -> Any:
        return await lifecycle.fork_session(self, params)

    async def list_sessions(self, params: Any) -> Any:
        check("ListSessionsRequest", params)
        return await list_page(self.log, self.agent_name, params)

    async def prompt(self, params: Any) -> Any:
        """One prompt turn. ACP allows one turn at a time per session; a host that
        sends a second prompt before the first is answered gets it run after the
        first, in the order they came, each recorded as its own turn (issue 43)."""
        check_prompt(params)
        async with self._one_turn.at_a_time(params["sessionId"]):
            return await self._prompt(params)

    async def _prompt(self, params: dict[str, Any]) -> Any:
        from acp import RequestError

        session = self.sessions.by_id.get(params["sessionId"])
        if session is None and await self.log.exists(key_of(params["sessionId"])):
            # a client that prompts a known session without loading it first (the proxy
            # restarted under it): attach it where it was, without a replay
            info = await self.log.info(key_of(params["sessionId"]))
            session, _ = await self._reattach({"sessionId": params["sessionId"],
                                               "cwd": info.workspace or "/"})
        if session is None:
            return await self._ask("session/prompt", params)  # not ours: passed through
        if not self.sessions.attached(session):
            await self.sessions.attach(session)
        cut = split(list(params["prompt"]), self.preamble, session.opened)
        session.opened = False
        if cut.preamble:
            session.preamble = cut.preamble
            log.info("session %s: a preamble (%s) of %s forwarded, recorded as the preamble",
                     session.id, cut.how, fingerprint(cut.preamble))
        prompt, preamble, how = forwarded(list(params["prompt"]), cut, session.injection,
                                          session.preamble)
        session.injection = None  # exactly once, whatever the agent answers
        turn = session.turn = Turn(prompt=cut.user, agent=self.agent_name, model=session.model,
                                   preamble=sent(preamble, how, session.native_id))
        forward = {**_with_session(params, session.native_id or ""), "prompt": prompt}
        try:
            result = await self.agent.request("session/prompt", forward)
        except AgentExited as exc:
            await self._record_turn(session, turn, f"cut off: {exc}")
            raise RequestError.internal_error({"details": str(exc)}) from None
        except RequestError as exc:
            await self._record_turn(session, turn, f"failed: {exc}")
            raise
        finally:
            session.turn = None
        stop = result.get("stopReason") if isinstance(result, dict) else None
        usage = result.get("usage") if isinstance(result, dict) else None
        await self._record_turn(session, turn, stop if isinstance(stop, str) else "end_turn",
                                usage)
        return result

    async def _record_turn(self, session: Session, turn: Turn, stop: str,
                           usage: Any = None) -> None:
        """The turn's messages (once), then how full the agent's window was after it."""
        messages = turn.close(stop, usage)
        if messages is None:
            return
        await self.recorder.turn(session.key, messages, lifecycle.window_of_turn(
            session, turn.window, messages[-1].id if len(messages) > 1 else None),
            first=[turn.preamble] if turn.preamble is not None else [])

    # ------------------------------------------------------------ agent -> client

    async def from_agent(self, method: str, params: Any, is_notification: bool) -> Any:
        native = params.get("sessionId") if isinstance(params, dict) else None
        if native in self.sessions.loading:
            return None  # the agent's own replay of a native load: the log replays
        session = self.sessions.native(native)
        if session is not None:
            params = _with_session(params, session.id)
            if method == "session/update":
                if session.turn is not None:
                    total = session.turn.add(params.get("update"), session.cost_base)
                    if total is not None:
                        session.cost_base = total
                lifecycle.session_facts(self, session, params.get("update"))
        if is_notification:
            with contextlib.suppress(ConnectionError):  # the client is gone: the turn
                await self.client.send_notification(method, params)  # is still recorded
            return None
        return await self.client.send_request(method, params)

    # ------------------------------------------------------------------ running

    async def shutdown(self, why: str = "the client disconnected") -> None:
        """The client is gone (or a signal came): let running turns end, record them."""
        open_turns = [s for s in self.sessions.by_id.values() if s.turn is not None]
        for session in open_turns:
            if session.native_id is not None:
                await self.agent.notify("session/cancel", {"sessionId": session.native_id})
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.grace
        while any(s.turn is not None for s in open_turns) and loop.time() < deadline:
            await asyncio.sleep(0.02)
        for session in open_turns:
            if session.turn is not None:
                await self._record_turn(session, session.turn, f"cut off: {why}")
        await self.recorder.drain()
        await self.agent.stop()
