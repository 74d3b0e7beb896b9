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
from pathlib import Path
from typing import Any

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
    from tests.sdks.claude_run import notes_session

    work = tmp_path_factory.mktemp("claude")
    url = f"sqlite:///{work / 'convlog.db'}"
    key, entries = notes_session(url, work)
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
        (row,) = log.conversations()
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


@pytest.fixture(scope="module")
def adk(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Any]:
    from tests.sdks.adk_fake import remembering_session

    url = f"sqlite:///{tmp_path_factory.mktemp('adk') / 'adk.db'}"
    return url, asyncio.run(remembering_session(url, ["remember the blue door", "thanks"]))


def test_adk_state_scopes_are_not_conversations(adk: tuple[str, Any], tmp_path: Path) -> None:
    url, session = adk
    assert session.state["user:last_fact"] == "the blue door"  # kept, and read back
    assert session.state["app:facts"] == 1
    with convlog.open(url) as log:
        keys = [r.key for r in log.conversations()]
        assert keys == [f"adk:shop/u1/{session.id}"]
        (row,) = log.conversations()
        # the user's two texts, the call, its response, two answers: no session
        # record, no content-less event
        assert row.message_count == 6 == log.info(row.key).message_count
    listed = subprocess.run([sys.executable, "-m", "convlog.cli.main", "sessions", "--db",
                             url], capture_output=True, text=True, check=True)
    assert "adk-state:" not in listed.stdout
    spans = exported(url, tmp_path)
    ids = {s.attributes.get("gen_ai.conversation.id") for s in spans}
    assert ids == {f"adk:shop/u1/{session.id}"}
