"""The `convlog` command line, end to end: real subprocesses of the installed console
script against SQLite files under tmp_path.

Contract: exit 0 on success, 2 on usage errors, 1 on any other error with ONE line on
stderr starting with "convlog: error:" and no traceback; `--json` prints one JSON
document on stdout; a bad `record` batch writes nothing; reads never create a database.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

import convlog

CONVLOG = Path(sys.executable).parent / "convlog"

MSG = {"type": "message", "role": "user", "content": "x"}
ASSISTANT = {"type": "message", "role": "assistant", "content": "x"}


def jl(*objs: object) -> bytes:
    """JSON Lines bytes from Python objects (str items are taken as raw lines)."""
    return b"".join(
        (o.encode() if isinstance(o, str) else json.dumps(o).encode()) + b"\n" for o in objs)


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        assert self.code == 0, self
        assert self.err == ""
        assert self.out.endswith("\n")
        assert self.out.count("\n") == 1  # one document, one line
        return json.loads(self.out)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CONVLOG_URL", "CONVLOG_DEBUG")}
    env.update(extra)
    return env


def run(*args: str, stdin: bytes = b"", cwd: Path | None = None,
        env: dict[str, str] | None = None) -> Result:
    proc = subprocess.run(
        [str(CONVLOG), *args], input=stdin, capture_output=True, timeout=60,
        cwd=cwd, env=env if env is not None else clean_env(), check=False)
    return Result(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def run_all(*argvs: list[str]) -> list[Result]:
    """Independent commands (reads) in parallel subprocesses, results in order."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda argv: run(*argv), argvs))


def assert_one_line_error(result: Result, *fragments: str) -> str:
    """One line on stderr: ``convlog: error: ...``, or under --json a JSON document
    (tests/e2e/test_cli_conventions.py), whose message is checked the same way."""
    assert result.code == 1, result
    assert result.out == ""
    lines = result.err.splitlines()
    assert len(lines) == 1, result.err
    if lines[0].startswith("{"):
        lines[0] = "convlog: error: " + json.loads(lines[0])["error"]["message"]
    assert lines[0].startswith("convlog: error: ")
    assert "Traceback" not in result.err
    assert "internal error" not in result.err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def db_files(path: Path) -> list[Path]:
    return [p for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal"))
            if p.exists()]


def events_of(url: str, key: str) -> list[tuple[int, str]]:
    """The conversation's events; none when the store was never created (a failed
    first `record` creates no database)."""
    if not Path(url.removeprefix("sqlite:///")).exists():
        return []
    with convlog.open(url, create=False) as log:
        if not log.exists(key):
            return []
        return [(r.version, r.event.event_name()) for r in log.events(key)]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "convlog.db"


@pytest.fixture
def db(db_path: Path) -> str:
    return f"sqlite:///{db_path}"


@pytest.fixture
def seeded(db: str) -> list[tuple[int, str]]:
    """Conversation 'k' with a start and two messages, written with the Python API."""
    with convlog.open(db) as log:
        log.conversation("k", user="u1", agent="a1")
        log.append_turn("k", [convlog.user("hi", id="m1"), convlog.assistant("hey", id="m2")])
    before = events_of(db, "k")
    assert before == [(1, "session_started"), (2, "message_appended"), (3, "message_appended")]
    return before


# ====================================================================== basics


def test_bare_convlog_prints_help_and_exits_0():
    """It was a usage error (exit 2, 'the following arguments are required') (issue 29)."""
    result = run()
    assert result.code == 0, result.err
    assert result.out.startswith("usage: convlog") and "record" in result.out
    assert result.err == ""


def test_version():
    result = run("--version")
    assert result.code == 0
    assert result.out == f"convlog {version('convlog')}\n"
    assert result.err == ""


def test_record_then_read_everything_back(db: str, tmp_path: Path):
    batch = jl(
        {"type": "session_started", "user": "u1", "agent": "claude", "channel": "discord",
         "title": "Auth", "workspace": "/srv", "metadata": {"guild": 7}},
        {"type": "message", "role": "user", "content": "What did we decide?", "id": "m1",
         "created_at": "2024-05-01T10:00:00Z"},
        {"type": "message", "role": "assistant", "id": "m2", "model": "gpt-4o",
         "agent": "claude", "cost_usd": 0.0125,
         "usage": {"input_tokens": 812, "output_tokens": 9, "cache_read_tokens": 700,
                   "cache_write_tokens": 1},
         "content": [{"type": "thinking", "text": "recall"},
                     {"type": "text", "text": "JWT with rotating keys."},
                     {"type": "tool_use", "id": "tu1", "name": "grep", "input": {"q": "jwt"}},
                     {"type": "image", "ref": "file-9", "media_type": "image/png"}],
         "tool_calls": [{"id": "c1", "type": "function",
                         "function": {"name": "search", "arguments": "{\"q\": \"auth\"}"}}]},
        {"type": "message", "role": "tool", "id": "m3", "tool_call_id": "c1",
         "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "no hits",
                      "is_error": True}]},
    )
    recorded = run("--db", db, "record", "discord:thread:42", "--json", stdin=batch).json()
    assert recorded == {"key": "discord:thread:42", "version": 4,
                        "appended": ["m1", "m2", "m3"], "skipped": [], "events": 4}

    key = "discord:thread:42"
    replay_r, shown_r, sessions_r, text, table, timeline = run_all(
        ["--db", db, "replay", key, "--json"], ["--db", db, "show", key, "--json"],
        ["--db", db, "sessions", "--json"], ["--db", db, "show", key],
        ["--db", db, "sessions"], ["--db", db, "replay", key])
    replay = replay_r.json()
    assert [(r["version"], r["type"]) for r in replay] == [
        (1, "session_started"), (2, "message_appended"), (3, "message_appended"),
        (4, "message_appended")]
    assert all(set(r) == {"version", "at", "type", "details", "event"} for r in replay)
    started = replay[0]["event"]
    assert (started["key"], started["user"], started["agent"], started["channel"]) == (
        "discord:thread:42", "u1", "claude", "discord")
    assert started["metadata"] == {"guild": 7}
    answer = replay[2]["event"]
    assert answer["cost_usd"] == 0.0125
    assert answer["usage"] == {"input_tokens": 812, "output_tokens": 9,
                               "cache_read_tokens": 700, "cache_write_tokens": 1}
    assert answer["tool_calls"] == [{"id": "c1", "name": "search",
                                     "arguments": "{\"q\": \"auth\"}"}]
    assert json.loads(answer["content"][2]["arguments"]) == {"q": "jwt"}
    assert answer["content"][3] == {"type": "image", "ref": "file-9", "media_type": "image/png"}
    assert replay[3]["event"]["content"][0]["is_error"] is True
    assert "usage=812in/9out" in replay[2]["details"]

    shown = shown_r.json()
    assert [(s["version"], s["role"], s["message_id"]) for s in shown] == [
        (2, "user", "m1"), (3, "assistant", "m2"), (4, "tool", "m3")]
    assert shown[0]["at"] == "2024-05-01T10:00:00Z"
    assert "recall" not in shown[1]["text"]  # thinking is not shown
    assert shown[1]["text"].startswith("JWT with rotating keys.")
    assert "[tool call grep(" in shown[1]["text"]
    assert "[tool call search(" in shown[1]["text"]
    assert "[image: file-9]" in shown[1]["text"]
    assert shown[2]["text"] == "[tool error: no hits]"

    (session,) = sessions_r.json()
    assert session["key"] == "discord:thread:42"
    assert session["message_count"] == 3
    assert session["version"] == 4
    assert (session["status"], session["title"], session["workspace"]) == (
        "active", "Auth", "/srv")

    assert text.code == 0
    assert text.out.splitlines()[0] == (
        "discord:thread:42  (3 messages, active, user u1, agent claude)")
    assert "What did we decide?" in text.out
    assert "[gpt-4o]" in text.out
    assert "recall" not in text.out

    assert table.code == 0
    header, row = table.out.splitlines()
    assert header.split() == ["KEY", "USER", "AGENT", "CHANNEL", "STATUS", "MESSAGES",
                              "CONTENT", "TOKENS", "USAGE", "TOKENS", "COST", "USD", "LAST",
                              "ACTIVE", "TITLE"]
    assert row.split()[:6] == ["discord:thread:42", "u1", "claude", "discord", "active", "3"]

    assert timeline.code == 0
    lines = timeline.out.splitlines()
    assert lines[0].split() == ["POS", "TIME", "(UTC)", "TYPE", "DETAILS"]
    assert [line.split()[0] for line in lines[1:]] == ["1", "2", "3", "4"]
    assert "session_started" in lines[1]


def test_record_from_a_file_argument_ignores_stdin(db: str, tmp_path: Path):
    path = tmp_path / "turn.jsonl"
    path.write_bytes(jl({**MSG, "id": "from-file"}))
    result = run("--db", db, "record", "k", str(path), "--json",
                 stdin=jl({**MSG, "id": "from-stdin"})).json()
    assert result["appended"] == ["from-file"]
    dash = run("--db", db, "record", "k", "-", "--json", stdin=jl({**MSG, "id": "dash"})).json()
    assert dash["appended"] == ["dash"]
    assert dash["version"] == 3


def test_first_batch_starts_the_conversation(db: str):
    result = run("--db", db, "record", "new", "--json",
                 stdin=jl({"type": "native_session_bound", "native_session_id": "n1"})).json()
    assert result["events"] == 2
    assert events_of(db, "new") == [(1, "session_started"), (2, "native_session_bound")]
    with convlog.open(db) as log:
        assert log.info("new").native_session_id == "n1"


def test_every_line_type_in_one_atomic_batch(db: str):
    batch = jl(
        {"type": "session_started", "user": "u1"},
        {**MSG, "id": "m1"},
        {"type": "native_session_bound", "native_session_id": "n1", "agent": "claude"},
        {"type": "resume_attempted", "strategy": "session/resume", "native_session_id": "n1"},
        {"type": "resume_failed", "strategy": "session/resume", "reason": "unsupported",
         "error": "method not found", "latency_ms": 12.5},
        {"type": "resume_attempted", "strategy": "session/new"},
        {"type": "resume_succeeded", "strategy": "session/new", "latency_ms": 40},
        {"type": "history_injected", "from_version": 1, "to_version": 2, "message_count": 1,
         "tokens": 7, "format": "markdown", "text": "[Context from memory] x",
         "native_session_id": "n2"},
        {"type": "session_archived", "reason": "idle"},
        {"type": "session_reactivated"},
        {"type": "conversation_cleared", "reason": "/new"},
    )
    result = run("--db", db, "record", "k", "--json", stdin=batch).json()
    assert (result["events"], result["version"]) == (11, 11)
    replay = run("--db", db, "replay", "k", "--json").json()
    assert [r["type"] for r in replay] == [
        "session_started", "message_appended", "native_session_bound", "resume_attempted",
        "resume_failed", "resume_attempted", "resume_succeeded", "history_injected",
        "session_archived", "session_reactivated", "conversation_cleared"]
    # one batch, one transaction: every event carries the same recording time
    assert len({r["at"] for r in replay}) == 1
    failed = replay[4]["event"]
    assert (failed["reason"], failed["error"], failed["latency_ms"]) == (
        "unsupported", "method not found", 12.5)
    assert replay[6]["event"]["latency_ms"] == 40.0
    injected = replay[7]["event"]
    assert (injected["from_version"], injected["to_version"], injected["tokens"]) == (1, 2, 7)
    assert replay[8]["event"]["reason"] == "idle"
    with convlog.open(db) as log:
        assert log.info("k").status == "active"
        assert log.info("k").native_session_id == "n1"


def test_rerecording_known_ids_skips_them(db: str, tmp_path: Path):
    path = tmp_path / "turn.jsonl"
    path.write_bytes(jl({**MSG, "id": "m1"}, {**ASSISTANT, "id": "m2"}))
    first = run("--db", db, "record", "k", str(path), "--json").json()
    again = run("--db", db, "record", "k", str(path), "--json").json()
    assert again == {"key": "k", "version": first["version"], "appended": [],
                     "skipped": ["m1", "m2"], "events": 0}
    mixed = run("--db", db, "record", "k", stdin=jl({**ASSISTANT, "id": "m2"},
                                                     {**MSG, "id": "m3"}))
    assert mixed.code == 0
    assert mixed.out == ("recorded 1 event(s) in 'k' (now at version 4), "
                         "1 known message(s) skipped\n")
    with convlog.open(db) as log:
        assert [m.message_id for m in log.messages("k")] == ["m1", "m2", "m3"]


# ====================================================================== options


def test_db_and_json_before_or_after_the_command(db: str, seeded: list[tuple[int, str]]):
    before = run("--db", db, "--json", "sessions").json()
    after = run("sessions", "--db", db, "--json").json()
    assert [s["key"] for s in before] == ["k"]
    assert before == after


def test_db_as_a_bare_path(db_path: Path, seeded: list[tuple[int, str]]):
    sessions = run("--db", str(db_path), "sessions", "--json").json()
    assert [s["key"] for s in sessions] == ["k"]


def test_convlog_url_environment_variable(db: str, seeded: list[tuple[int, str]],
                                          tmp_path: Path):
    sessions = run("sessions", "--json", env=clean_env(CONVLOG_URL=db), cwd=tmp_path).json()
    assert [s["key"] for s in sessions] == ["k"]
    # --db wins over the environment
    other = tmp_path / "other.db"
    assert run("--db", str(other), "record", "o", stdin=jl(MSG)).code == 0
    chosen = run("--db", str(other), "sessions", "--json", env=clean_env(CONVLOG_URL=db))
    assert [s["key"] for s in chosen.json()] == ["o"]


def test_default_database_is_convlog_db_in_the_working_directory(tmp_path: Path):
    work = tmp_path / "work"
    work.mkdir()
    missing = run("sessions", cwd=work)
    assert_one_line_error(missing, "convlog.db")
    assert db_files(work / "convlog.db") == []
    assert run("record", "k", stdin=jl(MSG), cwd=work).code == 0
    assert (work / "convlog.db").is_file()
    assert [s["key"] for s in run("sessions", "--json", cwd=work).json()] == ["k"]


@pytest.mark.parametrize("argv", [
    [], ["frobnicate"], ["sessions", "--bogus"],
], ids=["no-command", "unknown-command", "unknown-option"])
def test_usage_errors_exit_2(argv: list[str], db_path: Path):
    result = run("--db", str(db_path), *argv)
    assert result.code == 2, result
    assert result.out == ""
    assert "usage: convlog" in result.err
    assert "error:" in result.err.splitlines()[-1]
    assert "Traceback" not in result.err
    assert db_files(db_path) == []


def test_bad_until_is_a_usage_error(db: str, seeded: list[tuple[int, str]]):
    result = run("--db", db, "replay", "k", "--until", "yesterday")
    assert result.code == 2, result
    assert result.out == ""
    assert result.err.splitlines()[-1] == (
        "convlog: error: --until: 'yesterday' is neither a version number nor an ISO time")
    assert "Traceback" not in result.err


def test_bad_until_is_a_usage_error_even_without_a_database(db_path: Path):
    result = run("--db", str(db_path), "replay", "k", "--until", "yesterday")
    assert result.code == 2, result
    assert "--until" in result.err


# ====================================================================== errors


@pytest.mark.parametrize("command", ["show", "replay", "archive"])
def test_unknown_key_is_an_error_and_creates_nothing(
    command: str, db: str, seeded: list[tuple[int, str]]
):
    result = run("--db", db, command, "nope", "--json")
    assert_one_line_error(result, "unknown conversation 'nope'")
    assert events_of(db, "nope") == []
    assert events_of(db, "k") == seeded


@pytest.mark.parametrize("argv", [
    ["sessions", "--all", "--json"], ["show", "k"], ["replay", "k", "--json"], ["clear", "k"],
])
def test_read_and_state_commands_never_create_a_database(argv: list[str], tmp_path: Path):
    path = tmp_path / "missing.db"
    result = run("--db", f"sqlite:///{path}", *argv)
    assert_one_line_error(result, "no convlog database", str(path))
    assert db_files(path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv", [
    ["sessions"], ["replay", "k", "--json"], ["record", "k"],
])
def test_a_file_that_is_not_a_database_is_an_error_and_left_untouched(
    argv: list[str], tmp_path: Path
):
    path = tmp_path / "notes.txt"
    content = b"these are my notes, not a SQLite database\n" * 20
    path.write_bytes(content)
    result = run("--db", str(path), *argv, stdin=jl(MSG))
    assert_one_line_error(result, "not a database")
    assert path.read_bytes() == content
    assert db_files(path) == [path]


@pytest.mark.parametrize(("url", "says"), [
    ("{tmp}", "is a directory"),
    ("{tmp}/no/such/dir/x.db", "does not exist"),
    ("ftp://host/x.db", "unknown storage scheme"),
], ids=["directory", "missing-parent", "unknown-scheme"])
def test_unusable_storage_urls(url: str, says: str, tmp_path: Path):
    result = run("--db", url.format(tmp=tmp_path), "record", "k", stdin=jl(MSG))
    assert_one_line_error(result, says)
    assert not (tmp_path / "x.db").exists()


def test_record_file_that_cannot_be_read(db: str, tmp_path: Path):
    missing = run("--db", db, "record", "k", str(tmp_path / "nope.jsonl"))
    assert_one_line_error(missing, "cannot read", "nope.jsonl")
    directory = run("--db", db, "record", "k", str(tmp_path))
    assert_one_line_error(directory, "cannot read", str(tmp_path))
    assert events_of(db, "k") == []


def test_empty_input_is_an_error(db: str):
    assert_one_line_error(run("--db", db, "record", "k", stdin=b"\n\n"), "no events")
    assert events_of(db, "k") == []


# ------------------------------------------------------ bad input writes nothing

INJECTED = {"type": "history_injected", "from_version": 0, "to_version": 0,
            "message_count": 0, "tokens": 0, "format": "f", "text": "t"}

BAD_INPUT: dict[str, tuple[bytes, str]] = {
    "unknown-role": (jl({**MSG, "role": "robot"}), "field 'role'"),
    "system-role": (jl({**MSG, "role": "system"}), "field 'role'"),
    "content-number": (jl({**MSG, "content": 3}), "field 'content'"),
    "tool-arguments-not-json": (
        jl({**ASSISTANT, "tool_calls": [{"id": "c", "name": "f", "arguments": "{not json"}]}),
        "field 'tool_calls[0].arguments'"),
    "invalid-utf8": (b'{"type":"message","role":"user","content":"\xc3\x28"}\n', "UTF-8"),
    "unknown-event-type": (jl({"type": "messages", "role": "user", "content": "x"}),
                           "field 'type'"),
    "unknown-field": (jl({**MSG, "conten": "x"}), "`conten`"),
    "malformed-json": (b'{"type":"message","role":"user","content":"x"\n', "JSON"),
    "negative-usage": (jl({**MSG, "usage": {"input_tokens": -1}}),
                       "field 'usage.input_tokens'"),
    "history-range-outside-log": (jl({**INJECTED, "to_version": 50}), "field 'from_version'"),
}


@pytest.mark.parametrize(("bad", "names"), BAD_INPUT.values(), ids=BAD_INPUT.keys())
def test_bad_line_after_a_valid_line_fails_the_batch_and_writes_nothing(
    bad: bytes, names: str, db: str, seeded: list[tuple[int, str]]
):
    batch = jl({**MSG, "id": "valid"}) + b"\n" + bad  # blank line 2: the bad line is 3
    result = run("--db", db, "record", "k", stdin=batch)
    assert_one_line_error(result, "stdin:3", names)
    assert events_of(db, "k") == seeded


def test_rejected_batch_leaves_replay_exactly_as_it_was(db: str, tmp_path: Path):
    path = tmp_path / "ok.jsonl"
    path.write_bytes(jl({"type": "session_started", "user": "u"}, {**MSG, "id": "m1"}))
    assert run("--db", db, "record", "k", str(path)).code == 0
    before = run("--db", db, "replay", "k", "--json").json()
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(jl({**MSG, "id": "m2"}, {"type": "session_archived"},
                       {**MSG, "role": "system"}))
    assert_one_line_error(run("--db", db, "record", "k", str(bad)), f"{bad}:3", "'role'")
    assert run("--db", db, "replay", "k", "--json").json() == before
    with convlog.open(db) as log:
        assert log.info("k").status == "active"


def test_bad_first_batch_leaves_no_conversation(db: str):
    result = run("--db", db, "record", "k",
                 stdin=jl({"type": "session_started"}, {**MSG, "content": None}))
    assert_one_line_error(result, "stdin:2", "'content'")
    assert not Path(db.removeprefix("sqlite:///")).exists()  # no database made for it


def test_empty_key_is_an_error(db: str):
    assert_one_line_error(run("--db", db, "record", "", stdin=jl(MSG)), "field 'key'")
    assert not Path(db.removeprefix("sqlite:///")).exists()  # no database made for it


# ====================================================================== state changes


def test_archive_reactivate_clear(db: str, seeded: list[tuple[int, str]]):
    archived = run("--db", db, "archive", "k", "--reason", "done", "--json").json()
    assert archived == {"key": "k", "changed": True, "version": 4, "status": "archived"}
    again = run("--db", db, "archive", "k", "--json").json()
    assert again == {"key": "k", "changed": False, "version": 4, "status": "archived"}
    active, every = run_all(["--db", db, "sessions", "--json"],
                            ["--db", db, "sessions", "--all", "--json"])
    assert active.json() == []
    assert [(s["key"], s["status"]) for s in every.json()] == [("k", "archived")]

    reactivated = run("--db", db, "reactivate", "k", "--json").json()
    assert reactivated == {"key": "k", "changed": True, "version": 5, "status": "active"}

    cleared = run("--db", db, "clear", "k", "--reason", "/new", "--json").json()
    assert cleared == {"key": "k", "changed": True, "version": 6, "status": "active"}
    text = run("--db", db, "archive", "k")
    assert (text.code, text.out) == (0, "k: archived\n")

    replay_r, shown_r = run_all(["--db", db, "replay", "k", "--json"],
                                ["--db", db, "show", "k", "--json"])
    replay = replay_r.json()
    assert [r["type"] for r in replay[3:]] == [
        "session_archived", "session_reactivated", "conversation_cleared", "session_archived"]
    assert replay[3]["event"]["reason"] == "done"
    assert replay[5]["event"]["reason"] == "/new"
    assert [s["role"] for s in shown_r.json()] == ["user", "assistant", "marker"]


def test_recording_into_an_archived_conversation_reactivates_it(
    db: str, seeded: list[tuple[int, str]]
):
    assert run("--db", db, "archive", "k").code == 0
    result = run("--db", db, "record", "k", "--json", stdin=jl({**MSG, "id": "m3"})).json()
    assert (result["events"], result["version"]) == (2, 6)
    assert events_of(db, "k")[-2:] == [(5, "session_reactivated"), (6, "message_appended")]
    with convlog.open(db) as log:
        assert log.info("k").status == "active"


def test_sessions_filters_and_order(db: str):
    with convlog.open(db) as log:
        log.conversation("a", user="u1", agent="claude")
        log.conversation("b", user="u2", agent="claude")
        log.conversation("c", user="u1", agent="codex")
        log.conversation("d", user="u1", agent="claude")
        log.archive("d")
        log.append("a", convlog.user("bump"))  # a is now the most recently active
    listings = run_all(
        ["--db", db, "sessions", "--json"],
        ["--db", db, "sessions", "--all", "--json"],
        ["--db", db, "sessions", "--user", "u1", "--json"],
        ["--db", db, "sessions", "--agent", "claude", "--all", "--user", "u1", "--json"],
        ["--db", db, "sessions", "--user", "nobody", "--json"])
    assert [[s["key"] for s in listing.json()] for listing in listings] == [
        ["a", "c", "b"], ["a", "d", "c", "b"], ["a", "c"], ["a", "d"], []]


def test_sessions_on_a_new_empty_database(db: str, db_path: Path):
    with convlog.open(db):
        pass
    as_json, as_text = run_all(["--db", db, "sessions", "--json"], ["--db", db, "sessions"])
    assert as_json.json() == []
    assert as_text.out == "(no conversations (--all includes archived ones))\n"


# ====================================================================== replay --until


def test_replay_until_version_and_time(db: str):
    with convlog.open(db) as log:
        log.conversation("k")
        log.append("k", convlog.user("one"))
        log.append("k", convlog.user("two"))
        at = [r.event.at for r in log.events("k")]
    assert at[0] < at[1] < at[2]

    naive = at[1].strftime("%Y-%m-%dT%H:%M:%S.%f")
    expected = {
        "2": [1, 2],
        "0": [],
        at[1].isoformat(): [1, 2],
        naive: [1, 2],  # no offset means UTC
        naive + "-01:00": [1, 2, 3],  # the same digits at -01:00 are an hour later
        "2000-01-01T00:00:00": [],
    }
    results = run_all(*(["--db", db, "replay", "k", "--until", u, "--json"] for u in expected),
                      ["--db", db, "replay", "k", "--until", "0"])
    got = {u: [r["version"] for r in res.json()] for u, res in zip(expected, results,
                                                                   strict=False)}
    assert got == expected
    assert (results[-1].code, results[-1].out) == (0, "(no events)\n")


def test_replay_at_a_position_past_the_end_is_an_error(db: str):
    """Issue 26: `replay --at 999` past the end silently showed everything."""
    with convlog.open(db) as log:
        log.append("k", convlog.user("one"))
    for argv in (["replay", "k", "--at", "999"], ["replay", "k", "--at", "999", "--view",
                                                   "agent"]):
        result = run("--db", db, *argv)
        assert result.code == 1
        assert_one_line_error(result, "--at 999 is past the end", "#2")


# ====================================================================== pipes


def test_closed_stdout_pipe_is_not_an_error(db: str):
    with convlog.open(db) as log:
        log.conversation("big")
        log.append_turn("big", [convlog.user(f"message number {i} " * 5) for i in range(400)])
    proc = subprocess.Popen([str(CONVLOG), "--db", db, "replay", "big", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env())
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(1) == b"["
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=30) == 0
    assert "Traceback" not in err
    assert "Error" not in err


# ====================================================================== bugs found


def test_an_infinite_cost_cannot_poison_the_database(db: str, seeded: list[tuple[int, str]]):
    result = run("--db", db, "record", "k", stdin=jl({**MSG, "cost_usd": "Infinity"}))
    sessions = run("--db", db, "sessions", "--json")
    assert sessions.code == 0, sessions.err
    assert [s["key"] for s in sessions.json()] == ["k"]
    assert_one_line_error(result, "stdin:1", "'cost_usd'")


def test_duplicate_message_id_in_one_batch_is_reported_as_bad_input(db: str):
    result = run("--db", db, "record", "k", stdin=jl({**MSG, "id": "d"}, {**MSG, "id": "d"}))
    assert_one_line_error(result, "stdin:2", "'id'")


def test_the_shell_completes_commands_and_options(tmp_path: Path) -> None:
    """argcomplete's protocol, as bash's completion function drives it (issue 29)."""
    answers = tmp_path / "completions"

    def complete(line: str) -> list[str]:
        result = run(env=clean_env(_ARGCOMPLETE="1", COMP_LINE=line, COMP_POINT=str(len(line)),
                                   _ARGCOMPLETE_IFS="\n",
                                   _ARGCOMPLETE_STDOUT_FILENAME=str(answers)))
        assert result.code == 0, result
        return answers.read_text().split()

    assert complete("convlog se") == ["sessions", "serve"]
    assert complete("convlog sessions --li") == ["--limit"]


def test_json_is_offered_only_where_a_command_prints_data() -> None:
    """`convlog acp` and `convlog serve` print no result, so --json is refused (issue 29)."""
    for argv in (["serve", "--json"], ["--json", "serve"], ["acp", "--json", "--", "x"],
                 ["--json", "acp", "--", "x"]):
        result = run(*argv)
        assert result.code == 2 and result.out == "", (argv, result)
        assert "--json" in result.err.splitlines()[-1], (argv, result)
    assert "--json" not in run("serve", "--help").out
    assert "--json" in run("sessions", "--help").out
