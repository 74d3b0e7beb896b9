"""`convlog import`'s progress moves within a file (issue 44, item 8): a 37.7 MB Claude
Code transcript showed 0.0/37.7 MB until the import ended, since a file's bytes were
credited only once the whole file was recorded. The progress callback is what the
CLI's bar draws; these tests read it on real imports into SQLite, and never how long
anything took."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import convlog
from tests.e2e.test_cli import CONVLOG, clean_env


def claude_transcript(path: Path, turns: int) -> int:
    """One Claude Code session of `turns` user/assistant pairs; returns its size."""
    session = "5b0c2b9e-5d1a-4c7e-9b7a-2e6f8d3c4a10"
    lines = []
    parent = None
    for n in range(turns):
        for role, text in (("user", f"question {n} " + "words " * 40),
                           ("assistant", f"answer {n} " + "more words " * 60)):
            uuid = f"{n:08d}-0000-4000-8000-{0 if role == 'user' else 1:012d}"
            body: dict[str, object] = {"role": role, "content": text}
            if role == "assistant":
                body = {"role": role, "model": "claude-sonnet-4-5-20250929",
                        "content": [{"type": "text", "text": text}],
                        "usage": {"input_tokens": 10, "output_tokens": 5}}
            lines.append({"type": role, "uuid": uuid, "parentUuid": parent,
                          "sessionId": session, "timestamp": "2025-01-02T03:04:05Z",
                          "cwd": "/home/dev/shop", "message": body})
            parent = uuid
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path.stat().st_size


def openai_chats(path: Path, conversations: int) -> int:
    """One conversation per line (the openai format's JSON Lines)."""
    path.write_text("".join(json.dumps({"id": f"chat-{n}", "messages": [
        {"role": "user", "content": f"hello {n} " + "x " * 50},
        {"role": "assistant", "content": f"hi {n} " + "y " * 80}]}) + "\n"
        for n in range(conversations)))
    return path.stat().st_size


def progress_of(tmp_path: Path, fmt: str, path: Path) -> list[convlog.ImportProgress]:
    seen: list[convlog.ImportProgress] = []
    with convlog.open(f"sqlite:///{tmp_path / 'p.db'}") as log:
        summary = log.import_(fmt, [path], progress=seen.append)
    assert summary.failures == [] and summary.messages + summary.messages_known > 0
    return seen


def assert_moves_within_the_file(seen: list[convlog.ImportProgress], size: int) -> None:
    done = [p.bytes_done for p in seen]
    assert all(p.bytes_total == size for p in seen)
    assert done == sorted(done), "progress never goes back"
    assert done[0] == 0 and done[-1] == size
    inside = sorted({d for d in done if 0 < d < size})
    assert len(inside) >= 5, f"the bar stood still inside the file: {done}"
    assert seen[-1].files_done == 1


def test_one_large_transcript_moves_the_bar_while_it_is_imported(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    size = claude_transcript(path, 1_200)
    seen = progress_of(tmp_path, "claude-code", path)
    assert_moves_within_the_file(seen, size)
    assert seen[-1].messages == 2_400


def test_a_file_of_many_conversations_moves_the_bar_as_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "chats.jsonl"
    size = openai_chats(path, 300)
    seen = progress_of(tmp_path, "openai", path)
    assert_moves_within_the_file(seen, size)
    assert seen[-1].conversations == 300


def test_a_reimport_moves_the_bar_too(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    size = claude_transcript(path, 1_200)
    progress_of(tmp_path, "claude-code", path)
    again = progress_of(tmp_path, "claude-code", path)
    done = [p.bytes_done for p in again]
    assert done == sorted(done) and done[-1] == size


@pytest.mark.parametrize("turns", [0, 1])
def test_small_files_start_at_zero_and_end_at_their_size(tmp_path: Path, turns: int) -> None:
    path = tmp_path / "session.jsonl"
    size = claude_transcript(path, turns) if turns else 0
    if not turns:
        path.write_text("")
    seen: list[convlog.ImportProgress] = []
    with convlog.open(f"sqlite:///{tmp_path / 'p.db'}") as log:
        log.import_("claude-code", [path], progress=seen.append)
    assert seen[0].bytes_done == 0 and seen[-1].bytes_done == size == seen[-1].bytes_total


def test_the_cli_bar_draws_it(tmp_path: Path) -> None:
    """On a terminal (a pty), `convlog import` draws rich's bar: a figure between 0 and
    the file's size appears while the one file is imported. rich redraws ten times a
    second: the file is large enough (~24 MB) that its import takes several redraws on a
    quiet machine too (1,500 turns, 0.9 MB, were imported between two redraws there)."""
    import os
    import pty
    import subprocess

    path = tmp_path / "session.jsonl"
    size = claude_transcript(path, 40_000)
    leader, follower = pty.openpty()
    env = {**clean_env(), "COLUMNS": "160", "TERM": "xterm"}
    proc = subprocess.Popen([str(CONVLOG), "--db", f"sqlite:///{tmp_path / 'c.db'}",
                             "import", "claude-code", str(path)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=follower, env=env)
    os.close(follower)
    drawn = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        drawn += chunk
    assert proc.wait(timeout=300) == 0
    proc.stdout.close()  # type: ignore[union-attr]
    os.close(leader)
    total = f"{size / 1e6:.1f}"
    plain = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", drawn)
    figures = {float(f) for f in re.findall(rb"([0-9.]+)/" + total.encode() + rb" MB", plain)}
    assert figures and max(figures) == float(total), plain[-2000:]
    assert {f for f in figures if 0 < f < float(total)}, plain[-2000:]
