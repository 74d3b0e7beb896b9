"""Wrong, missing and truncated keys; moved rows; rotation. Real SQLite files, and the
CLI as a user runs it (one line on stderr, exit status 1, no traceback)."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import convlog
from convlog.crypto.keys import generate_key, load_key, parse_key
from convlog.services.log import application
from tests.crypto.helpers import found_in_files, no_key, use_key


def _url(root: Path, name: str = "c.db") -> str:
    return f"sqlite:///{root / name}"


def _write(root: Path, name: str = "c.db") -> None:
    with convlog.open(_url(root, name), preload_tokenizer=False) as log:
        log.conversation("k", user="alice", title="secret title").append_turn(
            [convlog.user("secret one", id="m1"), convlog.assistant("secret two", id="m2"),
             convlog.user("secret three", id="m3")])


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_key_text_forms_and_their_errors(tmp_path: Path) -> None:
    key = generate_key()
    raw = bytes.fromhex(key)
    import base64

    assert parse_key(key, "x") == raw
    assert parse_key(base64.b64encode(raw).decode(), "x") == raw
    assert parse_key(base64.urlsafe_b64encode(raw).decode() + "\n", "x") == raw
    with pytest.raises(convlog.BadKey, match="truncated"):
        parse_key(key[:40], "CONVLOG_KEY")
    with pytest.raises(convlog.BadKey, match="empty"):
        parse_key("  \n", "CONVLOG_KEY")
    with pytest.raises(convlog.BadKey, match="not a key"):
        parse_key("correct horse battery staple", "CONVLOG_KEY")
    path = tmp_path / "key"
    path.write_text(key[:33])
    with pytest.raises(convlog.BadKey, match=f"CONVLOG_KEY_FILE={path}"):
        load_key({"CONVLOG_KEY_FILE": str(path)})
    with pytest.raises(convlog.BadKey, match="cannot read"):
        load_key({"CONVLOG_KEY_FILE": str(tmp_path / "missing")})
    with pytest.raises(convlog.BadKey, match="only one"):
        load_key({"CONVLOG_KEY": key, "CONVLOG_KEY_FILE": str(path)})
    assert load_key({}) is None


@pytest.mark.parametrize("problem", ["missing", "wrong", "other_store", "truncated_file"])
def test_a_key_problem_is_one_clear_error_and_writes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, problem: str) -> None:
    key = use_key(monkeypatch)
    _write(tmp_path)
    other = use_key(monkeypatch)
    _write(tmp_path, "other.db")  # another store, with its own key
    db = tmp_path / "c.db"
    before = _digest(db)
    expected: type[Exception]
    if problem == "missing":
        no_key(monkeypatch)
        expected = convlog.MissingKey
    elif problem == "wrong":
        use_key(monkeypatch)
        expected = convlog.WrongKey
    elif problem == "other_store":
        use_key(monkeypatch, other)
        expected = convlog.WrongKey
    else:
        no_key(monkeypatch)
        (tmp_path / "key").write_text(key[:-7])
        monkeypatch.setenv("CONVLOG_KEY_FILE", str(tmp_path / "key"))
        expected = convlog.BadKey
    with pytest.raises(expected):
        convlog.open(_url(tmp_path), preload_tokenizer=False)
    # the CLI says it in one line, and writes nothing either
    done = subprocess.run([sys.executable, "-m", "convlog.cli.main", "--db", _url(tmp_path),
                           "record", "k", "-"], input=b'{"type":"message","role":"user",'
                          b'"content":"x"}\n', capture_output=True, timeout=60)
    assert done.returncode == 1, done.stderr
    err = done.stderr.decode()
    assert err.startswith("convlog: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    assert _digest(db) == before
    use_key(monkeypatch, key)  # and the right key still reads everything
    with convlog.open(_url(tmp_path), preload_tokenizer=False) as log:
        assert [m.content for m in log.messages("k")] == ["secret one", "secret two",
                                                          "secret three"]


def test_a_key_for_an_unencrypted_store_is_refused(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    no_key(monkeypatch)
    _write(tmp_path)
    before = _digest(tmp_path / "c.db")
    use_key(monkeypatch)
    with pytest.raises(convlog.NotEncrypted, match="convlog keys enable"):
        convlog.open(_url(tmp_path), preload_tokenizer=False)
    assert _digest(tmp_path / "c.db") == before


def _swap(db: Path, a: tuple[str, int], b: tuple[str, int]) -> None:
    with sqlite3.connect(db) as conn:
        rows = {pos: conn.execute("SELECT state FROM stored_events WHERE originator_id = ? "
                                  "AND originator_version = ?", pos).fetchone()[0]
                for pos in (a, b)}
        for pos, other in ((a, b), (b, a)):
            conn.execute("UPDATE stored_events SET state = ? WHERE originator_id = ? "
                         "AND originator_version = ?", (rows[other], *pos))


def test_rows_cannot_be_swapped_moved_or_altered(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from convlog.domain.conversation import conversation_id

    use_key(monkeypatch)
    _write(tmp_path)
    with convlog.open(_url(tmp_path), preload_tokenizer=False) as log:
        log.conversation("k2", user="alice").append(convlog.user("other stream", id="x"))
    k, k2 = conversation_id("k").hex, conversation_id("k2").hex
    db = tmp_path / "c.db"
    _swap(db, (k, 2), (k, 4))  # two messages of one stream, same user, same key
    with convlog.open(_url(tmp_path), preload_tokenizer=False) as log, pytest.raises(
            convlog.CorruptEvent, match=r"position 2 .* moved from another position"):
        log.messages("k")
    _swap(db, (k, 2), (k, 4))
    _swap(db, (k, 2), (k2, 2))  # the same position of another stream
    with convlog.open(_url(tmp_path), preload_tokenizer=False) as log, pytest.raises(
            convlog.CorruptEvent, match="authentication failed"):
        log.messages("k")
    _swap(db, (k, 2), (k2, 2))
    with sqlite3.connect(db) as conn:  # a public field changed next to sealed ones
        conn.execute("UPDATE stored_events SET state = CAST(replace(CAST(state AS TEXT), "
                     "'\"role\":\"user\"', '\"role\":\"tool\"') AS BLOB) "
                     "WHERE originator_id = ? AND originator_version = 2", (k,))
    with convlog.open(_url(tmp_path), preload_tokenizer=False) as log, pytest.raises(
            convlog.CorruptEvent, match="position 2"):
        log.messages("k")


def test_rotation_rewraps_keys_and_the_old_key_opens_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = use_key(monkeypatch)
    _write(tmp_path)
    with convlog.open(_url(tmp_path), preload_tokenizer=False) as log:
        log.conversation("b", user="bob").append(convlog.user("bob's"))
        wrapped = [r.wrapped for r in application(log).store.keys.key_rows() if r.wrapped]
        states = [bytes(s) for (s,) in sqlite3.connect(tmp_path / "c.db").execute(
            "SELECT state FROM stored_events")]
    new = generate_key()
    monkeypatch.setenv("CONVLOG_NEW_KEY", new)
    done = subprocess.run([sys.executable, "-m", "convlog.cli.main", "--db", _url(tmp_path),
                           "keys", "rotate"], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert b"re-wrapped 2 data key(s)" in done.stdout
    # the events were not rewritten; the wrapped keys were, and no old copy is left
    assert [bytes(s) for (s,) in sqlite3.connect(tmp_path / "c.db").execute(
        "SELECT state FROM stored_events")] == states
    assert found_in_files(tmp_path, wrapped) == []
    with pytest.raises(convlog.WrongKey):
        convlog.open(_url(tmp_path), preload_tokenizer=False)
    use_key(monkeypatch, new)
    with convlog.open(_url(tmp_path), preload_tokenizer=False) as log:
        assert log.messages("k")[0].content == "secret one"
        assert log.messages("b")[0].content == "bob's"
    assert old != new


def test_forget_and_keys_from_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def cli(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "convlog.cli.main", "--db",
                               _url(tmp_path), *args], capture_output=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.decode()

    assert len(cli("keys", "generate").strip()) == 64
    use_key(monkeypatch)
    _write(tmp_path)
    assert "encrypted (store" in cli("keys", "status")
    assert "1 conversation(s) marked forgotten, 1 data key(s) destroyed" in cli(
        "forget", "--user", "alice", "--requested-by", "dpo")
    shown = cli("show", "k")
    assert "FORGOTTEN" in shown and "[forgotten]" in shown and "secret" not in shown
    replay = cli("replay", "k")
    assert "user_forgotten" in replay and "requested_by=dpo" in replay
    assert "[forgotten]" in cli("sessions")
    assert '"destroyed_keys":1' in cli("keys", "status", "--json")


def test_a_forget_or_rotation_in_another_process_reaches_this_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two logs on one file stand for two processes (each has its own key ring)."""
    from convlog.crypto import keyring

    monkeypatch.setattr(keyring, "REFRESH_SECONDS", 0.0)
    use_key(monkeypatch)
    with convlog.open(_url(tmp_path), preload_tokenizer=False) as host, convlog.open(
            _url(tmp_path), preload_tokenizer=False) as admin:
        host.conversation("a", user="alice").append(convlog.user("before"))
        assert host.messages("a")[0].content == "before"  # the host has alice's key cached
        admin.forget(user="alice")
        assert host.messages("a")[0].content == "[forgotten]"
        with pytest.raises(convlog.ConversationForgotten):
            host.append("a", convlog.user("more"))
        host.conversation("a2", user="alice").append(convlog.user("a new key"))
        assert admin.messages("a2")[0].content == "a new key"  # not the destroyed one

        from convlog.services import privacy

        privacy.rotate(application(admin).writer, bytes.fromhex(generate_key()))
        host.append("a2", convlog.user("existing keys keep working"))
        with pytest.raises(convlog.WrongKey, match="rotated by another process"):
            host.conversation("b", user="bob").append(convlog.user("needs a new key"))
        assert admin.messages("a2")[-1].content == "existing keys keep working"
