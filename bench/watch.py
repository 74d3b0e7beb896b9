"""`convlog watch`: catch-up speed against `convlog import`, memory and descriptors as
the folder grows, and how soon an appended turn is in the log.

Run with ``.venv/bin/python -m bench.watch [--quick]`` (``make bench`` runs it).

1. Catch-up: the generated Claude Code tree of bench.importers (full: 200 transcripts,
   ~100 MB; quick: 20), imported by ``convlog import`` in a child process, and caught
   up by a ``convlog watch`` child into another log; the ratio of their wall times.
2. Bounds: a watcher caught up over 300 and over 3,000 small transcripts: its peak
   resident memory (VmHWM) and open descriptors after the catch-up, and the ratio of
   the two peaks (a watcher holding its files would grow with them).
3. Latency: with a watcher running, a turn (a user line and a finished response) is
   appended 15 times (quick: 5); the time until both messages are in the log, median,
   with the default ``--settle 1`` and with ``--settle 0.2``.

Results go to ``bench/results/watch-<UTC date>[-quick].json``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import meta
from bench.importers import generate

CONVLOG = Path(sys.executable).parent / "convlog"


def messages(db: Path) -> int:
    if not db.exists():
        return 0
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        row = con.execute("SELECT count(*) FROM stored_events "
                          "WHERE topic = 'message_appended'").fetchone()
        return int(row[0])
    except sqlite3.OperationalError:  # the log is being created
        return 0
    finally:
        con.close()


def status(pid: int) -> tuple[float, int]:
    """(peak resident MiB, open descriptors) of a running process."""
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    peak = next(int(line.split()[1]) for line in lines if line.startswith("VmHWM:"))
    return peak / 1024, len(os.listdir(f"/proc/{pid}/fd"))


class Watcher:
    def __init__(self, db: Path, tree: Path, *extra: str):
        self.proc = subprocess.Popen(
            [str(CONVLOG), "--db", f"sqlite:///{db}", "--json", "watch", "claude-code",
             str(tree), *extra], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.started = time.perf_counter()

    def wait_for(self, db: Path, count: int) -> float:
        while messages(db) < count:
            if self.proc.poll() is not None:
                raise SystemExit("the watcher died")
            time.sleep(0.02)
        return time.perf_counter() - self.started

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.communicate(timeout=120)


def turn(session: str, n: int) -> str:
    user = {"type": "user", "uuid": f"{session}-u{n}", "sessionId": session,
            "message": {"role": "user", "content": f"question {n}"}}
    answer = {"type": "assistant", "uuid": f"{session}-a{n}", "sessionId": session,
              "message": {"id": f"m-{session}-{n}", "role": "assistant", "model": "claude-x",
                          "content": [{"type": "text", "text": f"answer {n}"}],
                          "stop_reason": "end_turn",
                          "usage": {"input_tokens": 3, "output_tokens": 2}}}
    return json.dumps(user) + "\n" + json.dumps(answer) + "\n"


def small_tree(root: Path, files: int) -> None:
    for n in range(files):
        folder = root / f"p{n % 30}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"s{n}.jsonl").write_text(turn(f"s{n}", 0))


def catch_up(tmp: Path, files: int) -> dict[str, Any]:
    tree = tmp / "tree"
    size = generate(tree, "claude-code", files, 14)
    started = time.perf_counter()
    done = subprocess.run([str(CONVLOG), "--db", f"sqlite:///{tmp / 'import.db'}", "--json",
                           "import", "claude-code", str(tree)], capture_output=True, text=True,
                          check=True)
    imported = time.perf_counter() - started
    count = json.loads(done.stdout)["messages"]
    watcher = Watcher(tmp / "watch.db", tree)
    watched = watcher.wait_for(tmp / "watch.db", count)
    peak, fds = status(watcher.proc.pid)
    watcher.stop()
    return {"mb": size / 1e6, "messages": count, "import_s": imported, "watch_s": watched,
            "ratio": watched / imported, "peak_rss_mib": peak, "descriptors": fds}


def bounds(tmp: Path, files: int) -> dict[str, Any]:
    tree, db = tmp / f"small-{files}", tmp / f"small-{files}.db"
    small_tree(tree, files)
    watcher = Watcher(db, tree)
    seconds = watcher.wait_for(db, 2 * files)
    time.sleep(0.5)  # the last positions saved
    peak, fds = status(watcher.proc.pid)
    watcher.stop()
    return {"files": files, "catch_up_s": seconds, "peak_rss_mib": peak, "descriptors": fds}


def latency(tmp: Path, settle: str, appends: int) -> dict[str, Any]:
    tree, db = tmp / f"live-{settle}", tmp / f"live-{settle}.db"
    tree.mkdir()
    path = tree / "live.jsonl"
    path.write_text(turn("live", 0))
    watcher = Watcher(db, tree, "--settle", settle)
    watcher.wait_for(db, 2)
    waits = []
    for n in range(1, appends + 1):
        with path.open("a") as f:
            f.write(turn("live", n))
        started = time.perf_counter()
        while messages(db) < 2 * (n + 1):
            time.sleep(0.01)
        waits.append(time.perf_counter() - started)
        time.sleep(0.3)
    watcher.stop()
    return {"settle_s": float(settle), "median_s": statistics.median(waits),
            "max_s": max(waits), "appends": appends}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller trees (< 1 minute)")
    args = parser.parse_args()
    stamp = meta.begin("watch", args.quick)
    files, appends = (20, 5) if args.quick else (200, 15)
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        caught = catch_up(tmp, files)
        scale = [bounds(tmp, n) for n in (300, 3000)]
        live = [latency(tmp, settle, appends) for settle in ("1", "0.2")]
    print("convlog watch: catch-up, bounds and latency (each watcher a child process)\n")
    print(f"catch-up of {caught['mb']:.1f} MB ({caught['messages']:,} messages): import "
          f"{caught['import_s']:.1f} s, watch {caught['watch_s']:.1f} s, ratio "
          f"{caught['ratio']:.2f}; watcher peak {caught['peak_rss_mib']:.0f} MiB, "
          f"{caught['descriptors']} descriptors")
    for s in scale:
        print(f"{s['files']:>5,} files: caught up in {s['catch_up_s']:.1f} s, peak "
              f"{s['peak_rss_mib']:.0f} MiB, {s['descriptors']} descriptors open")
    growth = scale[1]["peak_rss_mib"] / scale[0]["peak_rss_mib"]
    print(f"peak memory, 3,000 files / 300 files: {growth:.2f}")
    for r in live:
        print(f"--settle {r['settle_s']:g}: an appended turn is in the log after "
              f"{r['median_s']:.2f} s (median of {r['appends']}, max {r['max_s']:.2f} s)")
    load = os.getloadavg()[0]
    print(f"(load average at the end: {load:.1f} on {os.cpu_count()} CPUs)")
    path = stamp.save({"catch_up": caught, "bounds": scale, "memory_growth": growth,
                       "latency": live, "load_average_1min": load})
    print(f"saved {path}")


if __name__ == "__main__":
    main()
