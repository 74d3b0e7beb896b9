"""`log.import_` on real SQLite with the fixtures of tests/fixtures/importers (see its
README): what each format becomes, idempotency, growth, usage counted once."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

import convlog
from convlog.domain.content import ImagePart, ThinkingPart, ToolResultPart, ToolUsePart
from tests.conftest import BACKENDS, open_backend

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"
CLAUDE = FIXTURES / "claude-code"
SESSION = "1f0c2b9e-5d1a-4c7e-9b7a-2e6f8d3c4a10"
MAIN = CLAUDE / "-home-dev-shop" / f"{SESSION}.jsonl"
CODEX_ID = "019a4b2c-7d1e-7f30-a2b4-5c6d7e8f9a01"


@pytest.fixture
def log(tmp_path: Path) -> Iterator[convlog.ConversationLog]:
    with convlog.open(f"sqlite:///{tmp_path / 'c.db'}") as opened:
        yield opened


def test_claude_code_tree_main_and_sidechain(log: convlog.ConversationLog) -> None:
    summary = log.import_("claude-code", [CLAUDE])
    assert (summary.files, summary.conversations, summary.messages) == (2, 2, 15)
    assert summary.skipped == {"file-history-snapshot": 1, "system": 1}
    main = log.info(f"claude-code:{SESSION}")
    assert (main.title, main.workspace, main.agent) == (
        "Fix the flaky checkout test", "/home/dev/shop", "claude-code")
    started = log.events(f"claude-code:{SESSION}")[0].event
    assert started.metadata == {  # type: ignore[union-attr]
        "source": "claude-code", "session_id": SESSION, "git_branch": "main",
        "version": "2.0.31", "model": "claude-sonnet-4-5-20250929",
        "summaries": ["Fix the flaky checkout test"]}
    side = log.messages(f"claude-code:{SESSION}:agent-a9f31c2")
    assert [m.message_id for m in side] == ["s-u1", "s-a1", "s-u2", "s-a2"]
    assert side[1].model == "claude-haiku-4-5-20251001"


def test_claude_code_blocks_become_parts(log: convlog.ConversationLog) -> None:
    log.import_("claude-code", [MAIN])
    by_id = {m.message_id: m for m in log.messages(f"claude-code:{SESSION}")}
    assert by_id["u1"].role == "user"
    assert str(by_id["u1"].content).startswith("The checkout")
    [image] = list(by_id["u1i"].content)
    assert isinstance(image, ImagePart)
    assert (image.media_type, image.size) == ("image/png", 1024)
    assert image.ref.startswith("sha256:") and len(image.ref) == 7 + 64
    assert isinstance(by_id["a1"].content[0], ThinkingPart)
    [call] = list(by_id["a3"].content)
    assert isinstance(call, ToolUsePart) and call.name == "Read"
    assert call.arguments == '{"file_path":"/home/dev/shop/tests/checkout.test.ts"}'
    assert by_id["u2"].role == "tool" and by_id["u2"].tool_call_id == "toolu_01Ab"
    [result] = list(by_id["u4"].content)
    assert isinstance(result, ToolResultPart) and result.content == "20/20 runs passed."
    assert {by_id[i].response_id for i in ("a1", "a2", "a3")} == {"msg_01Xq7"}
    assert by_id["a1"].created_at is not None and by_id["a1"].created_at.year == 2025


def test_usage_repeated_per_block_is_counted_once(log: convlog.ConversationLog) -> None:
    summary = log.import_("claude-code", [MAIN])
    # three lines repeat msg_01Xq7's usage; counted once, as in the views, and at
    # its final value (the streamed lines a1, a2 say 9 and 41 output tokens, a3 312)
    assert summary.cache_read_tokens == 11230 + 16242 + 16662 + 16662
    assert summary.output_tokens == 312 + 88 + 64 + 18
    by_id = {m.message_id: m for m in log.messages(f"claude-code:{SESSION}")}
    usages = {by_id[i].usage for i in ("a1", "a2", "a3")}
    assert [u.output_tokens for u in usages if u is not None] == [312]
    [row] = log.costs(by="conversation")
    assert row.cache_read_tokens == summary.cache_read_tokens
    assert row.output_tokens == summary.output_tokens
    assert row.cost_usd == pytest.approx(summary.cost_usd)
    assert summary.cost_usd > 0 and not summary.unpriced_models


def test_importing_twice_adds_nothing(log: convlog.ConversationLog) -> None:
    first = log.import_("claude-code", [CLAUDE])
    versions = {k: log.info(k).version for k in (f"claude-code:{SESSION}",)}
    again = log.import_("claude-code", [CLAUDE])
    assert (again.messages, again.messages_known) == (0, first.messages)
    assert (again.conversations_changed, again.output_tokens, again.cost_usd) == (0, 0, 0.0)
    assert {k: log.info(k).version for k in versions} == versions


def test_a_grown_file_adds_only_its_new_records(log: convlog.ConversationLog,
                                                tmp_path: Path) -> None:
    lines = MAIN.read_bytes().splitlines(keepends=True)
    grown = tmp_path / MAIN.name
    grown.write_bytes(b"".join(lines[:6]))  # cut inside response msg_01Xq7 (a1, a2)
    part = log.import_("claude-code", [grown])
    assert [m.message_id for m in log.messages(f"claude-code:{SESSION}")] == [
        "u1", "u1i", "a1", "a2"]
    grown.write_bytes(b"".join(lines))
    rest = log.import_("claude-code", [grown])
    assert (rest.messages, rest.messages_known) == (7, 4)
    ids = [m.message_id for m in log.messages(f"claude-code:{SESSION}")]
    assert ids == ["u1", "u1i", "a1", "a2", "a3", "u2", "a4", "u3", "a5", "u4", "a6"]
    # a3 repeats a1's response: its usage was already counted by the first import
    assert part.cache_read_tokens + rest.cache_read_tokens == 11230 + 16242 + 16662 + 16662


def test_codex_rollout(log: convlog.ConversationLog) -> None:
    summary = log.import_("codex", [FIXTURES / "codex"])
    key = f"codex:{CODEX_ID}"
    info = log.info(key)
    assert (info.workspace, info.agent) == ("/home/dev/shop", "codex")
    messages = log.messages(key)
    assert [m.role for m in messages] == ["user", "user", "assistant", "assistant", "tool",
                                          "assistant"]
    call = messages[3]
    assert call.tool_calls[0].name == "shell" and call.tool_calls[0].id == "call_Q1w2e3"
    assert messages[4].tool_call_id == "call_Q1w2e3"
    assert isinstance(messages[2].content[0], ThinkingPart)
    assert {m.model for m in messages if m.role == "assistant"} == {"gpt-5-codex"}
    # token_count events: usage on the last assistant message before each, the
    # repeated event ignored; OpenAI's input includes cached tokens, convlog's does not
    assert call.usage == convlog.Usage(input_tokens=9120 - 3072, output_tokens=180,
                                       cache_read_tokens=3072)
    assert messages[5].usage == convlog.Usage(input_tokens=392, output_tokens=95,
                                              cache_read_tokens=9088)
    assert summary.skipped == {"developer message": 1, "event_msg:user_message": 1,
                               "event_msg:agent_message": 1}
    assert messages[0].message_id == "line-3"


def test_openai_shapes(log: convlog.ConversationLog) -> None:
    summary = log.import_("openai", [FIXTURES / "openai"])
    assert summary.conversations == 4
    chat = log.messages("openai:chatcmpl-weather-7")
    assert [m.role for m in chat] == ["user", "assistant", "tool", "assistant"]
    assert isinstance(chat[0].content[1], ImagePart)
    assert chat[1].tool_calls[0].arguments == '{"city": "Paris", "unit": "celsius"}'
    assert chat[3].usage == convlog.Usage(input_tokens=78, output_tokens=21,
                                          cache_read_tokens=64)
    [items_key] = [r.key for r in log.conversations() if r.key.startswith("openai:agents-session-")]
    items = log.messages(items_key)
    assert [m.message_id for m in items] == ["m0", "rs_68a1", "fc_68a2", "m3", "msg_68a3"]
    assert items[3].role == "tool" and items[3].tool_call_id == "call_r1"
    assert log.messages("openai:conv-1")[1].content == "Hello! How can I help?"
    assert summary.skipped == {"system message": 1, "developer message": 1,
                               "item:web_search_call": 1}


def test_refusals_and_synthetic_messages(log: convlog.ConversationLog, tmp_path: Path) -> None:
    chat = tmp_path / "refused.json"
    chat.write_text('[{"role": "user", "content": "how to pick a lock?"},'
                    ' {"role": "assistant", "content": null, "refusal": "I cannot help."}]')
    log.import_("openai", [chat])
    [row] = log.conversations()
    assert log.messages(row.key)[1].content == "I cannot help."
    synthetic = tmp_path / "s.jsonl"  # Claude Code's API error message: zero usage
    synthetic.write_text(json.dumps({
        "type": "assistant", "uuid": "x1", "sessionId": "syn", "isApiErrorMessage": True,
        "message": {"id": "m", "role": "assistant", "model": "<synthetic>",
                    "content": [{"type": "text", "text": "API Error: 529 Overloaded"}],
                    "usage": {"input_tokens": 0, "output_tokens": 0}}}) + "\n")
    summary = log.import_("claude-code", [synthetic])
    assert (summary.messages, summary.unpriced_models) == (1, [])


def test_jsonl_of_items_is_one_conversation(log: convlog.ConversationLog,
                                            tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_text('{"role": "user", "content": "hi"}\n\n'
                    '{"type": "message", "role": "assistant", "content": '
                    '[{"type": "output_text", "text": "hello"}]}\n')
    log.import_("openai", [path])
    [row] = log.conversations()
    assert [(m.message_id, m.content) for m in log.messages(row.key)] == [
        ("m1", "hi"), ("m3", "hello")]


class OneLinePerMessage:
    """A whole new format in a few lines: the interface is this small."""

    name = "plain"

    def files(self, path: Path) -> Iterator[Path]:
        yield path

    def conversations(self, path: Path
                      ) -> Iterator[convlog.ImportedConversation | convlog.ImportFailure]:
        lines = path.read_text().splitlines()
        yield convlog.ImportedConversation(
            key=f"plain:{path.stem}", source=str(path),
            messages=[convlog.user(text, id=str(i)) for i, text in enumerate(lines)],
            origins=[f"{path}:{i + 1}" for i in range(len(lines))])


def test_an_importer_is_a_small_protocol(log: convlog.ConversationLog, tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("one\ntwo\n")
    assert isinstance(OneLinePerMessage(), convlog.Importer)
    assert log.import_(OneLinePerMessage(), [path]).messages == 2
    assert [m.content for m in log.messages("plain:notes")] == ["one", "two"]


def test_unknown_format_and_missing_path_are_typed_errors(log: convlog.ConversationLog,
                                                          tmp_path: Path) -> None:
    with pytest.raises(convlog.InvalidInput, match=r"unknown import format 'gemini'.*codex"):
        log.import_("gemini", [CLAUDE])
    with pytest.raises(convlog.InvalidInput, match="no such file"):
        log.import_("codex", [tmp_path / "nope"])


def test_a_directory_yields_only_files_of_the_format(tmp_path: Path) -> None:
    tree = tmp_path / "sessions"
    shutil.copytree(FIXTURES / "codex", tree)
    (tree / "notes.jsonl").write_text("{}\n")
    from convlog.importers.codex import CodexImporter

    assert [p.name for p in CodexImporter().files(tree)] == [
        f"rollout-2025-11-02T10-01-12-{CODEX_ID}.jsonl"]


def test_the_readme_example_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "importers.md").read_text()
    section = page.split("## Import history other tools already wrote", 1)[1]
    code = section.split("```python", 1)[1].split("```", 1)[0]
    code = code.replace("sqlite:///imported.db", f"sqlite:///{tmp_path / 'i.db'}")
    exec(compile(code.replace("~/.claude/projects", str(CLAUDE)), "docs/importers.md", "exec"), {})
    assert capsys.readouterr().out.split()[:2] == ["2", "15"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_backend_imports_each_conversation_once(
        backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    with open_backend(backend, tmp_path, request) as log:
        first = [log.import_(fmt, [FIXTURES / fmt]) for fmt in ("claude-code", "codex", "openai")]
        again = [log.import_(fmt, [FIXTURES / fmt]) for fmt in ("claude-code", "codex", "openai")]
        assert [s.messages for s in first] == [15, 6, 13]
        assert [(s.messages, s.messages_known) for s in again] == [(0, 15), (0, 6), (0, 13)]
        assert len(log.messages(f"claude-code:{SESSION}")) == 11


def test_an_old_codex_rollout_without_the_envelope(log: convlog.ConversationLog,
                                                  tmp_path: Path) -> None:
    path = tmp_path / "rollout-2025-05-01-old.jsonl"
    path.write_text(
        '{"id": "0196-old", "timestamp": "2025-05-01T10:00:00Z", "instructions": null}\n'
        '{"record_type": "state"}\n'
        '{"type": "future_kind", "timestamp": 5, "payload": {}}\n'
        '{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}\n'
        '{"type": "function_call", "name": "shell", "arguments": "{\\"command\\": [\\"ls\\"]}",'
        ' "call_id": "c1"}\n'
        '{"type": "function_call_output", "call_id": "c1", "output": "README.md"}\n')
    summary = log.import_("codex", [path])
    assert summary.skipped == {"state": 1, "future_kind": 1}
    messages = log.messages("codex:0196-old")
    assert [(m.message_id, m.role) for m in messages] == [
        ("line-4", "user"), ("line-5", "assistant"), ("line-6", "tool")]


def test_codex_counts_that_give_only_the_running_total(log: convlog.ConversationLog,
                                                      tmp_path: Path) -> None:
    def line(kind: str, payload: dict[str, object]) -> str:
        return json.dumps({"type": kind, "payload": payload}) + "\n"

    def answer(text: str) -> str:
        return line("response_item", {"type": "message", "role": "assistant",
                                      "content": [{"type": "output_text", "text": text}]})

    def total(i: int, cached: int, o: int) -> str:
        return line("event_msg", {"type": "token_count", "info": {"total_token_usage": {
            "input_tokens": i, "cached_input_tokens": cached, "output_tokens": o}}})

    path = tmp_path / "rollout-x.jsonl"
    path.write_text(line("session_meta", {"id": "tot"}) + answer("one") + total(100, 40, 10)
                    + total(100, 40, 10) + answer("two") + total(250, 140, 25))
    log.import_("codex", [path])
    assert [m.usage for m in log.messages("codex:tot")] == [
        convlog.Usage(input_tokens=60, output_tokens=10, cache_read_tokens=40),
        convlog.Usage(input_tokens=50, output_tokens=15, cache_read_tokens=100)]
