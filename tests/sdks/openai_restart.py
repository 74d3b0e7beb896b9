"""One process of the restart test: run the agent once on a convlog-backed session and
print its answer. `python -m tests.sdks.openai_restart URL SESSION TEXT`."""

from __future__ import annotations

import asyncio
import sys

from agents import Agent, Runner, set_tracing_disabled

from convlog.integrations.openai_agents import ConvlogSession
from tests.sdks.openai_fake import EchoHistoryModel


async def main(url: str, session_id: str, text: str) -> None:
    set_tracing_disabled(True)
    session = ConvlogSession(session_id, url, model="gpt-4o-mini", agent="helper")
    try:
        agent = Agent(name="helper", instructions="Be brief.", model=EchoHistoryModel())
        result = await Runner.run(agent, text, session=session)
        print(result.final_output)
    finally:
        session.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
