"""convlog's `Session` for the OpenAI Agents SDK, with the real `agents` package: the
Runner across a real process restart, items kept exactly, pop as a retraction, clear
as an epoch, and the run's usage and model recorded so costs work."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import convlog
from convlog.domain.events import ConversationCleared, MessageAppended, MessageRetracted
from tests.sdks.openai_fake import USAGE, EchoHistoryModel

agents = pytest.importorskip("agents")
from agents import Agent, Runner, Session, set_tracing_disabled  # noqa: E402

from convlog.integrations.openai_agents import ConvlogSession  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ITEMS: list[Any] = [
    {"role": "user", "content": "Find the auth notes"},
    {"role": "user", "content": [{"type": "input_text", "text": "and this"},
                                 {"type": "input_image", "image_url": "https://x/y.png",
                                  "detail": "auto"}]},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "grep"}]},
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "grep",
     "arguments": '{"q": "auth"}', "status": "completed"},
    {"type": "function_call", "call_id": "call_2", "name": "broken", "arguments": "{not json"},
    {"type": "function_call_output", "call_id": "call_1", "output": "notes/auth.md:3 JWT"},
    {"type": "function_call_output", "call_id": "call_2",
     "output": [{"type": "input_text", "text": "list output"}]},
    {"type": "web_search_call", "id": "ws_1", "status": "completed",
     "action": {"type": "search", "query": "jwt rotation"}},
    {"role": "developer", "content": "an instruction the host put in the history"},
    {"id": "msg_9", "type": "message", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "JWT with rotating keys. é ✓",
                  "annotations": [], "logprobs": []}]},
    {"role": "user", "content": "numbers", "n": 2**53 + 1, "f": 0.1, "none": None},
]


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'convlog.db'}"


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_it_is_an_agents_sdk_session(url: str) -> None:
    session = ConvlogSession("s", url)
    assert isinstance(session, Session)
    session.close()


def test_items_come_back_exactly_and_read_as_messages(url: str) -> None:
    session = ConvlogSession("items", url)
    run(session.add_items(ITEMS))
    assert run(session.get_items()) == ITEMS
    assert run(session.get_items(limit=3)) == ITEMS[-3:]
    roles = [(m.role, m.tool_call_id, [c.name for c in m.tool_calls])
             for m in session.log.messages("items")]
    assert roles[3] == ("assistant", None, ["grep"])
    assert roles[5] == ("tool", "call_1", [])
    assert session.log.messages("items")[4].tool_calls[0].arguments == (
        '{"unparsed_arguments": "{not json"}')
    text = session.log.context("items").text  # a context after a restart reads them
    assert "JWT with rotating keys" in text and "notes/auth.md:3" in text
    assert "an instruction the host put" not in text  # never replayed as conversation
    session.close()


def test_items_come_back_from_an_encrypted_store(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The lean read path (issue 30) opens sealed rows like any other read: the same
    items, all or the newest few, with the same pairing (a call popped of its output
    is answered by a synthetic output)."""
    monkeypatch.setenv("CONVLOG_KEY", "33" * 32)
    url = f"sqlite:///{tmp_path / 'sealed.db'}"
    session = ConvlogSession("sealed", url, user="ana")
    run(session.add_items(ITEMS))
    assert run(session.get_items()) == ITEMS
    assert run(session.get_items(limit=3)) == ITEMS[-3:]
    run(session.clear_session())
    run(session.add_items(ITEMS[3:6]))  # call_1, call_2, output of call_1
    session.close()
    assert b"notes/auth.md" not in (tmp_path / "sealed.db").read_bytes()
    again = ConvlogSession("sealed", url, user="ana")
    items = run(again.get_items())
    assert items[:3] == ITEMS[3:6] and items[3]["call_id"] == "call_2"
    assert "lost" in items[3]["output"]
    # the newest two: call_1's output lost its call to the limit and is left out
    assert run(again.get_items(limit=2)) == [ITEMS[4], items[3]]
    again.close()


def test_pop_is_a_retraction_and_clear_an_epoch(url: str) -> None:
    session = ConvlogSession("pop", url)
    assert run(session.pop_item()) is None
    assert run(session.get_items()) == []
    run(session.add_items(ITEMS[:3]))
    assert run(session.pop_item()) == ITEMS[2]
    assert run(session.get_items()) == ITEMS[:2]
    run(session.clear_session())
    assert run(session.get_items()) == [] and run(session.pop_item()) is None
    run(session.add_items([ITEMS[0]]))
    assert run(session.get_items()) == [ITEMS[0]]
    kinds = [type(r.event) for r in session.log.events("pop")]
    assert kinds.count(MessageRetracted) == 1 and kinds.count(ConversationCleared) == 1
    # nothing was deleted: the log keeps all four (messages() reads from the clear on)
    assert kinds.count(MessageAppended) == 4 and len(session.log.messages("pop")) == 1
    session.close()


def test_limits_follow_the_session_settings(url: str) -> None:
    session = ConvlogSession("limits", url, session_settings={"limit": 2})
    run(session.add_items(ITEMS[:7]))
    # the newest 2 are outputs whose calls the limit cut off: left out (issue 28)
    assert run(session.get_items()) == []
    assert run(session.get_items(limit=4)) == ITEMS[3:7]
    assert run(session.get_items(limit=0)) == []
    assert run(session.get_items(limit=-1)) == ITEMS[:7]  # as SQLiteSession: no limit
    session.close()


def test_a_bad_item_records_nothing(url: str) -> None:
    session = ConvlogSession("bad", url)
    with pytest.raises(convlog.InvalidInput, match="JSON object"):
        run(session.add_items([ITEMS[0], "not an item"]))  # type: ignore[list-item]
    assert run(session.get_items()) == []
    session.close()


def test_items_are_json_as_sqlite_session_stores_them(url: str) -> None:
    """An item is kept as its JSON (what SQLiteSession's json.dumps/loads gives back):
    a tuple comes back a list, an int key a string; a value JSON has no form for
    (a datetime) is a typed error naming the item, and nothing of the batch is
    recorded; the caller's dict changed afterwards does not change what was stored."""
    import datetime

    session = ConvlogSession("json", url)
    item: Any = {"role": "user", "content": "hi", "extra": (1, 2.5, None),
                 "by_id": {7: "seven"}}  # not an item type's shape: Any
    run(session.add_items([item]))
    item["content"] = "changed after add_items"
    assert run(session.get_items()) == [{"role": "user", "content": "hi",
                                         "extra": [1, 2.5, None], "by_id": {"7": "seven"}}]
    late: Any = {"role": "user", "content": "when", "at": datetime.datetime(2026, 11, 27)}
    with pytest.raises(convlog.InvalidInput, match="JSON") as caught:
        run(session.add_items([ITEMS[0], late]))
    assert caught.value.field == "items[1]", caught.value.field
    assert len(run(session.get_items())) == 1
    session.close()


def test_a_shared_log_is_not_closed_by_the_session(url: str) -> None:
    with convlog.open(url) as log:
        session = ConvlogSession("shared", log, key="openai:shared", user="u1")
        run(session.add_items(ITEMS[:1]))
        session.close()
        assert log.info("openai:shared").user == "u1"
        assert log.info("openai:shared").channel == "openai-agents"


def test_runner_records_usage_and_model_so_costs_work(url: str) -> None:
    set_tracing_disabled(True)
    session = ConvlogSession("costs", url, model="gpt-4o-mini", agent="helper")
    agent = Agent(name="helper", model=EchoHistoryModel())
    run(Runner.run(agent, "one", session=session))
    run(Runner.run(agent, "two", session=session))
    answers = [m for m in session.log.messages("costs") if m.role == "assistant"]
    assert [m.model for m in answers] == ["gpt-4o-mini"] * 2
    for m in answers:  # each run's own tokens, once: uncached input, cached, output
        assert m.usage == convlog.Usage(
            input_tokens=USAGE["input_tokens"] - USAGE["cached_tokens"],
            cache_read_tokens=USAGE["cached_tokens"], output_tokens=USAGE["output_tokens"])
    (row,) = [r for r in session.log.costs(by="model") if r.group == "gpt-4o-mini"]
    assert row.output_tokens == 2 * USAGE["output_tokens"]
    assert row.cost_usd is not None and row.cost_usd > 0
    session.close()


def test_a_restarted_process_sees_the_first_ones_history(url: str) -> None:
    def process(text: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "tests.sdks.openai_restart", url, "user-42", text],
            cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.strip().splitlines()[-1]

    assert process("my codeword is PELICAN") == "I have heard: my codeword is PELICAN"
    assert process("what is my codeword?") == (
        "I have heard: my codeword is PELICAN | what is my codeword?")
    with convlog.open(url) as log:
        assert [m.role for m in log.messages("user-42")] == ["user", "assistant"] * 2
        assert log.info("user-42").agent == "helper"


def test_a_cancelled_add_items_is_awaited_to_its_end(url: str) -> None:
    """A cancelled caller sees its cancellation only once the write in the worker
    thread has ended: it must not believe undone a write that may still commit."""
    items: list[Any] = [{"role": "user", "content": f"line {i} " * 20} for i in range(3000)]

    async def cancelled_then_read() -> list[Any]:
        session = ConvlogSession("cancelled", url)
        task = asyncio.ensure_future(session.add_items(items))
        await asyncio.sleep(0.005)  # the write is under way in its worker thread
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        found = await session.get_items()
        session.close()
        return found

    assert len(asyncio.run(cancelled_then_read())) == len(items)
