"""The key file as an operator might get it wrong (issue 25): `/dev/zero` or a FIFO
read without end (or blocked), a huge file was read whole, and a key file any user
could read was used without a word. Now: a bounded read and a BadKey naming the file;
a warning on stderr (the `convlog.crypto` logger) for a group/other-readable file."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

import convlog
from convlog.crypto.keys import generate_key, load_key
from tests.crypto.helpers import no_key


def test_dev_zero_is_refused_at_once() -> None:
    with pytest.raises(convlog.BadKey, match="CONVLOG_KEY_FILE=/dev/zero: not a regular file"):
        load_key({"CONVLOG_KEY_FILE": "/dev/zero"})


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "key"
    os.mkfifo(fifo)  # nobody writes: opening it for reading would block
    with pytest.raises(convlog.BadKey, match="not a regular file"):
        load_key({"CONVLOG_KEY_FILE": str(fifo)})


def test_a_huge_file_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    big = tmp_path / "key"
    with big.open("wb") as f:
        f.truncate(2**33)  # 8 GiB sparse: reading it whole would take minutes and RAM
    big.chmod(0o600)
    with pytest.raises(convlog.BadKey, match="too large for a key file"):
        load_key({"CONVLOG_KEY_FILE": str(big)})


def test_a_readable_key_file_warns(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    key = generate_key()
    path = tmp_path / "key"
    path.write_text(key + "\n")
    path.chmod(0o644)
    with caplog.at_level(logging.WARNING, logger="convlog.crypto"):
        assert load_key({"CONVLOG_KEY_FILE": str(path)}) == bytes.fromhex(key)
    assert f"{path} can be read by other users (mode 0644)" in caplog.text
    caplog.clear()
    path.chmod(0o600)
    with caplog.at_level(logging.WARNING, logger="convlog.crypto"):
        load_key({"CONVLOG_KEY_FILE": str(path)})
    assert caplog.text == ""


def test_the_cli_says_so_on_stderr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    no_key(monkeypatch)
    with convlog.open(f"sqlite:///{tmp_path / 'c.db'}") as log:
        log.conversation("k").append_turn([convlog.user("hi")])
    path = tmp_path / "key"
    path.write_text(generate_key())
    path.chmod(0o640)
    exe = str(Path(sys.executable).parent / "convlog")
    env = {k: v for k, v in os.environ.items() if k != "CONVLOG_KEY"}
    env["CONVLOG_KEY_FILE"] = str(path)
    done = subprocess.run([exe, "keys", "enable", "--db", f"sqlite:///{tmp_path / 'c.db'}"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "can be read by other users (mode 0640)" in done.stderr
    env["CONVLOG_KEY_FILE"] = "/dev/zero"
    done = subprocess.run([exe, "sessions", "--db", f"sqlite:///{tmp_path / 'c.db'}"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 1
    assert done.stderr.startswith("convlog: error: CONVLOG_KEY_FILE=/dev/zero: not a "
                                  "regular file"), done.stderr


@pytest.mark.parametrize("content", [bytes(range(200, 232)), b"\x01" * 32, b"abc"],
                         ids=["raw-non-ascii", "raw-control", "too-short"])
def test_a_key_file_of_raw_bytes_says_what_a_key_looks_like(tmp_path: Path,
                                                            content: bytes) -> None:
    """32 raw bytes in a key file said 'not ASCII text: ... ordinal not in range(128)'
    (issue 29): the error now says what a key is and where to get one."""
    path = tmp_path / "key"
    path.write_bytes(content)
    path.chmod(0o600)
    with pytest.raises(convlog.BadKey) as caught:
        load_key({"CONVLOG_KEY_FILE": str(path)})
    assert str(caught.value).startswith(f"CONVLOG_KEY_FILE={path}")
    assert "expected 64 hex digits or base64 (see `convlog keys generate`)" in str(caught.value)
