"""Context build latency: convlog's resume context at 1k, 10k and 100k messages, in ONE
run, against reading every message and trimming in Python.

Run with ``.venv/bin/python -m bench.context`` (full: 1k, 10k, 100k messages, a few
minutes at most) or ``--quick`` (1k, 10k, 30k, well under a minute). Like
``bench.core`` these are measurements, not tests: the program prints figures, ratios
and whether the target is met, and writes every number to
``bench/results/context-<UTC date>.json`` (``context-<UTC date>-quick.json``).

Target (issue): ``log.context(key)`` at 100k messages takes at most 1.5x what it takes
at 1k (median, default budget: 10,000 tokens, 30 messages, 2,000 characters each;
format ``xml``).

Workload. One conversation per size, each alone in its own SQLite FILE (WAL), filled
with ``conv.append_turn`` in turns of 1,000 messages of realistic, mixed content
(seeded, so every run writes the same): user questions of 100-400 characters,
assistant answers of 200-1,200, and in about a third of the exchanges an assistant tool
call (``tool_calls``), the tool's result (100-1,500 characters) and a final answer;
now and then content as parts (thinking, text, tool use; a tool result part), and
about 4% long messages (pasted logs, long answers: 2,500-8,000 characters). The
newest 200 messages of every conversation are the same ones (their own seeded
stream), so the window every size selects is identical and only the size differs.

What is measured:

1. Warm latency, same process: ``log.context(key)`` repeated on the three open logs,
   round-robin in small batches (the order rotating every round), so the host's speed
   swings hit all sizes alike. p50 and p95, growth 10k/1k and 100k/1k, and the
   growth paired by round (median over rounds of p50(big)/p50(1k) of that round).
2. Baselines, interleaved round by round with convlog at the same size:
   a. "read all + trim" -- what a plain chat-history table does: stdlib sqlite3, a
      table ``messages(id INTEGER PRIMARY KEY, session_id TEXT, role TEXT, content
      TEXT, created_at TEXT)`` (indexed on session_id) holding the same messages as
      plain text (tool calls as ``[tool call name(args)]``), in its own file (WAL).
      Each run SELECTs all rows of the session ordered by id, then keeps the newest
      messages that fit the same budget (newest first, each capped at 2,000
      characters, counted with ``convlog.accounting.tokens.count_tokens``, +4 tokens a message
      and 80 for the wrapper as convlog charges, stop at the first one that does not
      fit or at 30 messages), then formats them as XML (escaped).
   b. ``log.messages(key)`` (convlog reading every message) + the same trimming.
   c. reference only (no target): the plain table read the smart way, newest 30
      rows (``ORDER BY id DESC LIMIT 30``) + the same trimming: the floor for a
      context of this budget on SQLite.
3. Formats: ``messages`` and ``markdown`` (and ``xml`` again, for comparison) at the
   three sizes, interleaved, median only.
4. Cold: a NEW Python process opens the file (``convlog.open(url)``, as a restarted
   host does) and builds the first context, at the smallest and the largest size;
   open and build are timed apart, imports excluded. Twice: as is (the first build
   also loads the tokenizer's vocabulary), and with the vocabulary loaded before the
   clock starts (storage alone). Before the cold runs each conversation gets a few
   hundred more messages in turns of 2, so that its log ends half a snapshot interval
   past a snapshot (the average replay a cold start pays). The plain-table baseline
   (a) runs cold the same way.

``--profile`` runs 200 warm context builds at the largest size under cProfile and
prints where the time goes (entries in convlog and eventsourcing).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import pstats
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

import convlog
from bench import meta
from bench.core import (
    REPO,
    PaceMeter,
    machine,
    millis,
    percentile,
    print_table,
    short,
    sqlite_url,
    yes_no,
)
from convlog.accounting.tokens import count_tokens, encoding_backend
from convlog.domain.content import (
    Content,
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResultPart,
    ToolUsePart,
    Usage,
)
from convlog.domain.events import MessageAppended
from convlog.projections.context import TRUNCATED, Budget
from convlog.storage import application as convlog_application

# ---------------------------------------------------------------------------- config


@dataclass(frozen=True)
class Config:
    mode: str
    sizes: tuple[int, int, int]  # messages per conversation
    warm_rounds: int  # round-robin rounds of warm builds
    warm_batch: int  # warm builds per size per round
    baseline_rounds: int  # rounds of (convlog, baselines) at every size
    baseline_batch: int  # convlog builds per size per baseline round
    format_rounds: int  # rounds over (format, size)
    format_batch: int
    cold_repeats: int  # new processes per (variant, system, size)
    fill_turn: int = 1000  # messages per append_turn when filling


FULL = Config(mode="full", sizes=(1000, 10_000, 100_000), warm_rounds=120, warm_batch=5,
              baseline_rounds=15, baseline_batch=5, format_rounds=30, format_batch=3,
              cold_repeats=5)
QUICK = Config(mode="quick", sizes=(1000, 10_000, 30_000), warm_rounds=50, warm_batch=4,
               baseline_rounds=7, baseline_batch=3, format_rounds=12, format_batch=2,
               cold_repeats=2)

GROWTH_TARGET = 1.5  # p50 at the largest size / p50 at 1k
BUDGET = Budget()  # the default: 10,000 tokens, 30 messages, 2,000 characters
OVERHEAD_TOKENS = 80  # what convlog charges for the wrapper (services.context.ContextBuilder)
PER_MESSAGE_TOKENS = 4  # what convlog charges per message (role, separators)
PROFILE_BUILDS = 200
SAME_TAIL = 200  # the newest messages, identical in every conversation (> the window)

PACE = PaceMeter()

# --------------------------------------------------------------------------- content

_VOCABULARY = (
    "the export job shard timeout retry page worker queue token budget cache index query "
    "latency p95 deploy rollback config flag user session agent resume history context "
    "message tool call result error warning stack trace function module class method test "
    "fixture assert database table column row migration schema lock transaction commit "
    "snapshot replay event stream version key value limit offset cursor batch chunk "
    "we should could would maybe because so then after before again still only also "
    "check why how what when where which this that it is was were be been not no yes "
    "eu-west us-east nightly weekly 30s 60s 500ms 2x 10k 100k JSON YAML HTTP 502 404 "
    "parse encode decode serialize compress upload download sync async await lambda "
    "thread process memory CPU disk network socket pool connection handshake TLS cert"
)
WORDS = _VOCABULARY.split()
TOOLS = ("read_file", "run_tests", "search_code", "query_db", "http_get", "list_dir")
KEY = "bench:context"
BASE_TIME = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


class Messages:
    """An endless, seeded stream of realistic messages (see the module docstring).
    Every conversation uses the same seed: their first messages are identical."""

    def __init__(self, seed: int = 42, prefix: str = "m", start: int = 0) -> None:
        self.rng = random.Random(seed)
        self.prefix = prefix
        self.position = start
        self._pending: list[convlog.Message] = []

    def text(self, low: int, high: int) -> str:
        length = self.rng.randint(low, high)
        words = " ".join(self.rng.choices(WORDS, k=length // 5 + 2))
        while len(words) < length:
            words += " " + " ".join(self.rng.choices(WORDS, k=length // 5 + 2))
        return words[:length].rstrip() + "."

    def _long(self, low: int, high: int, share: float) -> tuple[int, int]:
        return (2500, 8000) if self.rng.random() < share else (low, high)

    def _fields(self) -> dict[str, Any]:
        self.position += 1
        return {"id": f"{self.prefix}{self.position}",
                "created_at": BASE_TIME + timedelta(seconds=20 * self.position)}

    def _usage(self) -> dict[str, Any]:
        return {"model": "gpt-4o", "usage": Usage(
            input_tokens=self.rng.randint(500, 20_000), output_tokens=self.rng.randint(20, 900))}

    def _exchange(self) -> list[convlog.Message]:
        rng = self.rng
        out = [convlog.user(self.text(*self._long(100, 400, 0.04)), **self._fields())]
        kind = rng.random()
        if kind < 0.27:  # chat-completions style tool call, its result, the answer
            name = rng.choice(TOOLS)
            call_id = f"call_{self.position}"
            arguments = json.dumps({"path": f"src/{rng.choice(WORDS)}.py",
                                    "query": self.text(10, 60)})
            out.append(convlog.assistant(self.text(30, 200), tool_calls=[
                ToolCall(id=call_id, name=name, arguments=arguments)],
                **self._usage(), **self._fields()))
            out.append(convlog.tool(self.text(*self._long(100, 1500, 0.05)),
                                    tool_call_id=call_id, **self._fields()))
        elif kind < 0.33:  # content as parts: thinking, text, a tool use, its result part
            use_id = f"toolu_{self.position}"
            arguments = json.dumps({"command": f"pytest tests/{rng.choice(WORDS)}"})
            out.append(convlog.assistant([
                ThinkingPart(text=self.text(100, 600)), TextPart(text=self.text(50, 300)),
                ToolUsePart(id=use_id, name=rng.choice(TOOLS), arguments=arguments)],
                **self._usage(), **self._fields()))
            out.append(convlog.tool([ToolResultPart(
                tool_use_id=use_id, content=self.text(100, 1500), is_error=rng.random() < 0.1)],
                tool_call_id=use_id, **self._fields()))
        out.append(convlog.assistant(self.text(*self._long(200, 1200, 0.04)),
                                     **self._usage(), **self._fields()))
        return out

    def take(self, count: int) -> list[convlog.Message]:
        while len(self._pending) < count:
            self._pending.extend(self._exchange())
        taken, self._pending = self._pending[:count], self._pending[count:]
        return taken


def plain_text(content: Content, tool_calls: Sequence[ToolCall]) -> str:
    """A message as a plain chat-history table keeps it: one text column."""
    pieces: list[str] = []
    if isinstance(content, str):
        pieces.append(content)
    else:
        for part in content:
            if isinstance(part, TextPart):
                pieces.append(part.text)
            elif isinstance(part, ToolUsePart):
                pieces.append(f"[tool call {part.name}({part.arguments})]")
            elif isinstance(part, ToolResultPart):
                pieces.append(part.content)
            elif isinstance(part, ImagePart):
                pieces.append(f"[image {part.ref}]")
    pieces.extend(f"[tool call {c.name}({c.arguments})]" for c in tool_calls)
    return "\n".join(p for p in pieces if p)


# ------------------------------------------------------------------- plain table

RAW_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY, session_id TEXT, "
    "role TEXT, content TEXT, created_at TEXT)",
    "CREATE INDEX IF NOT EXISTS messages_session ON messages (session_id)",
)
SELECT_ALL = ("SELECT role, content, created_at FROM messages WHERE session_id = ? "
              "ORDER BY id")
SELECT_NEWEST = ("SELECT role, content, created_at FROM messages WHERE session_id = ? "
                 "ORDER BY id DESC LIMIT ?")

Row = tuple[str, str, str]  # role, text, created_at (ISO)


def raw_connect(path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    for statement in RAW_SCHEMA:
        con.execute(statement)
    return con


def raw_insert(con: sqlite3.Connection, messages: Sequence[convlog.Message]) -> None:
    rows = [(KEY, m.role, plain_text(m.content, m.tool_calls),
             (m.created_at or BASE_TIME).isoformat()) for m in messages]
    con.execute("BEGIN")
    con.executemany("INSERT INTO messages (session_id, role, content, created_at) "
                    "VALUES (?, ?, ?, ?)", rows)
    con.execute("COMMIT")


def trim(newest_first: Iterable[Row], budget: Budget) -> tuple[list[Row], int]:
    """The newest messages that fit `budget`, oldest first, and the tokens spent."""
    chosen: list[Row] = []
    spent = OVERHEAD_TOKENS
    for role, text, at in newest_first:
        if len(chosen) >= budget.messages:
            break
        if len(text) > budget.chars:
            text = text[: budget.chars - len(TRUNCATED)].rstrip() + TRUNCATED
        tokens = count_tokens(text)[0] + PER_MESSAGE_TOKENS
        if spent + tokens > budget.tokens:
            break
        spent += tokens
        chosen.append((role, text, at))
    chosen.reverse()
    return chosen, spent


def format_xml(key: str, rows: Sequence[Row]) -> str:
    lines = [f"<conversation_history conversation={quoteattr(key)} messages=\"{len(rows)}\">"]
    for role, text, at in rows:
        moment = at[:16].replace("T", " ") + " UTC"
        lines.append(f"<message role={quoteattr(role)} time={quoteattr(moment)}>"
                     f"{escape(text)}</message>")
    lines.append("</conversation_history>")
    return "\n".join(lines)


@dataclass
class Built:
    """What one context build produced (to check that the workloads compare)."""

    messages: int
    tokens: int
    chars: int


def raw_read_all(con: sqlite3.Connection, budget: Budget) -> Built:
    rows = con.execute(SELECT_ALL, (KEY,)).fetchall()
    chosen, spent = trim(reversed(rows), budget)
    text = format_xml(KEY, chosen)
    return Built(len(chosen), spent, len(text))


def raw_newest(con: sqlite3.Connection, budget: Budget) -> Built:
    rows = con.execute(SELECT_NEWEST, (KEY, budget.messages)).fetchall()
    chosen, spent = trim(rows, budget)
    text = format_xml(KEY, chosen)
    return Built(len(chosen), spent, len(text))


def event_rows(events: Sequence[MessageAppended]) -> Iterator[Row]:
    for e in reversed(events):
        yield (e.role, plain_text(e.content, e.tool_calls), (e.created_at or e.at).isoformat())


def messages_read_all(log: convlog.ConversationLog, budget: Budget) -> Built:
    chosen, spent = trim(event_rows(log.messages(KEY)), budget)
    text = format_xml(KEY, chosen)
    return Built(len(chosen), spent, len(text))


def convlog_context(log: convlog.ConversationLog, fmt: str = "xml") -> Built:
    ctx = log.context(KEY, format=fmt)
    return Built(ctx.message_count, ctx.tokens, len(ctx.text))


# ------------------------------------------------------------------------- setup


@dataclass
class Fixture:
    size: int
    convlog_path: Path
    raw_path: Path
    log: convlog.ConversationLog
    raw: sqlite3.Connection
    fill_s: float = 0.0
    raw_fill_s: float = 0.0

    @property
    def url(self) -> str:
        return sqlite_url(self.convlog_path)


def turns(size: int, fill_turn: int) -> Iterator[list[convlog.Message]]:
    """`size` messages in turns of `fill_turn`; the last `SAME_TAIL` come from their
    own stream, so that every size ends with the very same messages."""
    filler = Messages()
    for done in range(0, size - SAME_TAIL, fill_turn):
        yield filler.take(min(fill_turn, size - SAME_TAIL - done))
    yield Messages(seed=2026, prefix="w", start=size - SAME_TAIL).take(SAME_TAIL)


def build_fixture(tmp: Path, size: int, fill_turn: int) -> Fixture:
    fx = Fixture(size=size, convlog_path=tmp / f"convlog-{short(size)}.db",
                 raw_path=tmp / f"raw-{short(size)}.db",
                 log=convlog.open(sqlite_url(tmp / f"convlog-{short(size)}.db")),
                 raw=raw_connect(tmp / f"raw-{short(size)}.db"))
    conv = fx.log.conversation(KEY, user="u1", agent="copilot", channel="bench")
    for turn in turns(size, fill_turn):
        start = time.perf_counter()
        conv.append_turn(turn)
        fx.fill_s += time.perf_counter() - start
        start = time.perf_counter()
        raw_insert(fx.raw, turn)
        fx.raw_fill_s += time.perf_counter() - start
    assert fx.log.info(KEY).message_count == size
    return fx


def cold_tail(fx: Fixture) -> int:
    """Messages appended in turns of 2 (to both stores) so that the log ends half a
    snapshot interval past a snapshot, as in bench.core. Returns the messages added."""
    interval: int = getattr(convlog_application, "SNAPSHOT_INTERVAL", 500)
    version = fx.log.info(KEY).version
    count = (interval // 2 - version % interval) % interval
    stream = Messages(seed=7, prefix="tail", start=fx.size)
    for _ in range(0, count, 2):
        turn = stream.take(2)
        fx.log.append_turn(KEY, turn)
        raw_insert(fx.raw, turn)
    return count + count % 2


# ------------------------------------------------------------- 1. warm latency


@dataclass
class Latency:
    """Latency samples of one workload at one size, in ns."""

    workload: str
    size: int
    samples: int
    p50_ns: float
    p95_ns: float
    round_p50_ns: list[float]  # p50 of each round: pairs with other sizes' rounds
    built: dict[str, int] = field(default_factory=dict)


def summarize(workload: str, size: int, rounds: list[list[int]], built: Built) -> Latency:
    samples = [x for r in rounds for x in r]
    return Latency(workload=workload, size=size, samples=len(samples),
                   p50_ns=percentile(samples, 50), p95_ns=percentile(samples, 95),
                   round_p50_ns=[percentile(r, 50) for r in rounds], built=asdict(built))


def timed(fn: Callable[[], Built], count: int) -> tuple[list[int], Built]:
    samples = []
    built = Built(0, 0, 0)
    for _ in range(count):
        start = time.perf_counter_ns()
        built = fn()
        samples.append(time.perf_counter_ns() - start)
    return samples, built


def round_robin(workloads: dict[str, Callable[[], Built]], rounds: int, batch: int,
                batches: dict[str, int] | None = None
                ) -> dict[str, tuple[list[list[int]], Built]]:
    """Run each workload `batch` times per round (or `batches[name]` times), rotating
    the order every round; returns each one's samples by round, and its last output."""
    names = list(workloads)
    out: dict[str, tuple[list[list[int]], Built]] = {n: ([], Built(0, 0, 0)) for n in names}
    for r in range(rounds):
        PACE.probe()
        for name in names[r % len(names):] + names[:r % len(names)]:
            samples, built = timed(workloads[name], (batches or {}).get(name, batch))
            out[name][0].append(samples)
            out[name] = (out[name][0], built)
    return out


def measure_warm(cfg: Config, fixtures: list[Fixture]) -> list[Latency]:
    workloads = {f"convlog xml @{fx.size}": _ctx(fx.log, "xml") for fx in fixtures}
    for fn in workloads.values():  # warm-up: tokenizer, statement caches, page cache
        timed(fn, 20)
    gc.collect()
    runs = round_robin(workloads, cfg.warm_rounds, cfg.warm_batch)
    return [summarize("convlog xml", fx.size, *runs[f"convlog xml @{fx.size}"])
            for fx in fixtures]


def _ctx(log: convlog.ConversationLog, fmt: str) -> Callable[[], Built]:
    return partial(convlog_context, log, fmt)


# ---------------------------------------------------------------- 2. baselines


BASELINES = ("read all + trim", "log.messages() + trim", "newest 30 rows + trim")


def measure_baselines(cfg: Config, fixtures: list[Fixture]) -> list[Latency]:
    """Per round and size: convlog (a batch), and each baseline once, order rotating."""
    workloads: dict[str, Callable[[], Built]] = {}
    batches: dict[str, int] = {}
    for fx in fixtures:
        workloads[f"convlog xml @{fx.size}"] = _ctx(fx.log, "xml")
        batches[f"convlog xml @{fx.size}"] = cfg.baseline_batch
        workloads[f"read all + trim @{fx.size}"] = partial(raw_read_all, fx.raw, BUDGET)
        workloads[f"log.messages() + trim @{fx.size}"] = partial(
            messages_read_all, fx.log, BUDGET)
        workloads[f"newest 30 rows + trim @{fx.size}"] = partial(raw_newest, fx.raw, BUDGET)
    for name, fn in workloads.items():  # warm-up
        timed(fn, 1 if "log.messages" in name else 5)
    gc.collect()
    runs = round_robin(workloads, cfg.baseline_rounds, 1, batches)
    out = []
    for name, (rounds, built) in runs.items():
        workload, _, size = name.rpartition(" @")
        out.append(summarize(workload, int(size), rounds, built))
    return out


# ------------------------------------------------------------------ 3. formats

FORMATS = ("xml", "messages", "markdown")


def measure_formats(cfg: Config, fixtures: list[Fixture]) -> list[Latency]:
    workloads = {f"convlog {fmt} @{fx.size}": _ctx(fx.log, fmt)
                 for fmt in FORMATS for fx in fixtures}
    for fn in workloads.values():
        timed(fn, 3)
    gc.collect()
    runs = round_robin(workloads, cfg.format_rounds, cfg.format_batch)
    out = []
    for name, (rounds, built) in runs.items():
        workload, _, size = name.rpartition(" @")
        out.append(summarize(workload, int(size), rounds, built))
    return out


# ---------------------------------------------------------------------- 4. cold


def cold_run(system: str, target: str, preload: bool) -> dict[str, Any]:
    """Open and build one context from a NEW Python process (see `cold_main`)."""
    args = [sys.executable, "-m", "bench.context", "--cold", system, target]
    out = subprocess.run(args + (["--preload"] if preload else []), cwd=REPO, check=True,
                         capture_output=True, text=True)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def cold_main(system: str, target: str, preload: bool) -> None:
    """Child process of `cold_run`: open, build the first context, build a second one
    (warm, for comparison); print the timings as one JSON line. Imports happen before
    the clock starts; so does loading the vocabulary with `preload`. The OS page cache
    is warm (the parent just wrote the file)."""
    if preload:
        count_tokens("warm up")
    t0 = time.perf_counter_ns()
    if system == "convlog":
        log = convlog.open(target)  # as a restarting host does (vocabulary loads behind)
        t1 = time.perf_counter_ns()
        built = convlog_context(log)
        t2 = time.perf_counter_ns()
        convlog_context(log)
        t3 = time.perf_counter_ns()
        length = log.info(KEY).message_count
        log.close()
    else:
        con = raw_connect(Path(target))
        t1 = time.perf_counter_ns()
        built = raw_read_all(con, BUDGET)
        t2 = time.perf_counter_ns()
        raw_read_all(con, BUDGET)
        t3 = time.perf_counter_ns()
        length = con.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
        con.close()
    print(json.dumps({"open_ns": t1 - t0, "build_ns": t2 - t1, "second_build_ns": t3 - t2,
                      "length": length, "preload": preload, "built": asdict(built),
                      "tokenizer": encoding_backend("o200k_base")}))


@dataclass
class Cold:
    system: str
    size: int  # nominal size (messages before the tail)
    length: int  # messages at the cold runs
    preload: bool
    runs: list[dict[str, Any]]

    def median(self, name: str) -> float:
        return float(statistics.median(r[name] for r in self.runs))


def measure_cold(cfg: Config, fixtures: list[Fixture]) -> list[Cold]:
    """Round-robin over (variant, system, size) with new processes; smallest and
    largest size only. The parent has closed its connections."""
    kinds = [(preload, system, fx) for preload in (False, True)
             for fx in (fixtures[0], fixtures[-1]) for system in ("convlog", "raw")]
    runs: dict[int, list[dict[str, Any]]] = {i: [] for i in range(len(kinds))}
    for _ in range(cfg.cold_repeats):
        for i, (preload, system, fx) in enumerate(kinds):
            target = fx.url if system == "convlog" else str(fx.raw_path)
            runs[i].append(cold_run(system, target, preload))
    return [Cold(system=system, size=fx.size, length=runs[i][0]["length"], preload=preload,
                 runs=runs[i]) for i, (preload, system, fx) in enumerate(kinds)]


# ------------------------------------------------------------------------ report


@dataclass
class TableRow:
    workload: str
    convlog: str
    baseline: str
    ratio: str
    target: str = ""
    met: str = ""


def paired(a: Latency, b: Latency) -> float:
    """Median over rounds of p50(a) / p50(b) of the same round."""
    return statistics.median(x / y for x, y in zip(a.round_p50_ns, b.round_p50_ns, strict=True))


def warm_rows(warm: list[Latency], base: dict[tuple[str, int], Latency],
              cfg: Config) -> list[TableRow]:
    rows = []
    small = warm[0]
    for point in warm:
        raw = base["read all + trim", point.size]
        tag = f"@{short(point.size)}"
        # No ratio here: the two columns come from different phases (see the vs rows).
        rows.append(TableRow(f"context p50 {tag}", millis(point.p50_ns), millis(raw.p50_ns),
                             ""))
        rows.append(TableRow(f"context p95 {tag}", millis(point.p95_ns), millis(raw.p95_ns),
                             ""))
    small_raw = base["read all + trim", small.size]
    for point in warm[1:]:
        raw = base["read all + trim", point.size]
        label = f"growth p50 @{short(point.size)} / @{short(small.size)}"
        growth = point.p50_ns / small.p50_ns
        rows.append(TableRow(label, f"{growth:.2f}x", f"{raw.p50_ns / small_raw.p50_ns:.1f}x",
                             "", f"<= {GROWTH_TARGET}x", yes_no(growth <= GROWTH_TARGET)))
        pair = paired(point, small)
        rows.append(TableRow(f"{label}, paired by round", f"{pair:.2f}x",
                             f"{paired(raw, small_raw):.1f}x", "", f"<= {GROWTH_TARGET}x",
                             yes_no(pair <= GROWTH_TARGET)))
        rows.append(TableRow(f"growth p95 @{short(point.size)} / @{short(small.size)}",
                             f"{point.p95_ns / small.p95_ns:.2f}x",
                             f"{raw.p95_ns / small_raw.p95_ns:.1f}x", ""))
    return rows


def baseline_rows(base: dict[tuple[str, int], Latency], cfg: Config) -> list[TableRow]:
    rows = []
    for name in BASELINES:
        for size in cfg.sizes:
            ours, theirs = base["convlog xml", size], base[name, size]
            ratio = paired(ours, theirs)
            label = f"vs {name} @{short(size)}" + (" (reference)" if "newest" in name else "")
            rows.append(TableRow(label, millis(ours.p50_ns), millis(theirs.p50_ns),
                                 f"{ratio:.3f}x" if ratio < 0.1 else f"{ratio:.2f}x"))
    return rows


def cold_rows(cold: list[Cold]) -> list[TableRow]:
    at = {(c.system, c.size, c.preload): c for c in cold}
    rows = []
    for preload in (False, True):
        note = ", vocabulary preloaded" if preload else ""
        for size in sorted({c.size for c in cold}):
            c, r = at["convlog", size, preload], at["raw", size, preload]
            tag = f"@{c.length:,}"
            for what, name in (("open", "open_ns"), ("first context", "build_ns")):
                cm, rm = c.median(name), r.median(name)
                rows.append(TableRow(f"cold {what}{note} {tag}", millis(cm), millis(rm),
                                     f"{cm / rm:.2f}x"))
            total_c = c.median("open_ns") + c.median("build_ns")
            total_r = r.median("open_ns") + r.median("build_ns")
            rows.append(TableRow(f"cold open + first context{note} {tag}", millis(total_c),
                                 millis(total_r), f"{total_c / total_r:.2f}x"))
    return rows


def format_table(formats: list[Latency], cfg: Config) -> list[list[str]]:
    at = {(p.workload, p.size): p for p in formats}
    rows = []
    for fmt in FORMATS:
        points = [at[f"convlog {fmt}", size] for size in cfg.sizes]
        rows.append([fmt, *(millis(p.p50_ns) for p in points),
                     f"{points[-1].p50_ns / points[0].p50_ns:.2f}x",
                     f"{points[-1].built['messages']} msgs, {points[-1].built['tokens']:,} tok"])
    return rows


def built_table(warm: list[Latency], base: dict[tuple[str, int], Latency],
                cfg: Config) -> list[list[str]]:
    rows = []
    for size in cfg.sizes:
        for name in ("convlog xml", *BASELINES):
            b = (next(p for p in warm if p.size == size) if name == "convlog xml"
                 else base[name, size]).built
            rows.append([f"{name} @{short(size)}", f"{b['messages']}", f"{b['tokens']:,}",
                         f"{b['chars']:,}"])
    return rows


def disk_mb(path: Path) -> float:
    wal = path.with_name(path.name + "-wal")
    return (path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)) / 1e6


# -------------------------------------------------------------------------- main


def run(cfg: Config) -> None:
    started = time.perf_counter()
    stamp = meta.begin("context", cfg.mode == "quick")
    info = machine()
    info["tokenizer"] = encoding_backend("o200k_base")
    sizes = ", ".join(f"{s:,}" for s in cfg.sizes)
    print(f"convlog context benchmark ({cfg.mode}: conversations of {sizes} messages"
          + ("; QUICK mode: the largest size is 30k, not 100k" if cfg.mode == "quick" else "")
          + ")")
    for k, v in info.items():
        print(f"  {k:14} {v}")
    print(f"  budget         {BUDGET.tokens:,} tokens, {BUDGET.messages} messages, "
          f"{BUDGET.chars:,} chars a message (the default); format xml")
    with tempfile.TemporaryDirectory(prefix="convlog-bench-") as tmp:
        print("\nfilling...", flush=True)
        fixtures = []
        for size in cfg.sizes:
            fx = build_fixture(Path(tmp), size, cfg.fill_turn)
            fixtures.append(fx)
            print(f"  {size:>7,} messages: convlog {fx.fill_s:5.1f} s "
                  f"({size / fx.fill_s:,.0f} messages/s), plain table {fx.raw_fill_s:.2f} s; "
                  f"files (with WAL) {disk_mb(fx.convlog_path):,.1f} MB and "
                  f"{disk_mb(fx.raw_path):,.1f} MB", flush=True)
        print("measuring warm latency...", flush=True)
        warm = measure_warm(cfg, fixtures)
        print("measuring baselines...", flush=True)
        baselines = measure_baselines(cfg, fixtures)
        print("measuring formats...", flush=True)
        formats = measure_formats(cfg, fixtures)
        tails = {}
        for fx in fixtures:
            tails[fx.size] = cold_tail(fx)
            fx.log.close()
            fx.raw.close()
        print("measuring cold builds (new processes)...", flush=True)
        cold = measure_cold(cfg, fixtures)
        fill = {fx.size: {"convlog_s": fx.fill_s, "raw_s": fx.raw_fill_s,
                          "convlog_bytes": fx.convlog_path.stat().st_size,
                          "raw_bytes": fx.raw_path.stat().st_size,
                          "cold_tail_messages": tails[fx.size]} for fx in fixtures}

    base = {(p.workload, p.size): p for p in baselines}
    rows = warm_rows(warm, base, cfg) + baseline_rows(base, cfg) + cold_rows(cold)
    total = cfg.warm_rounds * cfg.warm_batch
    print(f"\nwarm: {total} builds per size, round-robin in batches of {cfg.warm_batch}; "
          f"baselines: {cfg.baseline_rounds} rounds, each: {cfg.baseline_batch} convlog "
          f"builds and one run of each baseline\nper size (ratio: median over rounds of "
          f"convlog/baseline); cold: median of {cfg.cold_repeats} new processes\n")
    print_table(["workload", "convlog", "baseline", "ratio", "target", "met?"],
                [list(asdict(r).values()) for r in rows])
    print("context rows: convlog (warm phase) | read all + trim (plain sqlite3 table, "
          "baseline phase) at the same size;\ngrowth rows: the baseline's own growth. vs "
          "rows (baseline phase): convlog xml p50 | baseline p50 |\nconvlog/baseline, "
          "median over rounds of the pair. cold rows: baseline = the plain table read all "
          "+ trim\nin a new process.")
    print(f"\nformats (p50, {cfg.format_rounds * cfg.format_batch} builds each, interleaved)\n")
    print_table(["format", *(f"@{short(s)}" for s in cfg.sizes),
                 f"@{short(cfg.sizes[-1])}/@{short(cfg.sizes[0])}",
                 f"built @{short(cfg.sizes[-1])}"], format_table(formats, cfg))
    print("\nwhat each build produced (same budget; the plain table keeps tool output "
          "whole up to 2,000 chars,\nconvlog cuts tool results to 200 and tool "
          "arguments to 80)\n")
    print_table(["workload", "messages", "tokens", "chars"], built_table(warm, base, cfg))

    pace = PACE.summary()
    print(f"\nhost pace: a fixed CPU loop took {pace['min_ms']:.2f} ms at best, median "
          f"{pace['median_ms']:.2f}, p90 {pace['p90_ms']:.2f}, worst {pace['max_ms']:.2f} "
          f"({pace['probes']:.0f} probes between rounds; a spread means a noisy host)")
    missed = [r.workload for r in rows if r.met == "NO"]
    elapsed = time.perf_counter() - started
    print(f"\ntargets missed: {', '.join(missed) if missed else 'none'}")
    path = stamp.save({
        "mode": cfg.mode, "utc": datetime.now(UTC).isoformat(), "elapsed_s": elapsed,
        "machine": info, "config": asdict(cfg), "budget": {
            "tokens": BUDGET.tokens, "messages": BUDGET.messages, "chars": BUDGET.chars},
        "targets": {"p50_growth_max": GROWTH_TARGET}, "fill": fill,
        "warm": [asdict(p) for p in warm], "baselines": [asdict(p) for p in baselines],
        "formats": [asdict(p) for p in formats], "cold": [asdict(c) for c in cold],
        "host_pace": pace, "table": [asdict(r) for r in rows], "missed": missed,
    }, host_pace=pace)
    print(f"saved {path.relative_to(REPO)} ({elapsed:.0f} s)")


def profile(cfg: Config, top: int) -> None:
    """cProfile `PROFILE_BUILDS` warm context builds at the largest size."""
    size = cfg.sizes[-1]
    with tempfile.TemporaryDirectory(prefix="convlog-bench-") as tmp:
        fx = build_fixture(Path(tmp), size, cfg.fill_turn)
        timed(_ctx(fx.log, "xml"), 20)
        samples, built = timed(_ctx(fx.log, "xml"), PROFILE_BUILDS)
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(PROFILE_BUILDS):
            convlog_context(fx.log)
        profiler.disable()
        fx.log.close()
        fx.raw.close()
    print(f"{PROFILE_BUILDS} warm context builds at {size:,} messages: p50 "
          f"{millis(percentile(samples, 50))} without the profiler; built {built}\n")
    stats = pstats.Stats(profiler)
    ours = r"adapters|projections|domain|eventsourcing|sqlite3|tiktoken|msgspec"
    stats.sort_stats("cumulative").print_stats(ours, top)
    stats.sort_stats("tottime").print_stats(top)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true",
                        help="sizes 1k, 10k, 30k and fewer repeats (< 40 s)")
    parser.add_argument("--profile", action="store_true",
                        help="cProfile warm builds at the largest size instead")
    parser.add_argument("--top", type=int, default=40, help="rows of --profile output")
    parser.add_argument("--cold", nargs=2, metavar=("SYSTEM", "TARGET"), help=argparse.SUPPRESS)
    parser.add_argument("--preload", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cold:
        system, target = args.cold
        cold_main(system, target, preload=args.preload)
        return
    cfg = QUICK if args.quick else FULL
    if args.profile:
        profile(cfg, args.top)
        return
    run(cfg)


if __name__ == "__main__":
    main()
