"""A convlog compaction (issue 47) as ADK sees it: `get_session` carries ADK's own
compaction event after the events it covers, and ADK's `Runner` (its own contents
builder) hands its model the summary in their place; the events and the session's
state stay."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from pathlib import Path

import pytest

import convlog

pytest.importorskip("google.adk")
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.genai import types

from convlog.integrations.google_adk import ConvlogSessionService

SEEN: list[list[str]] = []


class TextsLlm(BaseLlm):
    """Records every text of each request it gets (any role), answers "ok"."""

    model: str = "gemini-2.0-flash"

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False
                                     ) -> AsyncGenerator[LlmResponse, None]:
        SEEN.append([part.text for content in llm_request.contents
                     for part in content.parts or () if part.text])
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="ok")]),
                          model_version=self.model)


def test_adks_runner_reads_the_summary_in_place_of_what_it_covers(tmp_path: Path) -> None:
    async def main() -> None:
        log = convlog.open(f"sqlite:///{tmp_path / 'c.db'}")
        service = ConvlogSessionService(log)
        runner = Runner(agent=LlmAgent(name="helper", model=TextsLlm()), app_name="shop",
                        session_service=service)
        session = await service.create_session(app_name="shop", user_id="u1",
                                               state={"plan": "pro"})

        async def say(text: str) -> None:
            async for _ in runner.run_async(user_id="u1", session_id=session.id,
                                            new_message=types.Content(
                                                role="user", parts=[types.Part(text=text)])):
                pass

        for text in ("first question", "second question", "third question"):
            await say(text)
        key = next(r.key for r in log.conversations() if r.channel == "google-adk")
        done = log.compact(key, lambda previous, messages: "SUMMARY: two questions asked",
                           keep_last=2)
        assert done is not None and done.kept == 2
        got = await service.get_session(app_name="shop", user_id="u1",
                                        session_id=session.id)
        assert got is not None and got.state["plan"] == "pro"
        marks = [e for e in got.events if e.actions and e.actions.compaction]
        assert len(marks) == 1 and len(got.events) == 7  # the 6 events stay, + ADK's own
        SEEN.clear()
        await say("fourth question")
        texts = SEEN[-1]
        assert "SUMMARY: two questions asked" in texts
        assert "third question" in texts and "fourth question" in texts
        assert "first question" not in texts and "second question" not in texts
        log.close()

    asyncio.run(main())
