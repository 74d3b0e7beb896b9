"""Resume telemetry, SQL over the views, Parquet export and the chart."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import zlib
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

import convlog
from convlog.services.log import application


def failing(reason: str) -> Any:
    def tier(call: convlog.TierCall) -> None:
        raise convlog.TierFailed(reason, "nope")  # type: ignore[arg-type]
    return tier


def new_session(call: convlog.TierCall) -> str:
    return f"fresh-{call.key}-{len(call.strategy)}"


def scripted(log: convlog.ConversationLog) -> None:
    """Three resumes: native works; native+load fail then new session (injected);
    and a conversation whose host starts a new session but injects nothing."""
    a = log.conversation("a", user="u1", agent="copilot", metadata={"client": "zed"})
    a.append_turn([convlog.user("q"), convlog.assistant("a")])
    a.bind_native_session("n-a")
    a.resume([convlog.Tier("session/resume", lambda c: None)])
    b = log.conversation("b", user="u2", agent="copilot", channel="discord")
    b.append_turn([convlog.user("remember 42"), convlog.assistant("ok")])
    b.bind_native_session("n-b")
    b.resume([convlog.Tier("session/resume", failing("not_found")),
              convlog.Tier("session/load", failing("unsupported")),
              convlog.Tier("session/new", new_session)])
    # A host that records its own resume (JSON lines) and never injects: memory lost.
    log.append("c", convlog.user("an old message"))
    from convlog.services.jsonlines import parse_lines

    lines = b"\n".join([
        b'{"type": "resume_attempted", "strategy": "session/new"}',
        b'{"type": "resume_succeeded", "strategy": "session/new", "latency_ms": 5}',
        b'{"type": "resume_attempted", "strategy": "session/load"}',  # abandoned
    ])
    commands, origins = parse_lines(lines)
    application(log).execute("c", commands, origins)


def test_telemetry_by_strategy(log: convlog.ConversationLog) -> None:
    scripted(log)
    rows = {r.group: r for r in log.telemetry(by="strategy")}
    assert rows["session/resume"].attempts == 2
    assert rows["session/resume"].succeeded == 1
    assert rows["session/resume"].success_rate == pytest.approx(0.5)
    assert rows["session/load"].failed == 1
    assert rows["session/load"].abandoned == 1
    new = rows["session/new"]
    assert (new.attempts, new.succeeded, new.resumes, new.fallbacks) == (2, 2, 2, 2)
    assert new.fallback_rate == 1.0
    assert new.memory_lost == 1  # conversation c
    assert new.injected_tokens_per_fallback is not None
    assert new.injected_tokens_per_fallback > 0
    assert new.p50_latency_ms is not None


def test_telemetry_by_reason_agent_client_day(log: convlog.ConversationLog) -> None:
    scripted(log)
    reasons = {r.group: r.attempts for r in log.telemetry(by="reason")}
    assert reasons["not_found"] == 1
    assert reasons["unsupported"] == 1
    assert reasons["abandoned"] == 1
    clients = {r.group for r in log.telemetry(by="client")}
    assert {"zed", "discord"} <= clients
    (day,) = log.telemetry(by="day")
    assert day.attempts == 6  # a: 1, b: 3, c: 2 (one abandoned)
    assert log.telemetry(since=convlog_tomorrow()) == []
    with pytest.raises(convlog.InvalidInput, match="cannot group telemetry"):
        log.telemetry(by="mood")


def convlog_tomorrow() -> date:
    return (datetime.now(UTC) + timedelta(days=1)).date()


def test_resumes_view_flags_memory_lost(log: convlog.ConversationLog) -> None:
    scripted(log)
    names, rows = log.sql(
        "SELECT key, tries, worked_strategy, injected, memory_lost FROM resumes "
        "WHERE succeeded ORDER BY key")
    assert names == ["key", "tries", "worked_strategy", "injected", "memory_lost"]
    assert rows == [("a", 1, "session/resume", False, False),
                    ("b", 3, "session/new", True, False),
                    ("c", 1, "session/new", False, True)]


def test_sql_is_read_only_and_errors_are_typed(log: convlog.ConversationLog) -> None:
    scripted(log)
    with pytest.raises(convlog.InvalidInput, match="read-only"):
        log.sql("CREATE TABLE scratch AS SELECT 1 AS x")  # the views are a cache
    with pytest.raises(convlog.InvalidInput, match="scratch"):
        log.sql("SELECT * FROM scratch")
    with pytest.raises(convlog.InvalidInput):
        log.sql("SELEKT nonsense")
    names, rows = log.sql("SELECT count(*) AS n FROM messages")
    assert (names, rows) == (["n"], [(5,)])


def test_export_parquet_reads_back(log: convlog.ConversationLog, tmp_path: Path) -> None:
    scripted(log)
    files = log.export_parquet(tmp_path / "out")
    names = {f.stem for f in files}
    assert {"sessions", "messages", "resume_attempts", "resumes", "injections"} <= names
    assert not list((tmp_path / "out").glob(".*"))  # no partial files left behind
    path = tmp_path / "out" / "resume_attempts.parquet"
    with duckdb.connect() as con:
        assert con.execute(f"SELECT count(*) FROM '{path}'").fetchall() == [(6,)]


def png_size_and_colours(path: Path) -> tuple[int, int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    raw = b""
    pos = 8
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            raw += data[pos + 8:pos + 8 + length]
        pos += 12 + length
    pixels = zlib.decompress(raw)
    return width, height, len(set(pixels[i:i + 3] for i in range(0, len(pixels), 997)))


def test_cli_telemetry_sql_export_and_chart(sqlite_url: str, tmp_path: Path) -> None:
    with convlog.open(sqlite_url) as log:
        scripted(log)
    exe = str(Path(sys.executable).parent / "convlog")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([exe, *args, "--db", sqlite_url], capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done

    chart = tmp_path / "resume.png"
    table = run("telemetry", "--chart", str(chart)).stdout
    assert table.splitlines()[0].split()[:3] == ["STRATEGY", "ATTEMPTS", "OK"]
    width, height, colours = png_size_and_colours(chart)
    assert (width, height) == (900, 450)
    assert colours > 3  # not a blank image
    as_json = json.loads(run("telemetry", "--by", "reason", "--json").stdout)
    assert {r["group"] for r in as_json} >= {"not_found", "unsupported"}
    csv_out = run("sql", "SELECT key, tries FROM resumes ORDER BY key", "--csv").stdout
    assert csv_out.splitlines()[0] == "key,tries"
    rows = json.loads(run("sql", "SELECT count(*) AS n FROM messages", "--json").stdout)
    assert rows == [{"n": 5}]
    exported = run("export", "--parquet", str(tmp_path / "pq")).stdout.split()
    assert any(p.endswith("resumes.parquet") for p in exported)
    bad = subprocess.run([exe, "sql", "SELECT * FROM nope", "--db", sqlite_url],
                         capture_output=True, text=True)
    assert bad.returncode == 1
    assert bad.stderr.startswith("convlog: error:")
    assert "Traceback" not in bad.stderr
