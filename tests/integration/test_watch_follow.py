"""Following a growing transcript (`Follower.follow` + the watcher's `Tail`) on real
files and a real SQLite log: read in pieces, at any line and in the middle of lines,
it records exactly what importing the finished file at once records."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

import convlog
from convlog.domain.errors import InvalidInput
from convlog.services.importing import Position, find_follower
from convlog.services.log import application
from convlog.services.sidecar import sidecar_path
from convlog.storage.urls import parse_url
from convlog.watch.positions import Positions
from convlog.watch.tail import Tail
from tests.transcripts import claude_ids, claude_lines, codex_ids, codex_lines

FIXTURES = Path(__file__).parents[1] / "fixtures" / "importers"
CLAUDE = FIXTURES / "claude-code" / "-home-dev-shop"
SESSION = "1f0c2b9e-5d1a-4c7e-9b7a-2e6f8d3c4a10"
CODEX = next((FIXTURES / "codex").rglob("rollout-*.jsonl"))


def _facts(log: convlog.ConversationLog, key: str) -> list[tuple[object, ...]]:
    return [(m.message_id, m.role, m.content, m.usage, m.response_id, m.model, m.created_at)
            for m in log.messages(key)]


def _cuts(data: bytes) -> list[int]:
    """Every line's end, and the middle of every other line (a half-written line)."""
    cuts, start = [], 0
    for i, end in enumerate(i for i, b in enumerate(data) if b == ord("\n")):
        if i % 2:
            cuts.append((start + end) // 2)
        cuts.append(end + 1)
        start = end + 1
    return cuts


@pytest.fixture
def tail(tmp_path: Path):
    def make(fmt: str) -> tuple[convlog.ConversationLog, Tail]:
        log = convlog.open(f"sqlite:///{tmp_path / fmt}.db", preload_tokenizer=False)
        positions = Positions(tmp_path / f"{fmt}.watch.sqlite")
        return log, Tail(log, find_follower(fmt), positions)

    return make


@pytest.mark.parametrize(("fmt", "sources", "keys"), [
    ("claude-code", [CLAUDE / f"{SESSION}.jsonl",
                     CLAUDE / SESSION / "subagents" / "agent-a9f31c2.jsonl"],
     [f"claude-code:{SESSION}", f"claude-code:{SESSION}:agent-a9f31c2"]),
    ("codex", [CODEX], ["codex:019a4b2c-7d1e-7f30-a2b4-5c6d7e8f9a01"]),
])
def test_following_in_pieces_records_what_one_import_records(
        tail, tmp_path: Path, fmt: str, sources: list[Path], keys: list[str]) -> None:
    log, reader = tail(fmt)
    with convlog.open(f"sqlite:///{tmp_path / 'whole.db'}", preload_tokenizer=False) as whole:
        whole.import_(fmt, sources)
        for source in sources:
            target = tmp_path / "live" / source.name
            target.parent.mkdir(exist_ok=True)
            data, written = source.read_bytes(), 0
            for cut in _cuts(data):
                with target.open("ab") as f:
                    f.write(data[written:cut])
                written = cut
                captured = reader.read(target)
                assert not captured.failures, captured.failures  # half lines are waited for
            reader.read(target, final=True)
        for key in keys:
            assert _facts(log, key) == _facts(whole, key)
        rows = [(r.input_tokens, r.output_tokens, r.cache_read_tokens, round(r.cost_usd or 0, 9))
                for r in (*log.costs(by="model"), *whole.costs(by="model"))]
        assert rows[: len(rows) // 2] == rows[len(rows) // 2:]
    log.close()


def test_a_response_is_held_until_its_last_line(tail, tmp_path: Path) -> None:
    log, reader = tail("claude-code")
    lines = claude_lines("s1", 1, blocks=3)  # a user line, then 3 lines of one response
    path = tmp_path / "s1.jsonl"
    path.write_text("\n".join(lines[:3]) + "\n")  # the response's first two lines
    captured = reader.read(path)
    assert captured.held and captured.messages == 1  # only the user's message
    with path.open("a") as f:
        f.write(lines[3] + "\n")  # its last line: the stop reason
    captured = reader.read(path)
    assert not captured.held and captured.messages == 3
    usage = [m.usage for m in log.messages("claude-code:s1") if m.role == "assistant"]
    assert {u.output_tokens for u in usage if u} == {15}  # the final count, on every line


def test_a_response_without_a_stop_reason_waits_for_a_quiet_file(tail, tmp_path: Path
                                                                  ) -> None:
    log, reader = tail("claude-code")
    lines = claude_lines("s2", 1, blocks=2)
    lines[-1] = lines[-1].replace('"stop_reason": "end_turn"', '"stop_reason": null')
    path = tmp_path / "s2.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert reader.read(path).held
    assert len(log.messages("claude-code:s2")) == 1
    captured = reader.read(path, final=True)  # the watcher's call once the file is quiet
    assert not captured.held and captured.messages == 2


def test_a_bad_line_is_reported_at_its_line_and_the_next_ones_are_read(tail, tmp_path: Path
                                                                        ) -> None:
    log, reader = tail("claude-code")
    lines = claude_lines("s3", 3)
    path = tmp_path / "s3.jsonl"
    path.write_text("\n".join([*lines[:2], '{"type": "user", "message": ', *lines[2:]]) + "\n")
    captured = reader.read(path)
    assert [f.split(": ")[0] for f in captured.failures] == [f"{path}:3"]
    assert "not valid JSON" in captured.failures[0]
    reader.read(path)
    assert {m.message_id for m in log.messages("claude-code:s3")} == claude_ids("s3", 3)


def test_a_rewritten_or_deleted_file_deletes_nothing(tail, tmp_path: Path) -> None:
    log, reader = tail("claude-code")
    path = tmp_path / "s4.jsonl"
    path.write_text("\n".join(claude_lines("s4", 3)) + "\n")
    reader.read(path)
    path.write_text("\n".join(claude_lines("s4", 1, start=3)) + "\n")  # shorter, other lines
    captured = reader.read(path)
    assert captured.rewritten and captured.messages == 2
    same_size = "\n".join(claude_lines("s5", 1)) + "\n"  # rewritten in place, size kept
    path.write_text(same_size)
    assert reader.read(path).messages == 2
    path.unlink()
    assert reader.read(path).gone
    assert {m.message_id for m in log.messages("claude-code:s4")} == claude_ids("s4", 4)
    assert {m.message_id for m in log.messages("claude-code:s5")} == claude_ids("s5", 1)


def test_lines_read_again_after_a_lost_position_are_recorded_once(tail, tmp_path: Path
                                                                  ) -> None:
    """A watcher killed between recording lines and saving their position reads them
    again: the log knows their ids, so nothing is recorded twice."""
    log, reader = tail("codex")
    path = tmp_path / "rollout-x.jsonl"
    path.write_text("\n".join(codex_lines("c1", 5)) + "\n")
    reader.read(path)
    reader.positions.drop("codex", str(path))  # the position never got saved
    again = reader.read(path)
    assert (again.messages, again.messages_known) == (0, 10)
    events = log.events("codex:c1")
    assert sum(1 for r in events if type(r.event).__name__ == "MessageAppended") == 10


def test_a_failed_write_keeps_the_position(tmp_path: Path) -> None:
    """Another process holds the log's write lock: the read raises, the position stays,
    and the next read records the lines."""
    db = tmp_path / "locked.db"
    log = convlog.open(f"sqlite:///{db}?timeout=1", preload_tokenizer=False)
    log.conversation("warm-up")  # the store exists
    reader = Tail(log, find_follower("claude-code"), Positions(tmp_path / "p.sqlite"))
    path = tmp_path / "s6.jsonl"
    path.write_text("\n".join(claude_lines("s6", 2)) + "\n")
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(convlog.ConvlogError, match="locked"):
            reader.read(path)
        assert reader.positions.get("claude-code", str(path)) is None
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert reader.read(path).messages == 4
    log.close()


def test_a_fifo_with_a_transcript_name_is_not_opened(tail, tmp_path: Path) -> None:
    _log, reader = tail("claude-code")
    fifo = tmp_path / "trap.jsonl"
    os.mkfifo(fifo)
    assert reader.read(fifo).messages == 0  # returns at once: nothing opened
    with pytest.raises(InvalidInput, match="not a regular file"):
        find_follower("claude-code").follow(fifo, Position())


def test_openai_documents_cannot_be_followed() -> None:
    with pytest.raises(InvalidInput, match="cannot be followed"):
        find_follower("openai")


def test_an_over_long_line_is_skipped_once_it_ends(tmp_path: Path) -> None:
    follower = find_follower("claude-code")
    follower.max_line_bytes = 1000  # type: ignore[attr-defined]
    path = tmp_path / "long.jsonl"
    good = claude_lines("s7", 1)
    path.write_text(good[0] + "\n" + "x" * 3000)  # still being written: wait
    first = follower.follow(path, Position())
    assert first.failure is None and first.position.line == 1
    with path.open("a") as f:
        f.write("\n" + good[1] + "\n")
    second = follower.follow(path, first.position)
    assert second.failure is not None and f"{path}:2" in second.failure.error
    third = follower.follow(path, second.position)
    assert [m.id for c in third.conversations for m in c.messages] == ["s7-a0-0"]


def test_positions_belong_to_one_log(tmp_path: Path, pg_url: str,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Beside a SQLite log; per URL for PostgreSQL (a position is only true of the log
    it was taken in); in memory for a log in memory; or where the variable says."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("CONVLOG_WATCH_STATE", raising=False)
    sqlite = convlog.open(f"sqlite:///{tmp_path / 'a.db'}", preload_tokenizer=False)
    assert sidecar_path(application(sqlite).config, "watch") == tmp_path / "a.watch.sqlite"
    sqlite.close()
    with convlog.open(pg_url, preload_tokenizer=False,
                      views=str(tmp_path / "v.duckdb")) as log:
        state = sidecar_path(application(log).config, "watch")
        assert state.parent == tmp_path / "state" / "convlog"
        other = pg_url.replace("schema=", "schema=x")
        assert sidecar_path(parse_url(other), "watch") != state
        reader = Tail(log, find_follower("codex"), Positions(state))
        path = tmp_path / "rollout-pg.jsonl"
        path.write_text("\n".join(codex_lines("pg", 3)) + "\n")
        assert reader.read(path).messages == 6
        assert reader.read(path).messages == 0
        assert {m.message_id for m in log.messages("codex:pg")} == codex_ids(3)
    memory = convlog.open("memory://", preload_tokenizer=False)
    assert str(sidecar_path(application(memory).config, "watch")) == ":memory:"
    monkeypatch.setenv("CONVLOG_WATCH_STATE", str(tmp_path / "here.sqlite"))
    assert sidecar_path(application(memory).config, "watch", "CONVLOG_WATCH_STATE") == (
        tmp_path / "here.sqlite")
