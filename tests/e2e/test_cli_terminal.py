"""Text anyone can write to the log (a user token, an agent, an imported transcript)
never reaches the operator's terminal as control sequences (issue 43 item 5): every
human-readable output of the `convlog` command shows them as visible escapes
(``\\x1b``), as real subprocesses on a real SQLite file. `--json` escapes them as
JSON does; `--csv` is data and carries them as they are."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import convlog

CONVLOG = Path(sys.executable).parent / "convlog"
OSC = "\x1b]0;owned\x07"  # sets the terminal's title
CSI = "\x1b[2J"  # clears the screen
C1 = "\x9b31m"  # CSI as one 8-bit character
BIDI = "\u202e"  # right-to-left override: reorders what follows on screen
LOUD = f"{OSC}{CSI}{C1}{BIDI}\r"
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\r")


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('terminal') / 'c.db'}"
    with convlog.open(url) as log:
        conv = log.conversation("k", user=f"u{LOUD}", agent=f"a{LOUD}",
                                channel=f"c{LOUD}", title=f"t{LOUD}")
        conv.append_turn([
            convlog.user(f"hello {LOUD} there"),
            convlog.assistant(f"answer {LOUD}", model=f"gpt-4o{LOUD}",
                              usage=convlog.Usage(input_tokens=3, output_tokens=2))])
        conv.clear(reason=f"r{LOUD}")  # the agent's view parts from the user's: diff
        conv.append_turn([convlog.user(f"again {LOUD}")])
    return url


def _run(db: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run one command; its output decoded as it is (text mode would turn \\r into \\n)."""
    env = {k: v for k, v in os.environ.items() if k not in ("CONVLOG_URL", "CONVLOG_DEBUG")}
    done = subprocess.run([str(CONVLOG), *args, "--db", db], capture_output=True, env=env,
                          timeout=120)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(),
                                       done.stderr.decode())


@pytest.mark.parametrize("args", [
    ["show", "k"], ["replay", "k"], ["replay", "k", "--view", "user"],
    ["replay", "k", "--view", "agent"], ["diff", "k"], ["sessions"],
    ["costs"], ["costs", "--by", "agent"], ["telemetry"],
    ["context", "k", "--format", "markdown"], ["context", "k"],
    ["sql", "select user, agent, channel, title from sessions"],
    ["sql", "select model from messages where model is not null"],
], ids=" ".join)
def test_no_control_sequence_reaches_the_terminal(db: str, args: list[str]) -> None:
    done = _run(db, *args)
    assert done.returncode == 0, done.stderr
    for raw in RAW:
        assert raw not in done.stdout + done.stderr, (raw, done.stdout)


@pytest.mark.parametrize("args", [["show", "k"], ["sessions"], ["diff", "k"],
                                  ["context", "k", "--format", "markdown"]],
                         ids=lambda a: a[0])
def test_they_are_shown_as_escapes(db: str, args: list[str]) -> None:
    out = _run(db, *args).stdout
    assert "\\x1b]0;owned\\x07" in out or "\\x1b" in out, out  # sessions may cut the cell
    assert "\n" in out  # line breaks stay line breaks


def test_json_and_csv_keep_the_text_as_it_is(db: str) -> None:
    shown = json.loads(_run(db, "show", "k", "--json").stdout)
    assert any(LOUD in line["text"] for line in shown)
    csv = _run(db, "sql", "select agent from sessions", "--csv").stdout
    assert f"a{LOUD}" in csv
