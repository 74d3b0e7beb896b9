"""Core write-path benchmarks: convlog against raw stdlib sqlite3, in ONE run.

Run with ``make bench`` (full, a few minutes at most) or ``make bench-quick`` (smaller
sizes, well under a minute). These are measurements, not tests: nothing fails, the
program prints figures, ratios and whether each target is met, and writes every
number (each repeat, each latency sample summary) to
``bench/results/core-<UTC date>.json`` (``core-<UTC date>-quick.json`` for --quick).

What is measured, each on fresh SQLite FILES in temporary directories (WAL mode):

1. Single appends/s: ``conv.append(convlog.user(<~200 chars>, id=...))`` N times, one
   transaction each, against raw sqlite3 doing the same inserts one transaction per
   message: an event row ``(id, version, topic, state)`` with primary key
   ``(id, version)``, whose state is the msgspec-JSON of the same ``MessageAppended``
   event convlog stores, plus a ``(conversation, message_id)`` index row. Both at
   convlog's default ``PRAGMA synchronous=NORMAL`` and again at ``FULL``
   (convlog URL ``?synchronous=full``).
2. Messages/s appended as turns of 10 (``conv.append_turn``), raw: 10 event rows and
   10 index rows per transaction.
3. Append latency by conversation length: four conversations, each alone in its own
   file (convlog and raw, at ~1k and at ~100k events), filled with large turns of
   1,000 messages; then the latency of single appends (``time.perf_counter_ns``,
   message built outside the timer; p50/p95). Then a COLD append at each length: a
   new Python process opens the file and appends one message (no aggregate cache, so
   convlog loads a snapshot plus the tail of the log); open and append are timed
   apart, imports excluded.
4. Codec: msgspec JSON vs msgpack, typed encoder/decoder, encode and decode of a
   typical ``MessageAppended`` event (median ns per call, loop overhead included, and
   encoded size), plus convlog's mapper (JSON) for scale.

The host's speed swings (a shared VM can change pace 2x within seconds), so convlog
and raw always run interleaved: throughput repeats alternate chunks of a few hundred
messages between the two (fresh database files per repeat; the ratio is the median of
per-repeat ratios), and the timed latency appends go round-robin in small batches
over the four conversations (convlog/raw x short/long). ``--profile single|turns``
runs one convlog loop under cProfile instead and prints where the time goes.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import platform
import pstats
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol

import msgspec

import convlog
from bench import meta
from bench.meta import cpu_model, git_revision, package_version
from convlog.domain.content import TextPart, ThinkingPart, ToolCall, ToolUsePart, Usage
from convlog.domain.events import MessageAppended
from convlog.storage import application as convlog_application
from convlog.storage.mapper import Envelope, MsgspecMapper

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"

# ~200 characters per message with its prefix, like a typical chat line.
CONTENT = (
    "Can you check why the nightly export job skipped the eu-west shard again? The log "
    "shows a timeout after 30 s on the second page; last week we raised the limit to 60 s, "
    "so something else is off."
)

# ---------------------------------------------------------------------------- config


@dataclass(frozen=True)
class Config:
    mode: str
    repeats: int  # throughput repeats (median reported)
    single_n: int  # single appends per repeat, synchronous=NORMAL
    single_full_n: int  # single appends per repeat, synchronous=FULL
    turn_messages: int  # messages per repeat, appended as turns of `turn_size`
    short_length: int  # events in the conversation for the "short" latency point
    long_length: int  # events in the conversation for the "long" latency point
    latency_samples: int  # timed single appends at each length
    cold_repeats: int  # cold (new process) appends at each length
    codec_loops: int  # calls per codec timing run
    turn_size: int = 10
    fill_turn: int = 1000  # messages per turn when filling a long conversation


FULL = Config(mode="full", repeats=7, single_n=3000, single_full_n=1000,
              turn_messages=30_000, short_length=1000, long_length=100_000,
              latency_samples=600, cold_repeats=5, codec_loops=50_000)
QUICK = Config(mode="quick", repeats=3, single_n=500, single_full_n=200,
               turn_messages=2000, short_length=1000, long_length=20_000,
               latency_samples=300, cold_repeats=3, codec_loops=10_000)

SINGLE_TARGET = 3000.0  # appends/s
TURN_TARGET = 30_000.0  # messages/s
LATENCY_GROWTH_TARGET = 1.2  # p50 at long / p50 at short

# ------------------------------------------------------------------------- helpers


def message_text(i: int) -> str:
    return f"message {i}: {CONTENT}"


def short(n: int) -> str:
    """1000 -> '1k', 100000 -> '100k'."""
    return f"{n // 1000}k" if n % 1000 == 0 else str(n)


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(1, round(pct / 100 * len(ordered)))
    return float(ordered[min(rank, len(ordered)) - 1])


class PaceMeter:
    """Times a fixed pure-Python loop between measurements: how steady the host was.
    On a quiet machine the samples agree within a few percent."""

    def __init__(self) -> None:
        self.samples_ms: list[float] = []

    def probe(self) -> None:
        start = time.perf_counter()
        total = 0
        for i in range(20_000):
            total += i * i
        self.samples_ms.append((time.perf_counter() - start) * 1000)

    def summary(self) -> dict[str, float]:
        s = self.samples_ms or [0.0]
        return {"probes": len(s), "min_ms": min(s), "median_ms": statistics.median(s),
                "p90_ms": percentile(s, 90), "max_ms": max(s)}


PACE = PaceMeter()


def sqlite_url(path: Path, synchronous: str = "normal") -> str:
    """A convlog URL; the default synchronous mode is left implicit on purpose."""
    url = f"sqlite:///{path}"
    return url if synchronous == "normal" else f"{url}?synchronous={synchronous}"


# --------------------------------------------------------------------------- writers

KEY = "bench:conv"
RAW_STREAM = uuid.UUID("00000000-0000-4000-8000-00000000beef").hex
RAW_TOPIC = "message_appended"
RAW_SCHEMA = (
    # The same shape as eventsourcing's SQLite application recorder table.
    "CREATE TABLE IF NOT EXISTS events (id TEXT, version INTEGER, topic TEXT, state BLOB, "
    "PRIMARY KEY (id, version))",
    # The same shape as convlog's message-id index.
    "CREATE TABLE IF NOT EXISTS message_ids (conversation_id TEXT NOT NULL, "
    "message_id TEXT NOT NULL, PRIMARY KEY (conversation_id, message_id)) WITHOUT ROWID",
)
INSERT_EVENT = "INSERT INTO events VALUES (?, ?, ?, ?)"
INSERT_ID = "INSERT INTO message_ids VALUES (?, ?)"


class RawLog:
    """The inserts convlog makes, by hand with stdlib sqlite3: per message one event
    row (msgspec-JSON of the same event) and one message-id row; one transaction per
    `append_turn` call."""

    def __init__(self, path: Path, synchronous: str = "normal") -> None:
        self.con = sqlite3.connect(path, isolation_level=None)
        self.con.execute("PRAGMA journal_mode=WAL")
        self.con.execute(f"PRAGMA synchronous={synchronous.upper()}")
        for statement in RAW_SCHEMA:
            self.con.execute(statement)
        row = self.con.execute(
            "SELECT COALESCE(MAX(version), 0) FROM events WHERE id = ?", (RAW_STREAM,)
        ).fetchone()
        self.version: int = row[0]
        self._encoder = msgspec.json.Encoder(decimal_format="number")

    def append_turn(self, messages: Sequence[tuple[str, str]]) -> None:
        """Append (message_id, text) pairs in one transaction."""
        now = datetime.now(UTC)
        rows = []
        for message_id, text in messages:
            self.version += 1
            event = MessageAppended(at=now, message_id=message_id, role="user", content=text)
            rows.append((RAW_STREAM, self.version, RAW_TOPIC, self._encoder.encode(event)))
        self.con.execute("BEGIN")
        self.con.executemany(INSERT_EVENT, rows)
        self.con.executemany(INSERT_ID, [(RAW_STREAM, m) for m, _ in messages])
        self.con.execute("COMMIT")

    def close(self) -> None:
        self.con.close()


class Writer(Protocol):
    """One conversation in one database file, written by convlog or by raw sqlite3.
    Message ids and texts derive from the position, so every writer does the same."""

    turn_size: int

    @property
    def version(self) -> int: ...

    def append(self, count: int) -> None:
        """`count` messages in turns of the writer's turn size (message built inside)."""

    def timed(self, count: int) -> list[int]:
        """`count` single appends, each timed in ns (message built outside the timer)."""

    def close(self) -> None: ...


class ConvlogWriter:
    def __init__(self, path: Path, synchronous: str = "normal", turn_size: int = 1) -> None:
        self.log = convlog.open(sqlite_url(path, synchronous))
        self.conv = self.log.conversation(KEY)
        self.version = self.conv.info().version
        self.turn_size = turn_size

    def _message(self, position: int) -> convlog.Message:
        return convlog.user(message_text(position), id=f"v{position}")

    def append(self, count: int) -> None:
        conv, size, end = self.conv, self.turn_size, self.version + count
        if size == 1:  # the single-message API, as a host calls it
            for position in range(self.version + 1, end + 1):
                self.version = conv.append(self._message(position)).version
            return
        while self.version < end:
            first, last = self.version + 1, min(self.version + size, end)
            turn = [self._message(p) for p in range(first, last + 1)]
            self.version = conv.append_turn(turn).version

    def timed(self, count: int) -> list[int]:
        samples = []
        for _ in range(count):
            message = self._message(self.version + 1)
            start = time.perf_counter_ns()
            self.version = self.conv.append(message).version
            samples.append(time.perf_counter_ns() - start)
        return samples

    def close(self) -> None:
        self.log.close()


class RawWriter:
    def __init__(self, path: Path, synchronous: str = "normal", turn_size: int = 1) -> None:
        self.raw = RawLog(path, synchronous)
        self.turn_size = turn_size

    @property
    def version(self) -> int:
        return self.raw.version

    def _pairs(self, first: int, last: int) -> list[tuple[str, str]]:
        return [(f"v{p}", message_text(p)) for p in range(first, last + 1)]

    def append(self, count: int) -> None:
        end = self.raw.version + count
        while self.raw.version < end:
            first = self.raw.version + 1
            self.raw.append_turn(self._pairs(first, min(first + self.turn_size - 1, end)))

    def timed(self, count: int) -> list[int]:
        samples = []
        for _ in range(count):
            pairs = self._pairs(self.raw.version + 1, self.raw.version + 1)
            start = time.perf_counter_ns()
            self.raw.append_turn(pairs)
            samples.append(time.perf_counter_ns() - start)
        return samples

    def close(self) -> None:
        self.raw.close()


def fill(writer: Writer, target: int, turn: int) -> None:
    """Grow the conversation to `target` events with large turns."""
    size, writer.turn_size = writer.turn_size, turn
    writer.append(target - writer.version)
    writer.turn_size = size


# ----------------------------------------------------------- 1. and 2. throughput


@dataclass
class Throughput:
    """Messages/s of each repeat, and convlog/raw of each repeat."""

    convlog: list[float]
    raw: list[float]
    ratio: list[float]

    @property
    def convlog_median(self) -> float:
        return statistics.median(self.convlog)

    @property
    def raw_median(self) -> float:
        return statistics.median(self.raw)

    @property
    def ratio_median(self) -> float:
        return statistics.median(self.ratio)


def interleaved_rates(pair: Sequence[Writer], n: int, chunk: int) -> list[float]:
    """Append `n` messages with each writer, `chunk` at a time, alternating which goes
    first, so that the host's speed swings hit both alike. Returns messages/s."""
    elapsed = [0.0] * len(pair)
    for c, done in enumerate(range(0, n, chunk)):
        count = min(chunk, n - done)
        PACE.probe()
        for w in (range(len(pair)) if c % 2 == 0 else reversed(range(len(pair)))):
            start = time.perf_counter()
            pair[w].append(count)
            elapsed[w] += time.perf_counter() - start
    return [n / e for e in elapsed]


def measure_throughput(cfg: Config, n: int, synchronous: str, turn_size: int,
                       chunk: int) -> Throughput:
    """`cfg.repeats` repeats, each on two fresh database files (convlog, raw)."""
    result = Throughput([], [], [])
    for _ in range(cfg.repeats):
        with tempfile.TemporaryDirectory(prefix="convlog-bench-") as tmp:
            ours = ConvlogWriter(Path(tmp) / "convlog.db", synchronous, turn_size)
            raw = RawWriter(Path(tmp) / "raw.db", synchronous, turn_size)
            gc.collect()
            c, r = interleaved_rates([ours, raw], n, chunk)
            ours.close()
            raw.close()
        result.convlog.append(c)
        result.raw.append(r)
        result.ratio.append(c / r)
    return result


# ----------------------------------------------------------- 3. latency by length


@dataclass
class Latency:
    """Single-append latency of one writer at one conversation length, in ns."""

    system: str  # "convlog" | "raw"
    length: int
    samples: int
    p50_ns: float
    p95_ns: float
    round_p50_ns: list[float]  # p50 of each round-robin batch: pairs with the others'
    cold: list[dict[str, Any]] = field(default_factory=list)

    @property
    def cold_append_ns(self) -> float:
        return float(statistics.median(c["append_ns"] for c in self.cold))

    @property
    def cold_open_ns(self) -> float:
        return float(statistics.median(c["open_ns"] for c in self.cold))


def summarize(system: str, length: int, rounds: list[list[int]]) -> Latency:
    samples = [x for batch in rounds for x in batch]
    return Latency(system=system, length=length, samples=len(samples),
                   p50_ns=percentile(samples, 50), p95_ns=percentile(samples, 95),
                   round_p50_ns=[percentile(b, 50) for b in rounds])


def paired_growth(short_point: Latency, long_point: Latency) -> float:
    """Median over round-robin rounds of p50(long) / p50(short): each pair of batches
    ran within milliseconds, so the host's speed swings cancel out."""
    pairs = zip(long_point.round_p50_ns, short_point.round_p50_ns, strict=True)
    return statistics.median(a / b for a, b in pairs)


def cold_append(kind: str, target: str) -> dict[str, Any]:
    """Append one message from a NEW Python process (see `cold_main`)."""
    out = subprocess.run(
        [sys.executable, "-m", "bench.core", "--cold", kind, target],
        cwd=REPO, check=True, capture_output=True, text=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def cold_main(kind: str, target: str) -> None:
    """Child process of `cold_append`: open, append one message, append a second one
    (warm, for comparison), print the timings as one JSON line. Imports are done
    before the clock starts; the OS page cache is warm (the parent just wrote)."""
    message_id = uuid.uuid4().hex
    t0 = time.perf_counter_ns()
    if kind == "convlog":
        log = convlog.open(target, create=False)
        t1 = time.perf_counter_ns()
        result = log.append(KEY, convlog.user(message_text(0), id=message_id))
        t2 = time.perf_counter_ns()
        log.append(KEY, convlog.user(message_text(1), id=message_id + "-2"))
        t3 = time.perf_counter_ns()
        log.close()
        length = result.version
    else:
        raw = RawLog(Path(target))
        t1 = time.perf_counter_ns()
        raw.append_turn([(message_id, message_text(0))])
        t2 = time.perf_counter_ns()
        raw.append_turn([(message_id + "-2", message_text(1))])
        t3 = time.perf_counter_ns()
        length = raw.version - 1
        raw.close()
    print(json.dumps({"open_ns": t1 - t0, "append_ns": t2 - t1, "warm_append_ns": t3 - t2,
                      "length": length}))


def cold_tail(version: int) -> int:
    """Single appends that put the log half a snapshot interval past a snapshot, the
    average distance a cold start has to replay (the same count is appended raw)."""
    interval: int = getattr(convlog_application, "SNAPSHOT_INTERVAL", 500)
    return (interval // 2 - version % interval) % interval


def measure_latency(cfg: Config) -> list[Latency]:
    """Four conversations, each in its own file: convlog and raw, at the short and the
    long length. Each is filled to its length minus a warm-up, which brings the file
    (its WAL) and the process to a steady state; timed appends then go round-robin in
    small batches over the four, so the host's speed swings hit all alike. Then cold
    appends, round-robin too, half a snapshot interval after a snapshot."""
    lengths = (cfg.short_length, cfg.long_length)
    kinds = [(system, length) for length in lengths for system in ("convlog", "raw")]
    rounds: dict[tuple[str, int], list[list[int]]] = {k: [] for k in kinds}
    cold: dict[tuple[str, int], list[dict[str, Any]]] = {k: [] for k in kinds}
    batch = max(1, cfg.latency_samples // 40)
    warm_up = min(200, cfg.short_length // 2)
    with tempfile.TemporaryDirectory(prefix="convlog-bench-") as tmp:
        paths = {k: Path(tmp) / f"{k[0]}-{k[1]}.db" for k in kinds}
        writers: dict[tuple[str, int], Writer] = {}
        for k in kinds:
            writers[k] = ConvlogWriter(paths[k]) if k[0] == "convlog" else RawWriter(paths[k])
            fill(writers[k], k[1] - warm_up, cfg.fill_turn)
        for k in kinds:
            writers[k].timed(warm_up)
        gc.collect()
        for b in range(cfg.latency_samples // batch):
            PACE.probe()
            for k in kinds[b % 4:] + kinds[:b % 4]:
                rounds[k].append(writers[k].timed(batch))
        for w in writers.values():
            w.append(cold_tail(w.version))
            w.close()
        for _ in range(cfg.cold_repeats):
            for k in kinds:
                target = sqlite_url(paths[k]) if k[0] == "convlog" else str(paths[k])
                cold[k].append(cold_append(k[0], target))
    points = []
    for k in kinds:
        point = summarize(k[0], k[1], rounds[k])
        point.cold = cold[k]
        points.append(point)
    return points


# ------------------------------------------------------------------------ 4. codec


def text_event() -> MessageAppended:
    """A typical assistant message: ~600 chars of text, model, usage, cost, tokens."""
    return MessageAppended(
        at=datetime.now(UTC), message_id=uuid.uuid4().hex, role="assistant",
        content=(CONTENT + " ") * 3, model="gpt-4o-2024-08-06", agent="copilot",
        usage=Usage(input_tokens=1812, output_tokens=143, cache_read_tokens=1024),
        cost_usd=Decimal("0.0061725"), tokens=143, token_counter="o200k_base",
        created_at=datetime.now(UTC),
    )


def tool_event() -> MessageAppended:
    """An assistant message with parts: thinking, text, a tool use and a tool call."""
    arguments = '{"path": "src/export/worker.py", "start": 120, "end": 180}'
    return MessageAppended(
        at=datetime.now(UTC), message_id=uuid.uuid4().hex, role="assistant",
        content=[ThinkingPart(text="The timeout is probably the page size. " * 4),
                 TextPart(text=CONTENT),
                 ToolUsePart(id="toolu_01", name="read_file", arguments=arguments)],
        tool_calls=[ToolCall(id="call_01", name="read_file", arguments=arguments)],
        model="claude-sonnet-4", usage=Usage(input_tokens=5310, output_tokens=88),
        cost_usd=Decimal("0.017250"), tokens=88, token_counter="host",
    )


Call = tuple[Callable[[Any], Any], Any]  # a function and its argument


def interleaved_ns(calls: dict[str, Call], loops: int, repeats: int = 9) -> dict[str, float]:
    """Mean ns of one call of each function, median over `repeats` runs of `loops`
    calls; the functions take turns run by run (loop overhead included)."""
    runs: dict[str, list[float]] = {name: [] for name in calls}
    names = list(calls)
    for r in range(repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            fn, arg = calls[name]
            PACE.probe()
            start = time.perf_counter_ns()
            for _ in range(loops):
                fn(arg)
            runs[name].append((time.perf_counter_ns() - start) / loops)
    return {name: statistics.median(v) for name, v in runs.items()}


@dataclass
class CodecResult:
    codec: str
    event: str
    encode_ns: float
    decode_ns: float
    size_bytes: int


CODECS = ("json", "msgpack", "convlog mapper (json)")


def codec_calls(codec: str, event: MessageAppended) -> tuple[Call, Call, int]:
    """(encode call, decode call, encoded size) of one codec for one event."""
    if codec == "convlog mapper (json)":
        mapper = MsgspecMapper()
        envelope = Envelope(uuid.uuid4(), 42, event)
        stored = mapper.to_stored_event(envelope)
        assert mapper.to_domain_event(stored).event == event
        return ((mapper.to_stored_event, envelope), (mapper.to_domain_event, stored),
                len(stored.state))
    if codec == "json":
        encoder: Any = msgspec.json.Encoder(decimal_format="number")
        decoder: Any = msgspec.json.Decoder(MessageAppended)
    else:
        encoder = msgspec.msgpack.Encoder(decimal_format="number")
        decoder = msgspec.msgpack.Decoder(MessageAppended)
    data = encoder.encode(event)
    assert decoder.decode(data) == event, codec
    return (encoder.encode, event), (decoder.decode, data), len(data)


def measure_codecs(cfg: Config) -> list[CodecResult]:
    results = []
    for event_name, event in (("text", text_event()), ("tool_use", tool_event())):
        calls: dict[str, Call] = {}
        sizes = {}
        for codec in CODECS:
            calls[f"{codec} encode"], calls[f"{codec} decode"], sizes[codec] = (
                codec_calls(codec, event))
        ns = interleaved_ns(calls, cfg.codec_loops)
        results += [CodecResult(codec=c, event=event_name, encode_ns=ns[f"{c} encode"],
                                decode_ns=ns[f"{c} decode"], size_bytes=sizes[c])
                    for c in CODECS]
    return results


# ------------------------------------------------------------------------- report


@dataclass
class Row:
    workload: str
    convlog: str
    raw: str
    ratio: str
    target: str = ""
    met: str = ""


def rate(x: float) -> str:
    return f"{x:,.0f}/s"


def micros(ns: float) -> str:
    return f"{ns / 1000:,.0f} us"


def millis(ns: float) -> str:
    return f"{ns / 1e6:,.2f} ms"


def yes_no(ok: bool) -> str:
    return "yes" if ok else "NO"


def throughput_rows(single: Throughput, single_full: Throughput,
                    turns: Throughput, cfg: Config) -> list[Row]:
    def row(label: str, t: Throughput, target: float | None) -> Row:
        c = t.convlog_median
        return Row(label, rate(c), rate(t.raw_median), f"{t.ratio_median:.2f}x",
                   f">= {target:,.0f}/s" if target else "",
                   yes_no(c >= target) if target else "")
    return [
        row("single appends/s (sync=NORMAL)", single, SINGLE_TARGET),
        row("single appends/s (sync=FULL)", single_full, None),
        row(f"messages/s in turns of {cfg.turn_size}", turns, TURN_TARGET),
    ]


def latency_rows(points: list[Latency], cfg: Config) -> list[Row]:
    at = {(p.system, p.length): p for p in points}
    lengths = (cfg.short_length, cfg.long_length)
    rows = []
    for length in lengths:
        c, r = at["convlog", length], at["raw", length]
        for pct, cn, rn in (("p50", c.p50_ns, r.p50_ns), ("p95", c.p95_ns, r.p95_ns)):
            rows.append(Row(f"{pct} append latency @{short(length)}", micros(cn), micros(rn),
                            f"{cn / rn:.1f}x"))
    growth = {s: at[s, lengths[1]].p50_ns / at[s, lengths[0]].p50_ns for s in ("convlog", "raw")}
    paired = {s: paired_growth(at[s, lengths[0]], at[s, lengths[1]]) for s in ("convlog", "raw")}
    label = f"p50 growth @{short(lengths[1])} / @{short(lengths[0])}"
    rows.append(Row(label, f"{growth['convlog']:.2f}x", f"{growth['raw']:.2f}x", "",
                    f"<= {LATENCY_GROWTH_TARGET}x",
                    yes_no(growth["convlog"] <= LATENCY_GROWTH_TARGET)))
    rows.append(Row(f"{label}, paired by round", f"{paired['convlog']:.2f}x",
                    f"{paired['raw']:.2f}x", "", f"<= {LATENCY_GROWTH_TARGET}x",
                    yes_no(paired["convlog"] <= LATENCY_GROWTH_TARGET)))
    for length in lengths:
        c, r = at["convlog", length], at["raw", length]
        at_length = f"@{c.cold[0]['length']:,}"
        rows.append(Row(f"cold open, new process {at_length}", millis(c.cold_open_ns),
                        millis(r.cold_open_ns), f"{c.cold_open_ns / r.cold_open_ns:.1f}x"))
        rows.append(Row(f"cold first append {at_length}", millis(c.cold_append_ns),
                        millis(r.cold_append_ns), f"{c.cold_append_ns / r.cold_append_ns:.1f}x"))
    return rows


def print_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = "-+-".join("-" * w for w in widths)

    def fmt(cells: Sequence[str]) -> str:
        return " | ".join(c.ljust(w) if i == 0 else c.rjust(w)
                          for i, (c, w) in enumerate(zip(cells, widths, strict=True)))
    print(fmt(headers))
    print(line)
    for r in rows:
        print(fmt(r))


def codec_table(results: list[CodecResult]) -> list[list[str]]:
    rows = [[r.codec, r.event, f"{r.encode_ns:,.0f}", f"{r.decode_ns:,.0f}",
             f"{r.size_bytes:,}"] for r in results]
    for event in ("text", "tool_use"):
        j = next(r for r in results if r.codec == "json" and r.event == event)
        m = next(r for r in results if r.codec == "msgpack" and r.event == event)
        rows.append(["json / msgpack", event, f"{j.encode_ns / m.encode_ns:.2f}x",
                     f"{j.decode_ns / m.decode_ns:.2f}x", f"{j.size_bytes / m.size_bytes:.2f}x"])
    return rows


def machine() -> dict[str, Any]:
    return {
        "commit": git_revision(),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "eventsourcing": package_version("eventsourcing"),
        "msgspec": package_version("msgspec"),
        "convlog": package_version("convlog"),
        "tempdir": tempfile.gettempdir(),
    }


# --------------------------------------------------------------------------- main


def run(cfg: Config) -> None:
    started = time.perf_counter()
    stamp = meta.begin("core", cfg.mode == "quick")
    info = machine()
    print(f"convlog core benchmark ({cfg.mode})")
    for k, v in info.items():
        print(f"  {k:14} {v}")
    print("\nmeasuring...", flush=True)
    single = measure_throughput(cfg, cfg.single_n, "normal", 1, chunk=100)
    single_full = measure_throughput(cfg, cfg.single_full_n, "full", 1, chunk=50)
    turns = measure_throughput(cfg, cfg.turn_messages, "normal", cfg.turn_size, chunk=500)
    latency = measure_latency(cfg)
    codecs = measure_codecs(cfg)

    rows = throughput_rows(single, single_full, turns, cfg) + latency_rows(latency, cfg)
    print(f"\nmedian of {cfg.repeats} repeats (convlog/raw: median of per-repeat ratios); "
          f"single N={cfg.single_n:,} (FULL: {cfg.single_full_n:,}), turns "
          f"{cfg.turn_messages:,} messages;\nlatency: {cfg.latency_samples} timed appends "
          f"per length; cold: median of {cfg.cold_repeats} new processes\n")
    print_table(["workload", "convlog", "raw sqlite3", "convlog/raw", "target", "met?"],
                [list(asdict(r).values()) for r in rows])
    print("convlog/raw: for rates, the share of raw sqlite3's speed that convlog reaches; "
          "for latencies,\nhow many times longer convlog takes. growth: p50 at the long "
          "length / p50 at the short one.")
    print(f"\ncodec (ns per call: median of 9 runs of {cfg.codec_loops:,} calls, "
          "interleaved)\n")
    print_table(["codec", "event", "encode ns", "decode ns", "size B"], codec_table(codecs))

    pace = PACE.summary()
    print(f"\nhost pace: a fixed CPU loop took {pace['min_ms']:.2f} ms at best, median "
          f"{pace['median_ms']:.2f}, p90 {pace['p90_ms']:.2f}, worst {pace['max_ms']:.2f} "
          f"({pace['probes']:.0f} probes between chunks; a spread means a noisy host)")
    missed = [r.workload for r in rows if r.met == "NO"]
    elapsed = time.perf_counter() - started
    print(f"\ntargets missed: {', '.join(missed) if missed else 'none'}")
    path = stamp.save({
        "mode": cfg.mode, "utc": datetime.now(UTC).isoformat(), "elapsed_s": elapsed,
        "machine": info, "config": asdict(cfg),
        "targets": {"single_appends_per_s": SINGLE_TARGET, "turn_messages_per_s": TURN_TARGET,
                    "p50_growth_max": LATENCY_GROWTH_TARGET},
        "single_normal": asdict(single), "single_full": asdict(single_full),
        "turns": asdict(turns),
        "latency": [asdict(p) for p in latency],
        "codec": [asdict(c) for c in codecs], "host_pace": pace,
        "table": [asdict(r) for r in rows], "missed": missed,
    }, host_pace=pace)
    print(f"saved {path.relative_to(REPO)} ({elapsed:.0f} s)")


def profile(cfg: Config, workload: str, top: int) -> None:
    """cProfile the convlog loop of one workload ("single" or "turns"), sync=NORMAL."""
    n, size = (cfg.single_n, 1) if workload == "single" else (cfg.turn_messages, cfg.turn_size)
    with tempfile.TemporaryDirectory(prefix="convlog-bench-") as tmp:
        writer = ConvlogWriter(Path(tmp) / "convlog.db", turn_size=size)
        profiler = cProfile.Profile()
        start = time.perf_counter()
        profiler.enable()
        writer.append(n)
        profiler.disable()
        per_s = n / (time.perf_counter() - start)
        writer.close()
    print(f"{n:,} messages in turns of {size} under cProfile: {per_s:,.0f} messages/s\n")
    stats = pstats.Stats(profiler)
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="smaller sizes (< 1 minute)")
    parser.add_argument("--profile", choices=("single", "turns"),
                        help="cProfile the convlog loop of one workload instead")
    parser.add_argument("--top", type=int, default=40, help="rows of --profile output")
    parser.add_argument("--cold", nargs=2, metavar=("KIND", "TARGET"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cold:
        cold_main(*args.cold)
        return
    cfg = QUICK if args.quick else FULL
    if args.profile:
        profile(cfg, args.profile, args.top)
        return
    run(cfg)


if __name__ == "__main__":
    main()
