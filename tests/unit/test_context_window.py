"""The resume-context projection, pure: `select_window` over a descending tail.

No storage here: the tail is a hand-built (or generated) newest-first iterable of
`Recorded` events, so every rule of the window is checked in isolation, including
that its cost depends on the budget and not on how long the conversation is.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from convlog.accounting.tokens import count_tokens
from convlog.domain.content import (
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResultPart,
    ToolUsePart,
)
from convlog.domain.errors import InvalidInput
from convlog.domain.events import (
    ConversationCleared,
    MessageAppended,
    Recorded,
    ResumeAttempted,
    SummaryRecorded,
)
from convlog.projections.context import (
    TOOL_ARGS_CHARS,
    TOOL_RESULT_CHARS,
    TRUNCATED,
    Budget,
    render_for_context,
    select_window,
)
from convlog.projections.formats import check_format, render_xml

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def at(version: int) -> datetime:
    return T0 + timedelta(minutes=version)


def msg(version: int, content: Any = None, *, role: str = "user", mid: str | None = None,
        **fields: Any) -> Recorded:
    return Recorded(version, MessageAppended(
        at=at(version), message_id=mid or f"m{version}", role=role,  # type: ignore[arg-type]
        content=f"message at v{version}" if content is None else content, **fields))


def desc(*records: Recorded) -> list[Recorded]:
    return sorted(records, key=lambda r: r.version, reverse=True)


def words(text: str) -> int:
    """A deterministic stand-in tokenizer: one token per word (at least one)."""
    return max(1, len(text.split()))


def exact(text: str) -> int:
    return count_tokens(text)[0]


class Counting:
    """A lazy newest-first tail that counts how many events were pulled from it."""

    def __init__(self, source: Iterator[Recorded]):
        self.source = source
        self.pulled = 0

    def __iter__(self) -> Iterator[Recorded]:
        for recorded in self.source:
            self.pulled += 1
            yield recorded


def synthetic(n: int, *, special: dict[int, Any] | None = None) -> Iterator[Recorded]:
    """`n` events, newest (version n) first: messages unless `special` says otherwise."""
    special = special or {}
    for version in range(n, 0, -1):
        if version in special:
            yield Recorded(version, special[version])
        else:
            yield Recorded(version, MessageAppended(
                at=at(version), message_id=f"m{version}",
                role="user" if version % 2 else "assistant", content=f"text {version}"))


# ------------------------------------------------------------------ choosing


def test_newest_messages_are_chosen_first_and_output_is_chronological() -> None:
    tail = desc(*(msg(v) for v in range(2, 12)))
    window = select_window(tail, Budget(messages=4), words, epoch_messages=10)
    assert [m.version for m in window.messages] == [8, 9, 10, 11]
    assert [m.text for m in window.messages] == [f"message at v{v}" for v in (8, 9, 10, 11)]
    assert [m.at for m in window.messages] == sorted(m.at for m in window.messages)
    assert (window.from_version, window.to_version) == (8, 11)


@pytest.mark.parametrize("limit", [1, 3, 30])
def test_message_budget_is_a_hard_cap(limit: int) -> None:
    tail = desc(*(msg(v) for v in range(2, 52)))
    window = select_window(tail, Budget(messages=limit), words, epoch_messages=50)
    assert len(window.messages) == limit
    assert window.messages[-1].version == 51
    assert window.omitted == 50 - limit


def test_fewer_messages_than_the_budget_are_all_taken() -> None:
    tail = desc(msg(2), msg(3), msg(4))
    window = select_window(tail, Budget(messages=30), words, epoch_messages=3)
    assert [m.version for m in window.messages] == [2, 3, 4]
    assert window.omitted == 0


@pytest.mark.parametrize("tokens", [60, 100, 333])
def test_token_budget_is_respected_and_tight(tokens: int) -> None:
    texts = [f"Message number {v}: " + "the quick brown fox jumps over the lazy dog " * (v % 4 + 1)
             for v in range(2, 80)]
    tail = desc(*(msg(v, texts[v - 2]) for v in range(2, 80)))
    window = select_window(tail, Budget(tokens=tokens, messages=1000), exact,
                           epoch_messages=78, overhead_tokens=7)
    assert window.tokens <= tokens
    assert window.tokens == 7 + sum(m.tokens for m in window.messages)
    for m in window.messages:
        assert m.tokens == exact(m.text) + 4  # per-message framing
    # Tight: the next older message would not have fit.
    next_older = (window.messages[0].version - 1) if window.messages else 79
    assert window.tokens + exact(texts[next_older - 2]) + 4 > tokens
    # Contiguous: a smaller, older message never jumps the queue.
    versions = [m.version for m in window.messages]
    assert versions == list(range(80 - len(versions), 80))


def test_stored_token_count_is_reused_for_unchanged_text() -> None:
    # tokens=1 is what the message says it costs; the projection trusts it when the
    # rendered text is the stored text, and recounts when it had to change it.
    short = msg(2, "several words in this text", tokens=1)
    long = msg(3, "x" * 500, tokens=1)
    window = select_window(desc(short, long), Budget(chars=100), words, epoch_messages=2)
    assert [m.tokens for m in window.messages] == [1 + 4, words(window.messages[1].text) + 4]


# ---------------------------------------------------------------- rendering


def test_long_messages_are_cut_visibly_to_the_char_cap() -> None:
    long_text = "🙂é" * 1_000 + "THE-END"
    tail = desc(msg(2, "short one"), msg(3, long_text, role="assistant"))
    window = select_window(tail, Budget(chars=120), words, epoch_messages=2)
    short, cut = window.messages
    assert (short.text, short.truncated) == ("short one", False)
    assert cut.truncated is True
    assert len(cut.text) <= 120
    assert cut.text.endswith(TRUNCATED)
    assert cut.text.startswith("🙂é🙂é")
    assert "THE-END" not in cut.text


def test_a_message_exactly_at_the_cap_is_not_cut() -> None:
    text = "a" * 100
    window = select_window([msg(2, text)], Budget(chars=100), words, epoch_messages=1)
    assert (window.messages[0].text, window.messages[0].truncated) == (text, False)


def test_tool_calls_become_names_with_short_arguments_and_thinking_is_dropped() -> None:
    long_args = json.dumps({"query": "needle " * 200, "path": "/very/long/SECRET-TAIL"})
    content = [
        ThinkingPart(text="private chain of thought PLAN-B"),
        TextPart(text="Let me search."),
        ToolUsePart(id="t1", name="search_files", arguments=long_args),
    ]
    event = msg(2, content, role="assistant",
                tool_calls=[ToolCall(id="c1", name="read_file", arguments=long_args)]).event
    assert isinstance(event, MessageAppended)
    text, truncated = render_for_context(event, 2_000)
    assert truncated is False
    assert "PLAN-B" not in text and "chain of thought" not in text
    assert "Let me search." in text
    assert "[called tool search_files(" in text and "[called tool read_file(" in text
    assert "SECRET-TAIL" not in text
    for line in text.splitlines()[1:]:
        args = line.removeprefix("[called tool ").split("(", 1)[1].removesuffix(")]")
        assert len(args) <= TOOL_ARGS_CHARS
        assert args.endswith(TRUNCATED)


def test_short_tool_arguments_are_kept_whole() -> None:
    event = msg(2, [ToolUsePart(id="t", name="ls", arguments='{"dir": "/tmp"}')],
                role="assistant").event
    assert isinstance(event, MessageAppended)
    assert render_for_context(event, 2_000)[0] == '[called tool ls({"dir": "/tmp"})]'


def test_tool_results_are_cut_short() -> None:
    output = "line of output\n" * 500 + "RESULT-TAIL"
    as_part = msg(2, [ToolResultPart(tool_use_id="t1", content=output)]).event
    as_error = msg(3, [ToolResultPart(tool_use_id="t1", content=output, is_error=True)]).event
    as_role = msg(4, output, role="tool", tool_call_id="c1").event
    for event, kind in ((as_part, "tool result"), (as_error, "tool error"),
                        (as_role, "tool result")):
        assert isinstance(event, MessageAppended)
        text, _ = render_for_context(event, 2_000)
        assert text.startswith(f"[{kind}: line of output")
        assert "RESULT-TAIL" not in text
        assert len(text) <= TOOL_RESULT_CHARS + len(f"[{kind}: ]")


def test_images_are_referenced_not_inlined() -> None:
    event = msg(2, [TextPart(text="look"), ImagePart(ref="file-123")]).event
    assert isinstance(event, MessageAppended)
    assert render_for_context(event, 2_000)[0] == "look\n[image: file-123]"


def test_a_tool_message_with_a_result_part_is_wrapped_once() -> None:
    event = msg(2, [ToolResultPart(tool_use_id="t1", content="out")], role="tool").event
    assert isinstance(event, MessageAppended)
    assert render_for_context(event, 2_000)[0] == "[tool result: out]"


# --------------------------------------------------------- epoch and exclude


def test_nothing_before_the_latest_clear_is_read_or_used() -> None:
    older = [msg(v, f"old {v}") for v in range(2, 10)]
    first_clear = Recorded(10, ConversationCleared(at=at(10)))
    middle = [msg(v, f"middle {v}") for v in range(11, 14)]
    latest_clear = Recorded(14, ConversationCleared(at=at(14)))
    newer = [msg(v, f"new {v}") for v in range(15, 18)]
    tail = Counting(iter(desc(*older, first_clear, *middle, latest_clear, *newer)))
    window = select_window(tail, Budget(), words, epoch_messages=3)
    assert [m.text for m in window.messages] == ["new 15", "new 16", "new 17"]
    assert window.omitted == 0
    assert tail.pulled == 4  # three messages and the clear, nothing older


def test_an_empty_epoch_gives_an_empty_window() -> None:
    tail = desc(msg(2), msg(3), Recorded(4, ConversationCleared(at=at(4))))
    window = select_window(tail, Budget(), words, epoch_messages=0)
    assert window.messages == [] and window.omitted == 0 and window.summary is None


def test_the_message_being_sent_now_is_left_out_and_not_counted_as_omitted() -> None:
    tail = desc(msg(2, "earlier question"), msg(3, "earlier answer", role="assistant"),
                msg(4, "the new question", mid="current"))
    window = select_window(tail, Budget(), words, epoch_messages=3,
                           exclude=frozenset({"current"}))
    assert [m.text for m in window.messages] == ["earlier question", "earlier answer"]
    assert window.omitted == 0
    assert window.to_version == 3


def test_non_message_events_are_skipped() -> None:
    tail = desc(msg(2), Recorded(3, ResumeAttempted(at=at(3), strategy="session/load")),
                msg(4))
    window = select_window(tail, Budget(), words, epoch_messages=2)
    assert [m.version for m in window.messages] == [2, 4]


# ------------------------------------------------------------------ summary


def summary(version: int, from_version: int, to_version: int, count: int,
            text: str = "SUMMARY", tokens: int = 5) -> Recorded:
    return Recorded(version, SummaryRecorded(
        at=at(version), from_version=from_version, to_version=to_version,
        message_count=count, text=text, tokens=tokens))


def as_summary(recorded: Recorded) -> SummaryRecorded:
    assert isinstance(recorded.event, SummaryRecorded)
    return recorded.event


def test_a_summary_comes_first_and_covers_the_older_messages() -> None:
    covered = [msg(v) for v in range(2, 41)]          # 39 messages, summarized
    between = [msg(v) for v in range(41, 50)]         # 9, older than the summary event
    newer = [msg(v) for v in range(51, 61)]           # 10, after it
    latest = summary(50, 2, 40, 39)
    tail = Counting(iter(desc(*covered, *between, latest, *newer)))
    window = select_window(tail, Budget(messages=30), words, epoch_messages=58,
                           summary=as_summary(latest))
    assert window.summary is not None and window.summary.text == "SUMMARY"
    assert [m.version for m in window.messages] == [*range(41, 50), *range(51, 61)]
    assert window.omitted == 0
    assert (window.from_version, window.to_version) == (2, 60)
    assert tail.pulled == 10 + 1 + 9 + 1  # stops at the first covered message
    xml = render_xml("k", window)
    assert xml.index("<summary") < xml.index("<message")


def test_messages_older_than_the_summary_range_are_counted_as_omitted() -> None:
    # Summary covers 10..20 (11 messages); messages 2..9 are neither in it nor shown.
    latest = summary(21, 10, 20, 11)
    records = [msg(v) for v in range(2, 21)] + [latest] + [msg(22)]
    window = select_window(desc(*records), Budget(), words, epoch_messages=20,
                           summary=as_summary(latest))
    assert [m.version for m in window.messages] == [22]
    assert window.omitted == 20 - 1 - 11


def test_only_the_latest_summary_is_used() -> None:
    latest = summary(14, 2, 11, 10, text="NEW")  # what the state points at
    records = [msg(v) for v in range(2, 12)] + [
        summary(12, 2, 6, 5, text="OLD"), msg(13), latest, msg(15)]
    window = select_window(desc(*records), Budget(), words, epoch_messages=12,
                           summary=as_summary(latest))
    assert window.summary is not None and window.summary.text == "NEW"
    assert [m.version for m in window.messages] == [13, 15]
    assert window.omitted == 0


# ------------------------------------------------------------------- omitted


@pytest.mark.parametrize(("total", "limit"), [(1, 30), (30, 30), (31, 30), (500, 7)])
def test_omitted_counts_exactly_the_messages_left_out(total: int, limit: int) -> None:
    tail = synthetic(total + 1, special={1: ResumeAttempted(at=T0, strategy="x")})
    window = select_window(tail, Budget(messages=limit), words, epoch_messages=total)
    assert len(window.messages) == min(total, limit)
    assert window.omitted == total - len(window.messages)


# -------------------------------------------------------------------- cost


def test_cost_depends_on_the_budget_not_the_length() -> None:
    for budget, most in ((Budget(messages=30), 31), (Budget(messages=5), 6),
                         (Budget(tokens=50, messages=1000), 50)):
        tail = Counting(synthetic(100_000))
        window = select_window(tail, budget, words, epoch_messages=100_000)
        assert 0 < len(window.messages) <= budget.messages
        assert tail.pulled <= most, (budget, tail.pulled)
        assert window.omitted == 100_000 - len(window.messages)
        assert window.messages[-1].version == 100_000


def test_cost_stays_bounded_with_telemetry_events_in_between() -> None:
    special = {v: ResumeAttempted(at=at(v), strategy="session/resume")
               for v in range(1, 100_001) if v % 2 == 0}
    tail = Counting(synthetic(100_000, special=special))
    window = select_window(tail, Budget(messages=30), words, epoch_messages=50_000)
    assert len(window.messages) == 30
    assert tail.pulled <= 2 * 30 + 2


def test_a_summary_near_the_top_stops_the_read_at_its_range() -> None:
    special = {99_990: SummaryRecorded(at=at(99_990), from_version=1, to_version=99_980,
                                       message_count=99_979, text="S", tokens=1)}
    tail = Counting(synthetic(100_000, special=special))
    window = select_window(tail, Budget(messages=30), words, epoch_messages=99_999,
                           summary=as_summary(Recorded(99_990, special[99_990])))
    assert window.summary is not None
    assert len(window.messages) == 19
    assert tail.pulled == 10 + 1 + 9 + 1
    assert window.omitted == 99_999 - 19 - 99_979


# ---------------------------------------------------------- budget checking


@pytest.mark.parametrize("name", ["tokens", "messages", "chars"])
@pytest.mark.parametrize("bad", [0, -1, True, False, 1.5, "10", None])
def test_bad_budget_values_are_rejected_naming_the_field(name: str, bad: object) -> None:
    with pytest.raises(InvalidInput) as caught:
        Budget(**{name: bad})  # type: ignore[arg-type]
    assert caught.value.field == f"budget.{name}"
    assert f"budget.{name}" in str(caught.value)


def test_char_cap_must_leave_room_for_the_marker() -> None:
    with pytest.raises(InvalidInput) as caught:
        Budget(chars=len(TRUNCATED))
    assert caught.value.field == "budget.chars"
    assert Budget(chars=len(TRUNCATED) + 1).chars == len(TRUNCATED) + 1


def test_budget_defaults() -> None:
    assert (Budget().tokens, Budget().messages, Budget().chars) == (10_000, 30, 2_000)


@pytest.mark.parametrize("name", ["html", "XML", "", "json"])
def test_unknown_format_is_rejected_naming_the_field(name: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        check_format(name)
    assert caught.value.field == "format"
    assert "format" in str(caught.value)


@pytest.mark.parametrize("name", ["xml", "markdown", "messages"])
def test_known_formats_are_accepted(name: str) -> None:
    assert check_format(name) == name
