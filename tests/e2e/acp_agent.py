"""A downstream ACP agent for the proxy's tests, written with the real SDK.

    python tests/e2e/acp_agent.py --mode MODE --trace FILE [--state FILE]

Modes: ``memory`` (sessions live in the process only, no load, no resume), ``load``
(advertises session/load; sessions persist in --state, and a load replays them as
the spec says), ``resume`` (advertises session/resume and load; persists),
``flaky`` (advertises resume and load, but resume fails with a transient error and
load says the session is unknown), ``crash`` (like memory; dies in the middle of a
turn whose prompt contains "crash").

Every prompt the agent receives is appended to --trace as one JSON line, so a test
can see exactly what reached the agent (the injected history, or none). Its answer
is deterministic: a thought, a tool call with its result, a usage update with a
cumulative cost, and text that says what it remembers of the session. A prompt
containing "slow" waits until it is cancelled; "mid-tool" first starts a second tool call
(``fetch``) that never finishes, so "crash mid-tool" dies and "slow mid-tool" is
cancelled with a tool call in flight; "garbage" first writes a line that is
not JSON to stdout (a hostile agent); "title: X" names the session X
(`session_info_update`). Its `usage_update` says 100 tokens of a 1000-token window
are used per prompt so far. "edit" adds what an editor shows of a tool call: a call
with its `kind`, `rawInput` and `locations`, progress, agent text streamed in chunks
between, and a final update with a `diff` content block, text, `rawOutput` and
`locations` (issue 41); "twice" sends the reply in two chunks of one `messageId`;
"later" sends a title and a `usage_update` 0.2 s after the turn was answered.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any, cast

from acp import (
    PROTOCOL_VERSION,
    Agent,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    run_agent,
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_tool_call,
    update_user_message_text,
)
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    AgentMessageChunk,
    Cost,
    Implementation,
    PermissionOption,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionInfoUpdate,
    SessionResumeCapabilities,
    ToolCallLocation,
    ToolCallUpdate,
    UsageUpdate,
)


class TestAgent:
    """Duck-typed like the SDK's `Agent` protocol: what it lacks is "Method not found"
    (the SDK's router looks methods up by name), as with a real agent."""

    def __init__(self, mode: str, trace: Path, state: Path | None):
        self.mode, self.trace, self.state = mode, trace, state
        self.sessions: dict[str, list[str]] = {}
        if state is not None and state.exists() and mode in ("load", "resume"):
            self.sessions = json.loads(state.read_text())
        self.cancelled: set[str] = set()
        self.conn: Client

    def on_connect(self, conn: Client) -> None:
        self.conn = conn

    def _save(self) -> None:
        if self.state is not None and self.mode in ("load", "resume"):
            self.state.write_text(json.dumps(self.sessions))

    async def initialize(self, protocol_version: int, client_capabilities: Any = None,
                         client_info: Any = None, **kwargs: Any) -> InitializeResponse:
        resume = self.mode in ("resume", "flaky")
        caps = AgentCapabilities(
            load_session=self.mode in ("load", "resume", "flaky"),
            session_capabilities=SessionCapabilities(
                resume=SessionResumeCapabilities() if resume else None),
            field_meta={"x.test/unknown": {"kept": True}})
        return InitializeResponse(protocol_version=PROTOCOL_VERSION, agent_capabilities=caps,
                                  agent_info=Implementation(name=f"test-{self.mode}",
                                                            version="1.0"))

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any
                          ) -> NewSessionResponse:
        session_id = str(len(self.sessions))  # "0", "1": the same ids after a restart
        self.sessions[session_id] = []
        self._save()
        return NewSessionResponse(session_id=session_id)

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None,
                           **kwargs: Any) -> LoadSessionResponse | None:
        if self.mode not in ("load", "resume") or session_id not in self.sessions:
            raise RequestError(-32002, "Resource not found", {"sessionId": session_id})
        for text in self.sessions[session_id]:  # the spec: replay, then answer
            await self.conn.session_update(session_id, update_user_message_text(text))
        return LoadSessionResponse()

    async def resume_session(self, cwd: str, session_id: str, mcp_servers: Any = None,
                             **kwargs: Any) -> ResumeSessionResponse:
        if self.mode == "flaky":
            raise RequestError.internal_error({"details": "backend busy, try again"})
        if session_id not in self.sessions:
            raise RequestError(-32002, "Resource not found", {"sessionId": session_id})
        return ResumeSessionResponse()

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.cancelled.add(session_id)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"echo": method, "params": params}

    async def _edit(self, session_id: str, call_id: str) -> None:
        """A file edit as an editor shows it: kind, input, where, a reviewable diff."""
        send, path = self.conn.session_update, "/work/project/a.py"
        where = [ToolCallLocation(path=path, line=3)]
        await send(session_id, start_tool_call(
            call_id, "Edit a.py", kind="edit", status="pending", locations=where,
            raw_input={"path": path, "old": "x = 1", "new": "x = 2"}))
        await send(session_id, update_agent_message_text("Editing "))
        await send(session_id, update_tool_call(call_id, status="in_progress"))
        await send(session_id, update_agent_message_text("a.py"))
        await send(session_id, update_agent_message_text(" now."))
        await send(session_id, update_tool_call(
            call_id, status="completed", locations=where, raw_output={"tempC": 21, "sky": "clear"},
            content=[tool_diff_content(path, "x = 2\n", "x = 1\n"),
                     tool_content(text_block("edited a.py"))]))

    async def _after_the_turn(self, session_id: str) -> None:
        await self.conn.session_update(session_id, SessionInfoUpdate(
            session_update="session_info_update", title="Named after the turn",
            updated_at="2026-11-28T00:00:00Z"))
        await self.conn.session_update(session_id, UsageUpdate(
            session_update="usage_update", used=777, size=1000,
            cost=Cost(amount=0.5, currency="USD")))

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        texts = [getattr(b, "text", "") for b in prompt]
        with self.trace.open("a") as f:
            f.write(json.dumps({"pid": os.getpid(), "session": session_id,
                                "texts": texts}) + "\n")
        if session_id not in self.sessions:
            raise RequestError(-32002, "Resource not found", {"sessionId": session_id})
        text = texts[-1]
        memory = list(self.sessions[session_id])
        self.sessions[session_id].append(text)
        self._save()
        send = self.conn.session_update
        await send(session_id, update_agent_thought_text(f"thinking about {text!r}"))
        await send(session_id, start_tool_call(f"t{len(memory)}", "lookup", kind="search",
                                               status="in_progress", raw_input={"q": text}))
        await send(session_id, update_tool_call(f"t{len(memory)}", status="completed",
                                                raw_output={"hits": len(memory)}))
        if "permission" in text:  # a request from the agent to the client, mid-turn
            answer = await self.conn.request_permission(
                session_id=session_id, tool_call=ToolCallUpdate(tool_call_id="p1"),
                options=[PermissionOption(option_id="ok", name="Allow", kind="allow_once")])
            await send(session_id, update_agent_message_text(
                f"permission: {answer.outcome.outcome}/{getattr(answer.outcome, 'option_id', '')}"))
        if "edit" in text:
            await self._edit(session_id, f"e{len(memory)}")
        if "garbage" in text:
            sys.stdout.buffer.write(b"this is {not json\n")
            sys.stdout.buffer.flush()
        if "mid-tool" in text:  # a tool call in flight when the turn ends
            await send(session_id, start_tool_call(f"f{len(memory)}", "fetch", kind="fetch",
                                                   status="in_progress",
                                                   raw_input={"url": "https://example.org"}))
        if "crash" in text:
            await send(session_id, update_agent_message_text("about to"))
            await asyncio.sleep(0.05)
            os._exit(3)
        if "slow" in text:
            while session_id not in self.cancelled:
                await asyncio.sleep(0.01)
            self.cancelled.discard(session_id)
            return PromptResponse(stop_reason="cancelled")
        injected = [t for t in texts[:-1] if "conversation_history" in t]
        reply = (f"you said {text!r}; I remember {len(memory)} earlier prompts"
                 + ("; and I was given the history" if injected else ""))
        if "twice" in text:  # one message in two chunks, named by its messageId
            half = len(reply) // 2
            for piece in (reply[:half], reply[half:]):
                await send(session_id, AgentMessageChunk(
                    session_update="agent_message_chunk", content=text_block(piece),
                    message_id=f"m-{session_id}-{len(memory)}"))
        else:
            await send(session_id, update_agent_message_text(reply))
        if text.startswith("title: "):  # the agent names the session
            await send(session_id, SessionInfoUpdate(session_update="session_info_update",
                                                     title=text.removeprefix("title: ")))
        used = 100 * len(self.sessions[session_id])  # the window fills turn by turn
        await send(session_id, UsageUpdate(session_update="usage_update", used=used, size=1000,
                                           cost=Cost(amount=0.01 * len(self.sessions[session_id]),
                                                     currency="USD")))
        if "later" in text:  # a title and usage sent after the turn was answered
            asyncio.get_running_loop().call_later(0.2, lambda: asyncio.ensure_future(
                self._after_the_turn(session_id)))
        return PromptResponse(stop_reason="end_turn")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", default="memory",
                        choices=("memory", "load", "resume", "flaky", "crash"))
    parser.add_argument("--trace", type=Path, required=True)
    parser.add_argument("--state", type=Path)
    args = parser.parse_args()
    asyncio.run(run_agent(cast(Agent, TestAgent(args.mode, args.trace, args.state)),
                          use_unstable_protocol=True))


if __name__ == "__main__":
    main()
