"""Compaction as a history operation (issue 47): recorded, never destructive, honoured
by every model-facing read, and never splitting a tool call from its result."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import convlog
from convlog.domain.events import HistoryCompacted
from convlog.services import compaction
from convlog.services.log import application


def turns(conv: convlog.ConversationHandle, n: int, start: int = 1) -> None:
    for i in range(start, start + n):
        conv.append_turn([convlog.user(f"Question {i}?", id=f"q{i}"),
                          convlog.assistant(f"Answer {i}.", id=f"a{i}")])


class Summarizer:
    def __init__(self) -> None:
        self.calls: list[tuple[str | None, list[str]]] = []

    def __call__(self, previous: str | None, messages: list[Any]) -> str:
        self.calls.append((previous, [m.text for m in messages]))
        return f"summary #{len(self.calls)} of {len(messages)}"


@pytest.fixture
def log(tmp_path: Path) -> Any:
    with convlog.open(f"sqlite:///{tmp_path / 'c.db'}") as opened:
        yield opened


def test_the_model_reads_the_summary_and_the_log_keeps_everything(log: Any) -> None:
    conv = log.conversation("k", user="u1")
    turns(conv, 5)
    made = Summarizer()
    done = conv.compact(made, keep_last=4, reason="full", summarizer_name="mini")
    assert done is not None
    assert (done.compacted, done.kept, done.message_count) == (6, 4, 6)
    assert done.tokens_before > 0 and done.tokens_after > 0 and done.summarizer == "mini"
    assert made.calls == [(None, ["Question 1?", "Answer 1.", "Question 2?", "Answer 2.",
                                  "Question 3?", "Answer 3."])]
    recorded = conv.events()[-1].event
    assert isinstance(recorded, HistoryCompacted) and recorded.through_message_id == "a3"
    for fmt in ("xml", "markdown", "messages"):
        text = conv.context(format=fmt).text
        assert "summary #1 of 6" in text and "Question 4?" in text, fmt
        assert "Question 3?" not in text, fmt
    assert [m.message_id for m in conv.messages()][:2] == ["q1", "a1"]
    assert len(conv.transcript()) == 10
    user = conv.view("user")
    assert next(e.text for e in user.entries if e.kind == "message") == "Question 1?"
    before = conv.view("agent", at=done.version - 1)
    assert not [e for e in before.entries if e.kind == "summary"]
    assert conv.summary().latest_summary == "summary #1 of 6"
    assert (conv.info().compactions, conv.info().rewinds) == (1, 0)
    row = conv.timeline()[-1]
    assert row.type == "history_compacted" and "tokens_before=" in row.details


def test_a_summary_too_big_for_the_budget_never_brings_back_what_it_replaced(log: Any) -> None:
    conv = log.conversation("k")
    turns(conv, 4)
    conv.compact(lambda previous, messages: "word " * 400, keep_last=2)
    ctx = conv.context(budget=convlog.Budget(tokens=300))
    assert "Question 4?" in ctx.text and "Question 1?" not in ctx.text
    assert "word word" not in ctx.text and ctx.omitted == 6


def test_a_second_compaction_folds_the_first_in(log: Any) -> None:
    conv = log.conversation("k")
    turns(conv, 3)
    made = Summarizer()
    first = conv.compact(made, keep_last=2)
    turns(conv, 2, start=4)
    second = conv.compact(made, keep_last=2)
    assert first is not None and second is not None
    assert made.calls[1] == ("summary #1 of 4", ["Question 3?", "Answer 3.", "Question 4?",
                                                 "Answer 4."])
    assert (second.from_version, second.message_count, second.compacted) == (
        first.from_version, 8, 4)
    assert second.tokens_before >= first.tokens_after
    text = conv.context().text
    assert "summary #2 of 4" in text and "summary #1" not in text and "Question 5?" in text
    assert conv.compact(made, keep_last=2) is None  # nothing new to compact


def test_the_cut_moves_before_a_call_whose_result_would_be_kept(log: Any) -> None:
    conv = log.conversation("k")
    conv.append_turn([
        convlog.user("Find it", id="u"),
        convlog.assistant("", id="call", tool_calls=[
            convlog.ToolCall(id="c1", name="grep", arguments="{}")]),
        convlog.tool("found", tool_call_id="c1", id="out"),
        convlog.assistant("It is in notes.md", id="a")])
    done = conv.compact(lambda previous, messages: "s", keep_last=2)
    assert done is not None and done.through_message_id == "u" and done.kept == 3
    # a cut that would keep only the result is refused for all of the exchange
    assert conv.compact(lambda previous, messages: "s", keep_last=2) is None


def test_bad_input_and_nothing_to_compact(log: Any) -> None:
    conv = log.conversation("k")
    turns(conv, 1)
    assert conv.compact(lambda previous, messages: "s", keep_last=2) is None
    with pytest.raises(convlog.InvalidInput, match="keep_last"):
        conv.compact(lambda previous, messages: "s", keep_last=-1)
    with pytest.raises(convlog.InvalidInput, match="summarizer returned no text"):
        conv.compact(lambda previous, messages: "  ", keep_last=0)
    assert not [r for r in conv.events() if isinstance(r.event, HistoryCompacted)]
    with pytest.raises(convlog.UnknownConversation):
        log.compact("nobody", lambda previous, messages: "s")


def test_two_compactions_made_at_once_record_one(log: Any) -> None:
    conv = log.conversation("k")
    turns(conv, 3)
    builder = application(log).builder()
    late = compaction.plan(builder, "k", 0)
    assert conv.compact(lambda previous, messages: "first", keep_last=0) is not None
    with pytest.raises(convlog.CompactedMeanwhile):
        compaction.finish(builder, late, "second", None, None)
    assert conv.state.compactions == 1


def test_a_clear_starts_afresh(log: Any) -> None:
    conv = log.conversation("k")
    turns(conv, 3)
    conv.compact(lambda previous, messages: "old summary", keep_last=0)
    conv.clear()
    turns(conv, 1, start=9)
    assert conv.state.compacted_to == 0
    text = conv.context().text
    assert "old summary" not in text and "Question 9?" in text


def test_a_budget_summary_after_a_compaction_folds_its_summary_in(log: Any) -> None:
    conv = log.conversation("k")
    turns(conv, 2)
    conv.compact(lambda previous, messages: "compacted part", keep_last=0)
    turns(conv, 10, start=3)
    seen: list[str | None] = []

    def fold(previous: str | None, messages: list[Any]) -> str:
        seen.append(previous)
        return f"{previous} + {len(messages)} more"

    ctx = conv.context(budget=convlog.Budget(messages=4), summarizer=fold)
    assert seen == ["compacted part"] and "compacted part + 16 more" in ctx.text
    assert ctx.summarized == 20


def test_the_async_log_compacts_with_a_coroutine_summarizer(tmp_path: Path) -> None:
    async def main() -> None:
        log = await convlog.open_async(f"sqlite:///{tmp_path / 'a.db'}")
        conv = await log.conversation("k")
        for i in range(3):
            await conv.append_turn([convlog.user(f"Question {i}?"),
                                    convlog.assistant(f"Answer {i}.")])

        async def summarize(previous: str | None, messages: list[Any]) -> str:
            return f"async summary of {len(messages)}"

        done = await conv.compact(summarize, keep_last=2)
        assert done is not None and done.compacted == 4 and done.summarizer is not None
        ctx = await conv.context()
        assert "async summary of 4" in ctx.text and "Question 0?" not in ctx.text
        await log.close()

    asyncio.run(main())
