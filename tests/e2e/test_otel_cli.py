"""`convlog export --otel`, end to end: the console script sends to a real OTLP/HTTP
receiver on 127.0.0.1 (configured by OTEL_EXPORTER_OTLP_ENDPOINT only), once and as
a follower, and is killed with SIGKILL while a batch is in flight: after a restart
the receiver has acknowledged every event's span exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import convlog
from tests.otlp_receiver import Receiver, running

CONVLOG = Path(sys.executable).parent / "convlog"


def export(db: Path, receiver: Receiver, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
           "OTEL_SERVICE_NAME": "my-agents"}
    return subprocess.Popen([str(CONVLOG), "--db", f"sqlite:///{db}", "--json", "export",
                             "--otel", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def turns(log: convlog.ConversationLog, key: str, start: int, count: int) -> None:
    conv = log.conversation(key, agent="bot")
    for n in range(start, start + count):
        conv.append_turn([convlog.user(f"q{n}", id=f"u{n}"),
                          convlog.assistant(f"a{n}", id=f"a{n}", model="gpt-4o",
                                            usage=convlog.Usage(input_tokens=5, output_tokens=2))])


def wait_for(check: Callable[[], bool], what: str, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while not check():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_once_then_nothing_more_and_usage_errors(tmp_path: Path) -> None:
    db = tmp_path / "log.db"
    with convlog.open(f"sqlite:///{db}", preload_tokenizer=False) as log:
        turns(log, "k", 0, 3)
    with running() as receiver:
        first = export(db, receiver)
        out, err = first.communicate(timeout=120)
        assert first.returncode == 0, err
        assert json.loads(out)["spans"] == 6
        again = export(db, receiver)
        out, _ = again.communicate(timeout=120)
        assert json.loads(out)["spans"] == 0  # the position was kept beside the log
        assert (tmp_path / "log.otel.sqlite").exists()
        assert {s.resource["service.name"] for s in receiver.spans} == {"my-agents"}
        receiver.refuse = [400]
        with convlog.open(f"sqlite:///{db}", preload_tokenizer=False) as log:
            turns(log, "k", 3, 1)
        refused = export(db, receiver)
        _, err = refused.communicate(timeout=120)
        error = json.loads(err.splitlines()[-1])["error"]  # --json: errors are JSON too
        assert refused.returncode == 1 and error["type"] == "ExportFailed"
        assert "nothing was marked sent" in error["message"]
    usage = subprocess.run([str(CONVLOG), "--db", f"sqlite:///{db}", "export", "--follow",
                            "--parquet", str(tmp_path)], capture_output=True, text=True)
    assert usage.returncode == 2 and "go with --otel" in usage.stderr


def test_a_follower_killed_mid_batch_sends_every_event_once_after_a_restart(
        tmp_path: Path) -> None:
    db = tmp_path / "log.db"
    log = convlog.open(f"sqlite:///{db}", preload_tokenizer=False)
    turns(log, "k1", 0, 5)
    with running() as receiver:
        follower = export(db, receiver, "--follow", "--interval", "0.1")
        wait_for(lambda: len(receiver.spans) == 10, "the first turns", follower)
        receiver.holding = True  # the next batch gets no answer...
        turns(log, "k2", 0, 4)
        wait_for(receiver.held.is_set, "a batch in flight", follower)
        follower.send_signal(signal.SIGKILL)  # ...and the sender dies waiting for it
        follower.wait(timeout=30)
        receiver.release()
        turns(log, "k1", 5, 2)  # written while no exporter runs
        restarted = export(db, receiver, "--follow", "--interval", "0.1")
        wait_for(lambda: len(receiver.spans) == 2 * (5 + 4 + 2), "all turns", restarted)
        turns(log, "k3", 0, 1)
        wait_for(lambda: len(receiver.spans) == 2 * 12, "a turn written while following",
                 restarted)
        restarted.send_signal(signal.SIGTERM)
        out, err = restarted.communicate(timeout=60)
        assert restarted.returncode == 0, err
        counts = Counter(s.span_id for s in receiver.spans)
        assert len(counts) == 24 and set(counts.values()) == {1}  # each once
        keys = Counter(s.attributes["gen_ai.conversation.id"] for s in receiver.spans
                       if s.name == "invoke_agent bot")
        assert keys == {"k1": 7, "k2": 4, "k3": 1}
        assert json.loads(out)["spans"] == 14
    log.close()


def test_an_encrypted_store_without_its_key_sends_nothing(tmp_path: Path) -> None:
    db = tmp_path / "log.db"
    key = "22" * 32
    env = {**os.environ, "CONVLOG_KEY": key}
    subprocess.run([str(CONVLOG), "--db", f"sqlite:///{db}", "record", "k"], input=json.dumps(
        {"type": "message", "role": "user", "content": "secret"}), text=True, env=env,
        check=True, capture_output=True)
    with running() as receiver:
        keyless = export(db, receiver, "--with-content")
        _, err = keyless.communicate(timeout=120)
        assert keyless.returncode == 1 and "encrypted" in err
        assert receiver.requests == 0
