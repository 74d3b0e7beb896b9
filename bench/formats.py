"""What a second stored format would weigh on disk: evidence for a decision, not a
feature. convlog's bytes per message trail OpenAI's and LangChain's sessions in
``bench.peers`` (issue 4); this program shows how much each candidate change to the
stored format would win, measured rather than estimated.

Run with ``.venv/bin/python -m bench.formats`` (a few seconds; part of ``make bench``;
figures saved in ``bench/results/formats-<UTC date>.json``). It appends 10,000
messages (the ``bench.peers`` workload: ~200-character chat lines in turns of 10)
through convlog, then re-stores the very same events in each candidate layout, in
turns of 10 like the original, and prints the bytes per message of every file after
``PRAGMA wal_checkpoint(TRUNCATE)`` (main file + -wal + -shm, as ``bench.peers``).

The layouts (none of them is implemented in convlog; each would need an upcaster or a
migration for every existing file):

- ``current``: convlog's file as it is (eventsourcing's ``stored_events`` keyed by
  the 32-hex stream id, whose key is stored again in SQLite's index of it).
- ``integer streams``: rows keyed by a stream NUMBER (``UNIQUE (stream, version)``),
  the same JSON.
- ``+ compact JSON``: also no ``type`` in the JSON (the topic column keeps it), no
  ``token_counter`` when it is the default ``o200k_base``, and ``at`` as integer
  microseconds: what the JSON would lose is what ``sqlite3`` users read.
- ``+ msgpack``: integer streams, the state in msgpack instead of JSON (binary);
  ``+ compact msgpack``: the compact object above, in msgpack.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from bench import meta
from bench.core import RESULTS
from bench.peers import ConvlogStore, bytes_on_disk, sqlite_files

TURN = 10
LAYOUT = """
CREATE TABLE events (position INTEGER PRIMARY KEY, stream INTEGER NOT NULL,
                     version INTEGER NOT NULL, topic TEXT NOT NULL, state BLOB NOT NULL,
                     UNIQUE (stream, version));
CREATE TABLE message_ids (stream INTEGER NOT NULL, message_id TEXT NOT NULL,
                          PRIMARY KEY (stream, message_id)) WITHOUT ROWID;
"""
Row = tuple[int, str, bytes]  # (version, topic, state)


def compact(state: bytes) -> bytes:
    """The JSON without what another column or a default could carry."""
    obj = json.loads(state)
    obj.pop("type", None)
    if obj.get("token_counter") == "o200k_base":
        del obj["token_counter"]
    if isinstance(obj.get("at"), str):
        at = datetime.fromisoformat(obj["at"].replace("Z", "+00:00"))
        obj["at"] = int(at.timestamp()) * 1_000_000 + at.microsecond
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def msgpack(state: bytes) -> bytes:
    return msgspec.msgpack.encode(json.loads(state))


def restore(path: Path, rows: Sequence[Row], state_of: Callable[[bytes], bytes]) -> int:
    """Write `rows` as ONE stream in the candidate layout, in turns; bytes on disk."""
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.executescript(LAYOUT)
    for start in range(0, len(rows), TURN):
        turn = rows[start:start + TURN]
        con.execute("BEGIN")
        con.executemany("INSERT INTO events (stream, version, topic, state) VALUES (1, ?, ?, ?)",
                        [(version, topic, state_of(state)) for version, topic, state in turn])
        con.executemany("INSERT INTO message_ids VALUES (1, ?)",
                        [(json.loads(state)["message_id"],) for _, topic, state in turn
                         if topic == "message_appended"])
        con.execute("COMMIT")
    con.close()
    return bytes_on_disk(path)


def measure(messages: int, workdir: Path) -> list[tuple[str, float]]:
    source = workdir / "current.db"
    store = ConvlogStore(source)
    store.append(messages, TURN, time.perf_counter() + 3600)
    store.close()
    current = bytes_on_disk(source)
    with sqlite3.connect(source) as con:
        rows: list[Row] = con.execute("SELECT originator_version, topic, state "
                                      "FROM stored_events ORDER BY rowid").fetchall()
    results = [("current", current / messages)]
    for name, state_of in (("integer streams", lambda s: s),
                           ("integer streams + compact JSON", compact),
                           ("integer streams + msgpack", msgpack),
                           ("integer streams + compact msgpack",
                            lambda s: msgpack(compact(s)))):
        path = workdir / f"{len(results)}.db"
        results.append((name, restore(path, rows, state_of) / messages))
        for file in sqlite_files(path):
            file.unlink()
    return results


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--messages", type=int, default=10_000)
    args = parser.parse_args(argv)
    stamp = meta.begin("formats", False)
    with tempfile.TemporaryDirectory(prefix="convlog-formats-") as tmp:
        results = measure(args.messages, Path(tmp))
    print(f"bytes on disk per message, {args.messages:,} messages in turns of {TURN}:")
    for name, per_message in results:
        print(f"  {name:34} {per_message:6,.0f} B")
    path = stamp.save({"utc": datetime.now(UTC).isoformat(), "messages": args.messages,
                       "turn": TURN, "bytes_per_message": dict(results)})
    print(f"saved {path.relative_to(RESULTS.parent.parent)}")


if __name__ == "__main__":
    main()
