"""`convlog copy --from URL --to URL` (issue 48 item 3): every event, at its stream,
version and place in the global order; the message-id index (with keyed requests'
marks) and the kept answers; into an encrypted store sealed there; resumable after a
SIGKILL at any batch; verified by a count and a digest; refused when unsound."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from eventsourcing.persistence import IntegrityError

import convlog
from convlog.cli.main import main
from convlog.crypto.keys import generate_key
from convlog.domain.conversation import conversation_id
from convlog.services.copy_store import CopyRefused, copy, digest_of
from convlog.services.log import application
from tests.httpserver import served

TURN = {"messages": [{"type": "message", "role": "user", "content": "secret-question"},
                     {"type": "message", "role": "assistant", "content": "an answer"}]}


def _seed(url: str, conversations: int = 6, turns: int = 4) -> dict[str, Any]:
    """A store written the way hosts write it: turns interleaved across
    conversations (so runs are short), lifecycle events, and two keyed HTTP requests
    (their marks in the index, their answers kept). Returns the first answers."""
    with convlog.open(url) as log:
        for turn in range(turns):
            for i in range(conversations):
                conv = log.conversation(f"c:{i}", user=f"u{i % 3}", agent="bot")
                conv.append_turn([convlog.user(f"q{i}.{turn}", id=f"m{i}.{turn}.q"),
                                  convlog.assistant(f"a{i}.{turn}", model="gpt-4o",
                                                    usage=convlog.Usage(input_tokens=5,
                                                                        output_tokens=2))])
        log.conversation("c:1").archive(reason="done")
        with served(log) as base, httpx.Client(base_url=base, timeout=10) as http:
            first = http.post("/v1/conversations/h/turns", json=TURN,
                              headers={"Idempotency-Key": "req-1"})
            archived = http.post("/v1/conversations/h/archive", json={},
                                 headers={"Idempotency-Key": "arch-1"})
            assert first.status_code == 200 and archived.status_code == 200
            return {"req-1": first.json(), "arch-1": archived.json()}


def _reads(url: str) -> dict[str, Any]:
    """What a host reads back: conversations, messages, contexts, states."""
    with convlog.open(url) as log:
        keys = [f"c:{i}" for i in range(6)] + ["h"]
        return {key: {
            "messages": [(m.message_id, m.role, m.content, m.model, m.created_at)
                         for m in log.conversation(key).messages()],
            "context": log.conversation(key).context(
                budget=convlog.Budget(tokens=10_000)).text,
            "state": msgspec.json.encode(log.conversation(key).state),
        } for key in keys}


def _replays(url: str, answers: dict[str, Any], key: str = "h") -> None:
    """The keyed requests sent again to the copy are answered with the kept answers,
    and record nothing again."""
    with convlog.open(url) as log, served(log) as base, \
            httpx.Client(base_url=base, timeout=10) as http:
        before = len(log.conversation(key).messages())
        retry = http.post(f"/v1/conversations/{key}/turns", json=TURN,
                          headers={"Idempotency-Key": "req-1"})
        assert retry.headers.get("idempotent-replayed") == "true"
        assert retry.json() == answers["req-1"]
        again = http.post(f"/v1/conversations/{key}/archive", json={},
                          headers={"Idempotency-Key": "arch-1"})
        assert again.json() == answers["arch-1"]
        assert len(log.conversation(key).messages()) == before


def _digest(url: str) -> tuple[int, str]:
    with convlog.open(url) as log:
        return digest_of(application(log).store)


def _index(url: str) -> dict[str, list[str]]:
    """Every conversation's message-id index entries (ids and request marks)."""
    with convlog.open(url) as log:
        index = application(log).store.index
        return {stream.hex: index.index_entries(stream) for stream in index.all_streams()}


def _positions(url: str) -> list[tuple[str, int]]:
    """(stream, version) of every event in the store's global order."""
    with convlog.open(url) as log:
        return [(r[1], r[2]) for r in application(log).store.index.select_raw(0, 10**6)]


def test_sqlite_to_postgresql_and_back(tmp_path: Path, pg_url: str) -> None:
    source, back = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    answers = _seed(source)
    to_pg = copy(source, pg_url, batch=7)
    assert to_pg.copied == to_pg.events == len(_positions(source)) and not to_pg.encrypted
    assert to_pg.answers == 2
    to_sqlite = copy(pg_url, back, batch=1000)
    assert to_sqlite.digest == to_pg.digest == _digest(source)[1]
    expected = _reads(source)
    assert _reads(pg_url) == expected and _reads(back) == expected
    assert _positions(pg_url) == _positions(back) == _positions(source)  # the global order
    assert _index(pg_url) == _index(back) == _index(source)
    assert any(m.startswith("\x1frequest:") for ms in _index(back).values() for m in ms)
    _replays(pg_url, answers)
    _replays(back, answers)


def test_the_views_of_the_copy_rebuild_from_it(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    source, dest = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    _seed(source)
    assert main(["copy", "--from", source, "--to", dest, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["events"] == report["copied"] and report["already"] == 0
    for url in (source, dest):
        assert main(["--db", url, "sql", "SELECT * FROM sessions ORDER BY key",
                     "--json"]) == 0
    original, copied = (json.loads(line) for line in capsys.readouterr().out.splitlines())
    assert copied == original and len(copied) == 7


def test_a_long_conversation_gets_the_snapshot_its_turns_would_have_made(
        tmp_path: Path, pg_url: str) -> None:
    source = f"sqlite:///{tmp_path / 'a.db'}"
    with convlog.open(source) as log:
        conv = log.conversation("long", user="u1", agent="bot")
        for turn in range(300):  # 601 events: past one snapshot interval (500)
            conv.append_turn([convlog.user(f"q{turn}"), convlog.assistant(f"a{turn}")])
        state = msgspec.json.encode(conv.state)
    copy(source, pg_url, batch=250)
    with convlog.open(pg_url) as log:
        store = application(log).store
        assert store.snapshots is not None
        (snapshot,) = store.snapshots.recorder.select_events(conversation_id("long"))
        assert snapshot.originator_version == 601
        assert msgspec.json.encode(log.conversation("long").state) == state


def test_what_the_source_gains_is_copied_by_the_same_run_or_the_next(
        tmp_path: Path) -> None:
    source, dest = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    _seed(source, conversations=3, turns=2)
    with convlog.open(source) as writer:
        def write(done: Any) -> None:  # a host writing while the copy runs
            if done.copied <= 4:
                writer.conversation("c:0").append(convlog.user(f"meanwhile {done.copied}"))

        first = copy(source, dest, batch=2, progress=write)
        writer.conversation("c:2").append(convlog.user("after the copy"))
        writer.conversation("new", user="u5", agent="bot").append(convlog.user("new"))
    assert first.events == _digest(dest)[0]
    again = copy(source, dest, batch=2)
    assert (again.already, again.copied) == (first.events, 3)
    assert _digest(dest) == _digest(source) and _index(dest) == _index(source)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_batch_is_all_or_nothing(backend: str, tmp_path: Path, pg_url: str) -> None:
    """`insert_runs` (a copy's batch): a run that conflicts leaves none of the batch."""
    url = pg_url if backend == "postgres" else f"sqlite:///{tmp_path / 'a.db'}"
    with convlog.open(url) as log:
        log.conversation("a", user="u", agent="bot").append(convlog.user("x", id="m1"))
        index = application(log).store.index
        rows = index.select_rows(conversation_id("a"))
        (_, topic, state), b = rows[0], conversation_id("b")
        with pytest.raises(IntegrityError):
            index.insert_runs([([(b.hex, 1, topic, state)], (b, ["x"])),
                               ([(conversation_id("a").hex, 1, topic, state)], None)])
        assert index.select_rows(b) == [] and index.index_entries(b) == []


def test_plain_to_encrypted_seals_with_the_destinations_key(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source, dest = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'enc.db'}"
    answers = _seed(source)
    expected, (_, digest), index = _reads(source), _digest(source), _index(source)
    monkeypatch.setenv("CONVLOG_KEY", generate_key())  # the destination's key
    report = copy(source, dest, batch=5)
    assert report.encrypted and report.digest == digest
    assert _reads(dest) == expected and _index(dest) == index
    _replays(dest, answers)
    with convlog.open(dest) as log:
        application(log).store.index.erase(vacuum=True)  # the WAL into the file
    for path in tmp_path.glob("enc.db*"):
        data = path.read_bytes()
        assert b"secret-question" not in data and b"q3.2" not in data, path
    monkeypatch.delenv("CONVLOG_KEY")  # without the key, the copy does not open
    with pytest.raises(convlog.ConvlogError, match="encrypted"):
        convlog.open(dest).close()


def test_unsound_copies_are_refused_before_writing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source, other = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'o.db'}"
    _seed(source, conversations=2, turns=1)
    with convlog.open(other) as log:
        log.conversation("c:0", user="u0", agent="bot").append(convlog.user("else"))
    before = _digest(other)
    with pytest.raises(CopyRefused, match="not a copy of"):
        copy(source, other)
    assert _digest(other) == before
    with pytest.raises(CopyRefused, match="the source store itself"):
        copy(source, source)
    monkeypatch.setenv("CONVLOG_KEY", generate_key())
    encrypted = f"sqlite:///{tmp_path / 'e.db'}"
    copy(source, encrypted)
    with pytest.raises(CopyRefused, match="unencrypted events"):
        copy(encrypted, other)  # an encrypted source's copy must be encrypted too
    elsewhere = f"sqlite:///{tmp_path / 'e2.db'}"
    with convlog.open(elsewhere) as log:  # encrypted under another store's keys
        log.conversation("x", user="u9", agent="bot").append(convlog.user("x"))
    with pytest.raises(CopyRefused, match="other keys"):
        copy(encrypted, elsewhere)
    monkeypatch.delenv("CONVLOG_KEY")
    with pytest.raises(convlog.ConvlogError, match="encrypted"):
        copy(encrypted, f"sqlite:///{tmp_path / 'x.db'}")  # its key is needed
    assert not (tmp_path / "x.db").exists()


def test_encrypted_to_encrypted_keeps_the_data_keys_so_forgetting_works(
        tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    plain, source = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'e.db'}"
    answers = _seed(plain)
    monkeypatch.setenv("CONVLOG_KEY", generate_key())
    copy(plain, source)
    with convlog.open(source) as log:
        log.forget(user="u0")  # forgotten before the copy: stays forgotten in it
        # (forget deletes every kept answer: answers kept after it, sealed, are copied)
        with served(log) as base, httpx.Client(base_url=base, timeout=10) as http:
            answers["req-1"] = http.post("/v1/conversations/h2/turns", json=TURN, headers={
                "Idempotency-Key": "req-1"}).json()
            answers["arch-1"] = http.post("/v1/conversations/h2/archive", json={},
                                          headers={"Idempotency-Key": "arch-1"}).json()
    expected, index, (total, digest) = _reads(source), _index(source), _digest(source)
    report = copy(source, pg_url, batch=4)
    assert report.encrypted and (report.events, report.digest) == (total, digest)
    assert _reads(pg_url) == expected and _index(pg_url) == index
    _replays(pg_url, answers, "h2")
    with convlog.open(pg_url) as log:
        assert log.conversation("c:0").messages()[0].content == "[forgotten]"
        assert log.conversation("c:1").messages()[0].content == "q1.0"
        log.forget(user="u1")  # the copy's own data key of u1 is destroyed
        assert log.conversation("c:1").messages()[0].content == "[forgotten]"
    with convlog.open(source) as log:  # the source keeps its own
        assert log.conversation("c:1").messages()[0].content == "q1.0"


@pytest.mark.parametrize("mode", ["plain", "sealed", "encrypted"])
def test_killed_at_random_batches_and_resumed_to_an_identical_digest(
        mode: str, tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real `convlog copy --batch 3` is SIGKILLed after a random number of its
    progress lines, three times, then run to the end: the destination is the source,
    no event twice, the same digest. Driven by progress output, never by time.
    `plain`: unencrypted to unencrypted; `sealed`: unencrypted into an encrypted
    store (a resumed run looks up each conversation's user); `encrypted`: an
    encrypted source, its key table carried (and checked again on each resume)."""
    source = f"sqlite:///{tmp_path / 'a.db'}"
    answers = _seed(source)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONVLOG_KEY")}
    if mode != "plain":
        env["CONVLOG_KEY"] = generate_key()
    if mode == "encrypted":
        monkeypatch.setenv("CONVLOG_KEY", env["CONVLOG_KEY"])
        plain, source = source, f"sqlite:///{tmp_path / 'e.db'}"
        copy(plain, source)
    total, digest = _digest(source)
    positions, index = _positions(source), _index(source)
    monkeypatch.setenv("CONVLOG_KEY", env.get("CONVLOG_KEY", ""))  # the copy's
    if mode == "plain":
        monkeypatch.delenv("CONVLOG_KEY")
    rng = random.Random(48)
    command = [sys.executable, "-m", "convlog", "copy", "--from", source, "--to", pg_url,
               "--batch", "3"]
    seen = 0
    for _ in range(3):
        proc = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                text=True, env=env)
        assert proc.stderr is not None
        kill_after, lines = rng.randint(1, 6), 0
        for line in proc.stderr:
            assert line.startswith("copied "), line
            copied = int(line.split()[1])
            assert copied > seen  # each run continues: nothing copied again
            seen, lines = copied, lines + 1
            if lines == kill_after:
                proc.send_signal(signal.SIGKILL)
                break
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
        there = _positions(pg_url)
        assert there == positions[:len(there)]
    finished = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    assert f"{total} events in each store, digest sha256:{digest}" in finished.stdout
    assert "were there from a previous run" in finished.stdout
    assert _positions(pg_url) == positions and _digest(pg_url) == (total, digest)
    assert _index(pg_url) == index
    _replays(pg_url, answers)
