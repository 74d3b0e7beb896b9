"""convlog side by side with the stores agent developers pick instead, in ONE run.

Run with ``make bench-peers`` (it creates the separate benchmark venv ``.venv-bench``,
see ``bench/peers_setup.sh``), or ``.venv-bench/bin/python -m bench.peers [--quick]``.
The peers are never runtime dependencies of convlog: they live in ``.venv-bench``
only, pinned in ``bench/requirements-peers.txt``. These are measurements, not tests:
nothing fails; the program prints a table of medians with every peer's cost relative
to convlog, says which targets are met, and writes every number to
``bench/results/peers-<UTC date>.json`` (``-quick.json`` for --quick; runs before
2026-11-25 are ``<UTC date>.json``): the headline comparison, beside the
``<program>-<UTC date>.json`` files of convlog's own benchmarks.

Systems, each on its own SQLite FILE, all in WAL mode with ``synchronous=NORMAL``
(a commit survives a killed process; only a power cut or an OS crash can lose it):

* convlog: ``conv.append``/``conv.append_turn``, ``conv.messages(last=20)``,
  ``conv.context(budget=Budget(tokens=10_000, messages=1_000))`` (xml text). Its
  defaults are WAL + NORMAL.
* raw sqlite3, the floor: one table ``messages(conversation, seq, message JSON)``
  keyed by (conversation, seq); one transaction per turn; reads page the tail.
* OpenAI Agents SDK ``SQLiteSession`` (openai-agents): ``add_items``,
  ``get_items(limit=20)``; no token budget, so the context is ``get_items(limit=n)``
  with n doubling from 64 until the newest items fill the budget, trimmed newest
  first. It sets WAL itself; NORMAL is set by a subclass's ``_configure_connection``
  (its default is sqlite's FULL). Its API is async only: every call is awaited
  inside one event loop (each call hops to a worker thread, as in production).
* LangChain ``SQLChatMessageHistory`` (langchain-community, on SQLAlchemy):
  ``add_message``/``add_messages``; ``messages`` (it can only load the whole
  session) then ``[-20:]``; context = ``trim_messages(messages, strategy="last",
  max_tokens=10_000)``. WAL + NORMAL set by a SQLAlchemy ``connect`` listener (its
  default is a rollback journal with FULL).
* LangGraph ``SqliteSaver`` (langgraph-checkpoint-sqlite) behind a real
  ``StateGraph``: a ``messages`` channel with the ``add_messages`` reducer (as in
  ``MessagesState``) and ONE node that appends the turn given as input; one
  ``invoke`` per turn, default durability ("async": flushed before invoke returns).
  Reads go through ``graph.get_state(config).values["messages"]`` then ``[-20:]`` or
  ``trim_messages``. It sets WAL itself; NORMAL is set on the connection it is given.

Token counts for the peers' trimming: tiktoken's o200k_base, the very counter convlog
uses (loaded from the same offline cache), counting each message's text.

Workloads (sizes for --quick are smaller, see QUICK below):

1. append 10,000 messages one by one, and as turns of 10 (messages/s). All systems
   take turns in chunks of a few hundred messages (rotating who goes first), so that
   the host's speed swings hit all alike; ``repeats`` repeats on fresh files; the
   ratio is the median of per-repeat ratios. A system past its time cap (60 s in full
   mode) stops: "did not finish" with the size it reached.
2. read the last 20 messages, and build a 10,000-token context, at 1k, 10k and 100k
   messages (median ms per call). The files are filled with turns of 1,000 messages
   (LangGraph: ONE invoke carrying all of them, since filling it turn by turn is
   quadratic); calls go round-robin over the systems, each capped in count and time,
   with a garbage collection before each call (outside the timer).
3. cold start at 10k messages: a NEW process imports the library, opens the file and
   builds the first context; measured inside the child from just before its imports
   (the interpreter's own start-up, the same for all, is reported apart as wall time).
4. bytes on disk per message after workload 1 in turns of 10, WAL checkpointed
   (``PRAGMA wal_checkpoint(TRUNCATE)``): main file + -wal + -shm.
5. peak memory: the peak resident set (VmHWM, i.e. ru_maxrss without what Linux
   carries over from the parent across exec) of a new process that appends 10,000
   messages in turns of 10, including the interpreter and imports, which are also
   reported alone (peak after import and open).
6. appends one by one from a fresh process's first append (issue 45): a NEW process
   per system imports, opens a new file, then appends ``append_n`` messages one by
   one, timed from just before its first append (import and open excluded, the first
   append included); the first append is also reported alone. The systems' processes
   alternate, ``cold_repeats`` times; medians, and the median of per-round ratios.
   convlog's targets here: <= 1.5x raw sqlite3's time, the first append <= 20 ms.

``--profile WORKLOAD`` runs convlog's side of one workload under cProfile instead.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import cache
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypedDict, get_type_hints

from convlog.services.log import application

if TYPE_CHECKING:
    from bench.core import PaceMeter

# Only the standard library is imported at module level: a cold-start child process
# imports this module first, and must not get any system's imports for free.

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
KEY = "bench:peers"
ENCODING = "o200k_base"

# ~200 characters per message with its prefix, like a typical chat line (as bench.core).
CONTENT = (
    "Can you check why the nightly export job skipped the eu-west shard again? The log "
    "shows a timeout after 30 s on the second page; last week we raised the limit to 60 s, "
    "so something else is off."
)

Msg = tuple[str, str, str]  # (id, role, text)

# ---------------------------------------------------------------------------- config


@dataclass(frozen=True)
class Config:
    mode: str
    repeats: int  # append repeats (median reported)
    append_n: int  # messages per append workload
    chunk: int  # messages per system per interleaving round
    read_sizes: tuple[int, ...]  # conversation lengths for the read workloads
    read_calls: int  # timed calls per system, workload and size (at most)
    read_seconds: float  # ... and at most this much time per system (at least one call)
    cap_seconds: float  # time cap per system and workload: past it, "did not finish"
    cold_size: int  # conversation length for the cold start
    cold_repeats: int
    memory_n: int  # messages appended by the peak-memory child
    turn_size: int = 10
    fill_turn: int = 1000
    context_tokens: int = 10_000
    last_n: int = 20


FULL = Config(mode="full", repeats=3, append_n=10_000, chunk=500,
              read_sizes=(1000, 10_000, 100_000), read_calls=40, read_seconds=10.0,
              cap_seconds=60.0, cold_size=10_000, cold_repeats=5, memory_n=10_000)
QUICK = Config(mode="quick", repeats=1, append_n=1000, chunk=250,
               read_sizes=(1000, 5000), read_calls=10, read_seconds=1.5,
               cap_seconds=8.0, cold_size=1000, cold_repeats=1, memory_n=1000)

APPEND_VS_RAW_TARGET = 3.0  # convlog's time per appended message / raw sqlite3's
SINGLE_APPEND_VS_RAW_TARGET = 2.5  # the same, appended one by one (issue 30)
FRESH_VS_RAW_TARGET = 1.5  # appended one by one from a fresh process's first append (45)
FIRST_APPEND_TARGET_MS = 20.0  # a fresh process's first append (issue 45)

# ------------------------------------------------------------------------- helpers


def message_text(position: int) -> str:
    return f"message {position}: {CONTENT}"


def make_turn(first: int, size: int) -> list[Msg]:
    """Messages at positions first..first+size-1: users on even, assistants on odd."""
    return [(f"m{p}", "user" if p % 2 == 0 else "assistant", message_text(p))
            for p in range(first, first + size)]


def short(n: int) -> str:
    """1000 -> '1k', 100000 -> '100k'."""
    return f"{n // 1000}k" if n % 1000 == 0 else str(n)


@cache
def _encoder() -> Any:
    """tiktoken's o200k_base. convlog put its vocabulary in tiktoken's cache (see
    `seed_tokenizer`), so this never downloads anything."""
    return import_module("tiktoken").get_encoding(ENCODING)


def count_tokens(text: str) -> int:
    """The same count as convlog.accounting.tokens.count_tokens(text) for user/unknown models."""
    return len(_encoder().encode_ordinary(text))


def seed_tokenizer() -> str:
    """Let convlog place o200k_base in tiktoken's cache (offline); return the backend."""
    from convlog.accounting.tokens import encoding_backend

    backend = encoding_backend(ENCODING)
    ours = import_module("convlog.accounting.tokens")
    assert count_tokens(CONTENT) == ours.count_tokens(CONTENT)[0]
    return backend


def newest_within(texts_newest_first: Iterable[str], budget: int) -> tuple[int, int, bool]:
    """Take texts newest first while they fit `budget` tokens: (messages, tokens, full)
    where `full` says the budget stopped it (rather than running out of texts)."""
    count = tokens = 0
    for text in texts_newest_first:
        n = count_tokens(text)
        if tokens + n > budget:
            return count, tokens, True
        count, tokens = count + 1, tokens + n
    return count, tokens, False


def sqlite_files(path: Path) -> list[Path]:
    return [p for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists()]


def bytes_on_disk(path: Path) -> int:
    """File sizes after a WAL checkpoint (main + -wal + -shm)."""
    con = sqlite3.connect(path)
    try:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return sum(p.stat().st_size for p in sqlite_files(path))
    finally:
        con.close()


# -------------------------------------------------------------------------- stores


class Store:
    """One conversation in one SQLite file, written and read through one system.
    `count` is the number of messages this object stored (positions are 1-based):
    files are new, except in cold starts, which only read."""

    name: ClassVar[str]
    label: ClassVar[str]
    durability: ClassVar[str]
    last_how: ClassVar[str]
    context_how: ClassVar[str]
    fill_turn: ClassVar[int | None] = None  # None: the benchmark's default fill turn

    def __init__(self, path: Path) -> None:
        self.path = path
        self.count = 0

    @classmethod
    def load(cls) -> None:
        """Import what this system needs (done once; timed apart in a cold start)."""

    def append_turn(self, turn: Sequence[Msg]) -> None:
        raise NotImplementedError

    def append(self, count: int, turn_size: int, deadline: float) -> int:
        """Append `count` messages in turns of `turn_size`, one transaction per turn,
        stopping early past `deadline` (perf_counter). Returns how many were appended."""
        end = self.count + count
        while self.count < end and time.perf_counter() < deadline:
            size = min(turn_size, end - self.count)
            self.append_turn(make_turn(self.count + 1, size))
            self.count += size
        return count - (end - self.count)

    def last(self, n: int) -> list[str]:
        """The texts of the newest `n` messages, oldest first."""
        raise NotImplementedError

    def context(self, tokens: int) -> tuple[int, int]:
        """Build the newest history that fits `tokens`: (messages, tokens)."""
        raise NotImplementedError

    def timed(self, op: str, arg: int) -> tuple[int, Any]:
        """One call of `op` ("last" or "context"), timed in ns, and its result."""
        fn: Callable[[int], Any] = getattr(self, op)
        start = time.perf_counter_ns()
        result = fn(arg)
        return time.perf_counter_ns() - start, result

    def pragmas(self) -> dict[str, Any]:
        """journal_mode and synchronous as seen on the connection that writes."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


def _pragmas(con: Any) -> dict[str, Any]:
    return {"journal_mode": con.execute("PRAGMA journal_mode").fetchone()[0],
            "synchronous": con.execute("PRAGMA synchronous").fetchone()[0]}


class ConvlogStore(Store):
    name = "convlog"
    label = "convlog"
    durability = "WAL, synchronous=NORMAL (its defaults)"
    last_how = "conv.messages(last=20)"
    context_how = ("conv.context(budget=Budget(tokens=10_000, messages=1_000)): "
                   "xml text, the whole formatted text counted")
    convlog: ClassVar[Any] = None
    open_options: ClassVar[dict[str, Any]] = {}

    @classmethod
    def load(cls) -> None:
        if cls.convlog is None:
            cls.convlog = import_module("convlog")

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.load()
        self.log = self.convlog.open(f"sqlite:///{path}", **self.open_options)
        self.conv = self.log.conversation(KEY)  # what a host calls on every start
        # The default Budget also caps messages at 30, which binds long before 10,000
        # tokens with ~50-token messages: raise it so that the tokens decide.
        self.budget_messages = 1000

    def _message(self, m: Msg) -> Any:
        make = self.convlog.user if m[1] == "user" else self.convlog.assistant
        return make(m[2], id=m[0])

    def append_turn(self, turn: Sequence[Msg]) -> None:
        if len(turn) == 1:  # the single-message API, as a host calls it
            self.conv.append(self._message(turn[0]))
        else:
            self.conv.append_turn([self._message(m) for m in turn])

    def last(self, n: int) -> list[str]:
        return [m.content for m in self.conv.messages(last=n)]

    def context(self, tokens: int) -> tuple[int, int]:
        budget = self.convlog.Budget(tokens=tokens, messages=self.budget_messages)
        built = self.conv.context(budget=budget)
        return built.message_count, built.tokens

    def pragmas(self) -> dict[str, Any]:
        recorder: Any = application(self.log).store.recorder
        writer = recorder._writer  # convlog's write connection (SQLite)
        return _pragmas(writer) if writer is not None else {}

    def close(self) -> None:
        self.log.close()


class ConvlogHostCountsStore(ConvlogStore):
    """convlog when the host gives each message's token count itself (its model's own
    tokenizer, or the usage the model reported) and opens the log with
    ``preload_tokenizer=False``: convlog then loads no tokenizer. Measured for memory
    only, to show what the exact o200k_base count costs there; the bench's stand-in
    for the host's count is len(text) // 4."""

    name = "convlog-host-counts"
    label = "convlog, token counts given by the host"
    open_options: ClassVar[dict[str, Any]] = {"preload_tokenizer": False}

    def _message(self, m: Msg) -> Any:
        make = self.convlog.user if m[1] == "user" else self.convlog.assistant
        return make(m[2], id=m[0], tokens=len(m[2]) // 4)


class RawStore(Store):
    name = "raw"
    label = "raw sqlite3"
    durability = "WAL, synchronous=NORMAL (set by hand)"
    last_how = "SELECT ... ORDER BY seq DESC LIMIT 20, json.loads"
    context_how = "tail pages of 256 rows, json.loads, tiktoken count per message"
    schema = ("CREATE TABLE IF NOT EXISTS messages (conversation TEXT NOT NULL, "
              "seq INTEGER NOT NULL, message TEXT NOT NULL, PRIMARY KEY (conversation, seq))")
    page = 256

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.con = sqlite3.connect(path, isolation_level=None)
        self.con.execute("PRAGMA journal_mode=WAL")
        self.con.execute("PRAGMA synchronous=NORMAL")
        self.con.execute(self.schema)

    def append_turn(self, turn: Sequence[Msg]) -> None:
        rows = [(KEY, self.count + i + 1,
                 json.dumps({"id": m[0], "role": m[1], "content": m[2]}))
                for i, m in enumerate(turn)]
        self.con.execute("BEGIN")
        self.con.executemany("INSERT INTO messages VALUES (?, ?, ?)", rows)
        self.con.execute("COMMIT")

    def _tail(self, limit: int, below: int = sys.maxsize) -> list[tuple[int, str]]:
        """(seq, text) of the newest `limit` messages before `below`, newest first."""
        rows = self.con.execute(
            "SELECT seq, message FROM messages WHERE conversation = ? AND seq < ? "
            "ORDER BY seq DESC LIMIT ?", (KEY, below, limit)).fetchall()
        return [(seq, json.loads(message)["content"]) for seq, message in rows]

    def last(self, n: int) -> list[str]:
        return [text for _, text in reversed(self._tail(n))]

    def context(self, tokens: int) -> tuple[int, int]:
        def pages() -> Iterable[str]:
            below = sys.maxsize
            while True:
                rows = self._tail(self.page, below)
                yield from (text for _, text in rows)
                if len(rows) < self.page:
                    return
                below = rows[-1][0]
        count, used, _ = newest_within(pages(), tokens)
        return count, used

    def pragmas(self) -> dict[str, Any]:
        return _pragmas(self.con)

    def close(self) -> None:
        self.con.close()


class OpenAIStore(Store):
    name = "openai"
    label = "OpenAI SQLiteSession"
    durability = ("WAL (its default), synchronous=NORMAL set in a subclass's "
                  "_configure_connection (its default: FULL)")
    last_how = "await get_items(limit=20)"
    context_how = ("closest offered: await get_items(limit=n), n doubling from 64, "
                   "trimmed newest first with tiktoken counts (no token budget)")
    session_class: ClassVar[Any] = None

    @classmethod
    def load(cls) -> None:
        if cls.session_class is not None:
            return
        base: Any = import_module("agents").SQLiteSession

        def configure(conn: sqlite3.Connection) -> None:
            base._configure_connection(conn)  # WAL, retried while another opens it
            conn.execute("PRAGMA synchronous=NORMAL")

        cls.session_class = type("NormalSQLiteSession", (base,),
                                 {"_configure_connection": staticmethod(configure)})

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.load()
        self.session = self.session_class(KEY, str(path))
        self.loop = asyncio.new_event_loop()

    def append(self, count: int, turn_size: int, deadline: float) -> int:
        async def run() -> int:
            end = self.count + count
            while self.count < end and time.perf_counter() < deadline:
                size = min(turn_size, end - self.count)
                await self.session.add_items(
                    [{"role": m[1], "content": m[2]} for m in make_turn(self.count + 1, size)])
                self.count += size
            return count - (end - self.count)
        return self.loop.run_until_complete(run())

    async def _last(self, n: int) -> list[str]:
        return [item["content"] for item in await self.session.get_items(limit=n)]

    async def _context(self, tokens: int) -> tuple[int, int]:
        limit = 64
        while True:
            items = await self.session.get_items(limit=limit)
            count, used, full = newest_within((i["content"] for i in reversed(items)), tokens)
            if full or len(items) < limit:
                return count, used
            limit *= 2

    def last(self, n: int) -> list[str]:
        return self.loop.run_until_complete(self._last(n))

    def context(self, tokens: int) -> tuple[int, int]:
        return self.loop.run_until_complete(self._context(tokens))

    def timed(self, op: str, arg: int) -> tuple[int, Any]:
        """Timed inside the event loop, as a host's coroutine would await it."""
        fn = self._last if op == "last" else self._context

        async def run() -> tuple[int, Any]:
            start = time.perf_counter_ns()
            result = await fn(arg)
            return time.perf_counter_ns() - start, result
        return self.loop.run_until_complete(run())

    def pragmas(self) -> dict[str, Any]:
        async def run() -> dict[str, Any]:
            def read() -> dict[str, Any]:
                with self.session._locked_connection() as conn:
                    return _pragmas(conn)
            return await asyncio.to_thread(read)
        return self.loop.run_until_complete(run())

    def close(self) -> None:
        self.session.close()
        self.loop.close()


def _messages_of(turn: Sequence[Msg], human: Any, ai: Any) -> list[Any]:
    return [(human if m[1] == "user" else ai)(content=m[2], id=m[0]) for m in turn]


def _count_messages(messages: Sequence[Any]) -> int:
    """trim_messages' token_counter: the tiktoken count of each message's text."""
    return sum(count_tokens(m.content) for m in messages)


class LangChainStore(Store):
    name = "langchain"
    label = "LangChain SQLChatMessageHistory"
    durability = ("WAL + synchronous=NORMAL set by a SQLAlchemy connect listener "
                  "(its default: rollback journal, FULL)")
    last_how = "history.messages[-20:] (it can only load the whole session)"
    context_how = ("closest offered: trim_messages(history.messages, strategy='last', "
                   "max_tokens=10_000, token_counter=tiktoken counts)")
    modules: ClassVar[dict[str, Any]] = {}

    @classmethod
    def load(cls) -> None:
        if cls.modules:
            return
        with warnings.catch_warnings():  # "langchain-community is being sunset"
            warnings.simplefilter("ignore", DeprecationWarning)
            history = import_module("langchain_community.chat_message_histories")
        cls.modules.update(
            sqlalchemy=import_module("sqlalchemy"), history=history,
            messages=import_module("langchain_core.messages"))

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.load()
        sqlalchemy = self.modules["sqlalchemy"]
        self.engine = sqlalchemy.create_engine(f"sqlite:///{path}")

        def on_connect(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.execute("PRAGMA journal_mode=WAL")
            dbapi_connection.execute("PRAGMA synchronous=NORMAL")

        sqlalchemy.event.listen(self.engine, "connect", on_connect)
        self.history = self.modules["history"].SQLChatMessageHistory(
            session_id=KEY, connection=self.engine)
        messages = self.modules["messages"]
        self.human, self.ai, self.trim = (
            messages.HumanMessage, messages.AIMessage, messages.trim_messages)

    def append_turn(self, turn: Sequence[Msg]) -> None:
        messages = _messages_of(turn, self.human, self.ai)
        if len(messages) == 1:
            self.history.add_message(messages[0])
        else:
            self.history.add_messages(messages)

    def last(self, n: int) -> list[str]:
        return [m.content for m in self.history.messages[-n:]]

    def context(self, tokens: int) -> tuple[int, int]:
        kept = self.trim(self.history.messages, max_tokens=tokens, strategy="last",
                         token_counter=_count_messages)
        return len(kept), _count_messages(kept)

    def pragmas(self) -> dict[str, Any]:
        with self.engine.connect() as c:
            return _pragmas(c.connection.dbapi_connection)

    def close(self) -> None:
        self.history.session_maker.remove()
        self.engine.dispose()


class LangGraphStore(Store):
    name = "langgraph"
    label = "LangGraph SqliteSaver"
    durability = ("WAL (set by SqliteSaver.setup), synchronous=NORMAL on the connection "
                  "it is given (default: FULL); invoke durability 'async' (its default)")
    last_how = "graph.get_state(config).values['messages'][-20:]"
    context_how = ("closest offered: trim_messages(get_state(...).values['messages'], "
                   "strategy='last', max_tokens=10_000, token_counter=tiktoken counts)")
    fill_turn = 0  # fill in ONE invoke: turn by turn is quadratic
    modules: ClassVar[dict[str, Any]] = {}

    @classmethod
    def load(cls) -> None:
        if cls.modules:
            return
        cls.modules.update(graph=import_module("langgraph.graph"),
                           saver=import_module("langgraph.checkpoint.sqlite"),
                           messages=import_module("langchain_core.messages"))

    @classmethod
    def build_graph(cls) -> Any:
        """StateGraph(messages: add_messages, turn) whose one node appends the turn."""
        graph = cls.modules["graph"]
        # The messages channel exactly as in MessagesState (add_messages reducer).
        messages_type = get_type_hints(graph.MessagesState, include_extras=True)["messages"]
        typed_dict: Any = TypedDict
        state = typed_dict("State", {"messages": messages_type, "turn": list})
        turn_input = typed_dict("TurnInput", {"turn": list})

        def append(values: dict[str, Any]) -> dict[str, Any]:
            return {"messages": values["turn"]}

        builder = graph.StateGraph(state, input_schema=turn_input)
        builder.add_node("append", append)
        builder.add_edge(graph.START, "append")
        builder.add_edge("append", graph.END)
        return builder

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.load()
        self.con = sqlite3.connect(path, check_same_thread=False)
        self.con.execute("PRAGMA synchronous=NORMAL")
        saver = self.modules["saver"].SqliteSaver(self.con)
        self.graph = self.build_graph().compile(checkpointer=saver)
        self.config = {"configurable": {"thread_id": KEY}}
        messages = self.modules["messages"]
        self.human, self.ai, self.trim = (
            messages.HumanMessage, messages.AIMessage, messages.trim_messages)

    def _messages(self) -> list[Any]:
        values: dict[str, Any] = self.graph.get_state(self.config).values
        return list(values.get("messages", []))

    def append_turn(self, turn: Sequence[Msg]) -> None:
        self.graph.invoke({"turn": _messages_of(turn, self.human, self.ai)}, self.config)

    def last(self, n: int) -> list[str]:
        return [m.content for m in self._messages()[-n:]]

    def context(self, tokens: int) -> tuple[int, int]:
        kept = self.trim(self._messages(), max_tokens=tokens, strategy="last",
                         token_counter=_count_messages)
        return len(kept), _count_messages(kept)

    def pragmas(self) -> dict[str, Any]:
        return _pragmas(self.con)

    def close(self) -> None:
        self.con.close()


STORES: dict[str, type[Store]] = {s.name: s for s in (
    ConvlogStore, RawStore, OpenAIStore, LangChainStore, LangGraphStore)}
PEERS = [name for name in STORES if name != "convlog"]
# Measured beside the contest, not in it (peak memory only).
VARIANTS: dict[str, type[Store]] = {ConvlogHostCountsStore.name: ConvlogHostCountsStore}
ALL_STORES = {**STORES, **VARIANTS}


def open_store(name: str, path: Path) -> Store:
    return ALL_STORES[name](path)


# ------------------------------------------------------------ 1. append workloads


@dataclass
class AppendResult:
    """Messages/s of each repeat per system; a system that hit the cap has `dnf`."""

    turn_size: int
    rates: dict[str, list[float]] = field(default_factory=dict)
    dnf: dict[str, dict[str, float]] = field(default_factory=dict)  # reached, seconds
    ratio_to_convlog: dict[str, list[float]] = field(default_factory=dict)  # time ratio
    bytes_per_message: dict[str, float] = field(default_factory=dict)
    bytes_at: dict[str, int] = field(default_factory=dict)  # messages measured
    pragmas: dict[str, dict[str, Any]] = field(default_factory=dict)

    def median_rate(self, name: str) -> float:
        return statistics.median(self.rates[name])

    def ratio(self, name: str) -> float:
        return statistics.median(self.ratio_to_convlog[name])


def measure_appends(cfg: Config, systems: Sequence[str], turn_size: int, pace: PaceMeter,
                    measure_disk: bool) -> AppendResult:
    """`cfg.repeats` repeats on fresh files; systems take turns chunk by chunk."""
    result = AppendResult(turn_size=turn_size)
    active = list(systems)
    for repeat in range(cfg.repeats):
        with tempfile.TemporaryDirectory(prefix="convlog-peers-") as tmp:
            stores = {name: open_store(name, Path(tmp) / f"{name}.db") for name in active}
            elapsed = dict.fromkeys(active, 0.0)
            running = list(active)
            gc.collect()
            for c, done in enumerate(range(0, cfg.append_n, cfg.chunk)):
                count = min(cfg.chunk, cfg.append_n - done)
                pace.probe()
                order = running[c % len(running):] + running[:c % len(running)]
                for name in order:
                    start = time.perf_counter()
                    stores[name].append(count, turn_size,
                                        start + cfg.cap_seconds - elapsed[name])
                    elapsed[name] += time.perf_counter() - start
                    if elapsed[name] >= cfg.cap_seconds:
                        result.dnf[name] = {"reached": stores[name].count,
                                            "seconds": elapsed[name], "target": cfg.append_n}
                        running.remove(name)
                if not running:
                    break
            for name, store in stores.items():
                if repeat == 0:
                    result.pragmas[name] = store.pragmas()
                if name not in result.dnf:
                    result.rates.setdefault(name, []).append(store.count / elapsed[name])
                store.close()
                if measure_disk and repeat == 0:
                    path = Path(tmp) / f"{name}.db"
                    result.bytes_at[name] = store.count
                    result.bytes_per_message[name] = bytes_on_disk(path) / store.count
            if "convlog" in result.rates:
                ours = result.rates["convlog"][-1]
                for name in active:
                    if name != "convlog" and name not in result.dnf:
                        result.ratio_to_convlog.setdefault(name, []).append(
                            ours / result.rates[name][-1])
        active = [name for name in active if name not in result.dnf]
        print(f"  appends in turns of {turn_size}: repeat {repeat + 1}/{cfg.repeats} done",
              flush=True)
    return result


# -------------------------------------------------------------- 2. read workloads


@dataclass
class ReadPoint:
    """Per-call timings of one system, workload and size."""

    system: str
    workload: str  # "last" | "context"
    size: int
    samples_ns: list[int] = field(default_factory=list)
    result: list[int] = field(default_factory=list)  # context: (messages, tokens)
    dnf: dict[str, float] | None = None  # the fill did not finish

    @property
    def median_ns(self) -> float:
        return float(statistics.median(self.samples_ns))


def fill(store: Store, size: int, cfg: Config) -> tuple[bool, float]:
    """Grow the conversation to `size` messages with large turns, under the time cap."""
    turn = cfg.fill_turn if store.fill_turn is None else store.fill_turn or size
    start = time.perf_counter()
    store.append(size - store.count, turn, start + cfg.cap_seconds)
    return store.count >= size, time.perf_counter() - start


def check_last(store: Store, texts: list[str], n: int) -> None:
    expected = [message_text(p) for p in range(store.count - n + 1, store.count + 1)]
    if texts != expected:
        raise AssertionError(f"{store.name}: last({n}) returned the wrong messages")


def measure_reads(cfg: Config, systems: Sequence[str], size: int, pace: PaceMeter,
                  cold: dict[str, list[dict[str, Any]]]) -> list[ReadPoint]:
    points: list[ReadPoint] = []
    with tempfile.TemporaryDirectory(prefix="convlog-peers-") as tmp:
        stores: dict[str, Store] = {}
        fill_dnf: dict[str, dict[str, float]] = {}
        for name in systems:
            store = open_store(name, Path(tmp) / f"{name}.db")
            done, seconds = fill(store, size, cfg)
            if done:
                stores[name] = store
            else:
                fill_dnf[name] = {"reached": store.count, "seconds": seconds, "target": size}
                store.close()
        print(f"  filled {short(size)}: " + ", ".join(
            f"{n} {'DNF' if n in fill_dnf else 'ok'}" for n in systems), flush=True)
        # Collect before every timed call, outside the timer, so that garbage one system
        # left (LangChain and LangGraph build 100k objects a call) is not collected
        # inside the next system's call; freezing what exists now keeps that cheap.
        gc.collect()
        gc.freeze()
        for workload, arg in (("last", cfg.last_n), ("context", cfg.context_tokens)):
            here = {name: ReadPoint(name, workload, size) for name in systems}
            for name, info in fill_dnf.items():
                here[name].dnf = info
            spent = dict.fromkeys(stores, 0.0)
            for name, store in stores.items():  # warm-up: connections, caches, tokenizer
                ns, result = store.timed(workload, arg)
                if ns > 0.5e9:  # too slow to waste: it is a sample
                    here[name].samples_ns.append(ns)
                    spent[name] += ns / 1e9
                if workload == "last":
                    check_last(store, result, arg)
                else:
                    here[name].result = list(result)
            for r in range(cfg.read_calls):
                pace.probe()
                names = [n for n in stores if len(here[n].samples_ns) < cfg.read_calls
                         and (spent[n] < cfg.read_seconds or not here[n].samples_ns)]
                if not names:
                    break
                for name in names[r % len(names):] + names[:r % len(names)]:
                    gc.collect()
                    ns, _ = stores[name].timed(workload, arg)
                    here[name].samples_ns.append(ns)
                    spent[name] += ns / 1e9
            points += here.values()
        gc.unfreeze()
        for store in stores.values():
            store.close()
        if size == cfg.cold_size:
            for _ in range(cfg.cold_repeats):
                for name in stores:
                    cold.setdefault(name, []).append(
                        cold_start(name, Path(tmp) / f"{name}.db", cfg.context_tokens))
    print(f"  reads at {short(size)} done", flush=True)
    return points


# --------------------------------------------------- 3. and 5. child processes


def child(args: Sequence[str], timeout: float) -> dict[str, Any]:
    start = time.perf_counter_ns()
    out = subprocess.run([sys.executable, "-m", "bench.peers", *args], cwd=REPO,
                         capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"bench.peers {' '.join(args)} failed:\n{out.stderr}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    result["wall_ns"] = time.perf_counter_ns() - start
    return result


def cold_start(name: str, path: Path, tokens: int) -> dict[str, Any]:
    return child(["--cold", name, str(path), str(tokens)], timeout=600)


def cold_main(name: str, path: str, tokens: int) -> None:
    """Child: import, open, first context, each timed; one JSON line on stdout."""
    t0 = time.perf_counter_ns()
    STORES[name].load()
    if name != "convlog":
        _encoder()  # the peers' token counter: loading it is part of their start
    t1 = time.perf_counter_ns()
    store = open_store(name, Path(path))
    t2 = time.perf_counter_ns()
    messages, used = store.context(tokens)
    t3 = time.perf_counter_ns()
    store.close()
    print(json.dumps({"import_ns": t1 - t0, "open_ns": t2 - t1, "context_ns": t3 - t2,
                      "total_ns": t3 - t0, "messages": messages, "tokens": used}))


def peak_memory(name: str, cfg: Config) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="convlog-peers-") as tmp:
        return child(["--memory", name, str(Path(tmp) / f"{name}.db"), str(cfg.memory_n),
                      str(cfg.turn_size), str(cfg.cap_seconds)], timeout=cfg.cap_seconds + 600)


def peak_rss_kib() -> int:
    """This process's peak resident set, KiB: VmHWM from /proc/self/status. (Linux's
    ru_maxrss survives exec: a child started by a big parent reports the parent's.)"""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def memory_main(name: str, path: str, n: int, turn_size: int, cap: float) -> None:
    """Child: peak RSS after imports+open, and after appending."""
    ALL_STORES[name].load()
    store = open_store(name, Path(path))
    base_kib = peak_rss_kib()
    start = time.perf_counter()
    store.append(n, turn_size, start + cap)
    seconds = time.perf_counter() - start
    peak_kib = peak_rss_kib()
    store.close()
    print(json.dumps({"base_kib": base_kib, "peak_kib": peak_kib, "reached": store.count,
                      "target": n, "seconds": seconds, "dnf": store.count < n}))


def fresh_main(name: str, path: str, n: int) -> None:
    """Child: import and open (untimed), then `n` appends one by one, timed from just
    before the first; one JSON line on stdout."""
    ALL_STORES[name].load()
    store = open_store(name, Path(path))
    turns = [make_turn(p, 1) for p in range(1, n + 1)]  # built before the clock
    start = time.perf_counter_ns()
    store.append_turn(turns[0])
    first = time.perf_counter_ns()
    store.count = 1
    for turn in turns[1:]:
        store.append_turn(turn)
        store.count += 1
    end = time.perf_counter_ns()
    store.close()
    print(json.dumps({"first_ns": first - start, "total_ns": end - start, "n": n}))


@dataclass
class FreshResult:
    """Per system, each round's fresh-process figures; per peer, convlog's time / its."""

    n: int
    rounds: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    ratio_to_raw: list[float] = field(default_factory=list)

    def median(self, name: str, key: str) -> float:
        return float(statistics.median(r[key] for r in self.rounds[name]))


def measure_fresh(cfg: Config, systems: Sequence[str]) -> FreshResult:
    """Workload 6: each round, one new process per system, in alternating order."""
    result = FreshResult(n=cfg.append_n)
    names = [s for s in systems if s in ("convlog", "raw")]
    for r in range(cfg.cold_repeats):
        here: dict[str, dict[str, Any]] = {}
        for name in names if r % 2 == 0 else names[::-1]:
            with tempfile.TemporaryDirectory(prefix="convlog-peers-") as tmp:
                here[name] = child(["--fresh", name, str(Path(tmp) / f"{name}.db"),
                                    str(cfg.append_n)], timeout=cfg.cap_seconds + 600)
            result.rounds.setdefault(name, []).append(here[name])
        if "raw" in here:
            result.ratio_to_raw.append(here["convlog"]["total_ns"] / here["raw"]["total_ns"])
    print("  appends from a fresh process done", flush=True)
    return result


def fresh_rows(result: FreshResult, n: str) -> list[Row]:
    """The two rows of workload 6: the rate, and the first append alone."""
    rates = {k: result.n / (result.median(k, "total_ns") / 1e9) for k in result.rounds}
    ratios = {"raw": 1 / statistics.median(result.ratio_to_raw)} if result.ratio_to_raw else {}
    rate_row = Row(f"append {n} one by one, from a fresh process's first append (msg/s)",
                   "append", {k: fmt_rate(v) for k, v in rates.items()}, ratios)
    first = {k: result.median(k, "first_ns") for k in result.rounds}
    first_row = Row("  of which: the first append", "cold",
                    {k: fmt_ms(v) for k, v in first.items()}, {})
    return [rate_row, first_row]


def fresh_verdicts(result: FreshResult) -> tuple[list[str], list[str]]:
    """(met, missed) of issue 45's two targets on workload 6."""
    met: list[str] = []
    missed: list[str] = []
    if result.ratio_to_raw:
        slower = statistics.median(result.ratio_to_raw)
        label = (f"within {FRESH_VS_RAW_TARGET:g}x of raw sqlite3 on appends one by one from "
                 f"a fresh process's first append ({slower:.2f}x)")
        (met if slower <= FRESH_VS_RAW_TARGET else missed).append(label)
    if "convlog" in result.rounds:
        first_ms = result.median("convlog", "first_ns") / 1e6
        label = (f"a fresh process's first append within {FIRST_APPEND_TARGET_MS:g} ms "
                 f"({first_ms:.2f} ms)")
        (met if first_ms <= FIRST_APPEND_TARGET_MS else missed).append(label)
    return met, missed


# ------------------------------------------------------------------------- report


def fmt_rate(x: float) -> str:
    return f"{x:,.0f}/s"


def fmt_ms(ns: float) -> str:
    ms = ns / 1e6
    return f"{ms:,.3f} ms" if ms < 1 else f"{ms:,.1f} ms" if ms < 100 else f"{ms:,.0f} ms"


def fmt_ratio(x: float) -> str:
    return f"{x:.2f}x" if x < 10 else f"{x:,.0f}x"


def dnf_cell(info: dict[str, float]) -> str:
    return f"DNF: {info['reached']:,.0f} of {info['target']:,.0f} in {info['seconds']:.0f} s"


@dataclass
class Row:
    """One workload: a cell per system; `ratios` are each system's cost / convlog's
    (time per message, time per call, bytes, memory): above 1, convlog is ahead."""

    workload: str
    kind: str  # "append" | "read" | "cold" | "disk" | "memory"
    cells: dict[str, str]
    ratios: dict[str, float]


def append_row(label: str, result: AppendResult, systems: Sequence[str]) -> Row:
    cells, ratios = {}, {}
    for name in systems:
        if name in result.dnf:
            cells[name] = dnf_cell(result.dnf[name])
            ratios[name] = float("inf")
            continue
        cells[name] = fmt_rate(result.median_rate(name))
        if name != "convlog" and "convlog" in result.rates:
            ratios[name] = result.ratio(name)
    return Row(label, "append", cells, ratios)


def read_row(label: str, points: list[ReadPoint], systems: Sequence[str]) -> Row:
    at = {p.system: p for p in points}
    cells, ratios = {}, {}
    ours = at["convlog"].median_ns if "convlog" in at and at["convlog"].samples_ns else None
    for name in systems:
        p = at.get(name)
        if p is None:
            continue
        if p.dnf is not None:
            cells[name] = "DNF: fill " + dnf_cell(p.dnf).removeprefix("DNF: ")
            ratios[name] = float("inf")
            continue
        cells[name] = fmt_ms(p.median_ns)
        if name != "convlog" and ours:
            ratios[name] = p.median_ns / ours
    return Row(label, "read", cells, ratios)


def value_row(label: str, kind: str, values: dict[str, float], fmt: Callable[[float], str],
              systems: Sequence[str], notes: dict[str, str] | None = None) -> Row:
    cells, ratios = {}, {}
    for name in systems:
        if name not in values:
            continue
        cells[name] = fmt(values[name]) + (notes or {}).get(name, "")
        if name != "convlog" and "convlog" in values:
            ratios[name] = values[name] / values["convlog"]
    return Row(label, kind, cells, ratios)


def table(rows: list[Row], systems: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    headers = ["workload", *(STORES[n].label for n in systems)]
    body = []
    for r in rows:
        line = [r.workload]
        for name in systems:
            cell = r.cells.get(name, "-")
            ratio = r.ratios.get(name)
            if ratio is not None and ratio != float("inf"):
                cell = f"{cell} ({fmt_ratio(ratio)})"
            line.append(cell)
        body.append(line)
    return headers, body


def markdown_table(headers: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    out = ["| " + " | ".join(headers) + " |",
           "| " + " | ".join(["---"] + ["---:"] * (len(headers) - 1)) + " |"]
    out += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(out)


def verdicts(rows: list[Row], appends: list[AppendResult]) -> tuple[list[str], list[str]]:
    """(met, missed) against the issue's targets."""
    met: list[str] = []
    missed: list[str] = []
    for r in rows:
        for name, ratio in r.ratios.items():
            if name == "raw":
                continue
            label = f"ahead of {STORES[name].label} on {r.workload}"
            (met if ratio > 1 else missed).append(
                label if ratio > 1 else f"{label} ({fmt_ratio(ratio)})")
    for result in appends:
        if "raw" in result.ratio_to_convlog:
            slower = 1 / result.ratio("raw")  # convlog's time / raw's time
            target = (SINGLE_APPEND_VS_RAW_TARGET if result.turn_size == 1
                      else APPEND_VS_RAW_TARGET)
            label = (f"within {target:g}x of raw sqlite3 on appends in turns "
                     f"of {result.turn_size} ({slower:.2f}x)")
            (met if slower <= target else missed).append(label)
    return met, missed


def machine_info() -> dict[str, Any]:
    from bench.core import machine
    from bench.meta import memory_total, package_version

    info = machine()
    info["memory"] = memory_total()
    info["python_executable"] = sys.executable
    for package in ("openai-agents", "langchain-community", "langchain-core", "SQLAlchemy",
                    "greenlet", "langgraph", "langgraph-checkpoint",
                    "langgraph-checkpoint-sqlite", "tiktoken"):
        info[package] = package_version(package)
    return info


def missing_peers(systems: Sequence[str]) -> list[str]:
    modules = {"openai": "agents", "langchain": "langchain_community",
               "langgraph": "langgraph.checkpoint.sqlite"}
    missing = []
    for name in systems:
        if name in modules:
            try:
                import_module(modules[name])
            except ImportError:
                missing.append(name)
    return missing


# --------------------------------------------------------------------------- main


def run(cfg: Config, systems: Sequence[str]) -> None:
    from bench.core import PaceMeter, print_table

    missing = missing_peers(systems)
    if missing:
        sys.exit(f"bench.peers: {', '.join(missing)} not importable with {sys.executable}; "
                 "run bench/peers_setup.sh and use .venv-bench/bin/python")
    from bench import meta

    started = time.perf_counter()
    stamp = meta.begin("peers", cfg.mode == "quick")
    pace = PaceMeter()
    info = machine_info()
    info["tokenizer"] = f"{ENCODING} via {seed_tokenizer()}"
    print(f"convlog vs peers benchmark ({cfg.mode})")
    for k, v in info.items():
        print(f"  {k:28} {v}")
    print("\nmeasuring...", flush=True)
    single = measure_appends(cfg, systems, 1, pace, measure_disk=False)
    turns = measure_appends(cfg, systems, cfg.turn_size, pace, measure_disk=True)
    cold: dict[str, list[dict[str, Any]]] = {}
    reads = {size: measure_reads(cfg, systems, size, pace, cold) for size in cfg.read_sizes}
    fresh = measure_fresh(cfg, systems)
    memory = {name: peak_memory(name, cfg) for name in systems}
    variants = ({name: peak_memory(name, cfg) for name in VARIANTS}
                if "convlog" in systems else {})
    print("  peak memory done", flush=True)

    n = f"{cfg.append_n // 1000}k" if cfg.append_n % 1000 == 0 else f"{cfg.append_n:,}"
    rows = [append_row(f"append {n}, one by one (msg/s)", single, systems),
            append_row(f"append {n}, turns of {cfg.turn_size} (msg/s)", turns, systems),
            *fresh_rows(fresh, n)]
    for workload, label in (("last", f"last {cfg.last_n} messages"),
                            ("context", f"{cfg.context_tokens:,}-token context")):
        for size, points in reads.items():
            rows.append(read_row(f"{label} @{short(size)}",
                                 [p for p in points if p.workload == workload], systems))
    cold_total = {k: statistics.median(c["total_ns"] for c in v) for k, v in cold.items()}
    rows.append(value_row(f"cold start @{short(cfg.cold_size)}: import+open+context",
                          "cold", cold_total, fmt_ms, systems))
    disk_notes = {k: f" @{v:,}" for k, v in turns.bytes_at.items() if v != cfg.append_n}
    rows.append(value_row("bytes on disk per message", "disk", turns.bytes_per_message,
                          lambda b: f"{b:,.0f} B", systems, disk_notes))
    peak = {k: m["peak_kib"] / 1024 for k, m in memory.items()}
    mem_notes = {k: f" (DNF @{m['reached']:,})" for k, m in memory.items() if m["dnf"]}
    rows.append(value_row(f"peak RSS, {n} appended in turns of {cfg.turn_size}", "memory",
                          peak, lambda mib: f"{mib:,.0f} MiB", systems, mem_notes))
    base = {k: m["base_kib"] / 1024 for k, m in memory.items()}
    rows.append(value_row("  of which: RSS after import+open", "memory-base", base,
                          lambda mib: f"{mib:,.0f} MiB", systems))
    rows[-1].ratios = {}  # context for the row above, not a contest

    headers, body = table(rows, systems)
    print(f"\nmedians; in parentheses each system's cost relative to convlog (time per "
          f"message or call, bytes, memory):\nabove 1.00x convlog is ahead. appends: "
          f"{cfg.repeats} repeat(s), interleaved; reads: up to {cfg.read_calls} calls or "
          f"{cfg.read_seconds:.0f} s per system; cap {cfg.cap_seconds:.0f} s per system and "
          "workload\n")
    print_table(headers, body)
    contexts = {size: {p.system: p.result for p in points if p.workload == "context"}
                for size, points in reads.items()}
    print("\ncontext windows built (messages/tokens): " + "; ".join(
        f"@{short(size)} " + ", ".join(f"{k} {v[0]}/{v[1]:,}" for k, v in c.items() if v)
        for size, c in contexts.items()))
    print("\ncold start, median of each part:\n")
    cold_parts = [[STORES[k].label, *(fmt_ms(statistics.median(c[f"{part}_ns"] for c in v))
                                      for part in ("import", "open", "context", "total", "wall"))]
                  for k, v in cold.items()]
    print_table(["system", "import", "open", "first context", "total", "wall (process)"],
                cold_parts)
    for name, figures in variants.items():
        print("\n" + variant_line(name, figures))
    print("\nhow each system does it:")
    for name in systems:
        s = STORES[name]
        print(f"  {s.label}: last = {s.last_how}; context = {s.context_how};\n"
              f"    durability = {s.durability}; observed {turns.pragmas.get(name)}")
    pace_summary = pace.summary()
    print(f"\nhost pace: a fixed CPU loop took {pace_summary['min_ms']:.2f} ms at best, "
          f"median {pace_summary['median_ms']:.2f}, p90 {pace_summary['p90_ms']:.2f}, worst "
          f"{pace_summary['max_ms']:.2f} ({pace_summary['probes']:.0f} probes)")
    met, missed = verdicts(rows, [single, turns])
    fresh_met, fresh_missed = fresh_verdicts(fresh)
    met, missed = met + fresh_met, missed + fresh_missed
    print(f"\ntargets met: {len(met)}; missed: {len(missed)}")
    for m in missed:
        print(f"  MISSED: {m}")
    elapsed = time.perf_counter() - started
    path = stamp.save({
        "mode": cfg.mode, "utc": datetime.now(UTC).isoformat(), "elapsed_s": elapsed,
        "machine": info, "config": asdict(cfg), "systems": list(systems),
        "how": {n: {"label": STORES[n].label, "durability": STORES[n].durability,
                    "last": STORES[n].last_how, "context": STORES[n].context_how}
                for n in systems},
        "appends": {"single": asdict(single), "turns": asdict(turns)},
        "fresh_process_appends": asdict(fresh),
        "reads": [asdict(p) for points in reads.values() for p in points],
        "cold_start": cold, "memory": memory, "memory_variants": variants,
        "host_pace": pace_summary,
        "table": {"headers": headers, "rows": body,
                  "ratios": {r.workload: r.ratios for r in rows}},
        "markdown": markdown_table(headers, body),
        "markdown_cold": markdown_table(
            ["system", "import", "open", "first context", "total", "wall (process)"],
            cold_parts),
        "targets": {"met": met, "missed": missed},
    }, host_pace=pace_summary)
    print(f"saved {path.relative_to(REPO)} ({elapsed:.0f} s)")


def report(path: Path) -> None:
    """Print a saved run's figures as Markdown, for BENCHMARKS.md."""
    data = json.loads(path.read_text())
    m = data["machine"]
    print(f"Run {data['utc'][:16]} UTC, revision {m['commit']}, mode {data['mode']}, "
          f"{data['elapsed_s']:.0f} s; {m['cpu']}, {m['cores']} cores, {m['memory']}, "
          f"Python {m['python']}, SQLite {m['sqlite']}; host pace p90/min "
          f"{data['host_pace']['p90_ms'] / data['host_pace']['min_ms']:.2f}\n")
    print(data["markdown"] + "\n")
    windows: dict[int, list[str]] = {}
    for p in data["reads"]:
        if p["workload"] == "context" and p["result"]:
            windows.setdefault(p["size"], []).append(
                f"{STORES[p['system']].label} {p['result'][0]}/{p['result'][1]:,}")
    for size, cells in windows.items():
        print(f"- context @{short(size)} (messages/tokens): {', '.join(cells)}")
    print("\n" + data["markdown_cold"])
    for name, m in data.get("memory_variants", {}).items():
        print("\n" + variant_line(name, m))


def variant_line(name: str, memory: dict[str, Any]) -> str:
    """One sentence on a variant's peak memory, beside the table."""
    return (f"{VARIANTS[name].label} (no tokenizer loaded): peak RSS "
            f"{memory['peak_kib'] / 1024:,.0f} MiB, after import+open "
            f"{memory['base_kib'] / 1024:,.0f} MiB")


def profile(cfg: Config, workload: str, size: int, top: int) -> None:
    """cProfile convlog's side of one workload: append|turns (cfg.append_n messages)
    or last|context (calls on a conversation of `size` messages)."""
    import cProfile
    import pstats

    seed_tokenizer()
    with tempfile.TemporaryDirectory(prefix="convlog-peers-") as tmp:
        store = ConvlogStore(Path(tmp) / "convlog.db")
        profiler = cProfile.Profile()
        if workload in ("append", "turns"):
            turn = 1 if workload == "append" else cfg.turn_size
            start = time.perf_counter()
            profiler.enable()
            store.append(cfg.append_n, turn, float("inf"))
            profiler.disable()
            what = f"{cfg.append_n:,} messages in turns of {turn}"
        else:
            store.append(size, cfg.fill_turn, float("inf"))
            arg = cfg.last_n if workload == "last" else cfg.context_tokens
            store.timed(workload, arg)
            calls = 200 if workload == "last" else 30
            start = time.perf_counter()
            profiler.enable()
            for _ in range(calls):
                store.timed(workload, arg)
            profiler.disable()
            what = f"{calls} calls of {workload} at {short(size)}"
        seconds = time.perf_counter() - start
        store.close()
    print(f"{what} under cProfile: {seconds:.2f} s\n")
    stats = pstats.Stats(profiler)
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="small sizes (< 2 minutes)")
    parser.add_argument("--systems", default=",".join(STORES),
                        help=f"comma-separated subset of {', '.join(STORES)}")
    parser.add_argument("--profile", choices=("append", "turns", "last", "context"),
                        help="cProfile convlog's side of one workload instead")
    parser.add_argument("--size", type=int, default=10_000, help="conversation size for "
                        "--profile last|context")
    parser.add_argument("--top", type=int, default=30, help="rows of --profile output")
    parser.add_argument("--report", type=Path, metavar="JSON",
                        help="print a saved run's figures as Markdown instead")
    parser.add_argument("--cold", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--memory", nargs=5, help=argparse.SUPPRESS)
    parser.add_argument("--fresh", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cold:
        cold_main(args.cold[0], args.cold[1], int(args.cold[2]))
        return
    if args.fresh:
        fresh_main(args.fresh[0], args.fresh[1], int(args.fresh[2]))
        return
    if args.memory:
        name, path, n, turn, cap = args.memory
        memory_main(name, path, int(n), int(turn), float(cap))
        return
    if args.report:
        report(args.report)
        return
    cfg = QUICK if args.quick else FULL
    if args.profile:
        profile(cfg, args.profile, args.size, args.top)
        return
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in systems if s not in STORES]
    if unknown or "convlog" not in systems:
        parser.error(f"--systems: unknown {unknown}" if unknown else "--systems needs convlog")
    run(cfg, systems)


if __name__ == "__main__":
    main()
