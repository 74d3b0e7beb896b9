"""The resumption service's contract (issue 26): resuming an active conversation
moves its last-active time and records when it was resumed (`resumed_at`); a user's
context lists the top agents WITH their interaction counts and the latest summary
text, on every surface (Python, `convlog context --user --json`, GET /v1/context).
Before the fix the metadata had agent names only, no summary and no `resumed_at`."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

import convlog
from convlog.cli.main import main
from convlog.services.context import ContextMessage
from tests.httpserver import served
from tests.integration.test_resumption import populate


def summarize(previous: str | None, messages: list[ContextMessage]) -> str:
    return "they chose JWT"


def prepared(log: convlog.ConversationLog) -> None:
    populate(log)
    log.context("u1:3", budget=convlog.Budget(tokens=200, messages=4), summarizer=summarize)


def test_a_resume_moves_last_active_and_records_resumed_at(
        log: convlog.ConversationLog) -> None:
    conv = log.conversation("k", user="u")
    conv.append_turn([convlog.user("hi"), convlog.assistant("hello")])
    before = log.info("k")
    assert before.resumed_at is None
    time.sleep(0.01)
    outcome = conv.resume([convlog.Tier("session/new", lambda call: "s2")])
    assert outcome.ok
    after = log.info("k")
    assert after.resumed_at is not None and before.last_active_at is not None
    assert after.last_active_at is not None and after.last_active_at > before.last_active_at
    assert after.resumed_at > before.last_active_at


def test_the_metadata_has_agents_with_counts_and_the_latest_summary(
        log: convlog.ConversationLog) -> None:
    prepared(log)
    span = log.resumption_context(user="u1")
    # u1:3 and u1:1 are copilot's, u1:2 claude's: 12 answers each
    assert [(a.agent, a.interactions) for a in span.agents] == [("copilot", 24),
                                                                ("claude", 12)]
    assert span.top_agents == [a.agent for a in span.agents]
    assert span.agent_interactions == sum(a.interactions for a in span.agents)
    assert span.latest_summary == "they chose JWT"
    assert [p.summary for p in span.conversations] == ["they chose JWT", None, None]


def test_the_cli_and_http_give_the_same_metadata(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    with convlog.open(url) as log:
        prepared(log)
        log.conversation("u1:1").resume([convlog.Tier("session/new", lambda call: "s9")])
        with served(log) as base:
            answer = httpx.get(f"{base}/v1/context", params={"user": "u1"}, timeout=10)
            assert answer.status_code == 200, answer.text
            over_http = answer.json()
            info = httpx.get(f"{base}/v1/conversations/u1:1", timeout=10).json()
            assert info["resumed_at"] is not None
    assert main(["--db", url, "--json", "context", "--user", "u1"]) == 0
    on_cli = json.loads(capsys.readouterr().out)
    for doc in (over_http, on_cli):
        assert doc["agents"] == [{"agent": "copilot", "interactions": 24},
                                 {"agent": "claude", "interactions": 12}]
        assert doc["latest_summary"] == "they chose JWT"
        resumed = [c["key"] for c in doc["conversations"] if c.get("resumed_at")]
        assert resumed == ["u1:1"]
