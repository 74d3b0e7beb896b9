"""The CLI's conventions, as docs/cli.md states them, and a failed command's footprint
(issue 44): `-V`; exit status 2 for every usage error; errors as one JSON document
under `--json`; completion of conversation keys from the catalog; and a command that
fails (a usage error, a missing extra, a refused option, bad input) leaves no
database and no file behind. Real subprocesses of the installed console script; a
missing extra is made missing for real (tests.missing_extra)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import convlog
from tests.e2e.test_cli import CONVLOG, Result, clean_env, jl, run
from tests.missing_extra import env_without


def in_dir(tmp_path: Path, *args: str, stdin: bytes = b"",
           env: dict[str, str] | None = None) -> Result:
    """`convlog ARGS` run in an empty `tmp_path/cwd`, whose files are then checked."""
    cwd = tmp_path / "cwd"
    cwd.mkdir(exist_ok=True)
    return run(*args, stdin=stdin, cwd=cwd, env=env)


def left_behind(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in (tmp_path / "cwd").iterdir())


def assert_fails_cleanly(result: Result, code: int, *fragments: str) -> None:
    assert result.code == code, result
    assert "Traceback" not in result.err and "internal error" not in result.err, result.err
    last = result.err.splitlines()[-1]
    assert last.startswith("convlog: error: "), result.err
    for fragment in fragments:
        assert fragment in last, (fragment, last)


# ------------------------------------------------------------------- -V, exit codes


def test_dash_capital_v_prints_the_version() -> None:
    result = run("-V")
    assert (result.code, result.out, result.err) == (
        0, f"convlog {convlog.__version__}\n", "")


def test_acp_without_an_agent_is_a_usage_error_and_creates_nothing(tmp_path: Path) -> None:
    """It exited 1 (docs/cli.md: 2 for usage errors) and created ./convlog.db."""
    result = in_dir(tmp_path, "acp")
    assert_fails_cleanly(result, 2, "AGENT_COMMAND", "convlog acp -- my-agent")
    assert result.err.startswith("usage: convlog acp")
    assert left_behind(tmp_path) == []


@pytest.mark.parametrize("args", [["--tokens", "0"], ["--messages", "-3"], ["--chars", "x"],
                                  ["--max-frame-mb", "0"], ["--init-timeout", "-1"]])
def test_acp_bad_numbers_are_usage_errors(tmp_path: Path, args: list[str]) -> None:
    result = in_dir(tmp_path, "acp", *args, "--", "my-agent")
    assert result.code == 2, result
    assert args[0] in result.err
    assert left_behind(tmp_path) == []


def test_acp_with_an_agent_that_does_not_exist_creates_nothing(tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(CONVLOG), "acp", "--", "no-such-agent-convlog-test"], cwd=tmp_path,
        input=b"", capture_output=True, timeout=60, env=clean_env(), check=False)
    assert proc.returncode == 1, proc
    assert b"no-such-agent-convlog-test" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_acp_without_its_extra_names_it_and_creates_nothing(tmp_path: Path) -> None:
    env = env_without(tmp_path / "blocker", "acp", base=clean_env())
    result = in_dir(tmp_path, "acp", "--", "my-agent", env=env)
    assert_fails_cleanly(result, 1, "pip install 'convlog[acp]'")
    assert len(result.err.splitlines()) == 1
    assert left_behind(tmp_path) == []


# ------------------------------------------------------------------------- serve


def test_serve_without_its_extra_names_it_and_creates_nothing(tmp_path: Path) -> None:
    env = env_without(tmp_path / "blocker", "uvicorn", base=clean_env())
    result = in_dir(tmp_path, "serve", "--port", "0", env=env)
    assert_fails_cleanly(result, 1, "pip install 'convlog[http]'")
    assert left_behind(tmp_path) == []


def test_serve_on_every_interface_without_a_token_creates_nothing(tmp_path: Path) -> None:
    env = {k: v for k, v in clean_env().items() if k != "CONVLOG_TOKEN"}
    result = in_dir(tmp_path, "serve", "--host", "0.0.0.0", "--port", "0", env=env)
    assert_fails_cleanly(result, 1, "needs a token", "CONVLOG_TOKEN")
    assert left_behind(tmp_path) == []


@pytest.mark.parametrize("args", [["--port", "70000"], ["--max-body", "0"],
                                  ["--body-timeout", "-1"], ["--max-connections", "x"]])
def test_serve_bad_numbers_are_usage_errors(tmp_path: Path, args: list[str]) -> None:
    result = in_dir(tmp_path, "serve", *args)
    assert result.code == 2, result
    assert args[0] in result.err
    assert left_behind(tmp_path) == []


def test_serve_on_a_port_in_use_creates_nothing(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        result = in_dir(tmp_path, "serve", "--port", port)
    assert_fails_cleanly(result, 1, f"cannot listen on 127.0.0.1:{port}")
    assert left_behind(tmp_path) == []


# ------------------------------------------------------------------------ record


@pytest.mark.parametrize("lines", [
    ["garbage"],                                              # not JSON
    [{"type": "message", "role": "usr", "content": "x"}],     # a bad field
    [{"type": "message", "role": "user", "content": "x", "id": "m1"},
     {"type": "message", "role": "user", "content": "y", "id": "m1"}],  # decided: a dup id
    [],                                                       # nothing to record
], ids=["not-json", "bad-role", "duplicate-id", "empty"])
def test_record_with_bad_input_creates_nothing(tmp_path: Path, lines: list[object]) -> None:
    result = in_dir(tmp_path, "record", "k", stdin=jl(*lines))
    assert_fails_cleanly(result, 1)
    assert left_behind(tmp_path) == []


def test_record_of_a_file_that_does_not_exist_creates_nothing(tmp_path: Path) -> None:
    result = in_dir(tmp_path, "record", "k", "missing.jsonl")
    assert_fails_cleanly(result, 1, "missing.jsonl")
    assert left_behind(tmp_path) == []


def test_record_into_an_existing_store_still_decides_against_it(tmp_path: Path) -> None:
    """The dry run is for a store that does not exist yet: into an existing one, a
    batch is decided against the conversation as it stands (a known id is skipped)."""
    (tmp_path / "cwd").mkdir()
    url = f"sqlite:///{tmp_path / 'cwd' / 'convlog.db'}"
    first = in_dir(tmp_path, "--db", url, "record", "k", stdin=jl(
        {"type": "message", "role": "user", "content": "x", "id": "m1"}))
    assert first.code == 0, first
    again = in_dir(tmp_path, "--db", url, "--json", "record", "k", stdin=jl(
        {"type": "message", "role": "user", "content": "x", "id": "m1"}))
    assert json.loads(again.out)["skipped"] == ["m1"]


# ------------------------------------------------------------------- --json errors


def json_error(result: Result) -> dict[str, object]:
    assert result.out == "", result
    lines = result.err.splitlines()
    assert len(lines) == 1, result.err
    document = json.loads(lines[0])
    assert set(document) == {"error"}, document
    error = document["error"]
    assert isinstance(error, dict)
    return error


def test_errors_are_one_json_document_under_json(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'log.db'}"
    with convlog.open(url) as log:
        log.conversation("k")
    result = run("--db", url, "show", "nothere", "--json")
    assert result.code == 1
    error = json_error(result)
    assert error == {"status": 1, "type": "UnknownConversation",
                     "message": "unknown conversation 'nothere'"}


def test_a_located_error_keeps_its_field_and_place_under_json(tmp_path: Path) -> None:
    result = in_dir(tmp_path, "--json", "record", "k", stdin=jl(
        {"type": "message", "role": "user", "content": "x"},
        {"type": "message", "role": "user", "content": 3}))
    assert result.code == 1
    error = json_error(result)
    assert error["type"] == "InvalidInput" and error["status"] == 1
    assert error["where"] == "stdin:2" and error["field"] == "content"
    assert "stdin:2" in str(error["message"])
    assert left_behind(tmp_path) == []


@pytest.mark.parametrize("args", [
    ["--json", "sessions", "--limit", "0"],      # argparse's own error
    ["sessions", "--json", "--nope"],            # an unknown option
    ["--json", "replay", "k", "--at", "soon"],   # a check before anything opens
    ["--json", "acp"],                           # no agent
])
def test_usage_errors_are_json_too(tmp_path: Path, args: list[str]) -> None:
    result = in_dir(tmp_path, *args)
    assert result.code == 2, result
    error = json_error(result)
    assert error["type"] == "UsageError" and error["status"] == 2
    assert str(error["usage"]).startswith("usage: convlog")
    assert left_behind(tmp_path) == []


def test_without_json_errors_stay_one_plain_line(tmp_path: Path) -> None:
    result = in_dir(tmp_path, "show", "nothere")
    assert result.code == 1
    assert result.err.startswith("convlog: error: ")


# -------------------------------------------------------------------- completion


def complete(line: str, cwd: Path, env: dict[str, str] | None = None) -> list[str]:
    """What bash completion gets for `line` (the cursor at its end), through
    argcomplete's own protocol, as `register-python-argcomplete convlog` drives it."""
    out = cwd / "completions.txt"
    environment = {**(env or clean_env()), "_ARGCOMPLETE": "1", "COMP_LINE": line,
                   "COMP_POINT": str(len(line)), "_ARGCOMPLETE_STDOUT_FILENAME": str(out),
                   "_ARGCOMPLETE_IFS": "\n", "COMP_TYPE": "9"}
    done = subprocess.run([str(CONVLOG)], cwd=cwd, env=environment, capture_output=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done
    return sorted(c.rstrip() for c in out.read_text().split("\n")) if out.read_text() else []


@pytest.fixture
def catalog(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'keys.db'}"
    with convlog.open(url) as log:
        for key in ("discord:thread:42", "discord:thread:43", "ticket-7"):
            log.conversation(key, user="u1")
        log.archive("ticket-7")
    (tmp_path / "discord-notes.txt").write_text("a file, not a conversation")
    return url


@pytest.mark.parametrize("command", ["show", "replay", "diff", "context", "archive",
                                     "reactivate", "clear", "html", "record"])
def test_completion_offers_conversation_keys_from_the_catalog(
        tmp_path: Path, catalog: str, command: str) -> None:
    got = complete(f"convlog --db {catalog} {command} disc", tmp_path)
    assert got == ["discord:thread:42", "discord:thread:43"], got


def test_completion_reads_the_default_database_and_includes_archived(
        tmp_path: Path, catalog: str) -> None:
    env = {**clean_env(), "CONVLOG_URL": catalog}
    assert complete("convlog show ti", tmp_path, env) == ["ticket-7"]


def test_completion_on_a_missing_database_offers_nothing_and_creates_nothing(
        tmp_path: Path) -> None:
    assert complete("convlog show d", tmp_path) == []
    assert not (tmp_path / "convlog.db").exists()


# ---------------------------------------------------------------------- demo_acp


def test_demo_acp_without_the_acp_extra_is_one_hint_and_leaves_nothing(
        tmp_path: Path) -> None:
    env = env_without(tmp_path / "blocker", "acp", base=clean_env())
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    done = subprocess.run([sys.executable, "-m", "convlog.cli.demo_acp"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1, done
    assert done.stderr.splitlines() == ["convlog demo-acp: the ACP proxy needs the 'acp' "
                                        "extra: pip install 'convlog[acp]'"], done.stderr
    assert done.stdout == ""
    assert sorted(os.listdir(cwd)) == []


def test_demo_acp_wraps_long_details_between_words() -> None:
    from convlog.cli.demo_acp import outcome_lines

    details = ("strategy=session/resume reason=not_found error=Resource not found: the "
               "session sess-0 is not in this agent's memory any more, it restarted")
    lines = outcome_lines("resume_failed", details, width=60)
    assert len(lines) > 1
    assert all(len(line) <= 60 for line in lines)
    assert " ".join(" ".join(line.split()) for line in lines) == (
        "resume_failed " + details)
