"""An offline model for the OpenAI Agents SDK: a real `agents.models.interface.Model`
subclass whose answer depends on the input it was given, so a test can tell from the
reply alone how much history the SDK handed to the model (no network, no key)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

from agents import Usage
from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.models.interface import Model
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseOutputMessage,
    ResponseOutputText,
)
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

USAGE = {"input_tokens": 120, "cached_tokens": 20, "output_tokens": 7}


def user_texts(items: str | list[TResponseInputItem]) -> list[str]:
    if isinstance(items, str):
        return [items]
    found = []
    for item in items:
        if isinstance(item, dict) and item.get("role") == "user":
            content = item.get("content")
            found.append(content if isinstance(content, str) else
                         " ".join(str(p.get("text", "")) for p in content or ()  # type: ignore[attr-defined]
                                  if isinstance(p, dict)))
    return found


class EchoHistoryModel(Model):
    """Answers "I have heard: a | b | c" with every user text in its input, in order."""

    def __init__(self) -> None:
        self.inputs: list[str | list[TResponseInputItem]] = []

    def _output(self, items: str | list[TResponseInputItem]) -> ResponseOutputMessage:
        self.inputs.append(items)
        text = "I have heard: " + " | ".join(user_texts(items))
        return ResponseOutputMessage(
            id=f"msg_{len(self.inputs)}", type="message", role="assistant", status="completed",
            content=[ResponseOutputText(type="output_text", text=text, annotations=[])])

    async def get_response(self, system_instructions: str | None,
                           input: str | list[TResponseInputItem], *args: Any,
                           **kwargs: Any) -> ModelResponse:
        usage = Usage(requests=1, input_tokens=USAGE["input_tokens"],
                      output_tokens=USAGE["output_tokens"],
                      total_tokens=USAGE["input_tokens"] + USAGE["output_tokens"],
                      input_tokens_details=InputTokensDetails(
                          cached_tokens=USAGE["cached_tokens"], cache_write_tokens=0),
                      output_tokens_details=OutputTokensDetails(reasoning_tokens=0))
        return ModelResponse(output=[self._output(input)], usage=usage,
                             response_id=f"resp_{len(self.inputs)}")

    async def stream_response(self, system_instructions: str | None,
                              input: str | list[TResponseInputItem], *args: Any,
                              **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        message = self._output(input)
        response = Response(id=f"resp_{len(self.inputs)}", created_at=0, model="fake",
                            object="response", output=[message], parallel_tool_calls=False,
                            tool_choice="auto", tools=[])
        yield ResponseCompletedEvent(type="response.completed", response=response,
                                     sequence_number=0)


class ToolCallingModel(Model):
    """Calls its tool once a run, then answers with the tool's output. It numbers its
    calls per instance (``call-1``, ``call-2``...), as agents that count tool calls
    per process do: a new instance, like a restarted process, uses ``call-1`` again.
    `inputs` keeps every input it was given."""

    def __init__(self, tool: str = "fetch_weather", arguments: str = '{"city":"Oslo"}'
                 ) -> None:
        self.tool, self.arguments = tool, arguments
        self.inputs: list[list[Any]] = []
        self.calls = 0

    def _output(self, items: str | list[TResponseInputItem]) -> list[Any]:
        from openai.types.responses import ResponseFunctionToolCall

        listed = [{"role": "user", "content": items}] if isinstance(items, str) else list(items)
        self.inputs.append(listed)
        last = listed[-1] if listed else {}
        if isinstance(last, dict) and last.get("type") == "function_call_output":
            text = f"The tool said: {last.get('output')}"
            return [ResponseOutputMessage(
                id=f"msg_{uuid.uuid4().hex}", type="message", role="assistant",
                status="completed",
                content=[ResponseOutputText(type="output_text", text=text, annotations=[])])]
        self.calls += 1
        return [ResponseFunctionToolCall(type="function_call", call_id=f"call-{self.calls}",
                                         name=self.tool, arguments=self.arguments,
                                         id=f"fc_{uuid.uuid4().hex}", status="completed")]

    async def get_response(self, system_instructions: str | None,
                           input: str | list[TResponseInputItem], *args: Any,
                           **kwargs: Any) -> ModelResponse:
        return ModelResponse(output=self._output(input), usage=Usage(requests=1),
                             response_id=f"resp_{len(self.inputs) + 1}")

    async def stream_response(self, system_instructions: str | None,
                              input: str | list[TResponseInputItem], *args: Any,
                              **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("ToolCallingModel answers get_response only")
        yield  # pragma: no cover
