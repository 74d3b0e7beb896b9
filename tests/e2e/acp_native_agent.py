"""A Python ACP agent that resumes its own sessions natively when it can (as one built
on the Claude Agent SDK does with `resume=<session id>`), with `AgentSessions`:

    python tests/e2e/acp_native_agent.py DB NATIVE_STORE [--no-native]

Its "native sessions" are files in NATIVE_STORE (what the SDK keeps on disk); wiping
the folder makes native resume fail, as a lost SDK session would. Each answer says
whether the model got convlog's history, and how the session was loaded.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path
from typing import Any, cast

import acp
from acp.schema import AgentCapabilities

import convlog
from convlog.acp import AgentSessions


class NativeAgent:
    def __init__(self, sessions: AgentSessions, store: Path, native: bool):
        self.sessions, self.store, self.native = sessions, store, native
        self.history: dict[str, str] = {}
        self.how: dict[str, str] = {}
        self.conn: Any = None

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> Any:
        return acp.InitializeResponse(protocol_version=acp.PROTOCOL_VERSION,
                                      agent_capabilities=AgentCapabilities(load_session=True))

    async def new_session(self, cwd: str, **kwargs: Any) -> Any:
        return acp.NewSessionResponse(session_id=await self.sessions.new(cwd))

    async def _resume(self, native_id: str) -> bool:
        return (self.store / native_id).exists()  # the SDK's own session, if kept

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> None:
        loaded = await self.sessions.load(
            self.conn, session_id, native_resume=self._resume if self.native else None)
        self.history[session_id] = loaded.text
        self.how[session_id] = f"{loaded.strategy}:{loaded.native_session_id}"

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> Any:
        history = self.history.pop(session_id, "")
        if session_id not in self.how or self.how[session_id].startswith("history"):
            native_id = f"native-{uuid.uuid4().hex[:8]}"  # a new SDK session, after its
            (self.store / native_id).write_text("kept")  # first query
            await self.sessions.bind(session_id, native_id)
            self.how.setdefault(session_id, "new")
        text = prompt[-1].text
        reply = acp.update_agent_message_text(
            f"{text}? [{self.how[session_id]}] history={'PELICAN' in history}")
        self.how[session_id] = "native:kept"
        await self.conn.session_update(session_id=session_id, update=reply)
        await self.sessions.record(session_id, prompt, [reply])
        return acp.PromptResponse(stop_reason="end_turn")


async def main() -> None:
    log = await convlog.open_async(sys.argv[1])
    store = Path(sys.argv[2])
    store.mkdir(exist_ok=True)
    agent = NativeAgent(AgentSessions(log, agent="native-agent"), store,
                        native="--no-native" not in sys.argv)
    await acp.run_agent(cast(acp.Agent, agent))


if __name__ == "__main__":
    asyncio.run(main())
