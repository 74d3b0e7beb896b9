"""`make demo-acp`: the restart story of `make demo`, over the Agent Client Protocol.

Real processes all the way: a host (the SDK's client) starts `convlog acp -- agent`,
and the proxy starts the agent (written with the SDK; a deterministic fake model
that keeps its sessions in process memory, like most agents).

1. Host 1 opens a session and talks; the proxy records every turn. Then the host, the
   proxy and the agent are killed (SIGKILL).
2. Host 2 starts everything again and asks `session/load` for the same session: the
   proxy replays the conversation from the log, and resumes by tiers against the new
   agent: its `session/resume` and `session/load` fail (it forgot), `session/new`
   works and the history goes into the first prompt. The user asks something only
   the earlier conversation can answer, and the fake model answers from it.

    python -m convlog.cli.demo_acp            the demo (database: $CONVLOG_DEMO_DB or
                                              ./convlog-acp.db)
    python -m convlog.cli.demo_acp agent      the demo agent (the proxy starts it)
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any, cast

from convlog.cli.demo import QUESTION, FakeModel, say
from convlog.domain.errors import ConvlogError

SCRIPT = [("Which auth scheme should the API use?",
           "The gateway has no auth yet. I suggest JWT with rotating signing keys."),
          ("OK, JWT it is. Rotation every 24h, please.",
           "Decision recorded: JWT, signing keys rotate every 24h (kid header).")]
TRACE = "CONVLOG_DEMO_TRACE"


class DemoAgent:
    """An SDK agent whose sessions live in its memory: a restart loses them, although
    it advertises load and resume (as many agents do)."""

    def __init__(self) -> None:
        self.sessions: dict[str, list[str]] = {}
        self.conn: Any = None

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> Any:
        import acp
        from acp.schema import (
            AgentCapabilities,
            Implementation,
            SessionCapabilities,
            SessionResumeCapabilities,
        )

        return acp.InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_info=Implementation(name="demo-agent", version="1.0"),
            agent_capabilities=AgentCapabilities(load_session=True, session_capabilities=(
                SessionCapabilities(resume=SessionResumeCapabilities()))))

    async def new_session(self, cwd: str, **kwargs: Any) -> Any:
        import acp

        session_id = f"sess-{len(self.sessions)}"
        self.sessions[session_id] = []
        return acp.NewSessionResponse(session_id=session_id)

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> Any:
        return await self.resume_session(cwd, session_id)

    async def resume_session(self, cwd: str, session_id: str, **kwargs: Any) -> Any:
        import acp

        if session_id not in self.sessions:
            raise acp.RequestError(-32002, "Resource not found",
                                   {"sessionId": session_id, "details": "not in memory"})
        return {}

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> Any:
        import acp

        texts = [getattr(block, "text", "") for block in prompt]
        if os.environ.get(TRACE):
            with open(os.environ[TRACE], "a") as f:
                f.write(json.dumps({"pid": os.getpid(), "texts": texts}) + "\n")
        memory = self.sessions.setdefault(session_id, [])
        canned = dict(SCRIPT).get(texts[-1])
        answer = canned or FakeModel().answer([*memory, *texts], texts[-1])
        memory += [*texts, answer]
        await self.conn.session_update(session_id, acp.update_agent_message_text(answer))
        return acp.PromptResponse(stop_reason="end_turn")


class Host:
    """The host's side of the wire: shows what the user sees."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        text = getattr(getattr(update, "content", None), "text", None)
        if text is not None:
            who = "user" if update.session_update == "user_message_chunk" else "agent"
            self.seen.append((who, text))

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        import acp

        raise acp.RequestError.method_not_found("session/request_permission")


# The SDK gives a child 2 s to exit after its stdin closes, then terminates it, and
# raises ProcessLookupError when the child exits in between: on a loaded machine the
# proxy (closing its log, then its agent) can take longer than that.
SHUTDOWN = {"shutdown_timeout": 30.0}


def proxy(url: str) -> list[str]:
    return [sys.executable, "-m", "convlog.cli.main", "acp", "--db", url, "--tokens", "2000",
            "--", sys.executable, "-m", "convlog.cli.demo_acp", "agent"]


async def first_host(url: str, state: Path) -> None:
    import acp

    host = Host()
    async with acp.spawn_agent_process(cast(acp.Client, host), *proxy(url),
                                       env=dict(os.environ),
                                       transport_kwargs=SHUTDOWN) as (conn, proc):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION,
                              client_info=acp.schema.Implementation(name="demo-host",
                                                                    version="1.0"))
        session = await conn.new_session(cwd=os.getcwd(), mcp_servers=[])
        state.write_text(session.session_id)
        for question, _ in SCRIPT:
            say("user", question)
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block(question)])
            say("agent", host.seen[-1][1])
        pids = {json.loads(line)["pid"] for line in Path(os.environ[TRACE]).read_text()
                .splitlines()}
        for pid in (proc.pid, *pids):
            os.kill(pid, signal.SIGKILL)
        print(f"  (killed: the proxy, pid {proc.pid}, and the agent, pid "
              f"{', '.join(map(str, pids))}; the agent's sessions died with it)", flush=True)


async def second_host(url: str, state: Path) -> None:
    import acp

    import convlog

    host = Host()
    session_id = state.read_text()
    async with acp.spawn_agent_process(cast(acp.Client, host), *proxy(url),
                                       env=dict(os.environ),
                                       transport_kwargs=SHUTDOWN) as (conn, _):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION,
                              client_info=acp.schema.Implementation(name="demo-host",
                                                                    version="1.0"))
        await conn.load_session(cwd=os.getcwd(), session_id=session_id, mcp_servers=[])
        print("== session/load: the proxy replays the conversation from the log")
        for who, text in host.seen:
            say(who, text)
        with convlog.open(url) as log:
            attempts = [r for r in log.timeline(f"acp:{session_id}")
                        if r.type.startswith("resume_") and r.type != "resume_attempted"]
            print("\n== resume outcomes against the new agent (recorded as events)")
            for row in attempts:
                print("\n".join(outcome_lines(row.type, row.details)))
        print("\n== the user asks")
        say("user", QUESTION)
        await conn.prompt(session_id=session_id, prompt=[acp.text_block(QUESTION)])
        last = json.loads(Path(os.environ[TRACE]).read_text().splitlines()[-1])
        print("\n== what the new agent process receives in its first prompt")
        for i, block in enumerate(last["texts"], 1):
            print(textwrap.indent(block, f"  [{i}] "))
        print("\n== what the user sees")
        say("agent", host.seen[-1][1])


def outcome_lines(kind: str, details: str, width: int | None = None) -> list[str]:
    """One resume outcome, its details wrapped between words under themselves (they
    were cut at 150 characters, mid-word)."""
    width = width or max(60, shutil.get_terminal_size((100, 24)).columns)
    head = f"  {kind:<17} "
    return textwrap.wrap(details, width, initial_indent=head,
                         subsequent_indent=" " * len(head), break_long_words=False,
                         break_on_hyphens=False) or [head.rstrip()]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        import convlog.acp  # noqa: F401 - the extra, before anything is written
    except ConvlogError as exc:
        print(f"convlog demo-acp: {exc}", file=sys.stderr)
        return 1
    if args == ["agent"]:
        import acp

        asyncio.run(acp.run_agent(cast(acp.Agent, DemoAgent()), use_unstable_protocol=True))
        return 0
    path = Path(os.environ.get("CONVLOG_DEMO_DB", "convlog-acp.db")).resolve()
    url = f"sqlite:///{path}"
    state = path.with_suffix(".session")
    with tempfile.TemporaryDirectory(prefix="convlog-demo-acp-") as scratch:
        os.environ[TRACE] = str(Path(scratch) / "prompts.trace")  # what the agent got
        Path(os.environ[TRACE]).write_text("")
        print(f"== host 1 -> convlog acp -> agent: a conversation, recorded in {path.name}")
        asyncio.run(first_host(url, state))
        print("\n== host 2 -> convlog acp -> a NEW agent process: same session id")
        asyncio.run(second_host(url, state))
    key = f"acp:{state.read_text()}"
    print("\nExplore it:\n"
          f"  convlog replay {key} --db {url}\n"
          f"  convlog telemetry --by agent --db {url}\n"
          f"  convlog sessions --db {url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
