"""Hostile input for `convlog import`: every bad file is a typed error naming
``file:line`` and what is wrong, nothing of a failed conversation is written,
--keep-going imports the rest, and the CLI never shows a traceback."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import convlog
from convlog.cli.main import main

SESSION = "9d9c3f0a-0000-4000-8000-00000000beef"


def record(uuid: str, text: str = "hi", **extra: Any) -> dict[str, Any]:
    return {"type": "user", "uuid": uuid, "sessionId": extra.pop("sessionId", SESSION),
            "cwd": "/w", "timestamp": "2025-11-02T09:00:00Z",
            "message": {"role": "user", "content": text}, **extra}


def write(path: Path, *lines: Any) -> Path:
    path.write_bytes(b"".join(
        (line if isinstance(line, bytes) else json.dumps(line).encode()) + b"\n"
        for line in lines))
    return path


@pytest.fixture
def log(tmp_path: Path) -> Iterator[convlog.ConversationLog]:
    with convlog.open(f"sqlite:///{tmp_path / 'c.db'}") as opened:
        yield opened


def failing(log: convlog.ConversationLog, path: Path, fmt: str = "claude-code") -> str:
    with pytest.raises(convlog.ImportFailed) as caught:
        log.import_(fmt, [path])
    assert not log.exists(f"claude-code:{SESSION}")  # nothing of the file was written
    return str(caught.value)


def test_a_truncated_line_names_file_and_line(log: convlog.ConversationLog,
                                              tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", record("u1"), json.dumps(record("u2")).encode()[:40])
    assert failing(log, path).startswith(f"{path}:2: not valid JSON")


def test_a_wrong_type_names_the_field(log: convlog.ConversationLog, tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", record("u1"), record("u2", isSidechain="yes"))
    message = failing(log, path)
    assert message.startswith(f"{path}:2: field 'isSidechain': expected `bool | null`")


def test_wrong_content_type_inside_a_message(log: convlog.ConversationLog,
                                             tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", {**record("u1"), "message": {"content": 42}})
    assert "field 'content'" in failing(log, path)


def test_deep_nesting_is_an_error_not_a_crash(log: convlog.ConversationLog,
                                              tmp_path: Path) -> None:
    deep = b'{"type":"user","x":' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    path = write(tmp_path / "s.jsonl", record("u1"), deep)
    assert failing(log, path) == f"{path}:2: JSON nested too deeply"


def test_invalid_utf8_and_lone_surrogates(log: convlog.ConversationLog, tmp_path: Path) -> None:
    bad = json.dumps(record("u2", text="caf_")).encode().replace(b"caf_", b"caf\xe9")
    path = write(tmp_path / "s.jsonl", record("u1"), bad)
    assert failing(log, path) == f"{path}:2: invalid UTF-8 in a string"
    path = write(tmp_path / "s.jsonl", record("u1", text="\ud800"))  # a lone surrogate
    assert failing(log, path).startswith(f"{path}:1: not valid JSON")


def test_negative_usage_is_refused(log: convlog.ConversationLog, tmp_path: Path) -> None:
    line = {"type": "assistant", "uuid": "a1", "sessionId": SESSION,
            "message": {"id": "m", "role": "assistant", "content": [{"type": "text", "text": "x"}],
                        "usage": {"input_tokens": -5, "output_tokens": 1}}}
    path = write(tmp_path / "s.jsonl", line)
    assert failing(log, path) == (
        f"{path}:1: field 'usage.input_tokens': token counts cannot be negative")


def test_a_session_id_that_cannot_be_a_key(log: convlog.ConversationLog, tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", record("u1", sessionId="bad\nid"))
    assert failing(log, path) == (f"{path}: conversation 'claude-code:bad\\nid': field 'key': "
                                  "conversation key contains control characters")


def test_unknown_record_and_block_types_are_counted_never_fatal(
        log: convlog.ConversationLog, tmp_path: Path) -> None:
    future = {"type": "assistant", "uuid": "a1", "sessionId": SESSION,
              "message": {"role": "assistant", "content": [
                  {"type": "hologram", "data": {"x": 1}}, {"type": "text", "text": "ok"}]}}
    path = write(tmp_path / "s.jsonl", {"type": "teleport", "message": [1, 2], "uuid": 7},
                 record("u1"), future, {"no_type": True})
    summary = log.import_("claude-code", [path])
    assert summary.messages == 2
    assert summary.skipped == {"teleport": 1, "block:hologram": 1, "(none)": 1}


def test_a_line_over_the_limit_is_found_without_reading_it_whole(
        log: convlog.ConversationLog, tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", record("u1"), record("u2", text="x" * 5000), record("u3"))
    with pytest.raises(convlog.ImportFailed, match=rf"^{path}:2: line is 5,1\d\d bytes, "
                                                    r"longer than the limit of 1,000"):
        log.import_("claude-code", [path], max_line_bytes=1000)
    assert not log.exists(f"claude-code:{SESSION}")


def test_keep_going_imports_the_others_and_lists_every_failure(
        log: convlog.ConversationLog, tmp_path: Path) -> None:
    tree = tmp_path / "projects"
    tree.mkdir()
    write(tree / "a.jsonl", record("u1", sessionId="a"))
    write(tree / "b.jsonl", record("u1", sessionId="b"), b"{oops")
    write(tree / "c.jsonl", record("u1", sessionId="c"))
    with pytest.raises(convlog.ImportFailed, match=r"b\.jsonl:2"):
        log.import_("claude-code", [tree])
    assert log.exists("claude-code:a") and not log.exists("claude-code:c")
    summary = log.import_("claude-code", [tree], keep_going=True)
    assert [f.error.split(": ")[0] for f in summary.failures] == [f"{tree / 'b.jsonl'}:2"]
    assert log.exists("claude-code:c") and not log.exists("claude-code:b")


def test_openai_lines_fail_one_conversation_each(log: convlog.ConversationLog,
                                                 tmp_path: Path) -> None:
    ok = {"id": "c1", "messages": [{"role": "user", "content": "hi"}]}
    bad_args = {"id": "c2", "messages": [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "tool_calls": [
            {"id": "t", "type": "function", "function": {"name": "w", "arguments": "{city"}}]}]}
    path = write(tmp_path / "chats.jsonl", ok, bad_args, {**ok, "id": "c3"})
    summary = log.import_("openai", [path], keep_going=True)
    [failure] = summary.failures
    assert failure.error.startswith(
        f"{path}:2: field 'messages[1].tool_calls[0].arguments': tool arguments are not valid JSON")
    assert log.exists("openai:c1") and log.exists("openai:c3") and not log.exists("openai:c2")


def test_progress_is_reported_per_file(log: convlog.ConversationLog, tmp_path: Path) -> None:
    for name in ("a", "b"):
        write(tmp_path / f"{name}.jsonl", record("u1", sessionId=name))
    seen: list[convlog.ImportProgress] = []
    log.import_("claude-code", [tmp_path], progress=seen.append)
    steps = [(p.files_done, p.files_total, p.messages) for p in seen]
    # reports within a file (tests/integration/test_import_progress.py) repeat a step
    assert [s for i, s in enumerate(steps) if i == 0 or s != steps[i - 1]] == [
        (0, 2, 0), (1, 2, 1), (2, 2, 2)]
    assert seen[-1].bytes_done == seen[-1].bytes_total > 0


# ------------------------------------------------------------------------ the CLI


def cli(db: Path, *args: str) -> int:
    try:
        return main(["--db", str(db), *args])
    except SystemExit as exc:
        return int(exc.code or 0)


def test_cli_exit_codes_summary_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                         ) -> None:
    db = tmp_path / "c.db"
    write(tmp_path / "good.jsonl", record("u1", sessionId="g"))
    write(tmp_path / "bad.jsonl", b'{"type": "user", "uuid": ')
    assert cli(db, "import", "claude-code", str(tmp_path / "good.jsonl")) == 0
    assert "imported 1 conversation(s) (1 changed), 1 new message(s)" in capsys.readouterr().out
    assert cli(db, "import", "claude-code", str(tmp_path / "bad.jsonl")) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"convlog: error: {tmp_path / 'bad.jsonl'}:1: not valid JSON")
    assert "Traceback" not in err and "\x1b[" not in err  # no progress bar off a terminal
    assert cli(db, "import", "claude-code", "--keep-going", "--json", str(tmp_path)) == 1
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert (summary["messages"], summary["messages_known"], len(summary["failures"])) == (0, 1, 1)
    assert "1 conversation(s) or file(s) could not be imported" in err
    assert cli(db, "import", "gemini", str(tmp_path)) == 2
    assert "unknown import format 'gemini'" in capsys.readouterr().err
    fresh = tmp_path / "never.db"
    assert cli(fresh, "import", "codex", str(tmp_path / "nope")) == 1
    missing = f"convlog: error: {tmp_path / 'nope'}: no such file or directory\n"
    assert capsys.readouterr().err == missing
    assert not fresh.exists()  # checked before a database is created
    assert cli(db, "import", "codex", "--max-line-mb", "0", str(tmp_path)) == 2
    assert "expected a whole number of MB > 0" in capsys.readouterr().err


def test_a_json_document_over_the_limit_and_empty_files(log: convlog.ConversationLog,
                                                        tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"messages": [{"role": "user", "content": "x" * 3000}]}))
    with pytest.raises(convlog.ImportFailed, match=r"big\.json: a JSON document of 3,0\d\d "
                                                    r"bytes is over the limit of 1,000"):
        log.import_("openai", [big], max_line_bytes=1000)
    for name in ("empty.jsonl", "empty.json"):
        (tmp_path / name).write_text("")
    summary = log.import_("openai", [tmp_path / "empty.jsonl"])
    assert (summary.files, summary.conversations) == (1, 0)
    with pytest.raises(convlog.ImportFailed, match=r"empty\.json: not valid JSON"):
        log.import_("openai", [tmp_path / "empty.json"])


def test_the_progress_bar_shows_on_a_terminal(tmp_path: Path) -> None:
    for name in ("a", "b"):
        write(tmp_path / f"{name}.jsonl", record("u1", sessionId=name))
    controller, terminal = pty.openpty()
    done = subprocess.run(
        [str(Path(sys.executable).parent / "convlog"), "--db", str(tmp_path / "c.db"),
         "import", "claude-code", str(tmp_path)], stdout=subprocess.PIPE, stderr=terminal,
        env={**os.environ, "TERM": "xterm", "COLUMNS": "120"}, timeout=120, check=False)
    os.close(terminal)
    shown = b""
    while select.select([controller], [], [], 0.2)[0]:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the terminal's other side is closed: all was read
            break
        if not chunk:
            break
        shown += chunk
    os.close(controller)
    assert done.returncode == 0
    assert b"importing" in shown and b"2/2 files" in shown, shown[-300:]
    assert b"imported 2 conversation(s)" in done.stdout


MEASURE = """
import json, sys
import convlog
log = convlog.open(sys.argv[1], preload_tokenizer=False)
try:
    log.import_("claude-code", [sys.argv[2]])
    error = None
except convlog.ImportFailed as exc:
    error = str(exc)
# VmHWM: this process's own peak; ru_maxrss would include the parent's at the fork
peak = next(int(line.split()[1]) for line in open("/proc/self/status")
            if line.startswith("VmHWM:"))
print(json.dumps({"error": error, "peak_mib": peak / 1024}))
"""


@pytest.mark.slow
def test_a_200_mb_line_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as f:
        f.write(json.dumps(record("u1")).encode() + b"\n")
        f.write(b'{"type":"user","uuid":"u2","message":{"role":"user","content":"')
        chunk = b"x" * 2**20
        for _ in range(200):
            f.write(chunk)
        f.write(b'"}}\n')
        f.write(json.dumps(record("u3")).encode() + b"\n")
    done = subprocess.run([sys.executable, "-c", MEASURE, f"sqlite:///{tmp_path / 'c.db'}",
                           str(path)], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["error"].startswith(f"{path}:2: line is 209,715,")
    assert "longer than the limit of 67,108,864" in result["error"]
    # the line is read up to the 64 MiB limit, then skipped in 1 MiB chunks: never whole
    assert result["peak_mib"] < 200, result
