"""Read-model benchmarks: DuckDB catch-up rate, the session catalog query and the
resume-telemetry summary, in ONE run.

Run with ``.venv/bin/python -m bench.views`` (full: 100k conversations and 1,000,000
resume attempts, a few minutes) or ``--quick`` (10k conversations, 100k attempts,
well under a minute). Like ``bench.core`` these are measurements, not tests: the
program prints figures and whether each target is met, and writes every number to
``bench/results/views-<UTC date>.json`` (``views-<UTC date>-quick.json``).

Targets (issues 5 and 6): catch-up >= 100,000 events/s into DuckDB; a catalog query
for one user among 100k conversations < 50 ms; the telemetry summary over 1,000,000
recorded resume attempts < 300 ms.

Workloads, each on SQLite FILES in a temporary directory (WAL), views in the DuckDB
file next to them (``convlog.duckdb``):

1. Catalog store. N conversations, each written by ONE ``application(log).execute(key, commands)``
   (one transaction; the fastest public write path: ~1.8k conversations/s here) with a
   seeded, realistic mix: session_started (users u0..u999, so every user has N/1000
   conversations; 4 agents, 4 clients), 1-3 turns of a user message and an assistant
   answer (gpt-4o / claude-sonnet-4 / a model the price table does not know; usage
   with cache reads now and then; 20% of answers recorded as two records of one
   response (same `response_id`, same usage); 10% with a host-reported cost), a
   native_session_bound in 60%, a resume (resume_attempted/failed on session/resume,
   then session/load or session/new, history_injected after a fresh success) in 25%,
   archived in 5%. Message token counts are given (``tokens=``, as a host that counts
   itself does) so the fill does not spend its time in the tokenizer. The SQLite URL
   uses ``?synchronous=off`` for the fill only (then reopened at the default).
   Then:
   a. full catch-up: ``application(log).catalog.rebuild(progress=False)`` (drop every view, catch up
      from event 1), repeated; events/s, median. Once first in a new process, for its
      peak resident memory (VmHWM, the interpreter and imports included).
   b. incremental catch-up: 10k new events (new conversations, and new turns in
      existing ones, which merge into existing catalog rows) then
      ``application(log).catalog.refresh(progress=False)``; time and events/s, median of repeats.
      Shown as a latency, not scored against the 100k events/s target: a catch-up
      of 10k events onto a large store is bound by fixed costs (opening the file,
      joins with the whole catalog, the commit), not by a per-event rate.
   c. ``log.conversations(user="u42")`` (opens the DuckDB file, checks the catch-up, runs
      the query, converts rows): p50/p95 of repeated calls. Broken down: opening the
      file alone, the catch-up check alone, ``log.sessions`` on an already open
      connection, and the catalog SQL alone (``views.query`` on the open connection).
   d. ``log.costs(by="model")`` (full path).
   e. read-your-writes: append a turn (2 messages) to an existing conversation, then
      ``log.conversations(user="u42")``, which catches up first: p50/p95, with the views
      file still open and after 1.2 s idle (the file closed, reopened by the call).
2. Telemetry store. M conversations with 50 resume attempts each: every attempt is a
   resume_attempted plus its outcome (resume_succeeded / resume_failed with a reason
   class, an error text and a latency); tiers session/resume -> session/load ->
   session/new, with success rates that differ per agent, history_injected after
   most fresh successes (the rest are "memory lost"), written as RecordFact commands
   in one ``application(log).execute`` per conversation. Full catch-up rate (median of repeats),
   then ``log.telemetry(by=...)`` for strategy, agent, client, day and reason (full
   path each), median/p95; ``by="strategy"`` also on an open connection.
3. The catalog's first page (20 rows: all, one user's, one agent's) at 1k, 10k, 100k
   and 1M conversations (``--quick``: up to 100k), on catalogs filled straight into the
   views' tables: bench.catalog_scale says how, and why (issue 45: <= 20 ms at 100k,
   growing <= 2x from 1k to 1M).

Timestamps: convlog stamps every event with the time it is recorded. So that days,
"newest first" and ``by="day"`` mean something, the fill replaces the clock of
``convlog.storage.application`` (only its ``datetime.now``) with one that walks through 60 days
(one moment per conversation); when that module has no ``datetime`` to replace, the
events keep the real time and the JSON says so.

``--profile catchup|sessions|telemetry`` runs one workload under cProfile instead and
prints where the time goes (entries in convlog, duckdb and sqlite).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import pstats
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any, ClassVar
from unittest import mock

import duckdb
import msgspec

import convlog
from bench import catalog_scale, meta
from bench.core import (
    REPO,
    PaceMeter,
    machine,
    millis,
    percentile,
    print_table,
    rate,
    yes_no,
)
from convlog.domain.content import Usage
from convlog.domain.conversation import (
    AppendMessages,
    Archive,
    BindNativeSession,
    Command,
    RecordFact,
    StartConversation,
)
from convlog.domain.events import (
    HistoryInjected,
    ReasonClass,
    ResumeAttempted,
    ResumeFailed,
    ResumeSucceeded,
)
from convlog.services.log import application
from convlog.storage import application as convlog_application

# ---------------------------------------------------------------------------- config


@dataclass(frozen=True)
class Config:
    mode: str
    conversations: int  # catalog store
    catchup_repeats: int  # full rebuilds of the catalog store's views
    incremental_events: int  # new events per incremental catch-up
    incremental_repeats: int
    query_runs: int  # timed calls per catalog query variant
    cost_runs: int
    telemetry_conversations: int
    attempts_per_conversation: int
    telemetry_catchup_repeats: int
    telemetry_runs: int  # timed calls per telemetry grouping
    users: int = 1000
    user: str = "u42"
    scale_sizes: tuple[int, ...] = catalog_scale.FULL_SIZES  # section 3 (bench.catalog_scale)


FULL = Config(mode="full", conversations=100_000, catchup_repeats=3,
              incremental_events=10_000, incremental_repeats=3, query_runs=30, cost_runs=7,
              telemetry_conversations=20_000, attempts_per_conversation=50,
              telemetry_catchup_repeats=2, telemetry_runs=7)
QUICK = Config(mode="quick", conversations=10_000, catchup_repeats=3,
               incremental_events=10_000, incremental_repeats=2, query_runs=20, cost_runs=3,
               telemetry_conversations=2_000, attempts_per_conversation=50,
               telemetry_catchup_repeats=1, telemetry_runs=3,
               scale_sizes=catalog_scale.QUICK_SIZES)

CATCHUP_TARGET = 100_000.0  # events/s
CATALOG_TARGET_MS = 50.0
TELEMETRY_TARGET_MS = 300.0
TELEMETRY_GROUPS = ("strategy", "agent", "client", "day", "reason")

PACE = PaceMeter()

# ----------------------------------------------------------------------- the clock

BASE_TIME = datetime(2026, 9, 1, 8, 0, tzinfo=UTC)
SPAN = timedelta(days=60)
PLACEHOLDER = datetime(1970, 1, 1, tzinfo=UTC)  # facts are stamped when recorded


class Clock:
    """Stands in for ``datetime`` in convlog.storage.application during a fill: ``now()``
    returns `moment`, which the fill moves forward conversation by conversation."""

    moment: ClassVar[datetime] = BASE_TIME

    @classmethod
    def now(cls, tz: tzinfo | None = None) -> datetime:
        return cls.moment if tz is None else cls.moment.astimezone(tz)


@contextlib.contextmanager
def simulated_clock() -> Iterator[bool]:
    """Yields whether the clock could be replaced (see the module docstring)."""
    if not isinstance(getattr(convlog_application, "datetime", None), type):
        yield False
        return
    with mock.patch.object(convlog_application, "datetime", Clock):
        yield True


# --------------------------------------------------------------------------- content

_VOCABULARY = (
    "the export job shard timeout retry page worker queue token budget cache index query "
    "latency deploy rollback config flag user session agent resume history context message "
    "tool call result error stack trace function module test database table migration lock "
    "we should could maybe because so then after before again still check why how what when "
    "eu-west nightly 30s 60s 502 404 parse encode decode sync async thread memory disk pool"
)
_WORDS = _VOCABULARY.split()
AGENTS = ("copilot", "claude-code", "gemini-cli", "codex")
CLIENTS = ("zed", "discord-bot", "vscode", "cli")
CHANNELS = ("desktop", "discord", "ide", "terminal")
MODELS = ("gpt-4o", "claude-sonnet-4", "acme-llm-7b")  # the last one has no known price
MODEL_WEIGHTS = (0.45, 0.40, 0.15)


def text_pool(rng: random.Random, count: int, low: int, high: int) -> list[str]:
    pool = []
    for _ in range(count):
        length = rng.randint(low, high)
        words = " ".join(rng.choices(_WORDS, k=length // 4 + 4))
        pool.append(words[:length].rstrip() + ".")
    return pool


@dataclass
class Content:
    rng: random.Random
    questions: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    injected: list[str] = field(default_factory=list)

    @classmethod
    def make(cls, seed: int) -> Content:
        rng = random.Random(seed)
        return cls(rng, text_pool(rng, 200, 80, 400), text_pool(rng, 200, 150, 900),
                   text_pool(rng, 50, 300, 600))


def tokens_of(text: str) -> int:
    return max(1, len(text) // 4)


def turn(content: Content, c: int, t: int, agent: str) -> list[convlog.Message]:
    """A user message and the assistant's answer (sometimes as two records of one
    provider response, with the usage repeated on both)."""
    rng = content.rng
    question, answer = rng.choice(content.questions), rng.choice(content.answers)
    model = rng.choices(MODELS, MODEL_WEIGHTS)[0]
    usage = Usage(input_tokens=rng.randint(300, 20_000), output_tokens=rng.randint(20, 900),
                  cache_read_tokens=rng.choice((0, 0, 0, rng.randint(1000, 8000))))
    cost = Decimal(f"{rng.uniform(0.001, 0.08):.6f}") if rng.random() < 0.10 else None
    response = f"resp_{c}_{t}" if rng.random() < 0.9 else None
    messages = [convlog.user(question, id=f"c{c}t{t}u", tokens=tokens_of(question))]
    common: dict[str, Any] = {"model": model, "agent": agent, "usage": usage,
                              "cost_usd": cost, "response_id": response}
    if response is not None and rng.random() < 0.2:  # one response, two records
        half = len(answer) // 2
        messages += [convlog.assistant(part, id=f"c{c}t{t}a{i}", tokens=tokens_of(part),
                                       **common)
                     for i, part in enumerate((answer[:half], answer[half:]))]
    else:
        messages.append(convlog.assistant(answer, id=f"c{c}t{t}a", tokens=tokens_of(answer),
                                          **common))
    return messages


FRESH_FIELD = "fresh" in ResumeSucceeded.__struct_fields__


def succeeded(strategy: str, native: str | None, latency: float, fresh: bool) -> RecordFact:
    extra: dict[str, Any] = {"fresh": fresh} if FRESH_FIELD else {}
    return RecordFact(event=ResumeSucceeded(at=PLACEHOLDER, strategy=strategy,
                                            native_session_id=native,
                                            latency_ms=round(latency, 3), **extra))


def failed(strategy: str, native: str | None, reason: ReasonClass, latency: float | None
           ) -> RecordFact:
    error = {"not_found": "JSON-RPC -32002: session not found",
             "unsupported": "JSON-RPC -32601: method not found",
             "timeout": "TimeoutError: no answer in 30 s",
             "transient": "ConnectionResetError: agent process restarted",
             "error": "RuntimeError: agent crashed while loading the session"}[reason]
    return RecordFact(event=ResumeFailed(
        at=PLACEHOLDER, strategy=strategy, reason=reason, native_session_id=native,
        error=error, latency_ms=None if latency is None else round(latency, 3)))


def attempted(strategy: str, native: str | None) -> RecordFact:
    return RecordFact(event=ResumeAttempted(at=PLACEHOLDER, strategy=strategy,
                                            native_session_id=native))


# Per agent: P(session/resume works), P(session/load works); session/new works 97%.
AGENT_RESUME = {"copilot": (0.70, 0.60), "claude-code": (0.55, 0.50),
                "gemini-cli": (0.20, 0.65), "codex": (0.05, 0.0)}
TIERS = ("session/resume", "session/load", "session/new")
FAILURES: dict[str, tuple[tuple[ReasonClass, ...], tuple[float, ...]]] = {
    "session/resume": (("not_found", "unsupported", "timeout", "transient", "error"),
                       (0.50, 0.25, 0.10, 0.10, 0.05)),
    "session/load": (("not_found", "unsupported", "timeout", "transient", "error"),
                     (0.45, 0.30, 0.10, 0.10, 0.05)),
    "session/new": (("transient", "timeout", "error"), (0.5, 0.2, 0.3)),
}
LATENCY_MS = {"session/resume": 150.0, "session/load": 900.0, "session/new": 1500.0}


class Tracker:
    """Builds one conversation's commands, counting the events they will record (a
    history_injected must name a range inside the log)."""

    def __init__(self) -> None:
        self.commands: list[Command] = []
        self.version = 0
        self.attempts = 0

    def add(self, command: Command, events: int = 1) -> None:
        self.commands.append(command)
        self.version += events


def resume_run(tr: Tracker, rng: random.Random, agent: str, native: str, content: Content,
               first_message: int, messages: int, max_attempts: int | None = None) -> None:
    """One resume: tiers in order until one works (or `max_attempts` is reached)."""
    p_resume, p_load = AGENT_RESUME[agent]
    for strategy in TIERS:
        if max_attempts is not None and tr.attempts >= max_attempts:
            return
        fresh = strategy == "session/new"
        bound = None if fresh else native
        tr.add(attempted(strategy, bound))
        tr.attempts += 1
        works = rng.random() < {"session/resume": p_resume, "session/load": p_load,
                                "session/new": 0.97}[strategy]
        latency = rng.lognormvariate(0, 0.6) * LATENCY_MS[strategy]
        if works:
            tr.add(succeeded(strategy, native if not fresh else f"{native}-n{tr.version}",
                             latency, fresh))
            if fresh and messages and rng.random() < 0.96:  # else: memory lost
                text = rng.choice(content.injected)
                tr.add(RecordFact(event=HistoryInjected(
                    at=PLACEHOLDER, from_version=first_message,
                    to_version=first_message + messages - 1, message_count=messages,
                    tokens=rng.randint(800, 10_000), format="xml", text=text,
                    native_session_id=f"{native}-n{tr.version - 1}")))
            return
        reasons, weights = FAILURES[strategy]
        reason = rng.choices(reasons, weights)[0]
        tr.add(failed(strategy, bound, reason,
                      30_000.0 if reason == "timeout" else latency / 3))


def catalog_conversation(content: Content, c: int, users: int) -> list[Command]:
    rng = content.rng
    agent, client = rng.choice(AGENTS), rng.choice(CLIENTS)
    tr = Tracker()
    tr.add(StartConversation(user=f"u{c % users}", agent=agent, channel=rng.choice(CHANNELS),
                        title=f"conversation {c}", metadata={"client": client}))
    messages = 0
    for t in range(rng.choice((1, 1, 2, 2, 3))):
        batch = turn(content, c, t, agent)
        tr.add(AppendMessages(messages=batch), len(batch))
        messages += len(batch)
    native = f"sess-{c}"
    if rng.random() < 0.6:
        tr.add(BindNativeSession(native_session_id=native, agent=agent))
    if rng.random() < 0.25:
        resume_run(tr, rng, agent, native, content, 2, messages)
    if rng.random() < 0.05:
        tr.add(Archive(reason="done"))
    return tr.commands


def telemetry_conversation(content: Content, c: int, users: int, attempts: int
                           ) -> tuple[list[Command], int]:
    """A conversation with a first turn, a bound native session and exactly
    `attempts` resume attempts (the last resume may be cut short: abandoned)."""
    rng = content.rng
    agent = AGENTS[c % len(AGENTS)]
    tr = Tracker()
    tr.add(StartConversation(user=f"u{c % users}", agent=agent, channel=rng.choice(CHANNELS),
                        metadata={"client": rng.choice(CLIENTS)}))
    batch = turn(content, c, 0, agent)
    tr.add(AppendMessages(messages=batch), len(batch))
    native = f"sess-{c}"
    tr.add(BindNativeSession(native_session_id=native, agent=agent))
    while tr.attempts < attempts:
        resume_run(tr, rng, agent, native, content, 2, len(batch), attempts)
    return tr.commands, tr.attempts


# ------------------------------------------------------------------------- filling


def sqlite_url(path: Path, synchronous: str | None = None) -> str:
    return f"sqlite:///{path}" + (f"?synchronous={synchronous}" if synchronous else "")


@dataclass
class Fill:
    conversations: int
    events: int
    seconds: float
    clock_simulated: bool
    attempts: int = 0

    @property
    def events_per_s(self) -> float:
        return self.events / self.seconds


def fill(path: Path, keys: Sequence[str], build: Callable[[int], tuple[list[Command], int]],
         start: int = 0) -> Fill:
    """Write one conversation per key with one `application(log).execute` each
    (synchronous=off)."""
    log = convlog.open(sqlite_url(path, "off"), views=str(path.with_suffix(".duckdb")))
    events = attempts = 0
    started = time.perf_counter()
    with simulated_clock() as simulated:
        for i, key in enumerate(keys):
            Clock.moment = BASE_TIME + SPAN * ((start + i) / max(len(keys) + start, 1))
            commands, n = build(start + i)
            events += application(log).execute(key, commands).events
            attempts += n
    seconds = time.perf_counter() - started
    log.close()
    return Fill(len(keys), events, seconds, simulated, attempts)


REBUILD = """
import sys, convlog
from convlog.services.log import application
with convlog.open(sys.argv[1]) as log:
    application(log).catalog.rebuild(progress=False)
print([line for line in open("/proc/self/status") if line.startswith("VmHWM")][0].split()[1])
"""


def rebuild_peak_rss_mib(path: Path) -> float:
    """Peak resident memory (VmHWM) of a new process that rebuilds every view of the
    store at `path` (imports and interpreter included)."""
    out = subprocess.run([sys.executable, "-c", REBUILD, sqlite_url(path)], check=True,
                         capture_output=True, text=True)
    return int(out.stdout.split()[-1]) / 1024


def catalog_key(c: int) -> str:
    return f"bench:catalog:{c}"


def topic_counts(path: Path) -> dict[str, int]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT topic, count(*) FROM stored_events GROUP BY 1 "
                           "ORDER BY 2 DESC").fetchall()
    finally:
        con.close()
    return {str(t): int(n) for t, n in rows}


def disk_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*")) / 1e6


# ------------------------------------------------------------------------ measuring


@dataclass
class Timing:
    """Repeated timings of one call, in ns."""

    name: str
    samples_ns: list[int]
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def p50(self) -> float:
        return percentile(self.samples_ns, 50)

    @property
    def p95(self) -> float:
        return percentile(self.samples_ns, 95)


def timed(name: str, fn: Callable[[], Any], runs: int, warm_up: int = 1,
          budget_s: float | None = None, min_runs: int = 3) -> Timing:
    """`runs` timed calls after `warm_up` untimed ones; with `budget_s`, stops early
    (after at least `min_runs`) once the timed calls took that long in all."""
    result: Any = None
    for _ in range(warm_up):
        result = fn()
    gc.collect()
    samples: list[int] = []
    for i in range(runs):
        if budget_s is not None and i >= min_runs and sum(samples) / 1e9 > budget_s:
            break
        if i % 5 == 0:
            PACE.probe()
        start = time.perf_counter_ns()
        result = fn()
        samples.append(time.perf_counter_ns() - start)
    rows = len(result) if isinstance(result, list | tuple) else None
    return Timing(name, samples, {"rows": rows})


@dataclass
class CatchUp:
    """Events applied and seconds taken by each repeat of one catch-up."""

    name: str
    events: list[int]
    seconds: list[float]

    @property
    def rates(self) -> list[float]:
        return [e / s for e, s in zip(self.events, self.seconds, strict=True)]

    @property
    def rate(self) -> float:
        return statistics.median(self.rates)


def full_catch_ups(log: convlog.ConversationLog, repeats: int, name: str,
                   budget_s: float = 60.0) -> CatchUp:
    """`repeats` rebuilds, fewer (at least one) once they took `budget_s` in all."""
    result = CatchUp(name, [], [])
    for _ in range(repeats):
        if result.seconds and sum(result.seconds) > budget_s:
            break
        gc.collect()
        PACE.probe()
        start = time.perf_counter()
        applied = application(log).catalog.rebuild(progress=False)
        result.seconds.append(time.perf_counter() - start)
        result.events.append(applied)
        print(f"    rebuild: {applied:,} events in {result.seconds[-1]:.2f} s "
              f"({result.rates[-1]:,.0f} events/s)", flush=True)
    return result


def incremental_commands(content: Content, next_new: int, existing: int, target: int,
                         users: int) -> Iterator[tuple[str, list[Command], int]]:
    """(key, commands, events) until `target` events: new conversations, and new
    turns in existing ones (which update existing catalog rows)."""
    rng = content.rng
    total = 0
    t = 1000
    while total < target:
        if rng.random() < 0.5:
            commands = catalog_conversation(content, next_new, users)
            key = catalog_key(next_new)
            next_new += 1
        else:
            c = rng.randrange(existing)
            t += 1
            commands = [AppendMessages(messages=turn(content, c, t, rng.choice(AGENTS)))]
            key = catalog_key(c)
        events = sum(len(cmd.messages) if isinstance(cmd, AppendMessages) else 1
                     for cmd in commands)
        total += events
        yield key, commands, events


def incremental_catch_ups(log: convlog.ConversationLog, cfg: Config, content: Content
                          ) -> tuple[CatchUp, int]:
    result = CatchUp("incremental", [], [])
    next_new = cfg.conversations
    for _ in range(cfg.incremental_repeats):
        with simulated_clock():
            for key, commands, _events in incremental_commands(
                    content, next_new, cfg.conversations, cfg.incremental_events, cfg.users):
                Clock.moment = BASE_TIME + SPAN + timedelta(seconds=next_new)
                application(log).execute(key, commands)
                if key == catalog_key(next_new):
                    next_new += 1
        gc.collect()
        PACE.probe()
        start = time.perf_counter()
        applied = application(log).catalog.refresh(progress=False)
        result.seconds.append(time.perf_counter() - start)
        result.events.append(applied)
        print(f"    incremental: {applied:,} events in {result.seconds[-1] * 1000:.0f} ms "
              f"({result.rates[-1]:,.0f} events/s)", flush=True)
    return result, next_new


def catalog_queries(log: convlog.ConversationLog, cfg: Config) -> list[Timing]:
    views = application(log).analytics.views
    user = cfg.user
    runs = cfg.query_runs
    out = [timed(f'log.sessions(user="{user}")', lambda: log.conversations(user=user), runs, 2,
                 budget_s=20)]
    # the first pages a host shows (issue 45), on the store written through the log
    out.append(timed("log.conversations(limit=20)", lambda: log.conversations(limit=20),
                     runs, 2, budget_s=20))
    out.append(timed(f'log.conversations(agent="{AGENTS[0]}", limit=20)',
                     lambda: log.conversations(agent=AGENTS[0], limit=20), runs, 2,
                     budget_s=20))
    with mock.patch.object(views, "query", wraps=views.query) as spy:
        log.conversations(user=user)
        sql, params = spy.call_args.args[0], list(spy.call_args.args[1])

    def open_only() -> None:
        with views.connect():
            pass

    out.append(timed("open + close the DuckDB file", open_only, runs))
    with views.connect():
        out.append(timed("catch-up check (open connection)",
                         lambda: application(log).catalog.refresh(progress=False), runs))
        out.append(timed(f'log.sessions(user="{user}") (open connection)',
                         lambda: log.conversations(user=user), runs))
        out.append(timed("catalog SQL alone (open connection)",
                         lambda: views.query(sql, params)[1], runs))
    for by in ("model", "user"):
        out.append(timed(f'log.costs(by="{by}")', partial(log.costs, by=by), cfg.cost_runs,
                         budget_s=10))
    out.extend(read_your_writes(log, cfg))
    return out


def read_your_writes(log: convlog.ConversationLog, cfg: Config) -> list[Timing]:
    """What a host pays to see its own last turn: append a user message and its
    answer to an existing conversation, then query. Untimed appends; timed: the
    query, which first catches up with the 3 new events (a turn and a reactivation
    at most). With the views file open (a host's burst of calls) and closed (the
    first call after >1 s idle: the file is opened, its pages read from disk)."""
    user, counter = cfg.user, iter(range(10**9))

    def one_turn() -> None:
        n = next(counter)
        log.append_turn(catalog_key(n * 7919 % cfg.conversations), [
            convlog.user("and the staging shard?", id=f"ryw-{n}-q", tokens=6),
            convlog.assistant("Same timeout; raised it.", id=f"ryw-{n}-a", tokens=7)])

    out = []
    for label, idle in (("open file", 0.0), ("file closed after 1 s idle", 1.2)):
        samples = []
        for _ in range(max(5, cfg.query_runs // 2)):
            one_turn()
            if idle:
                time.sleep(idle)
            gc.collect()
            start = time.perf_counter_ns()
            log.conversations(user=user)
            samples.append(time.perf_counter_ns() - start)
        out.append(Timing(f'append a turn, then log.sessions(user="{user}"): {label}',
                          samples, {}))
    return out


def telemetry_queries(log: convlog.ConversationLog, cfg: Config) -> list[Timing]:
    if not hasattr(log, "telemetry"):
        print("    log.telemetry does not exist (yet): not measured", flush=True)
        return []
    out = []
    for by in TELEMETRY_GROUPS:
        out.append(timed(f'log.telemetry(by="{by}")', partial(log.telemetry, by=by),
                         cfg.telemetry_runs, budget_s=12))
        print(f"    {out[-1].name}: p50 {millis(out[-1].p50)}", flush=True)
    with application(log).analytics.views.connect():
        out.append(timed('log.telemetry(by="strategy") (open connection)',
                         lambda: log.telemetry(by="strategy"), cfg.telemetry_runs,
                         budget_s=12))
    return out


# ------------------------------------------------------------------------- report


@dataclass
class Row:
    workload: str
    figure: str
    target: str = ""
    met: str = ""


def catch_up_row(label: str, c: CatchUp) -> Row:
    return Row(f"{label} ({statistics.median(c.events):,.0f} events, median of "
               f"{len(c.events)})", rate(c.rate), f">= {CATCHUP_TARGET:,.0f}/s",
               yes_no(c.rate >= CATCHUP_TARGET))


def small_catch_up_row(label: str, c: CatchUp) -> Row:
    """A catch-up of a few thousand events is bound by its fixed cost (opening the
    file, joins with the whole catalog, the commit), not by a rate: shown as its
    time, with the rate for reference, and not scored against the rate target."""
    seconds = statistics.median(c.seconds)
    return Row(f"{label} ({statistics.median(c.events):,.0f} events, median of "
               f"{len(c.events)})", f"{seconds * 1000:,.0f} ms ({rate(c.rate)})",
               "(latency)", "")


def latency_row(t: Timing, target_ms: float | None) -> Row:
    figure = f"p50 {millis(t.p50)}, p95 {millis(t.p95)} (n={len(t.samples_ns)})"
    if target_ms is None:
        return Row(t.name, figure)
    return Row(t.name, figure, f"< {target_ms:g} ms (p50)", yes_no(t.p50 / 1e6 < target_ms))


def busy_warning(info: dict[str, Any]) -> str:
    """A warning when other processes already use a good part of the CPUs."""
    try:
        one_minute = float(str(info["load_average_start"]).split()[0])
    except (ValueError, IndexError):
        return ""
    cores = info.get("usable_cores") or info.get("cores") or 1
    if one_minute < 0.5 * cores:
        return ""
    return (f"the host is busy (load average {one_minute:.2f} on {cores} cores before we "
            "start): absolute figures are pessimistic, compare medians and ratios")


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


# --------------------------------------------------------------------------- main


def build_catalog(tmp: Path, cfg: Config, content: Content) -> tuple[Path, Fill]:
    path = tmp / "catalog.db"
    keys = [catalog_key(c) for c in range(cfg.conversations)]
    result = fill(path, keys, lambda c: (catalog_conversation(content, c, cfg.users), 0))
    print(f"  catalog store: {result.conversations:,} conversations, {result.events:,} "
          f"events in {result.seconds:.1f} s ({result.events_per_s:,.0f} events/s, "
          f"{result.conversations / result.seconds:,.0f} conversations/s); "
          f"{disk_mb(path):,.0f} MB", flush=True)
    return path, result


def build_telemetry(tmp: Path, cfg: Config, content: Content) -> tuple[Path, Fill]:
    path = tmp / "telemetry.db"
    keys = [f"bench:telemetry:{c}" for c in range(cfg.telemetry_conversations)]
    result = fill(path, keys, lambda c: telemetry_conversation(
        content, c, cfg.users, cfg.attempts_per_conversation))
    print(f"  telemetry store: {result.conversations:,} conversations, {result.attempts:,} "
          f"resume attempts, {result.events:,} events in {result.seconds:.1f} s "
          f"({result.events_per_s:,.0f} events/s); {disk_mb(path):,.0f} MB", flush=True)
    return path, result


def run(cfg: Config) -> None:
    started = time.perf_counter()
    stamp = meta.begin("views", cfg.mode == "quick")
    info = machine()
    info["duckdb"] = _duckdb_version()
    info["load_average_start"] = load_average()
    print(f"convlog views benchmark ({cfg.mode}: {cfg.conversations:,} conversations, "
          f"{cfg.telemetry_conversations * cfg.attempts_per_conversation:,} resume attempts"
          + ("; QUICK mode: scaled down 10x, the targets are stated for the full sizes"
             if cfg.mode == "quick" else "") + ")")
    for k, v in info.items():
        print(f"  {k:18} {v}")
    busy = busy_warning(info)
    if busy:
        print(f"  WARNING: {busy}")
    content = Content.make(7)
    payload: dict[str, Any] = {"mode": cfg.mode, "utc": datetime.now(UTC).isoformat(),
                               "machine": info, "config": asdict(cfg),
                               "targets": {"catch_up_events_per_s": CATCHUP_TARGET,
                                           "catalog_ms": CATALOG_TARGET_MS,
                                           "telemetry_ms": TELEMETRY_TARGET_MS}}
    with tempfile.TemporaryDirectory(prefix="convlog-bench-views-") as tmp_name:
        tmp = Path(tmp_name)
        print("\n1. catalog store: filling...", flush=True)
        path, catalog_fill = build_catalog(tmp, cfg, content)
        topics = topic_counts(path)
        print("  events by topic: " + ", ".join(f"{t} {n:,}" for t, n in topics.items()))
        rebuild_mib = rebuild_peak_rss_mib(path)
        print(f"  peak resident memory of a rebuild in a new process: {rebuild_mib:,.0f} MiB",
              flush=True)
        log = convlog.open(sqlite_url(path))
        print("  full catch-ups (application(log).catalog.rebuild):", flush=True)
        full = full_catch_ups(log, cfg.catchup_repeats, "catalog full")
        print(f"  incremental catch-ups ({cfg.incremental_events:,} new events each):",
              flush=True)
        incremental, _ = incremental_catch_ups(log, cfg, content)
        print("  catalog and cost queries...", flush=True)
        sessions_count = len(log.conversations(user=cfg.user))
        queries = catalog_queries(log, cfg)
        store_events = application(log).store.index.max_notification_id() or 0
        duckdb_mb = disk_mb(path.with_suffix(".duckdb"))
        log.close()
        payload["catalog"] = {
            "fill": asdict(catalog_fill), "topics": topics, "events_in_log": store_events,
            "sqlite_mb": disk_mb(path), "duckdb_mb": duckdb_mb,
            "rebuild_peak_rss_mib": rebuild_mib, "full_catch_up": asdict(full),
            "incremental_catch_up": asdict(incremental),
            "sessions_rows_for_user": sessions_count,
            "queries": [asdict(q) | {"p50_ns": q.p50, "p95_ns": q.p95} for q in queries]}

        print("\n2. telemetry store: filling...", flush=True)
        tpath, telemetry_fill = build_telemetry(tmp, cfg, content)
        ttopics = topic_counts(tpath)
        print("  events by topic: " + ", ".join(f"{t} {n:,}" for t, n in ttopics.items()))
        log = convlog.open(sqlite_url(tpath))
        print("  full catch-ups (application(log).catalog.rebuild):", flush=True)
        tfull = full_catch_ups(log, cfg.telemetry_catchup_repeats, "telemetry full",
                               budget_s=45)
        print("  telemetry queries...", flush=True)
        tqueries = telemetry_queries(log, cfg)
        attempts_rows = _count(log, "SELECT count(*) FROM resume_events "
                                    "WHERE kind = 'attempted'")
        strategy_rows: list[Any] = (
            [msgspec.structs.asdict(r) for r in log.telemetry(by="strategy")]
            if hasattr(log, "telemetry") else [])
        log.close()
        payload["telemetry"] = {
            "fill": asdict(telemetry_fill), "topics": ttopics,
            "attempted_rows_in_views": attempts_rows,
            "sqlite_mb": disk_mb(tpath), "duckdb_mb": disk_mb(tpath.with_suffix(".duckdb")),
            "full_catch_up": asdict(tfull),
            "queries": [asdict(q) | {"p50_ns": q.p50, "p95_ns": q.p95} for q in tqueries],
            "by_strategy": strategy_rows}

    print("\n3. the catalog's first page from 1k to "
          f"{cfg.scale_sizes[-1] // 1000}k conversations (filled directly)...", flush=True)
    scale = catalog_scale.measure(cfg.scale_sizes)
    payload["catalog_scale"] = scale

    rows = [catch_up_row("catch-up, catalog mix, from zero", full),
            small_catch_up_row(f"catch-up, {cfg.incremental_events // 1000}k new events "
                               f"onto {catalog_fill.events // 1000}k", incremental),
            catch_up_row("catch-up, resume telemetry events, from zero", tfull),
            Row("peak resident memory of a catalog rebuild (new process)",
                f"{rebuild_mib:,.0f} MiB", "", "")]
    for q in queries:
        headline = q.name == f'log.conversations(user="{cfg.user}")'
        rows.append(latency_row(q, CATALOG_TARGET_MS if headline else None))
    for q in tqueries:
        target = TELEMETRY_TARGET_MS if "open connection" not in q.name else None
        rows.append(latency_row(q, target))
    if not tqueries:
        rows.append(Row('log.telemetry(by="strategy")', "not available",
                        f"< {TELEMETRY_TARGET_MS:g} ms", "n/a"))
    rows.extend(Row(*r) for r in catalog_scale.rows(scale))

    print(f"\n{cfg.mode} mode: catalog store {catalog_fill.events:,} events "
          f"({cfg.conversations:,} conversations, {sessions_count} active for {cfg.user}); "
          f"telemetry store {telemetry_fill.events:,} events ({telemetry_fill.attempts:,} "
          f"resume attempts, {attempts_rows:,} attempted rows in the views);\nquery figures: "
          f"up to {cfg.query_runs} runs (costs {cfg.cost_runs}, telemetry "
          f"{cfg.telemetry_runs}; fewer, at least 3, when a query is slow)\n")
    print_table(["workload", "figure", "target", "met?"], [list(asdict(r).values())
                                                             for r in rows])
    pace = PACE.summary()
    info["load_average_end"] = load_average()
    print(f"\nhost pace: a fixed CPU loop took {pace['min_ms']:.2f} ms at best, median "
          f"{pace['median_ms']:.2f}, p90 {pace['p90_ms']:.2f}, worst {pace['max_ms']:.2f} "
          f"({pace['probes']:.0f} probes); load average {info['load_average_start']} at "
          f"the start, {info['load_average_end']} at the end")
    if busy:
        print(f"WARNING: {busy}")
    if not (catalog_fill.clock_simulated and telemetry_fill.clock_simulated):
        print("note: the clock could not be simulated: every event carries the real time")
    missed = [r.workload for r in rows if r.met == "NO"]
    elapsed = time.perf_counter() - started
    print(f"\ntargets missed: {', '.join(missed) if missed else 'none'}")
    payload |= {"elapsed_s": elapsed, "host_pace": pace,
                "table": [asdict(r) for r in rows], "missed": missed}
    out = stamp.save(payload, host_pace=pace)
    print(f"saved {out.relative_to(REPO)} ({elapsed:.0f} s)")


def _duckdb_version() -> str:
    return str(duckdb.__version__)


def _count(log: convlog.ConversationLog, sql: str) -> int:
    with application(log).analytics.views.connect():
        rows = application(log).analytics.views.query(sql)[1]
    return int(rows[0][0])


# -------------------------------------------------------------------------- profile


def profile(cfg: Config, workload: str, top: int) -> None:
    """cProfile one workload on a freshly filled store of `cfg`'s size."""
    content = Content.make(7)
    with tempfile.TemporaryDirectory(prefix="convlog-bench-views-") as tmp_name:
        tmp = Path(tmp_name)
        if workload == "telemetry":
            path, _ = build_telemetry(tmp, cfg, content)
        else:
            path, _ = build_catalog(tmp, cfg, content)
        log = convlog.open(sqlite_url(path))
        if workload != "catchup":
            application(log).catalog.refresh(progress=False)
        call: Callable[[], Any] = {
            "catchup": lambda: application(log).catalog.rebuild(progress=False),
            "sessions": lambda: [log.conversations(user=cfg.user) for _ in range(cfg.query_runs)],
            "telemetry": lambda: [log.telemetry(by=by) for by in TELEMETRY_GROUPS],
        }[workload]
        profiler = cProfile.Profile()
        start = time.perf_counter()
        profiler.enable()
        call()
        profiler.disable()
        print(f"\n{workload} under cProfile: {time.perf_counter() - start:.2f} s\n")
        log.close()
    stats = pstats.Stats(profiler)
    ours = r"adapters|projections|domain|duckdb|sqlite|eventsourcing|concurrent"
    stats.sort_stats("cumulative").print_stats(ours, top)
    stats.sort_stats("tottime").print_stats(top)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true",
                        help="10k conversations, 100k resume attempts (< 1 minute)")
    parser.add_argument("--profile", choices=("catchup", "sessions", "telemetry"),
                        help="cProfile one workload instead")
    parser.add_argument("--top", type=int, default=30, help="rows of --profile output")
    args = parser.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    if args.profile:
        profile(cfg, args.profile, args.top)
        return
    run(cfg)


if __name__ == "__main__":
    main()
