"""Issue 41, items 3 and 4: not every record is a message.

Claude Code writes bookkeeping entries through the Claude Agent SDK's store
(`attachment`, `queue-operation`, `last-prompt`, `tools-used`, `atis-latch`,
`cost-state`, `mode`...), and Google ADK's service keeps its own records (a session's
opening record, app- and user-scoped state in ``adk-state:`` conversations, events
without content). They come back unchanged through the store's own read, and are
never messages: not in counts, the catalog, transcripts, `convlog show`, the
context, the HTML page's messages or the exported spans.

Real runners, offline: the SDK's bundled Claude Code against the fake Anthropic API
(tests/sdks/anthropic_fake.py), and ADK's `Runner` with a fake model and a tool that
writes app- and user-scoped state."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any, ClassVar

import pytest

import convlog
from tests.otlp_receiver import running

pytest.importorskip("claude_agent_sdk")
pytest.importorskip("google.adk")


def speaker(entry: Any) -> bool:
    """A Claude Code entry that is dialogue: a user or assistant record with a body."""
    return entry.get("type") in ("user", "assistant") and isinstance(entry.get("message"),
                                                                      dict)


class Claude:
    def __init__(self, url: str, key: Any, conversation: str, entries: list[Any]) -> None:
        self.url, self.key, self.conversation, self.entries = url, key, conversation, entries


@pytest.fixture(scope="module")
def claude(tmp_path_factory: pytest.TempPathFactory) -> Claude:
    from convlog.integrations.claude_agent_sdk import conversation_key
    from tests.sdks.anthropic_fake import serving
    from tests.sdks.claude_run import RecordingStore, run_claude

    work = tmp_path_factory.mktemp("claude")
    (work / "notes.txt").write_text("KEY-FACT-42\n")
    url = f"sqlite:///{work / 'convlog.db'}"

    async def go() -> tuple[Any, list[Any]]:
        store = RecordingStore(url)
        try:
            with serving() as fake:
                run = await run_claude(store, fake, work, [
                    f'use Read {{"file_path": "{work / "notes.txt"}"}}', "and again?"])
            (key,) = {tuple(sorted(k.items())) for k, _ in store.appended
                      if k["session_id"] == run.session_id and "subpath" not in k}
            main = dict(key)
            return main, store.entries(main)
        finally:
            store.close()

    key, entries = asyncio.run(go())
    return Claude(url, key, conversation_key(key), entries)


def test_claude_code_records_come_back_unchanged_through_load(claude: Claude) -> None:
    from convlog.integrations.claude_agent_sdk import ConvlogSessionStore

    kinds = {e.get("type") for e in claude.entries}
    assert {"attachment", "queue-operation", "last-prompt"} <= kinds  # what Claude Code wrote
    store = ConvlogSessionStore(claude.url)
    try:
        assert asyncio.run(store.load(claude.key)) == claude.entries
    finally:
        store.close()


def test_claude_code_records_are_not_messages(claude: Claude, tmp_path: Path) -> None:
    from convlog.html.conversation import conversation_data

    dialogue = [e for e in claude.entries if speaker(e)]
    assert len(dialogue) == 6  # 2 prompts, a tool call, its result, 2 answers
    assert len(dialogue) < len(claude.entries)
    with convlog.open(claude.url) as log:
        key = claude.conversation
        (row,) = log.sessions()
        assert row.message_count == len(dialogue)
        assert log.info(key).message_count == len(dialogue)
        assert log.summary(key).message_count == len(dialogue)
        assert [m.raw for m in log.messages(key)] == dialogue
        assert len(log.transcript(key)) == len(dialogue)
        assert all(line.text for line in log.transcript(key))
        page = conversation_data(log, key)
        assert page["totals"]["messages"] == len(dialogue)
        assert all(m["parts"] for m in page["messages"])
        for name in ("user", "agent"):
            messages = [e for e in log.view(key, name).entries if e.kind == "message"]
            assert len(messages) == len(dialogue), name
    shown = subprocess.run([sys.executable, "-m", "convlog.cli.main", "show", "--db",
                            claude.url, key], capture_output=True, text=True, check=True)
    assert f"({len(dialogue)} messages" in shown.stdout
    assert not re.search(r"agent: *$", shown.stdout, re.M), shown.stdout
    listed = subprocess.run([sys.executable, "-m", "convlog.cli.main", "sessions", "--db",
                             claude.url, "--json"], capture_output=True, text=True, check=True)
    assert f'"message_count": {len(dialogue)}' in listed.stdout.replace('":', '": ').replace(
        '":  ', '": '), listed.stdout


def exported(url: str, tmp_path: Path) -> list[Any]:
    """`convlog export --otel --with-content` of the whole log, as a receiver got it."""
    import os

    with running() as receiver:
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
        subprocess.run([sys.executable, "-m", "convlog.cli.main", "export", "--db", url,
                        "--otel", "--with-content", "--state", str(tmp_path / "otel.sqlite")],
                       capture_output=True, text=True, check=True, env=env)
        return receiver.spans


def test_claude_code_records_are_not_exported_as_chat_spans(claude: Claude,
                                                           tmp_path: Path) -> None:
    import json

    spans = exported(claude.url, tmp_path)
    chats = [s for s in spans if s.name.startswith("chat")]
    assert chats
    for span in chats:
        out = json.loads(span.attributes["gen_ai.output.messages"])
        assert all(m["parts"] for m in out), span.attributes
    agents = [s for s in spans if s.name.startswith("invoke_agent")]
    assert sum(s.attributes["convlog.messages"] for s in agents) == sum(
        1 for e in claude.entries if speaker(e))


# ----------------------------------------------------------------------------- ADK


def remember(fact: str, tool_context: Any) -> dict[str, Any]:
    """Remembers a fact for this user, and counts facts for the app."""
    tool_context.state["user:last_fact"] = fact
    tool_context.state["app:facts"] = int(tool_context.state.get("app:facts") or 0) + 1
    return {"stored": fact}


def _llm() -> Any:
    """An offline model (a real BaseLlm; ADK imported lazily): asked to "remember X",
    it calls `remember(X)`; otherwise it says "noted"."""
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types

    class Llm(BaseLlm):
        model: str = "gemini-2.0-flash"
        seen: ClassVar[list[Any]] = []

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

    return Llm()


@pytest.fixture(scope="module")
def adk(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Any]:
    from google.adk.agents import LlmAgent
    from google.adk.runners import Runner
    from google.adk.tools.function_tool import FunctionTool
    from google.genai import types

    from convlog.integrations.google_adk import ConvlogSessionService

    url = f"sqlite:///{tmp_path_factory.mktemp('adk') / 'adk.db'}"

    async def go() -> Any:
        service = ConvlogSessionService(url)
        runner = Runner(agent=LlmAgent(name="helper", model=_llm(),
                                       tools=[FunctionTool(remember)]),
                        app_name="shop", session_service=service)
        session = await service.create_session(app_name="shop", user_id="u1")
        for text in ("remember the blue door", "thanks"):
            async for _ in runner.run_async(user_id="u1", session_id=session.id,
                                            new_message=types.Content(
                                                role="user", parts=[types.Part(text=text)])):
                pass
        got = await service.get_session(app_name="shop", user_id="u1", session_id=session.id)
        await service.close()
        return got

    return url, asyncio.run(go())


def test_adk_state_scopes_are_not_conversations(adk: tuple[str, Any], tmp_path: Path) -> None:
    url, session = adk
    assert session.state["user:last_fact"] == "the blue door"  # kept, and read back
    assert session.state["app:facts"] == 1
    with convlog.open(url) as log:
        keys = [r.key for r in log.sessions()]
        assert keys == [f"adk:shop/u1/{session.id}"]
        (row,) = log.sessions()
        # the user's two texts, the call, its response, two answers: no session
        # record, no content-less event
        assert row.message_count == 6 == log.info(row.key).message_count
    listed = subprocess.run([sys.executable, "-m", "convlog.cli.main", "sessions", "--db",
                             url], capture_output=True, text=True, check=True)
    assert "adk-state:" not in listed.stdout
    spans = exported(url, tmp_path)
    ids = {s.attributes.get("gen_ai.conversation.id") for s in spans}
    assert ids == {f"adk:shop/u1/{session.id}"}
