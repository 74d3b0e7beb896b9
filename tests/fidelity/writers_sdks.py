"""Writers of the agent SDKs' session stores, each driven by its SDK's own code:

- OpenAI Agents: `Runner.run` on `ConvlogSession`, a session and a model per turn (a
  process per turn), the model numbering its calls per instance; the third run's tool
  stops the process mid-tool (a BaseException the SDK cannot turn into an output).
- Google ADK: `Runner.run_async` on `ConvlogSessionService`, likewise.
- Claude Agent SDK: `ConvlogSessionStore.append` given Claude Code's transcript entries
  (tests/fidelity/writers_files.claude_turn), a store per turn, as the SDK hands them
  over batch by batch. (Its real runner, the bundled Claude Code against the fake
  Anthropic API, is tests/sdks/claude_run.py; it takes seconds per prompt and cannot
  send an image or die mid-tool on cue, so the matrix gives the store the entries.)

Each reads the conversation back through the store's own read: `get_items()`,
`load()`, `get_session()`.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path
from typing import Any

import convlog
from tests.clock import ManualClock
from tests.fidelity.conversation import (
    ANSWERS,
    ARGS,
    ASK,
    PNG,
    PNG_DATA_URL,
    RESULTS,
    SYSTEM,
    TOOL,
    USAGE,
    Fact,
    Facts,
    call,
    image_of_bytes,
    image_of_url,
    lost,
    sent,
)


class Died(BaseException):
    """The process stopping mid-tool (no SDK turns a BaseException into a result)."""


def weather(turn: int) -> str:
    if turn == 2:
        raise Died
    return RESULTS[turn]


def _lost_name(text: str) -> str | None:
    import re

    found = re.search(r"the result of tool ([\w.-]+) was lost", text)
    return found.group(1) if found else None


def _result(facts: Facts, text: str) -> None:
    name = _lost_name(text)
    facts.add(lost(name) if name else Fact("result", text.strip()))


# ----------------------------------------------------------------- OpenAI Agents


def openai_model(turn: int) -> Any:
    from agents import Usage
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )
    from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

    class WeatherModel(Model):
        """Calls `fetch_weather` (`call-N`, numbered per instance: per process), then
        answers; the answer's response carries the turn's usage."""

        calls = 0

        async def get_response(self, system_instructions: str | None, input: Any,
                               *args: Any, **kwargs: Any) -> ModelResponse:
            last = input[-1] if isinstance(input, list) and input else {}
            if isinstance(last, dict) and last.get("type") == "function_call_output":
                tokens = USAGE[turn]
                return ModelResponse(output=[ResponseOutputMessage(
                    id=f"msg_{turn}", type="message", role="assistant", status="completed",
                    content=[ResponseOutputText(type="output_text", text=ANSWERS[turn],
                                                annotations=[])])],
                    usage=Usage(requests=1, input_tokens=tokens[0], output_tokens=tokens[1],
                                total_tokens=sum(tokens),
                                input_tokens_details=InputTokensDetails(
                                    cached_tokens=0, cache_write_tokens=0),
                                output_tokens_details=OutputTokensDetails(reasoning_tokens=0)),
                    response_id=f"resp_{turn}_2")
            self.calls += 1
            return ModelResponse(output=[ResponseFunctionToolCall(
                type="function_call", call_id=f"call-{self.calls + (turn == 2)}", name=TOOL,
                arguments=json.dumps(ARGS[turn]), id=f"fc_{turn}", status="completed")],
                usage=Usage(), response_id=f"resp_{turn}_1")

        def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            raise NotImplementedError

    return WeatherModel()


def openai_items_facts(items: list[Any]) -> Facts:
    facts = Facts()
    for item in items:
        kind = item.get("type", "message")
        if kind == "function_call":
            facts.add(call(item["name"], item["arguments"]))
        elif kind == "function_call_output":
            _result(facts, str(item["output"]))
        elif kind == "message" and item.get("role") == "system":
            facts.text("system", item["content"] if isinstance(item["content"], str) else
                       " ".join(p.get("text", "") for p in item["content"]))
        elif kind == "message":
            role = item["role"]
            content = item["content"]
            for p in [{"type": "input_text", "text": content}] if isinstance(content, str) \
                    else content:
                if p["type"] in ("input_text", "output_text"):
                    facts.text(role, p["text"])
                elif p["type"] == "input_image":
                    facts.add(image_of_url(p["image_url"]))
    return facts


def openai_agents(tmp: Path) -> Any:
    from agents import Agent, Runner, function_tool, set_tracing_disabled

    from convlog.integrations.openai_agents import ConvlogSession
    from tests.fidelity.writers import Written

    set_tracing_disabled(True)
    url, key = f"sqlite:///{tmp / 'openai.db'}", "fidelity:openai"
    def tool(turn: int) -> Any:
        @function_tool(name_override=TOOL)
        def fetch_weather(city: str, day: str = "today") -> str:
            """The weather in a city."""
            return weather(turn)
        return fetch_weather

    for turn in range(2):
        session = ConvlogSession(key, url)
        try:
            agent = Agent(name="weather", instructions=SYSTEM, model=openai_model(turn),
                          tools=[tool(turn)])
            content: list[dict[str, Any]] = [{"type": "input_text", "text": ASK[turn]}]
            if turn == 0:
                content.append({"type": "input_image", "image_url": PNG_DATA_URL,
                                "detail": "auto"})
            given: Any = [{"role": "user", "content": content}]
            asyncio.run(Runner.run(agent, given, session=session))
        finally:
            session.close()
    # The SDK saves a run's new items when the run ends: a process dying mid-tool
    # leaves only the user's input. A host that saves the call as it comes (as the
    # SDK's streaming hosts do) leaves the call without its output:
    session = ConvlogSession(key, url)
    try:
        asyncio.run(session.add_items([
            {"role": "user", "content": ASK[2]},
            {"type": "function_call", "call_id": "call-2", "name": TOOL, "id": "fc_2",
             "arguments": json.dumps(ARGS[2]), "status": "completed"}]))
        native = openai_items_facts(asyncio.run(session.get_items()))
    finally:
        session.close()
    return Written("openai-agents", url, key, sent(image_of_url(PNG_DATA_URL)), native, tmp)


# -------------------------------------------------------------------- Google ADK


def adk_model(turn: int) -> Any:
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types

    class WeatherLlm(BaseLlm):
        model: str = "gemini-2.0-flash"
        calls: int = 0

        async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False
                                         ) -> AsyncGenerator[LlmResponse, None]:
            last = llm_request.contents[-1]
            if any(p.function_response for p in last.parts or ()):
                tokens = USAGE[turn]
                yield LlmResponse(content=types.Content(role="model", parts=[
                    types.Part(text=ANSWERS[turn])]), model_version=self.model,
                    usage_metadata=types.GenerateContentResponseUsageMetadata(
                        prompt_token_count=tokens[0], candidates_token_count=tokens[1],
                        total_token_count=sum(tokens)))
                return
            self.calls += 1
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(
                function_call=types.FunctionCall(id=f"call-{self.calls + (turn == 2)}",
                                                 name=TOOL, args=ARGS[turn]))]),
                model_version=self.model)

    return WeatherLlm()


def adk_facts(events: list[Any]) -> Facts:
    facts = Facts()
    for event in events:
        if event.content is None:
            continue
        role = "user" if event.author == "user" else "assistant"
        for part in event.content.parts or ():
            if part.text:
                facts.text(role, part.text)
            elif part.inline_data is not None and part.inline_data.data is not None:
                facts.add(image_of_bytes(part.inline_data.data))
            elif part.file_data is not None:
                facts.add(Fact("image", str(part.file_data.file_uri)))
            elif part.function_call is not None:
                facts.add(call(str(part.function_call.name), part.function_call.args or {}))
            elif part.function_response is not None:
                response = part.function_response.response or {}
                text = response.get("result", response) if isinstance(response, dict) \
                    else response
                _result(facts, text if isinstance(text, str) else json.dumps(text))
        usage = event.usage_metadata
        if usage is not None and (usage.prompt_token_count or usage.candidates_token_count):
            facts.add(Fact("usage", f"{usage.prompt_token_count or 0}/"
                                    f"{usage.candidates_token_count or 0}"))
    return facts


def google_adk(tmp: Path) -> Any:
    from google.adk.agents import LlmAgent
    from google.adk.runners import Runner
    from google.adk.tools.function_tool import FunctionTool
    from google.genai import types

    from convlog.integrations.google_adk import ConvlogSessionService
    from tests.fidelity.writers import Written

    url = f"sqlite:///{tmp / 'adk.db'}"
    clock = ManualClock()

    async def run(turn: int, session_id: str | None) -> str:
        def fetch_weather(city: str, day: str = "today") -> str:
            """The weather in a city."""
            return weather(turn)

        # ADK appends an event per transaction; the log reads the test's clock, so
        # the OTel export's `--grace 0` (tests/fidelity/rules.py) cuts no turn
        # between them (they are written at one moment, long before the export)
        service = ConvlogSessionService(convlog.ConversationLog.with_options(
            url, convlog.LogOptions(), clock=clock))
        try:
            runner = Runner(agent=LlmAgent(name="weather", model=adk_model(turn),
                                           instruction=SYSTEM,
                                           tools=[FunctionTool(fetch_weather)]),
                            app_name="desk", session_service=service)
            if session_id is None:
                session_id = (await service.create_session(app_name="desk", user_id="u1")).id
            parts = [types.Part(text=ASK[turn])]
            if turn == 0:
                parts.append(types.Part(inline_data=types.Blob(mime_type="image/png",
                                                               data=PNG)))
            try:
                async for _ in runner.run_async(user_id="u1", session_id=session_id,
                                                new_message=types.Content(role="user",
                                                                          parts=parts)):
                    pass
            except Died:
                pass
            return session_id
        finally:
            await service.close()
            service.log.close()

    async def read(session_id: str) -> Facts:
        service = ConvlogSessionService(url)
        try:
            session = await service.get_session(app_name="desk", user_id="u1",
                                                session_id=session_id)
            assert session is not None
            return adk_facts(session.events)
        finally:
            await service.close()

    sid: str | None = None
    for turn in range(3):
        sid = asyncio.run(run(turn, sid))
    assert sid is not None
    native = asyncio.run(read(sid))
    return Written("google-adk", url, f"adk:desk/u1/{sid}",
                   sent(image_of_bytes(base64.b64encode(PNG).decode())), native, tmp)


# -------------------------------------------------------------- Claude Agent SDK


def claude_entries_facts(entries: list[Any]) -> Facts:
    facts = Facts()
    for entry in entries:
        if entry.get("type") == "summary":
            facts.add(Fact("title", entry["summary"]))
            continue
        message = entry.get("message")
        if entry.get("type") not in ("user", "assistant") or not isinstance(message, dict):
            continue
        role = message["role"]
        content = message["content"]
        blocks: list[Any] = [{"type": "text", "text": content}] if isinstance(
            content, str) else content
        for block in blocks:
            if block["type"] == "text":
                facts.text(role, block["text"])
            elif block["type"] == "image":
                facts.add(image_of_bytes(block["source"]["data"]))
            elif block["type"] == "tool_use":
                facts.add(call(block["name"], block["input"]))
            elif block["type"] == "tool_result":
                text = block["content"]
                _result(facts, text if isinstance(text, str) else " ".join(
                    b.get("text", "") for b in text))
        usage = message.get("usage") or {}
        if usage.get("input_tokens") or usage.get("output_tokens"):
            facts.add(Fact("usage", f"{usage['input_tokens']}/{usage['output_tokens']}"))
    return facts


def claude_agent_sdk(tmp: Path) -> Any:
    from convlog.integrations.claude_agent_sdk import ConvlogSessionStore, conversation_key
    from tests.fidelity.writers import Written
    from tests.fidelity.writers_files import SESSION, claude_last, claude_turn

    url = f"sqlite:///{tmp / 'claude.db'}"
    key: Any = {"project_key": "-w", "session_id": SESSION}

    async def append(entries: list[Any]) -> None:
        store = ConvlogSessionStore(url)
        try:
            await store.append(key, entries)
        finally:
            store.close()

    async def load() -> list[Any]:
        store = ConvlogSessionStore(url)
        try:
            return list(await store.load(key) or [])
        finally:
            store.close()

    parent: str | None = None
    for turn in range(3):
        asyncio.run(append(claude_turn(turn, parent=parent)))
        parent = claude_last(turn)
    native = claude_entries_facts(asyncio.run(load()))
    return Written("claude-agent-sdk", url, conversation_key(key),
                   sent(image_of_bytes(base64.b64encode(PNG).decode())), native, tmp)
