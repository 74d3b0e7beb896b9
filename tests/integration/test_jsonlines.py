"""The JSON Lines input of `convlog record`, in process.

`parse_lines` is checked line shape by line shape (the public contract), and
`convlog.cli.main.main([...])` is driven in process against SQLite files under tmp_path for
the atomicity rules: a bad line fails the whole batch, names its line and field, and
writes nothing.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import convlog
from convlog.cli.main import main
from convlog.domain.content import (
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResultPart,
    ToolUsePart,
    Usage,
)
from convlog.domain.conversation import (
    AppendMessages,
    Archive,
    BindNativeSession,
    Clear,
    Reactivate,
    RecordFact,
    StartConversation,
)
from convlog.domain.errors import InvalidInput, SystemMessageRejected
from convlog.domain.events import (
    HistoryInjected,
    ResumeAttempted,
    ResumeFailed,
    ResumeSucceeded,
)
from convlog.domain.messages import Message
from convlog.services.jsonlines import LINE_TYPES, parse_lines

CONTRACT_LINE_TYPES = {
    "session_started", "message", "native_session_bound", "resume_attempted",
    "resume_failed", "resume_succeeded", "history_injected", "session_archived",
    "session_reactivated", "conversation_cleared",
}


def jl(*objs: object) -> bytes:
    """JSON Lines bytes from Python objects (str items are taken as raw lines)."""
    return b"".join(
        (o.encode() if isinstance(o, str) else json.dumps(o).encode()) + b"\n" for o in objs)


def only(data: bytes) -> Any:
    commands, origins = parse_lines(data, "in.jsonl")
    assert len(commands) == 1, commands
    assert origins == ["in.jsonl:1"]
    return commands[0]


def only_message(obj: dict[str, Any]) -> Message:
    command = only(jl({"type": "message", **obj}))
    assert isinstance(command, AppendMessages)
    assert len(command.messages) == 1
    message = command.messages[0]
    assert isinstance(message, Message)
    return message


def only_fact(obj: dict[str, Any]) -> Any:
    command = only(jl(obj))
    assert isinstance(command, RecordFact)
    return command.event


# ============================================================ parse_lines: valid lines


def test_every_public_line_type_is_accepted():
    # new line types may be added; none of the documented ones may disappear
    assert set(LINE_TYPES) >= CONTRACT_LINE_TYPES
    assert len(LINE_TYPES) == len(set(LINE_TYPES))


def test_session_started_maps_every_field():
    command = only(jl({"type": "session_started", "user": "u1", "agent": "claude",
                       "channel": "discord", "title": "Auth", "workspace": "/srv/w",
                       "metadata": {"guild": 7, "tags": ["a"]}}))
    assert command == StartConversation(user="u1", agent="claude", channel="discord",
                                   title="Auth", workspace="/srv/w",
                                   metadata={"guild": 7, "tags": ["a"]})


def test_session_started_fields_are_all_optional():
    assert only(jl({"type": "session_started"})) == StartConversation()


def test_message_with_text_content_and_every_scalar_field():
    message = only_message({
        "role": "assistant", "content": "JWT with rotating keys.", "id": "m-1",
        "model": "gpt-4o", "agent": "copilot",
        "usage": {"input_tokens": 812, "output_tokens": 9, "cache_read_tokens": 700,
                  "cache_write_tokens": 3},
        "cost_usd": "0.0125", "tokens": 6, "created_at": "2024-05-01T10:20:30+02:00",
    })
    assert message.role == "assistant"
    assert message.content == "JWT with rotating keys."
    assert message.id == "m-1"
    assert message.model == "gpt-4o"
    assert message.agent == "copilot"
    assert message.usage == Usage(input_tokens=812, output_tokens=9, cache_read_tokens=700,
                                  cache_write_tokens=3)
    assert message.cost_usd == Decimal("0.0125")
    assert message.tokens == 6
    assert message.token_counter == "host"
    assert message.created_at == datetime(2024, 5, 1, 8, 20, 30, tzinfo=UTC)
    assert message.created_at.utcoffset() == timedelta(hours=2)


def test_message_defaults():
    message = only_message({"role": "user", "content": "hi"})
    assert message.usage is None
    assert message.cost_usd is None
    assert message.tokens is None
    assert message.token_counter is None  # only host-given counts are labelled "host"
    assert message.tool_calls == []
    assert message.created_at is None
    assert isinstance(message.id, str)
    assert message.id.strip()


def test_message_without_id_gets_a_fresh_id_each_time():
    a = only_message({"role": "user", "content": "hi"})
    b = only_message({"role": "user", "content": "hi"})
    assert a.id != b.id


@pytest.mark.parametrize(("raw", "expected"), [
    ("0.1", Decimal("0.1")),       # a JSON number stays exact, never a binary float
    ('"0.1"', Decimal("0.1")),
    ("0", Decimal("0")),
    ("12", Decimal("12")),
])
def test_cost_usd_is_an_exact_decimal(raw: str, expected: Decimal):
    line = '{"type":"message","role":"user","content":"x","cost_usd":' + raw + "}"
    message = only_message_raw(line)
    assert message.cost_usd == expected
    assert str(message.cost_usd) == str(expected)


def only_message_raw(line: str) -> Message:
    command = only(jl(line))
    assert isinstance(command, AppendMessages)
    message = command.messages[0]
    assert isinstance(message, Message)
    return message


def test_partial_usage_defaults_missing_counts_to_zero():
    message = only_message({"role": "assistant", "content": "x",
                            "usage": {"output_tokens": 4}})
    assert message.usage == Usage(input_tokens=0, output_tokens=4, cache_read_tokens=0,
                                  cache_write_tokens=0)


def test_content_parts_map_to_domain_parts():
    message = only_message({"role": "assistant", "content": [
        {"type": "text", "text": "look"},
        {"type": "image", "ref": "file-1", "media_type": "image/png"},
        {"type": "image", "ref": "https://x/y.jpg"},
        {"type": "image", "ref": "sha256:ab", "media_type": "image/png", "size": 1024},
        {"type": "tool_use", "id": "tu1", "name": "grep", "arguments": '{"q": "auth"}'},
        {"type": "tool_result", "tool_use_id": "tu1", "content": "3 hits", "is_error": True},
        {"type": "tool_result", "tool_use_id": "tu1", "content": "ok"},
        {"type": "thinking", "text": "hmm"},
    ]})
    assert message.content == [
        TextPart(text="look"),
        ImagePart(ref="file-1", media_type="image/png"),
        ImagePart(ref="https://x/y.jpg", media_type=None),
        ImagePart(ref="sha256:ab", media_type="image/png", size=1024),
        ToolUsePart(id="tu1", name="grep", arguments='{"q": "auth"}'),
        ToolResultPart(tool_use_id="tu1", content="3 hits", is_error=True),
        ToolResultPart(tool_use_id="tu1", content="ok", is_error=False),
        ThinkingPart(text="hmm"),
    ]


def test_an_image_size_cannot_be_negative():
    with pytest.raises(InvalidInput, match=r"field 'content\[0\].size'"):
        only_message({"role": "user", "content": [
            {"type": "image", "ref": "f", "size": -1}]})


@pytest.mark.parametrize("part", [
    {"type": "tool_use", "id": "t", "name": "grep", "arguments": {"q": "auth", "n": 2}},
    {"type": "tool_use", "id": "t", "name": "grep", "input": {"q": "auth", "n": 2}},
    {"type": "tool_use", "id": "t", "name": "grep", "arguments": '{"q":"auth","n":2}'},
], ids=["arguments-object", "anthropic-input", "arguments-text"])
def test_tool_use_arguments_input_and_text_are_equivalent(part: dict[str, Any]):
    message = only_message({"role": "assistant", "content": [part]})
    assert isinstance(message.content, list)
    (tool_use,) = message.content
    assert isinstance(tool_use, ToolUsePart)
    assert (tool_use.id, tool_use.name) == ("t", "grep")
    assert json.loads(tool_use.arguments) == {"q": "auth", "n": 2}


def test_tool_use_without_arguments_gets_an_empty_object():
    message = only_message({"role": "assistant", "content": [
        {"type": "tool_use", "id": "t", "name": "now"}]})
    assert isinstance(message.content, list)
    assert message.content == [ToolUsePart(id="t", name="now", arguments="{}")]


def test_tool_use_arguments_text_is_kept_verbatim():
    text = '{ "b" : 1,   "a" : [1, 2] }'
    message = only_message({"role": "assistant", "content": [
        {"type": "tool_use", "id": "t", "name": "f", "arguments": text}]})
    assert isinstance(message.content, list)
    assert isinstance(message.content[0], ToolUsePart)
    assert message.content[0].arguments == text


@pytest.mark.parametrize("call", [
    {"id": "c1", "name": "search", "arguments": '{"q":"jwt"}'},
    {"id": "c1", "name": "search", "arguments": {"q": "jwt"}},
    {"id": "c1", "type": "function", "function": {"name": "search", "arguments": '{"q":"jwt"}'}},
    {"id": "c1", "type": "function", "function": {"name": "search", "arguments": {"q": "jwt"}}},
    {"id": "c1", "function": {"name": "search", "arguments": '{"q":"jwt"}'}},
], ids=["flat-text", "flat-object", "chat-text", "chat-object", "chat-no-type"])
def test_tool_call_shapes_are_equivalent(call: dict[str, Any]):
    message = only_message({"role": "assistant", "content": "", "tool_calls": [call]})
    (parsed,) = message.tool_calls
    assert (parsed.id, parsed.name) == ("c1", "search")
    assert json.loads(parsed.arguments) == {"q": "jwt"}


@pytest.mark.parametrize("call", [
    {"id": "c1", "name": "now"},
    {"id": "c1", "type": "function", "function": {"name": "now"}},
], ids=["flat", "chat"])
def test_tool_call_without_arguments_gets_an_empty_object(call: dict[str, Any]):
    message = only_message({"role": "assistant", "content": "", "tool_calls": [call]})
    assert message.tool_calls == [ToolCall(id="c1", name="now", arguments="{}")]


def test_several_tool_calls_keep_their_order_and_tool_message_answers_one():
    data = jl(
        {"type": "message", "role": "assistant", "content": "", "id": "a1", "tool_calls": [
            {"id": "c1", "name": "a"},
            {"id": "c2", "type": "function", "function": {"name": "b", "arguments": "[1]"}}]},
        {"type": "message", "role": "tool", "content": "result", "tool_call_id": "c2",
         "id": "t1"},
    )
    commands, origins = parse_lines(data, "f")
    assert origins == ["f:1", "f:2"]
    first, second = (c.messages[0] for c in commands if isinstance(c, AppendMessages))
    assert [c.name for c in first.tool_calls] == ["a", "b"]
    assert first.tool_calls[1].arguments == "[1]"
    assert second.role == "tool"
    assert second.tool_call_id == "c2"


def test_native_session_bound():
    command = only(jl({"type": "native_session_bound", "native_session_id": "sess-9",
                       "agent": "claude"}))
    assert command == BindNativeSession(native_session_id="sess-9", agent="claude")


def test_resume_attempted_and_succeeded():
    attempted = only_fact({"type": "resume_attempted", "strategy": "session/resume",
                           "native_session_id": "s1"})
    assert isinstance(attempted, ResumeAttempted)
    assert (attempted.strategy, attempted.native_session_id) == ("session/resume", "s1")
    succeeded = only_fact({"type": "resume_succeeded", "strategy": "session/load",
                           "latency_ms": 12.5})
    assert isinstance(succeeded, ResumeSucceeded)
    assert (succeeded.strategy, succeeded.latency_ms) == ("session/load", 12.5)
    assert succeeded.native_session_id is None


@pytest.mark.parametrize("reason", ["unsupported", "not_found", "transient", "timeout", "error"])
def test_resume_failed_accepts_each_reason_class(reason: str):
    failed = only_fact({"type": "resume_failed", "strategy": "session/resume",
                        "reason": reason, "error": "boom", "latency_ms": 3})
    assert isinstance(failed, ResumeFailed)
    assert failed.reason == reason
    assert failed.error == "boom"
    assert failed.latency_ms == 3.0


def test_resume_failed_reason_defaults_to_error():
    failed = only_fact({"type": "resume_failed", "strategy": "s"})
    assert isinstance(failed, ResumeFailed)
    assert failed.reason == "error"


def test_history_injected():
    injected = only_fact({"type": "history_injected", "from_version": 1, "to_version": 4,
                          "message_count": 3, "tokens": 120, "format": "markdown",
                          "text": "[Context from memory] ...", "native_session_id": "s2"})
    assert isinstance(injected, HistoryInjected)
    assert (injected.from_version, injected.to_version) == (1, 4)
    assert (injected.message_count, injected.tokens) == (3, 120)
    assert (injected.format, injected.text) == ("markdown", "[Context from memory] ...")
    assert injected.native_session_id == "s2"


def test_state_change_lines():
    data = jl({"type": "session_archived", "reason": "idle"}, {"type": "session_reactivated"},
              {"type": "conversation_cleared", "reason": "/new"},
              {"type": "conversation_cleared"})
    commands, _ = parse_lines(data)
    assert commands == [Archive(reason="idle"), Reactivate(), Clear(reason="/new"),
                        Clear(reason=None)]


# ============================================================ parse_lines: framing


def test_blank_lines_are_skipped_but_counted():
    data = b'\n  \n{"type":"session_reactivated"}\n\t\n\n{"type":"conversation_cleared"}\n\n'
    commands, origins = parse_lines(data, "f.jsonl")
    assert commands == [Reactivate(), Clear()]
    assert origins == ["f.jsonl:3", "f.jsonl:6"]


def test_crlf_line_endings_and_missing_final_newline_are_accepted():
    data = b'{"type":"session_reactivated"}\r\n{"type":"conversation_cleared"}'
    commands, origins = parse_lines(data, "win.jsonl")
    assert commands == [Reactivate(), Clear()]
    assert origins == ["win.jsonl:1", "win.jsonl:2"]


def test_default_source_is_stdin():
    _, origins = parse_lines(b'{"type":"session_reactivated"}\n')
    assert origins == ["stdin:1"]


@pytest.mark.parametrize("data", [b"", b"\n", b"\n \n\r\n"])
def test_no_lines_gives_no_commands(data: bytes):
    assert parse_lines(data) == ([], [])


def test_unicode_content_round_trips():
    message = only_message({"role": "user", "content": "héllo 世界 🚀"})
    assert message.content == "héllo 世界 🚀"


def test_invalid_utf8_names_the_line_and_the_byte():
    data = jl({"type": "session_started"}) + b'{"type":"message","role":"user","content":"\xff"}\n'
    with pytest.raises(InvalidInput) as info:
        parse_lines(data, "in.jsonl")
    assert info.value.where == "in.jsonl:2"
    assert "UTF-8" in str(info.value)
    # byte 44 of the line is the 0xff (1-based), so a host can find it
    assert "byte 44" in str(info.value)
    assert str(info.value).startswith("in.jsonl:2: ")


def test_the_first_bad_line_is_reported():
    data = jl({"type": "session_started"}, {"type": "message", "role": "bot", "content": "x"},
              {"type": "bogus"})
    with pytest.raises(InvalidInput) as info:
        parse_lines(data, "in.jsonl")
    assert info.value.where == "in.jsonl:2"
    assert info.value.field == "role"


# ============================================================ parse_lines: bad lines

MSG = {"type": "message", "role": "user", "content": "x"}
ASSISTANT = {"type": "message", "role": "assistant", "content": "x"}
INJECTED = {"type": "history_injected", "from_version": 0, "to_version": 0,
            "message_count": 0, "tokens": 0, "format": "f", "text": "t"}


@dataclass(frozen=True)
class Bad:
    line: object
    field: str | None
    says: str


BAD_LINES: dict[str, Bad] = {
    # roles
    "unknown-role": Bad({**MSG, "role": "bot"}, "role", "unknown role 'bot'"),
    "role-not-a-string": Bad({**MSG, "role": 1}, "role", "expected `str`"),
    "missing-role": Bad({"type": "message", "content": "x"}, "role", "`role`"),
    # content
    "content-number": Bad({**MSG, "content": 5}, "content", "got `int`"),
    "content-object": Bad({**MSG, "content": {"text": "x"}}, "content", "got `object`"),
    "content-null": Bad({**MSG, "content": None}, "content", "got `null`"),
    "content-bool": Bad({**MSG, "content": True}, "content", "got `bool`"),
    "missing-content": Bad({"type": "message", "role": "user"}, "content", "`content`"),
    "part-not-object": Bad({**MSG, "content": ["x"]}, "content[0]", "expected `object`"),
    "part-unknown-type": Bad({**MSG, "content": [{"type": "video", "ref": "v"}]},
                             "content[0].type", "video"),
    "part-missing-type": Bad({**MSG, "content": [{"text": "x"}]}, "content[0].type", "`type`"),
    "part-unknown-field": Bad({**MSG, "content": [{"type": "text", "text": "x", "bold": 1}]},
                              "content[0].bold", "`bold`"),
    "image-without-ref": Bad({**MSG, "content": [{"type": "image"}]}, "content[0].ref", "`ref`"),
    "tool-result-list-content": Bad(
        {**MSG, "content": [{"type": "tool_result", "tool_use_id": "t", "content": [1]}]},
        "content[0].content", "expected `str`"),
    # tool arguments
    "tool-use-arguments-not-json": Bad(
        {**ASSISTANT, "content": [{"type": "tool_use", "id": "t", "name": "f",
                                   "arguments": "{not json"}]},
        "content[0].arguments", "not valid JSON"),
    "tool-use-arguments-and-input": Bad(
        {**ASSISTANT, "content": [{"type": "tool_use", "id": "t", "name": "f",
                                   "arguments": {}, "input": {}}]},
        "content[0]", "either arguments or input"),
    "tool-use-arguments-number": Bad(
        {**ASSISTANT, "content": [{"type": "tool_use", "id": "t", "name": "f",
                                   "arguments": 3}]},
        "content[0].arguments", "got `int`"),
    "flat-call-arguments-not-json": Bad(
        {**ASSISTANT, "tool_calls": [{"id": "c", "name": "f", "arguments": "{not json"}]},
        "tool_calls[0].arguments", "not valid JSON"),
    "chat-call-arguments-not-json": Bad(
        {**ASSISTANT, "tool_calls": [
            {"id": "ok", "name": "g"},
            {"id": "c", "type": "function", "function": {"name": "f",
                                                           "arguments": "{not json"}}]},
        "tool_calls[1].arguments", "not valid JSON"),
    "call-arguments-empty-text": Bad(
        {**ASSISTANT, "tool_calls": [{"id": "c", "name": "f", "arguments": ""}]},
        "tool_calls[0].arguments", "not valid JSON"),
    "call-without-name": Bad({**ASSISTANT, "tool_calls": [{"id": "c"}]},
                             "tool_calls[0]", "needs a name"),
    "call-flat-and-function": Bad(
        {**ASSISTANT, "tool_calls": [{"id": "c", "name": "f", "function": {"name": "f"}}]},
        "tool_calls[0]", "either flat or inside function"),
    "call-without-id": Bad({**ASSISTANT, "tool_calls": [{"name": "f"}]},
                           "tool_calls[0].id", "`id`"),
    "call-function-typo": Bad(
        {**ASSISTANT, "tool_calls": [{"id": "c", "function": {"name": "f", "args": "{}"}}]},
        "tool_calls[0].function.args", "`args`"),
    "tool-calls-on-user-message": Bad({**MSG, "tool_calls": [{"id": "c", "name": "f"}]},
                                      "tool_calls", "only assistant"),
    "tool-message-without-call-id": Bad({**MSG, "role": "tool"}, "tool_call_id",
                                        "tool_call_id"),
    # numbers
    "negative-input-tokens": Bad({**MSG, "usage": {"input_tokens": -1}},
                                 "usage.input_tokens", "negative"),
    "negative-output-tokens": Bad({**MSG, "usage": {"output_tokens": -2}},
                                  "usage.output_tokens", "negative"),
    "negative-cache-read-tokens": Bad({**MSG, "usage": {"cache_read_tokens": -3}},
                                      "usage.cache_read_tokens", "negative"),
    "negative-cache-write-tokens": Bad({**MSG, "usage": {"cache_write_tokens": -4}},
                                       "usage.cache_write_tokens", "negative"),
    "fractional-tokens": Bad({**MSG, "usage": {"input_tokens": 1.5}}, "usage.input_tokens",
                             "expected `int`"),
    "usage-typo": Bad({**MSG, "usage": {"input_tokenz": 1}}, "usage.input_tokenz",
                      "`input_tokenz`"),
    "negative-tokens": Bad({**MSG, "tokens": -1}, "tokens", "negative"),
    "negative-cost": Bad({**MSG, "cost_usd": -0.5}, "cost_usd", "negative"),
    "cost-not-a-number": Bad({**MSG, "cost_usd": "cheap"}, "cost_usd", "decimal"),
    "created-at-not-a-time": Bad({**MSG, "created_at": "yesterday"}, "created_at",
                                 "datetime"),
    # ids
    "empty-message-id": Bad({**MSG, "id": ""}, "id", "non-empty"),
    "blank-message-id": Bad({**MSG, "id": "   "}, "id", "non-empty"),
    # framing and types
    "unknown-event-type": Bad({"type": "message_appended", "role": "user", "content": "x"},
                              "type", "unknown event type 'message_appended'"),
    "missing-type": Bad({"role": "user", "content": "x"}, "type", "missing required field"),
    "unknown-field": Bad({**MSG, "contnet": "x"}, "contnet", "unknown field `contnet`"),
    "unknown-field-other-type": Bad({"type": "session_started", "usr": "u"}, "usr", "`usr`"),
    "malformed-json": Bad('{"type":"message","role":"user",', None, "not a JSON object"),
    "not-json": Bad("hello", None, "not a JSON object"),
    "json-array": Bad("[1, 2]", None, "expected `object`"),
    "json-string": Bad('"message"', None, "expected `object`"),
    "json-null": Bad("null", None, "expected `object`"),
    "trailing-garbage": Bad('{"type":"session_reactivated"} x', None, "not a JSON object"),
    "two-objects-one-line": Bad('{"type":"session_reactivated"}{"type":"session_reactivated"}',
                                None, "not a JSON object"),
    "metadata-not-object": Bad({"type": "session_started", "metadata": []}, "metadata",
                               "expected `object`"),
    "reason-outside-classes": Bad({"type": "resume_failed", "strategy": "s",
                                   "reason": "network"}, "reason", "'network'"),
    "resume-without-strategy": Bad({"type": "resume_attempted"}, "strategy", "`strategy`"),
    "latency-not-a-number": Bad({"type": "resume_succeeded", "strategy": "s",
                                 "latency_ms": "fast"}, "latency_ms", "expected `float"),
    "history-missing-text": Bad({k: v for k, v in INJECTED.items() if k != "text"}, "text",
                                "`text`"),
    "native-session-id-missing": Bad({"type": "native_session_bound"}, "native_session_id",
                                     "`native_session_id`"),
    "is-error-not-bool": Bad(
        {**MSG, "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x",
                             "is_error": "yes"}]},
        "content[0].is_error", "expected `bool`"),
}


def _raw(line: object) -> str:
    return line if isinstance(line, str) else json.dumps(line)


@pytest.mark.parametrize("case", BAD_LINES.values(), ids=BAD_LINES.keys())
def test_bad_line_names_its_line_and_field(case: Bad):
    # a good line, a blank line, the bad line, then a good line: the bad one is line 3
    data = jl({"type": "session_started"}) + b"\n" + jl(_raw(case.line), MSG)
    with pytest.raises(InvalidInput) as info:
        parse_lines(data, "in.jsonl")
    error = info.value
    assert error.where == "in.jsonl:3"
    assert error.field == case.field
    text = str(error)
    assert case.says in text
    expected_prefix = "in.jsonl:3: " + (f"field {case.field!r}: " if case.field else "")
    assert text.startswith(expected_prefix)
    assert "\n" not in text


def test_system_role_is_a_typed_rejection():
    with pytest.raises(SystemMessageRejected) as info:
        parse_lines(jl({**MSG, "role": "system"}), "in.jsonl")
    assert info.value.where == "in.jsonl:1"
    assert info.value.field == "role"
    assert "system" in str(info.value)


# ============================================================ main(): recording in process


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        assert self.err == ""
        return json.loads(self.out)


CLI = Callable[..., Run]


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'cli.db'}"


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> CLI:
    monkeypatch.delenv("CONVLOG_URL", raising=False)
    monkeypatch.delenv("CONVLOG_DEBUG", raising=False)

    def run(*argv: str, stdin: bytes = b"") -> Run:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        capsys.readouterr()
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        out, err = capsys.readouterr()
        return Run(code, out, err)

    return run


def assert_one_line_error(run: Run, *fragments: str) -> None:
    assert run.code == 1, run
    assert run.out == ""
    lines = run.err.splitlines()
    assert len(lines) == 1, run.err
    assert lines[0].startswith("convlog: error: ")
    assert "Traceback" not in run.err
    assert "internal error" not in run.err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def events_of(url: str, key: str) -> list[tuple[int, str]]:
    """The conversation's events; none when the store was never created (a failed
    first `record` creates no database)."""
    if not Path(url.removeprefix("sqlite:///")).exists():
        return []
    with convlog.open(url, create=False) as log:
        if not log.exists(key):
            return []
        return [(r.version, r.event.event_name()) for r in log.events(key)]


def write(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def seed(url: str, key: str = "k") -> list[tuple[int, str]]:
    with convlog.open(url) as log:
        log.conversation(key, user="u1", agent="a1")
        log.append_turn(key, [convlog.user("hi", id="m1"), convlog.assistant("hey", id="m2")])
    before = events_of(url, key)
    assert before == [(1, "session_started"), (2, "message_appended"),
                      (3, "message_appended")]
    return before


def test_record_stdin_json_result(cli: CLI, db: str):
    data = jl({"type": "session_started", "user": "u1"},
              {**MSG, "id": "m1"}, {**ASSISTANT, "id": "m2"})
    result = cli("--db", db, "record", "chat:1", "--json", stdin=data).json()
    assert result == {"key": "chat:1", "version": 3, "appended": ["m1", "m2"],
                      "skipped": [], "events": 3}
    assert events_of(db, "chat:1") == [(1, "session_started"), (2, "message_appended"),
                                       (3, "message_appended")]


def test_record_file_argument_reads_the_file_not_stdin(cli: CLI, db: str, tmp_path: Path):
    path = write(tmp_path, "in.jsonl", jl({**MSG, "id": "from-file"}))
    result = cli("--db", db, "record", "k", path, "--json",
                 stdin=jl({**MSG, "id": "from-stdin"})).json()
    assert result["appended"] == ["from-file"]
    with convlog.open(db) as log:
        assert [m.message_id for m in log.messages("k")] == ["from-file"]


def test_record_dash_means_stdin(cli: CLI, db: str):
    result = cli("--db", db, "record", "k", "-", "--json", stdin=jl({**MSG, "id": "x"})).json()
    assert result["appended"] == ["x"]


def test_record_text_output_mentions_events_version_and_skips(cli: CLI, db: str):
    data = jl({**MSG, "id": "m1"})
    first = cli("--db", db, "record", "k", stdin=data)
    assert first.code == 0
    assert first.err == ""
    assert first.out == "recorded 2 event(s) in 'k' (now at version 2)\n"
    again = cli("--db", db, "record", "k", stdin=data + jl({**MSG, "id": "m2"}))
    assert again.code == 0
    assert again.out == ("recorded 1 event(s) in 'k' (now at version 3), "
                         "1 known message(s) skipped\n")


def test_first_batch_starts_the_conversation(cli: CLI, db: str):
    result = cli("--db", db, "record", "new", "--json", stdin=jl({**MSG, "id": "m1"})).json()
    assert result["version"] == 2
    assert result["events"] == 2
    assert events_of(db, "new") == [(1, "session_started"), (2, "message_appended")]
    with convlog.open(db) as log:
        started = log.events("new")[0].event
        assert getattr(started, "key", None) == "new"


def test_a_resume_fact_never_starts_a_conversation(cli: CLI, db: str):
    """A resume of a key nothing was recorded under is a mistake (issue 42): refused,
    and the key stays unknown (tests/parity checks it on every surface)."""
    run = cli("--db", db, "record", "new",
              stdin=jl({"type": "resume_attempted", "strategy": "session/resume"}))
    assert_one_line_error(run, "unknown conversation 'new'")
    assert events_of(db, "new") == []


def test_every_line_type_in_one_batch(cli: CLI, db: str, tmp_path: Path):
    path = write(tmp_path, "all.jsonl", jl(
        {"type": "session_started", "user": "u1", "agent": "claude", "channel": "cli",
         "title": "t", "workspace": "/w", "metadata": {"a": 1}},
        {**MSG, "id": "m1"},
        {"type": "native_session_bound", "native_session_id": "n1", "agent": "claude"},
        {"type": "resume_attempted", "strategy": "session/resume", "native_session_id": "n1"},
        {"type": "resume_failed", "strategy": "session/resume", "reason": "not_found",
         "error": "gone", "latency_ms": 4.5},
        {"type": "resume_succeeded", "strategy": "session/load", "latency_ms": 9},
        {"type": "history_injected", "from_version": 1, "to_version": 2, "message_count": 1,
         "tokens": 5, "format": "markdown", "text": "ctx", "native_session_id": "n2"},
        {"type": "session_archived", "reason": "idle"},
        {"type": "session_reactivated"},
        {"type": "conversation_cleared", "reason": "/new"},
    ))
    result = cli("--db", db, "record", "all", path, "--json").json()
    assert result["events"] == 10
    assert result["version"] == 10
    assert [t for _, t in events_of(db, "all")] == [
        "session_started", "message_appended", "native_session_bound", "resume_attempted",
        "resume_failed", "resume_succeeded", "history_injected", "session_archived",
        "session_reactivated", "conversation_cleared"]
    with convlog.open(db) as log:
        info = log.info("all")
        assert (info.user, info.agent, info.channel, info.title, info.workspace) == (
            "u1", "claude", "cli", "t", "/w")
        assert info.native_session_id == "n1"
        assert info.status == "active"
        failed = log.events("all")[4].event
        assert isinstance(failed, ResumeFailed)
        assert (failed.reason, failed.error, failed.latency_ms) == ("not_found", "gone", 4.5)
        # recorded facts are stamped with the recording time, not the parser's epoch
        assert failed.at > datetime(2020, 1, 1, tzinfo=UTC)


def test_rerecording_known_ids_skips_them(cli: CLI, db: str, tmp_path: Path):
    path = write(tmp_path, "turn.jsonl", jl({**MSG, "id": "m1"}, {**ASSISTANT, "id": "m2"}))
    first = cli("--db", db, "record", "k", path, "--json").json()
    assert first["appended"] == ["m1", "m2"]
    again = cli("--db", db, "record", "k", path, "--json").json()
    assert again == {"key": "k", "version": first["version"], "appended": [],
                     "skipped": ["m1", "m2"], "events": 0}
    overlap = write(tmp_path, "overlap.jsonl",
                    jl({**ASSISTANT, "id": "m2"}, {**MSG, "id": "m3"}))
    third = cli("--db", db, "record", "k", overlap, "--json").json()
    assert third["appended"] == ["m3"]
    assert third["skipped"] == ["m2"]
    assert third["version"] == first["version"] + 1
    with convlog.open(db) as log:
        assert [m.message_id for m in log.messages("k")] == ["m1", "m2", "m3"]


def test_known_ids_are_per_conversation(cli: CLI, db: str, tmp_path: Path):
    path = write(tmp_path, "turn.jsonl", jl({**MSG, "id": "same"}))
    assert cli("--db", db, "record", "a", path, "--json").json()["appended"] == ["same"]
    assert cli("--db", db, "record", "b", path, "--json").json()["appended"] == ["same"]


def test_recording_a_message_into_an_archived_conversation_reactivates_it(cli: CLI, db: str):
    seed(db)
    with convlog.open(db) as log:
        log.archive("k")
    result = cli("--db", db, "record", "k", "--json", stdin=jl({**MSG, "id": "m9"})).json()
    assert result["events"] == 2
    assert events_of(db, "k")[-2:] == [(5, "session_reactivated"), (6, "message_appended")]
    with convlog.open(db) as log:
        assert log.info("k").status == "active"


def test_history_injected_may_cover_events_of_the_same_batch(cli: CLI, db: str):
    data = jl({**MSG, "id": "m1"}, {**INJECTED, "from_version": 1, "to_version": 2,
                                     "message_count": 1})
    result = cli("--db", db, "record", "k", "--json", stdin=data).json()
    assert result["version"] == 3
    assert events_of(db, "k")[-1] == (3, "history_injected")


# ------------------------------------------------- main(): bad input writes nothing

CONTRACT_BAD: dict[str, tuple[bytes, str]] = {
    "unknown-role": (jl({**MSG, "role": "bot"}), "'role'"),
    "system-role": (jl({**MSG, "role": "system"}), "'role'"),
    "content-number": (jl({**MSG, "content": 42}), "'content'"),
    "content-object": (jl({**MSG, "content": {"a": 1}}), "'content'"),
    "tool-arguments-not-json": (
        jl({**ASSISTANT, "tool_calls": [{"id": "c", "name": "f", "arguments": "{not json"}]}),
        "'tool_calls[0].arguments'"),
    "chat-tool-arguments-not-json": (
        jl({**ASSISTANT, "tool_calls": [{"id": "c", "type": "function", "function": {
            "name": "f", "arguments": "{not json"}}]}),
        "'tool_calls[0].arguments'"),
    "invalid-utf8": (b'{"type":"message","role":"user","content":"caf\xe9"}\n', "UTF-8"),
    "unknown-event-type": (jl({"type": "mesage", "role": "user", "content": "x"}), "'type'"),
    "unknown-field": (jl({**MSG, "rol": "user"}), "`rol`"),
    "malformed-json": (b'{"type": "message", "role": "user", "content": "x"\n', "JSON"),
    "negative-usage": (jl({**MSG, "usage": {"output_tokens": -7}}),
                       "'usage.output_tokens'"),
    "history-range-outside-log": (jl({**INJECTED, "from_version": 1, "to_version": 99}),
                                  "'from_version'"),
    "history-range-reversed": (jl({**INJECTED, "from_version": 3, "to_version": 2}),
                               "'from_version'"),
    "empty-strategy": (jl({"type": "resume_failed", "strategy": " "}), "'strategy'"),
    "empty-native-session-id": (jl({"type": "native_session_bound", "native_session_id": ""}),
                                "'native_session_id'"),
}


@pytest.mark.parametrize(("data", "names"), CONTRACT_BAD.values(), ids=CONTRACT_BAD.keys())
def test_bad_input_after_a_valid_line_writes_nothing(
    cli: CLI, db: str, tmp_path: Path, data: bytes, names: str
):
    before = seed(db)
    valid = jl({**MSG, "id": "valid-new"}, {"type": "conversation_cleared"})
    path = write(tmp_path, "batch.jsonl", valid + data)
    run = cli("--db", db, "record", "k", path)
    assert_one_line_error(run, f"{path}:3", names)
    assert events_of(db, "k") == before
    with convlog.open(db) as log:
        assert [m.message_id for m in log.messages("k")] == ["m1", "m2"]
        assert log.info("k").status == "active"


@pytest.mark.parametrize("data", [
    jl({**MSG, "role": "system"}),
    jl({**MSG, "id": "ok"}, {**MSG, "content": 1.5}),
    jl({"type": "session_started", "user": "u"}, {"type": "bogus"}),
    jl({"type": "session_started"}, {**INJECTED, "to_version": 5}),
], ids=["system", "valid-then-bad", "start-then-unknown-type", "history-range"])
def test_bad_first_batch_creates_no_conversation(cli: CLI, db: str, data: bytes):
    run = cli("--db", db, "record", "fresh", stdin=data)
    assert_one_line_error(run, "stdin:")
    assert not Path(db.removeprefix("sqlite:///")).exists()  # no database made for it


@pytest.mark.parametrize("key", ["", "   ", "a\nb", "tab\there", "x" * 513])
def test_bad_key_is_rejected_and_writes_nothing(cli: CLI, db: str, key: str):
    run = cli("--db", db, "record", key, stdin=jl(MSG))
    assert_one_line_error(run, "'key'")
    assert not Path(db.removeprefix("sqlite:///")).exists()  # no database made for it


def test_longest_allowed_key_and_unicode_keys_work(cli: CLI, db: str):
    for key in ("x" * 512, "discord:thread:42", "会話:1"):
        result = cli("--db", db, "record", key, "--json", stdin=jl(MSG)).json()
        assert result["key"] == key
        assert events_of(db, key)[0] == (1, "session_started")


@pytest.mark.parametrize("data", [b"", b"\n\n  \n"], ids=["empty", "blank-lines"])
def test_no_events_is_an_error(cli: CLI, db: str, data: bytes):
    assert_one_line_error(cli("--db", db, "record", "k", stdin=data), "no events")
    assert events_of(db, "k") == []


def test_state_lines_on_an_unknown_conversation_fail(cli: CLI, db: str):
    run = cli("--db", db, "record", "ghost", stdin=jl({"type": "session_archived"}))
    assert_one_line_error(run, "unknown conversation 'ghost'")
    assert events_of(db, "ghost") == []


# ------------------------------------------------------------ main(): reading back


def test_show_replay_sessions_json(cli: CLI, db: str, tmp_path: Path):
    path = write(tmp_path, "in.jsonl", jl(
        {"type": "session_started", "user": "u1", "agent": "a1", "title": "T"},
        {**MSG, "id": "m1", "content": "question"},
        {**ASSISTANT, "id": "m2", "model": "gpt-4o", "cost_usd": "0.25",
         "usage": {"input_tokens": 10, "output_tokens": 2},
         "content": [{"type": "thinking", "text": "secret"}, {"type": "text", "text": "ans"}],
         "created_at": "2024-01-02T03:04:05Z"},
        {"type": "conversation_cleared", "reason": "/new"},
    ))
    assert cli("--db", db, "record", "k", path).code == 0

    shown = cli("--db", db, "show", "k", "--json").json()
    assert [(line["version"], line["role"]) for line in shown] == [
        (2, "user"), (3, "assistant"), (4, "marker")]
    assert shown[0]["text"] == "question"
    assert shown[1]["text"] == "ans"  # thinking is hidden from the transcript
    assert shown[1]["model"] == "gpt-4o"
    assert shown[1]["message_id"] == "m2"
    assert shown[1]["at"] == "2024-01-02T03:04:05Z"  # the host's created_at
    assert "/new" in shown[2]["text"]

    replayed = cli("--db", db, "replay", "k", "--json").json()
    assert [row["version"] for row in replayed] == [1, 2, 3, 4]
    assert [row["type"] for row in replayed] == [
        "session_started", "message_appended", "message_appended", "conversation_cleared"]
    message = replayed[2]["event"]
    assert message["cost_usd"] == 0.25
    assert message["usage"]["input_tokens"] == 10
    assert message["content"][0] == {"type": "thinking", "text": "secret"}
    assert "model=gpt-4o" in replayed[2]["details"]

    (session,) = cli("--db", db, "sessions", "--json").json()
    assert session["key"] == "k"
    assert (session["user"], session["agent"], session["title"]) == ("u1", "a1", "T")
    assert session["message_count"] == 2
    assert session["version"] == 4
    assert session["status"] == "active"


def test_replay_until_version(cli: CLI, db: str):
    seed(db)
    rows = cli("--db", db, "replay", "k", "--until", "2", "--json").json()
    assert [row["version"] for row in rows] == [1, 2]
    assert cli("--db", db, "replay", "k", "--until", "0", "--json").json() == []
    past = cli("--db", db, "replay", "k", "--until", "99", "--json")  # issue 26: an error
    assert past.code == 1 and past.out == ""
    assert "past the end of 'k'" in past.err and "#3" in past.err


def test_replay_until_time_is_utc_unless_it_has_an_offset(cli: CLI, db: str):
    with convlog.open(db) as log:
        log.conversation("k")
        first_at = log.events("k")[0].event.at
        log.append("k", convlog.user("later"))
        assert log.events("k")[1].event.at > first_at
    naive = first_at.replace(tzinfo=None).isoformat()
    for until in (first_at.isoformat(), naive,
                  first_at.astimezone(timezone(timedelta(hours=5))).isoformat()):
        rows = cli("--db", db, "replay", "k", "--until", until, "--json").json()
        assert [row["version"] for row in rows] == [1], until
    # the same wall-clock digits at +05:00 are 5 hours earlier: before everything
    early = naive + "+05:00"
    assert cli("--db", db, "replay", "k", "--until", early, "--json").json() == []


@pytest.mark.parametrize("until", ["bogus", "1.5", "-3", "2024-13-01"])
def test_bad_until_is_a_usage_error(cli: CLI, db: str, until: str):
    seed(db)
    run = cli("--db", db, "replay", "k", "--until", until)
    assert run.code == 2
    assert run.out == ""
    assert "convlog: error: --until" in run.err
    assert "Traceback" not in run.err


def test_until_with_a_superscript_digit_is_a_usage_error(cli: CLI, db: str):
    seed(db)
    run = cli("--db", db, "replay", "k", "--until", "²")
    assert run.code == 2
    assert "internal error" not in run.err


def test_until_beyond_sqlite_integers_is_not_an_internal_error(cli: CLI, db: str):
    seed(db)
    run = cli("--db", db, "replay", "k", "--until", str(2**63), "--json")
    assert "internal error" not in run.err
    assert run.code == 1 and "past the end of 'k'" in run.err  # issue 26: not everything


def test_version(cli: CLI):
    run = cli("--version")
    assert run.code == 0
    assert run.out.strip() == f"convlog {convlog.__version__}"
    assert convlog.__version__ != "0.0.0+unknown"


@pytest.mark.parametrize("argv", [
    [], ["bogus"], ["record"], ["show"], ["sessions", "--frobnicate"],
    ["replay", "k", "--until"], ["archive", "a", "b"], ["reactivate", "k", "--reason", "x"],
], ids=["no-command", "unknown-command", "record-no-key", "show-no-key", "unknown-option",
        "until-no-value", "extra-argument", "reactivate-takes-no-reason"])
def test_usage_errors_exit_2(cli: CLI, db: str, argv: list[str]):
    run = cli("--db", db, *argv)
    assert run.code == 2
    assert run.out == ""
    assert "usage: convlog" in run.err
    assert not Path(db.removeprefix("sqlite:///")).exists()


def test_state_change_commands_text_output(cli: CLI, db: str):
    seed(db)
    assert (cli("--db", db, "reactivate", "k").out) == "k: nothing to do\n"
    assert (cli("--db", db, "archive", "k", "--reason", "r").out) == "k: archived\n"
    assert (cli("--db", db, "archive", "k").out) == "k: nothing to do\n"
    assert cli("--db", db, "sessions").out == (
        "(no conversations (--all includes archived ones))\n")
    assert cli("--db", db, "sessions", "--all").out.splitlines()[1].split()[:5] == [
        "k", "u1", "a1", "-", "archived"]
    assert (cli("--db", db, "reactivate", "k").out) == "k: reactivated\n"
    assert (cli("--db", db, "clear", "k", "--json").json()) == {
        "key": "k", "changed": True, "version": 6, "status": "active"}
    assert [t for _, t in events_of(db, "k")][3:] == [
        "session_archived", "session_reactivated", "conversation_cleared"]


def test_clear_text_output_is_spelled_right(cli: CLI, db: str):
    seed(db)
    run = cli("--db", db, "clear", "k")
    assert run.code == 0
    assert run.out == "k: cleared\n"


@pytest.mark.parametrize("command", ["show", "replay", "archive", "reactivate", "clear"])
def test_unknown_key_in_process(cli: CLI, db: str, command: str):
    seed(db)
    assert_one_line_error(cli("--db", db, command, "ghost"), "unknown conversation 'ghost'")
    assert events_of(db, "ghost") == []


@pytest.mark.parametrize(("url", "says"), [
    ("postgresql://u@localhost/db", "PostgreSQL"),
    ("sqlite:///{tmp}/x.db?synchronous=sometimes", "synchronous"),
    ("sqlite:///{tmp}/x.db?timeout=soon", "timeout"),
    ("sqlite:///{tmp}/x.db?colour=red", "unknown SQLite option"),
    ("sqlite://host/x.db", "no host"),
    ("sqlite:///:memory:", "memory://"),
    ("", "empty"),
])
def test_unusable_storage_urls_in_process(cli: CLI, tmp_path: Path, url: str, says: str):
    run = cli("--db", url.format(tmp=tmp_path), "record", "k", stdin=jl(MSG))
    assert_one_line_error(run, says)
    assert list(tmp_path.iterdir()) == []


def test_memory_url_works_within_one_process(cli: CLI):
    result = cli("--db", "memory://", "record", "k", "--json", stdin=jl(MSG)).json()
    assert (result["version"], result["events"]) == (2, 2)


# ------------------------------------------------------------------ bugs found


def test_duplicate_message_id_in_one_batch_names_the_line(cli: CLI, db: str, tmp_path: Path):
    path = write(tmp_path, "dup.jsonl", jl({**MSG, "id": "d1"}, {**ASSISTANT, "id": "d1"}))
    run = cli("--db", db, "record", "k", path)
    assert_one_line_error(run, f"{path}:2", "'id'")
    assert "concurrent" not in run.err
    assert events_of(db, "k") == []


def test_infinite_cost_is_rejected_and_the_conversation_stays_readable(
    cli: CLI, db: str, tmp_path: Path
):
    before = seed(db)
    run = cli("--db", db, "record", "k", stdin=jl({**MSG, "cost_usd": "Infinity"}))
    assert_one_line_error(run, "stdin:1", "'cost_usd'")
    assert events_of(db, "k") == before
    assert [s["key"] for s in cli("--db", db, "sessions", "--json").json()] == ["k"]


@pytest.mark.parametrize("value", ["NaN", "sNaN"])
def test_nan_cost_is_invalid_input(cli: CLI, db: str, value: str):
    before = seed(db)
    run = cli("--db", db, "record", "k", stdin=jl({**MSG, "cost_usd": value}))
    assert_one_line_error(run, "stdin:1", "'cost_usd'")
    assert "internal error" not in run.err
    assert events_of(db, "k") == before


def test_parse_lines_rejects_infinite_cost():
    with pytest.raises(InvalidInput) as info:
        parse_lines(jl({**MSG, "cost_usd": "Infinity"}), "in.jsonl")
    assert info.value.field == "cost_usd"


def test_negative_injected_tokens_names_the_tokens_field(cli: CLI, db: str):
    before = seed(db)
    run = cli("--db", db, "record", "k",
              stdin=jl({**INJECTED, "from_version": 1, "to_version": 3, "tokens": -5}))
    assert_one_line_error(run, "stdin:1", "'tokens'")
    assert events_of(db, "k") == before


def test_negative_injected_message_count_names_its_field(cli: CLI, db: str):
    before = seed(db)
    run = cli("--db", db, "record", "k",
              stdin=jl({**INJECTED, "from_version": 1, "to_version": 3, "message_count": -1}))
    assert_one_line_error(run, "stdin:1", "'message_count'", "negative")
    assert events_of(db, "k") == before
