"""An offline model for Google ADK: a real `BaseLlm` subclass that answers with every
user text of the request it got (so a test sees how much history ADK replayed), and
reports token usage like Gemini does. No network, no key."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from typing import Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types

USAGE = {"prompt": 50, "cached": 10, "candidates": 6}


class EchoHistoryLlm(BaseLlm):
    model: str = "gemini-2.0-flash"

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False
                                     ) -> AsyncGenerator[LlmResponse, None]:
        heard = [part.text for content in llm_request.contents if content.role == "user"
                 for part in content.parts or () if part.text]
        yield LlmResponse(
            content=types.Content(role="model", parts=[
                types.Part(text="I have heard: " + " | ".join(heard))]),
            model_version=self.model,
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=USAGE["prompt"], cached_content_token_count=USAGE["cached"],
                candidates_token_count=USAGE["candidates"],
                total_token_count=USAGE["prompt"] + USAGE["candidates"]))


def remember(fact: str, tool_context: Any) -> dict[str, Any]:
    """Remembers a fact for this user, and counts facts for the app (a tool writing
    user- and app-scoped state)."""
    tool_context.state["user:last_fact"] = fact
    tool_context.state["app:facts"] = int(tool_context.state.get("app:facts") or 0) + 1
    return {"stored": fact}


class RememberLlm(BaseLlm):
    """Asked to "remember X", calls `remember(X)`; otherwise says "noted"."""

    model: str = "gemini-2.0-flash"

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False
                                     ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1]
        text = next((p.text for p in last.parts or () if p.text), "")
        if last.role == "user" and text.startswith("remember "):
            part = types.Part(function_call=types.FunctionCall(
                name="remember", args={"fact": text.removeprefix("remember ")}))
        else:
            part = types.Part(text="noted")
        yield LlmResponse(content=types.Content(role="model", parts=[part]),
                          model_version=self.model)


async def remembering_session(url: str, texts: Sequence[str]) -> Any:
    """ADK's own `Runner` (agent "helper" of app "shop", user "u1", the `remember`
    tool) on convlog's service at `url`: one new session, a turn per text; the
    session as `get_session` reads it back."""
    from google.adk.agents import LlmAgent
    from google.adk.runners import Runner
    from google.adk.tools.function_tool import FunctionTool

    from convlog.integrations.google_adk import ConvlogSessionService

    service = ConvlogSessionService(url)
    try:
        runner = Runner(agent=LlmAgent(name="helper", model=RememberLlm(),
                                       tools=[FunctionTool(remember)]),
                        app_name="shop", session_service=service)
        session = await service.create_session(app_name="shop", user_id="u1")
        for text in texts:
            async for _ in runner.run_async(user_id="u1", session_id=session.id,
                                            new_message=types.Content(
                                                role="user", parts=[types.Part(text=text)])):
                pass
        return await service.get_session(app_name="shop", user_id="u1", session_id=session.id)
    finally:
        await service.close()
