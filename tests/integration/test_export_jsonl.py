"""`convlog export --format convlog-jsonl` round-trips (issue 48 item 2, its first
format): every conversation of the suite's real transcripts (tests/fixtures/importers:
Claude Code, Codex, OpenAI), imported, exported, and recorded back into another store
with `convlog record KEY FILE`, has the same messages: ids, roles, content parts
(tool pairs, images), tool calls, model, agent, usage, cost, counts, response ids and
times. What the format leaves out, by rule, is listed in convlog.services.export_jsonl
and docs/importers.md#export."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import pytest

import convlog
from convlog.cli.main import main
from convlog.domain.events import MessageAppended
from convlog.domain.records import is_record

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"


def _messages(log: convlog.ConversationLog, key: str) -> list[tuple[object, ...]]:
    return [(e.message_id, e.role, e.content, e.tool_calls, e.tool_call_id, e.model,
             e.agent, e.usage, e.cost_usd, e.tokens, e.response_id, e.created_at or e.at)
            for e in (r.event for r in log.events(key))
            if isinstance(e, MessageAppended) and not is_record(e)]


def test_every_real_transcript_round_trips(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    source, target = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    with convlog.open(source) as log:
        for name in ("claude-code", "codex", "openai"):
            log.import_(name, [FIXTURES / name])
        keys = [r.key for r in log.conversations(include_archived=True)]
        before = {key: _messages(log, key) for key in keys}
        started = {key: log.info(key) for key in keys}
    assert len(keys) >= 7 and sum(map(len, before.values())) >= 34
    out = tmp_path / "out"
    assert main(["export", "--db", source, "--format", "convlog-jsonl", *keys,
                 "--output", str(out), "--json"]) == 0
    files = json.loads(capsys.readouterr().out)["files"]
    assert sorted(files) == sorted(str(out / (quote(k, safe="") + ".jsonl")) for k in keys)
    for key in keys:
        assert main(["record", "--db", target, key,
                     str(out / (quote(key, safe="") + ".jsonl"))]) == 0
    with convlog.open(target) as log:
        total = same = 0
        for key in keys:
            after = _messages(log, key)
            total += len(before[key])
            same += sum(a == b for a, b in zip(before[key], after, strict=False))
            assert len(after) == len(before[key]), key
            info = log.info(key)
            assert (info.user, info.agent, info.title, info.workspace) == (
                started[key].user, started[key].agent, started[key].title,
                started[key].workspace), key
    assert same == total  # every message, not only 99.9%


def test_one_key_to_stdout_and_usage_errors(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    db = f"sqlite:///{tmp_path / 'c.db'}"
    with convlog.open(db) as log:
        log.conversation("k", user="u").append_turn([
            convlog.user("look", ),
            convlog.assistant([convlog.ImagePart(ref="sha256:ab", media_type="image/png"),
                               convlog.TextPart(text="a cat")], model="gpt-4o",
                              usage=convlog.Usage(input_tokens=3, output_tokens=2))])
    capsys.readouterr()
    assert main(["export", "--db", db, "--format", "convlog-jsonl", "k"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x["type"] for x in lines] == ["session_started", "message", "message"]
    assert lines[2]["content"][0] == {"type": "image", "ref": "sha256:ab",
                                      "media_type": "image/png"}
    for args in (["--format", "convlog-jsonl"], ["--parquet", "d", "k"],
                 ["--format", "convlog-jsonl", "k", "k2"]):
        with pytest.raises(SystemExit) as exited:
            main(["export", "--db", db, *args])
        assert exited.value.code == 2, args
    with pytest.raises(SystemExit) as exited:
        main(["export", "--db", db, "--format", "convlog-jsonl", "nobody", "-o",
              str(tmp_path / "x")])
    assert exited.value.code == 1 and not (tmp_path / "x").exists()


def test_over_http_and_back(tmp_path: Path) -> None:
    """GET .../export gives the same lines; POST .../events records them back."""
    import httpx

    from convlog.http.auth import Auth
    from tests.httpserver import ADMIN_TOKEN, ALICE_TOKEN, served

    auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with convlog.open(f"sqlite:///{tmp_path / 'a.db'}") as log:
        log.import_("claude-code", [FIXTURES / "claude-code"])
        key = next(r.key for r in log.conversations(include_archived=True))
        before = _messages(log, key)
        with served(log, Auth(ADMIN_TOKEN, {"alice": ALICE_TOKEN})) as url:
            got = httpx.get(f"{url}/v1/conversations/{quote(key, safe='')}/export",
                            headers=auth).json()
            assert got["format"] == "convlog-jsonl" and got["key"] == key
            missing = httpx.get(f"{url}/v1/conversations/nobody/export", headers=auth)
            assert missing.status_code == 404
            hidden = httpx.get(f"{url}/v1/conversations/{quote(key, safe='')}/export",
                               headers={"Authorization": f"Bearer {ALICE_TOKEN}"})
            assert hidden.status_code == 404  # not alice's
            bad = httpx.get(f"{url}/v1/conversations/{quote(key, safe='')}/export"
                            "?format=docx", headers=auth)
            assert bad.status_code == 422
    with convlog.open(f"sqlite:///{tmp_path / 'b.db'}") as other:
        with served(other, Auth(ADMIN_TOKEN)) as url:
            events = [json.loads(line) for line in got["data"].splitlines()]
            answer = httpx.post(f"{url}/v1/conversations/{quote(key, safe='')}/events",
                                json={"events": events}, headers=auth)
            assert answer.status_code in (200, 201), answer.text
        assert _messages(other, key) == before
