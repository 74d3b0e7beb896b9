"""Retention on the command line (issue 48): `convlog retention`, `convlog info`,
`convlog expire` with and without --dry-run, and a process's options (flags and
environment) recorded as the store's policy unless one was set on purpose.

The conversations are recorded by a log whose clock the test set in the past
(tests.clock.ManualClock, March 2026); the command line reads the machine's clock,
which is always later: no sleeping, and the idle times are months."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import convlog
from convlog.cli.main import main
from tests.clock import ManualClock


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> object:
    capsys.readouterr()
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _fails(*args: str) -> int:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    return int(str(exited.value.code))


def _seed(url: str) -> None:
    with convlog.ConversationLog.with_options(url, convlog.LogOptions(),
                                              clock=ManualClock()) as log:
        log.conversation("old").append(convlog.user("from March"))
        log.conversation("kept").append(convlog.user("keep me"))


def test_set_show_dry_run_and_expire(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    monkeypatch.setenv("CONVLOG_URL", url)
    _seed(url)
    assert _cli(capsys, "info") == {
        "store": str(tmp_path / "c.db"), "encrypted": False, "conversation": None,
        "retention": {"policy": None, "source": "none"}}
    shown = _cli(capsys, "retention", "set", "--erase-after-days", "30")
    assert shown == {"key": None, "policy": {"erase_after_days": 30.0}, "source": "store"}
    assert _cli(capsys, "retention", "set", "kept", "--keep-everything") == {
        "key": "kept", "policy": {}, "source": "conversation"}
    planned = _cli(capsys, "expire", "--dry-run")
    assert isinstance(planned, dict) and planned["dry_run"] is True
    assert [(a["key"], a["action"], a["source"]) for a in planned["actions"]] == [
        ("old", "erase", "store")]
    assert planned["erased"] == 1 and planned["rows_erased"] == 0
    done = _cli(capsys, "expire")
    assert isinstance(done, dict)
    assert [a["key"] for a in done["actions"]] == ["old"] and done["rows_erased"] >= 1
    again = _cli(capsys, "expire")
    assert isinstance(again, dict) and again["actions"] == [] and again["rows_erased"] == 0
    assert b"from March" not in (tmp_path / "c.db").read_bytes()
    # text output says what it did
    assert main(["retention", "show", "kept"]) == 0
    assert capsys.readouterr().out == "kept: keep everything (its own)\n"


def test_a_process_options_set_the_store_policy_unless_one_was_set_on_purpose(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    monkeypatch.setenv("CONVLOG_URL", url)
    line = tmp_path / "turn.jsonl"
    line.write_text('{"type":"message","role":"user","content":"hello"}\n')
    assert main(["record", "a", str(line), "--archive-after-days", "7"]) == 0
    assert _cli(capsys, "info")["retention"] == {  # type: ignore[index]
        "policy": {"archive_after_days": 7.0}, "source": "store"}
    monkeypatch.setenv("CONVLOG_MAX_MESSAGES", "2")
    assert main(["record", "a", str(line)]) == 0  # the environment's, now
    assert _cli(capsys, "info")["retention"]["policy"] == {"max_messages": 2}  # type: ignore[index]
    line.write_text('{"type":"message","role":"user","content":"one too many","id":"x"}\n'
                    '{"type":"message","role":"user","content":"two too many","id":"y"}\n')
    capsys.readouterr()
    assert _fails("record", "a", str(line)) == 1
    assert "limited to 2 messages" in capsys.readouterr().err
    assert main(["retention", "set", "--erase-after-days", "90"]) == 0  # on purpose
    assert main(["record", "b", str(line), "--archive-after-days", "1"]) == 0
    assert _cli(capsys, "info")["retention"]["policy"] == {  # type: ignore[index]
        "erase_after_days": 90.0}
    monkeypatch.setenv("CONVLOG_ERASE_AFTER_DAYS", "soon")
    capsys.readouterr()
    assert _fails("record", "c", str(line)) == 1
    assert "CONVLOG_ERASE_AFTER_DAYS" in capsys.readouterr().err


def test_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONVLOG_URL", f"sqlite:///{tmp_path / 'c.db'}")
    assert _fails("retention", "set") == 2
    assert _fails("retention", "show", "--max-bytes", "3") == 2
    assert _fails("retention", "set", "--max-bytes", "0") == 2
    assert not (tmp_path / "c.db").exists()
