"""An offline model for Google ADK: a real `BaseLlm` subclass that answers with every
user text of the request it got (so a test sees how much history ADK replayed), and
reports token usage like Gemini does. No network, no key."""

from __future__ import annotations

from collections.abc import AsyncGenerator

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
