"""Render the benchmark figures in BENCHMARKS.md and the docs from ``bench/results/``.

Why: each figure in the documentation must belong to one run of today's code, with
its date, revision and machine noise beside it. Hand-copied tables drift (runs of
different days end up side by side); this program rewrites every generated block::

    <!-- bench:NAME -->
    ...generated, never edited by hand...
    <!-- /bench:NAME -->

from the newest FULL-mode results of the benches the block reads (or those of
``--date``). A quick run never fills a block: if a bench has only quick results, the
program stops and names it. Text outside the blocks is the hand-written explanation;
it must not quote figures that the next run changes.

    .venv/bin/python -m bench.report            # rewrite the blocks (make bench does)
    .venv/bin/python -m bench.report --check    # exit 1 if a file is not up to date
    .venv/bin/python -m bench.report --date 2026-11-25
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
# Every file that quotes bench figures; each holds one or more generated blocks.
FILES = ("BENCHMARKS.md", "docs/sdks.md", "docs/http.md", "docs/scale-out.md")
BLOCK = re.compile(
    r"(<!-- bench:(?P<name>[a-z0-9-]+) -->\n)(?P<body>.*?)(<!-- /bench:(?P=name) -->)", re.DOTALL)
NAME = re.compile(
    r"^(?:(?P<bench>[a-z][a-z-]*?)-)?(?P<date>\d{4}-\d{2}-\d{2})(?P<quick>-quick)?\.json$")

# The command that produces each bench's results (what `make bench` runs).
COMMANDS = {
    "core": ".venv/bin/python -m bench.core", "context": ".venv/bin/python -m bench.context",
    "memory": ".venv/bin/python -m bench.memory", "views": ".venv/bin/python -m bench.views",
    "writers": ".venv/bin/python -m bench.writers", "scale": ".venv/bin/python -m bench.scale",
    "formats": ".venv/bin/python -m bench.formats", "acp": ".venv/bin/python -m bench.acp",
    "html": ".venv/bin/python -m bench.html", "replay": ".venv/bin/python -m bench.replay",
    "http": ".venv/bin/python -m bench.http", "crypto": ".venv/bin/python -m bench.crypto",
    "importers": ".venv/bin/python -m bench.importers",
    "watch": ".venv/bin/python -m bench.watch", "sdks": ".venv/bin/python -m bench.sdks",
    "sdks-claude": ".venv/bin/python -m bench.sdks (its Claude section, bench.sdks_claude)",
    "sdks-adk": ".venv-bench/bin/python -m bench.sdks --sdk adk",
    "peers": ".venv-bench/bin/python -m bench.peers",
}


class ReportError(Exception):
    """A block cannot be rendered: no full-mode results, or a block nobody renders."""


# ----------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Result:
    """One bench's saved run."""

    bench: str
    path: Path
    date: str
    data: dict[str, Any]

    @property
    def meta(self) -> dict[str, Any]:
        found: dict[str, Any] = self.data.get("meta") or {}
        return found

    @property
    def mode(self) -> str:
        if self.meta.get("mode"):
            return str(self.meta["mode"])
        if self.path.name.endswith("-quick.json") or self.data.get("quick") is True:
            return "quick"
        return str(self.data.get("mode", "full"))


def scan(results: Path) -> dict[str, list[Result]]:
    """Every results file by bench (``<date>.json``, the peers' old name, is peers')."""
    found: dict[str, list[Result]] = {}
    for path in sorted(results.glob("*.json")):
        match = NAME.match(path.name)
        if not match:
            continue
        bench = match["bench"] or "peers"
        data = json.loads(path.read_text())
        found.setdefault(bench, []).append(Result(bench, path, match["date"], data))
    # The Claude section of bench.sdks is saved inside sdks-*.json (older runs: its own file).
    for result in found.get("sdks", []):
        if "claude_agent_sdk" in result.data:
            section = {**result.data["claude_agent_sdk"], "meta": result.meta}
            found.setdefault("sdks-claude", []).append(
                Result("sdks-claude", result.path, result.date, section))
    return found


@dataclass
class Loader:
    """Picks the newest full run of a bench (or that of one date), and remembers it so
    that the block says where its figures come from."""

    runs: dict[str, list[Result]]
    date: str | None = None
    used: list[Result] = field(default_factory=list)

    def __call__(self, bench: str) -> dict[str, Any]:
        runs = self.runs.get(bench, [])
        full = [r for r in runs if r.mode == "full" and (self.date is None or r.date == self.date)]
        if not full:
            quick = [r.path.name for r in runs if r.mode == "quick"]
            when = f" of {self.date}" if self.date else ""
            if quick:
                raise ReportError(
                    f"bench {bench!r}: no full-mode results{when} in bench/results, only quick "
                    f"ones ({', '.join(quick)}): a quick run never fills a block; run "
                    f"`{COMMANDS.get(bench, bench)}` (or `make bench`)")
            raise ReportError(f"bench {bench!r}: no results{when} in bench/results; run "
                              f"`{COMMANDS.get(bench, bench)}` (or `make bench`)")
        # Same day: a run with metadata (today's bench code) beats an older file without,
        # the later run beats the earlier (the Claude section moved into sdks-*.json).
        best = max(full, key=lambda r: (r.date, r.meta.get("utc_end", ""),
                                        r.path.name.startswith(bench)))
        if best not in self.used:
            self.used.append(best)
        return best.data


# ---------------------------------------------------------------------------- formatting


def num(x: float, digits: int = 3) -> str:
    """A figure with about ``digits`` significant digits, thousands separated."""
    if x == 0:
        return "0"
    if abs(x) >= 10 ** (digits - 1):
        return f"{x:,.0f}"
    if abs(x) < 1:
        return f"{x:.{digits}g}"
    decimals = max(0, digits - 1 - int(f"{abs(x):e}".split("e")[1]))
    return f"{x:,.{decimals}f}"


def ms(x: float) -> str:
    return f"{num(x)} ms"


def ratio(x: float) -> str:
    return f"{x:.2f}x"


def met(ok: bool) -> str:
    return "met" if ok else "**not met**"


def table(headers: Sequence[str], rows: Iterable[Sequence[object]],
          right: Sequence[bool] | None = None) -> str:
    aligns = right if right is not None else [i > 0 for i in range(len(headers))]
    lines = ["| " + " | ".join(headers) + " |",
             "| " + " | ".join("---:" if a else "---" for a in aligns) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def k(n: float) -> str:
    """1000 -> 1k, 100000 -> 100k."""
    return f"{n / 1000:g}k" if n >= 1000 else f"{n:g}"


def _loads(result: Result) -> tuple[list[float] | None, list[float] | None]:
    noise = result.meta.get("noise") or {}
    if noise:
        return noise.get("load_start"), noise.get("load_end")
    d, machine = result.data, result.data.get("machine") or {}
    if "load_average_start" in machine:
        return ([float(x) for x in str(machine["load_average_start"]).split()],
                [float(x) for x in str(machine.get("load_average_end", "")).split()] or None)
    if "load_average" in d:
        return None, list(d["load_average"])
    one = d.get("load_average_1min") or (d.get("results") or {}).get("load_average_1min")
    return (None, [one]) if one is not None else (None, None)


def header(result: Result) -> str:
    """Where a block's figures come from: run, revision, machine noise, command."""
    meta, d = result.meta, result.data
    machine = meta.get("machine") or d.get("machine") or {}
    if meta:
        start, end = meta["utc_start"], meta["utc_end"]
        when = f"{start[:10]} {start[11:16]}-{end[11:16]} UTC"
        rev = f"`{meta['revision']}`" + (" (tree not clean)" if meta.get("dirty") else "")
        command = meta.get("command") or COMMANDS.get(result.bench, result.bench)
    else:
        utc = d.get("utc") or d.get("date") or ""
        when = f"{utc[:10]} {utc[11:16]} UTC (end)" if len(utc) > 10 else result.date
        commit = machine.get("commit") or d.get("revision")
        rev = f"`{commit}`" if commit else "not recorded"
        command = COMMANDS.get(result.bench, result.bench)
    start_load, end_load = _loads(result)
    cores = (meta.get("noise") or {}).get("cores") or machine.get("cores")
    if start_load or end_load:
        parts = ([f"{start_load[0]:.1f} at the start"] if start_load else []) + (
            [f"{end_load[0]:.1f} at the end"] if end_load else [])
        load = "load average " + ", ".join(parts) + (f" on {cores} cores" if cores else "")
    else:
        load = "load average not recorded"
    pace = (meta.get("noise") or {}).get("host_pace") or d.get("host_pace")
    if pace:
        load += f"; host pace p90/min {pace['p90_ms'] / pace['min_ms']:.2f}"
    return (f"*{result.mode} run {when}, revision {rev}, {load}. Command: `{command}`; "
            f"figures: `bench/results/{result.path.name}`.*")


# ------------------------------------------------------------------------------- blocks


def block_peers_run(load: Loader) -> str:
    d = load("peers")
    m = {**d.get("machine", {}), **d.get("meta", {}).get("machine", {})}
    packages = {**m, **m.get("packages", {})}

    def versions(names: Sequence[str]) -> str:
        return ", ".join(f"{n} {packages[n]}" for n in names
                         if packages.get(n) not in (None, "not installed"))

    pace = d["host_pace"]
    return table(["", ""], [
        ["CPU", f"{m['cpu']}, {m['cores']} cores ({m.get('usable_cores')} usable)"],
        ["memory", m.get("memory", "not recorded")],
        ["platform", m["platform"]],
        ["Python", m["python"]],
        ["SQLite", f"{m['sqlite']} (the library Python's `sqlite3` is linked with, used by "
                   "every system)"],
        ["convlog stack", versions(("eventsourcing", "msgspec", "tiktoken", "duckdb"))],
        ["peers", versions(("openai-agents", "langchain-community", "langchain-core",
                            "SQLAlchemy", "langgraph", "langgraph-checkpoint",
                            "langgraph-checkpoint-sqlite"))],
        ["host pace", f"a fixed CPU loop: p90/min {pace['p90_ms'] / pace['min_ms']:.2f}, "
                      f"median/min {pace['median_ms'] / pace['min_ms']:.2f}"],
    ], right=[False, False])


def block_peers(load: Loader) -> str:
    d = load("peers")
    labels = {name: how["label"] for name, how in d["how"].items()}
    windows: dict[int, list[str]] = {}
    for p in d["reads"]:
        if p["workload"] == "context" and p["result"]:
            windows.setdefault(p["size"], []).append(
                f"{labels[p['system']]} {p['result'][0]}/{p['result'][1]:,}")
    out = [d["markdown"], ""]
    out += [f"- context @{k(size)} (messages/tokens): {', '.join(cells)}"
            for size, cells in windows.items()]
    out += ["", d["markdown_cold"]]
    for memory in d.get("memory_variants", {}).values():
        out += ["", f"convlog, token counts given by the host (no tokenizer loaded): peak RSS "
                    f"{memory['peak_kib'] / 1024:,.0f} MiB, after import+open "
                    f"{memory['base_kib'] / 1024:,.0f} MiB"]
    return "\n".join(out)


def block_peers_targets(load: Loader) -> str:
    d = load("peers")
    ok, missed = d["targets"]["met"], d["targets"]["missed"]
    single = d["appends"]["single"]["ratio_to_convlog"]["raw"]
    slower = 1 / statistics.median(single)
    out = [f"Targets (issue 4): convlog ahead of every peer on every workload; within 3x of "
           f"raw sqlite3 on appends. **Met on {len(ok)} of {len(ok) + len(missed)} checks.**",
           "", f"Issue 30: appends one by one through the public API take {slower:.2f}x raw "
           f"sqlite3's time per message (target <= 2.5x: {met(slower <= 2.5)}).", "",
           "Missed:" if missed else "Missed: none."]
    out += [f"- {m}" for m in missed]
    return "\n".join(out)


def block_peers_memory(load: Loader) -> str:
    d = load("peers")
    mem = d["memory"]
    variant = next(iter(d.get("memory_variants", {}).values()), None)
    line = (f"Peak RSS appending 10,000 messages in turns of 10: convlog "
            f"{mem['convlog']['peak_kib'] / 1024:,.0f} MiB (after import and open "
            f"{mem['convlog']['base_kib'] / 1024:,.0f} MiB)")
    if variant:
        line += (f"; with counts given by the host and `preload_tokenizer=False` "
                 f"{variant['peak_kib'] / 1024:,.0f} MiB")
    others = [f"{d['how'][n]['label']} {mem[n]['peak_kib'] / 1024:,.0f} MiB"
              for n in mem if n != "convlog"]
    return line + "; " + ", ".join(others) + "."


def block_formats(load: Loader) -> str:
    d = load("formats")
    peers = load("peers")
    per = peers["appends"]["turns"]["bytes_per_message"]
    openai, langchain = per.get("openai"), per.get("langchain")

    def versus(b: float) -> str:
        cells = [("ahead" if b <= ref else "behind") for ref in (openai, langchain) if ref]
        return " / ".join(cells)

    rows = [[name, f"{b:,.0f} B", versus(b)] for name, b in d["bytes_per_message"].items()]
    label = f"vs OpenAI {openai:,.0f} B / LangChain {langchain:,.0f} B" if openai and langchain \
        else "vs peers"
    return table(["stored format", "bytes per message", label], rows,
                 right=[False, True, False])


def block_core(load: Loader) -> str:
    d = load("core")
    rows = [list(r.values()) for r in d["table"]]
    missed = d.get("missed") or []
    return (table(["workload", "convlog", "raw sqlite3", "convlog/raw", "target", "met?"], rows,
                  right=[False, True, True, True, False, False])
            + "\n\nconvlog/raw: for rates, the share of raw sqlite3's speed convlog reaches; for "
            "latencies, how many times longer convlog takes. Targets missed: "
            + (", ".join(missed) if missed else "none") + ".")


CONTEXT_ROWS = ("context p50 @", "growth p50 @", "vs read all + trim @",
                "vs log.messages() + trim @", "cold open + first context @")


def block_context(load: Loader) -> str:
    d = load("context")
    rows = [list(r.values()) for r in d["table"]
            if r["workload"].startswith(CONTEXT_ROWS) and "paired" not in r["workload"]
            and "preloaded" not in r["workload"]]
    b = d["budget"]
    return (f"Budget: {b['tokens']:,} tokens, {b['messages']} messages (the default).\n\n"
            + table(["workload", "convlog", "baseline", "ratio", "target", "met?"], rows,
                    right=[False, True, True, True, False, False])
            + "\n\nBaseline: reading every message of a plain chat-history table and trimming "
              "in Python (growth rows: the baseline's own growth); `log.messages()` + trim "
              "reads through convlog's API. Targets missed: "
            + (", ".join(d["missed"]) if d.get("missed") else "none") + ".")


def block_views(load: Loader) -> str:
    d = load("views")
    cat, tel = d["catalog"]["fill"], d["telemetry"]["fill"]
    rows = [list(r.values()) for r in d["table"]]
    return (f"Stores: {cat['conversations']:,} conversations, {cat['events']:,} events; "
            f"{tel['attempts']:,} resume attempts, {tel['events']:,} events.\n\n"
            + table(["workload", "figure", "target", "met?"], rows,
                    right=[False, True, False, False])
            + "\n\nTargets missed: " + (", ".join(d["missed"]) if d.get("missed") else "none")
            + ".")


def block_writers(load: Loader) -> str:
    d = load("writers")
    names = {"sqlite": "SQLite (WAL, NORMAL)",
             "postgres": "PostgreSQL (this machine, default `synchronous_commit`)"}
    counts = sorted({c for by in d["messages_per_s"].values() for c in by}, key=int)
    return table(["backend", *(f"{c} writer{'s' if c != '1' else ''}" for c in counts)],
                 [[names.get(b, b), *(f"{by[c]:,.0f} msg/s" for c in counts)]
                  for b, by in d["messages_per_s"].items()])


def block_memory(load: Loader) -> str:
    d = load("memory")
    med, growth = d["median_s"], d["growth"]
    rows = [[f"{int(s):,}", ms(med["blocks"][s] * 1e3), ms(med["twin"][s] * 1e3),
             ms(med["user"][s] * 1e3)] for s in med["blocks"]]
    rows.append(["growth", ratio(growth["blocks"]), ratio(growth["twin"]),
                 f"{ratio(growth['user'])} (target <= 1.5x: {met(growth['user'] <= 1.5)})"])
    u = d["user_context"]
    largest = max(med["blocks"], key=int)
    share = med["blocks"][largest] / med["twin"][largest] - 1
    return (table(["messages per conversation", "`conv.context()`, 3 live blocks",
                   "same, no blocks", "`log.resumption_context(user, conversations=3)`"], rows)
            + f"\n\nMedians of {d['calls']} calls. Blocks cost "
              f"{share * 100:.0f}% "
              f"of a context build at the largest size; the user context held {u['tokens']:,} "
              f"tokens, {u['messages']} messages.")


def block_crypto(load: Loader) -> str:
    d = load("crypto")
    f, r = d["figures"], d["ratio"]

    def us(x: float) -> str:
        return f"{num(x)} us" if x < 1000 else ms(x / 1000)

    rows = [
        ["`append_turn` (2 messages, token counts included)", us(f["plain"]["append_p50_us"]),
         us(f["encrypted"]["append_p50_us"]), ratio(r["append"]),
         f"<= 1.3x: {met(r['append'] <= 1.3)}"],
        [f"10,000-token context ({d['context_messages']} messages, {d['context_tokens']:,} tokens)",
         us(f["plain"]["context_p50_us"]), us(f["encrypted"]["context_p50_us"]),
         ratio(r["context"]), f"<= 1.3x: {met(r['context'] <= 1.3)}"],
        [f"10,000 tokens of short messages ({d['short_context_messages']} messages)",
         us(f["plain"]["short_p50_us"]), us(f["encrypted"]["short_p50_us"]), ratio(r["short"]),
         "(worst case, no target)"],
        ["`messages(last=20)`", us(f["plain"]["last20_p50_us"]),
         us(f["encrypted"]["last20_p50_us"]), ratio(r["last20"]), ""],
        ["database file at the end", f"{d['db_bytes']['plain'] / 2**20:.1f} MiB",
         f"{d['db_bytes']['encrypted'] / 2**20:.1f} MiB",
         ratio(d["db_bytes"]["encrypted"] / d["db_bytes"]["plain"]), ""],
    ]
    return table(["operation (p50)", "unencrypted", "encrypted", "ratio", "target"], rows,
                 right=[False, True, True, True, False])


def block_importers(load: Loader) -> str:
    d = load("importers")
    res = {n: v for n, v in d["results"].items() if isinstance(v, dict)}
    rows = [[n, f"{v['mb_per_s']:.1f} MB/s", f"{v['mb_per_cpu_s']:.1f}",
             f"{v['messages_per_s']:,.0f}", f"{v['again_mb_per_s']:.1f} MB/s",
             f"{v['peak_rss_mib']:.0f} MiB"] for n, v in res.items()]
    first = res["claude-code"]["runs"][0]
    rate = res["claude-code"]["mb_per_s"]
    return (f"Tree: {d['files']:,} Claude Code transcripts (+ subagents), "
            f"{first['bytes'] / 1e6:,.0f} MB, {first['messages']:,} messages; and a Codex tree.\n\n"
            + table(["format", "first import", "MB per CPU-second", "messages/s",
                     "again (nothing new)", "peak RSS"], rows)
            + f"\n\nTarget >= 20 MB/s (Claude Code, first import): {met(rate >= 20)} "
              f"({rate:.1f}).")


def block_watch(load: Loader) -> str:
    d = load("watch")
    c = d["catch_up"]
    rows = [["catch-up of a tree", f"{c['mb']:.0f} MB, {c['messages']:,} messages",
             f"`convlog import` {c['import_s']:.1f} s, `convlog watch` {c['watch_s']:.1f} s "
             f"({ratio(c['ratio'])})"]]
    rows += [["catch-up, bounds", f"{b['files']:,} small transcripts",
              f"{b['catch_up_s']:.1f} s, peak {b['peak_rss_mib']:.0f} MiB, "
              f"{b['descriptors']} descriptors open"] for b in d["bounds"]]
    rows += [["latency of an appended turn", f"`--settle {lat['settle_s']:g}`",
              f"median {lat['median_s']:.2f} s, max {lat['max_s']:.2f} s "
              f"({lat['appends']} appends)"] for lat in d["latency"]]
    return (table(["workload", "size", "figure"], rows, right=[False, False, False])
            + f"\n\nPeak memory from the smaller to the larger tree: "
              f"{ratio(d['memory_growth'])}.")


def block_replay(load: Loader) -> str:
    d = load("replay")
    res, g = d["results"], d["growth"]

    def cell(s: float) -> str:
        return ms(s * 1e3)

    rows = [[f"{int(n):,} ({v['events']:,.0f})", cell(v["read_events_s"]), cell(v["user_walk_s"]),
             cell(v["agent_walk_s"]), cell(v["diff_walk_s"]), cell(v["agent_view_s"])]
            for n, v in res.items()]
    small, large = (int(s) for s in d["sizes"])
    size_ratio = large / small
    return (table(["messages (events)", "read the events", "user view walk", "agent view walk",
                   "diff walk", "`log.view(\"agent\")`"], rows)
            + f"\n\nMedians of {d['repeats']} runs. Growth for {size_ratio:g}x the messages: "
              f"read {g['read_events']:.1f}x, agent walk {g['agent_walk']:.1f}x, diff walk "
              f"{g['diff_walk']:.1f}x (target: the agent walk grows <= 1.5x the size ratio: "
              f"{met(g['agent_walk'] <= 1.5 * size_ratio)}).")


def block_http(load: Loader) -> str:
    d = load("http")
    base, h = d["in_process"], d["http"]
    rows = [["in-process, one thread", f"{base['messages_per_s']:,.0f}",
             f"{base['append_p50_ms']:.2f} / {base['append_p99_ms']:.2f} ms",
             f"{base['context_per_s']:,.0f}",
             f"{base['context_p50_ms']:.1f} / {base['context_p99_ms']:.1f} ms"]]
    for n in h["append"]:
        a, c = h["append"][n], h["context"][n]
        rate = f"{a['messages_per_s']:,.0f}"
        if n == "32":
            rate = f"**{rate}** (target >= 5,000: {met(a['messages_per_s'] >= 5000)})"
        rows.append([f"HTTP, {n} client{'s' if n != '1' else ''}", rate,
                     f"{num(a['p50_ms'], 2)} / {num(a['p99_ms'], 3)} ms", f"{c['per_s']:,.0f}",
                     f"{num(c['p50_ms'], 2)} / {num(c['p99_ms'], 3)} ms"])
    top = max(h["append"], key=int)
    return (table(["workload", "messages/s", "append p50 / p99", "contexts/s",
                   "context p50 / p99"], rows)
            + f"\n\nWith {top} clients over HTTP: "
              f"{h['append'][top]['messages_per_s'] / base['messages_per_s']:.2f}x the in-process "
              f"append rate and {h['context'][top]['per_s'] / base['context_per_s']:.2f}x its "
              f"context rate ({d['seconds']:g} s per point, a {d['context_tokens']:,}-token "
              "context).")


def block_scale(load: Loader) -> str:
    d = load("scale")
    def routing(p: dict[str, Any]) -> str:
        return "-" if p["servers"] == 1 else ("sticky" if p["sticky"] else "round-robin")

    rows = [[p["servers"], routing(p),
             f"{p['turns_per_s']:,.0f} ({', '.join(f'{r:,.0f}' for r in p['turns_per_s_rounds'])})",
             ms(p["p50_ms"]), ms(p["p99_ms"]), ms(p["server_cpu_ms_per_turn"]),
             f"{p['lock_waiting_avg']:.2f}"] for p in d["points"]]
    pairs = []
    for n in sorted({p["servers"] for p in d["points"]} - {1}):
        st = next(p for p in d["points"] if p["servers"] == n and p["sticky"])
        rr = next(p for p in d["points"] if p["servers"] == n and not p["sticky"])
        pairs.append(f"{rr['turns_per_s'] / st['turns_per_s']:.2f}x ({n} servers)")
    a = d["alternating"]
    return (table(["servers", "routing", "turns/s (rounds)", "p50", "p99",
                   "server CPU per turn", "sessions waiting for the table lock"], rows,
                  right=[True, False, True, True, True, True, True])
            + f"\n\n{d['users']} simulated hosts, {d['rounds']} rounds of "
              f"{d['seconds_per_point']:g} s per point, the median round shown. Round-robin "
              f"was {' and '.join(pairs)} of sticky. One conversation, turns in sequence: all "
              f"on one server, median append {ms(a['one_host_median_ms'])} (worst "
              f"{ms(a['one_host_max_ms'])}); alternating between two servers, median "
              f"{ms(a['alternating_median_ms'])} ({ratio(a['median_ratio'])}; worst "
              f"{ms(a['alternating_max_ms'])}).")


def block_acp(load: Loader) -> str:
    d = load("acp")
    dr, pr, ad = d["direct"], d["proxy"], d["added"]
    rows = [["ping round trip p50 / p95",
             f"{dr['ping_p50_ms']:.3f} / {dr['ping_p95_ms']:.3f} ms",
             f"{pr['ping_p50_ms']:.3f} / {pr['ping_p95_ms']:.3f} ms",
             f"{ad['frame_p50_ms']:.3f} ms"],
            ["prompt round trip p50 / p95",
             f"{dr['prompt_p50_ms']:.3f} / {dr['prompt_p95_ms']:.3f} ms",
             f"{pr['prompt_p50_ms']:.3f} / {pr['prompt_p95_ms']:.3f} ms",
             f"{ad['prompt_p50_ms']:.3f} ms"],
            ["per streamed chunk", f"{dr['chunk_us']:.1f} us", f"{pr['chunk_us']:.1f} us",
             f"{ad['chunk_us']:.1f} us"]]
    out = (table(["", "direct", "through `convlog acp`", "added"], rows)
           + f"\n\n{d['pings']:,} pings, {d['prompts']:,} prompts. The proxy's memory: peak "
             f"{pr['VmHWM_mib']:.0f} MiB, resident {pr['VmRSS_mib']:.0f} MiB at the end.")
    if d.get("assembly"):
        out += (" Assembling a streamed answer in 1 KB chunks: "
                + ", ".join(f"{key.split('_')[0]} {v} us a chunk"
                            for key, v in d["assembly"].items()) + ".")
    return out


def block_html(load: Loader) -> str:
    d = load("html")
    rows = [[f"{int(n):,}", ms(v["build_s"] * 1e3), f"{v['bytes'] / 1e6:.1f} MB",
             ms(v["load_s"] * 1e3), ms(v["flip_s"] * 1e3), ms(v["scroll_s"] * 1e3)]
            for n, v in d["results"].items()]
    g = d["growth"]
    return (table(["messages", "write the page", "page size", "load", "page flip", "scroll"], rows)
            + f"\n\nMedians of {d['repeats']} page loads. Growth: page {g['bytes']:.1f}x, load "
              f"{g['load_s']:.1f}x, page flip {g['flip_s']:.2f}x (target: a flip does not grow "
              f"with the conversation, <= 2x: {met(g['flip_s'] <= 2.0)}).")


# Labels of the operations the SDK benches time; an operation the JSON has and this table
# does not is shown under its key, so a new measurement never breaks the renderer.
# True: a target of issue 30 (<= 1.0x the SDK's own store).
OPENAI_OPS = {"add_turn_ms": ("add a turn (`add_items`)", True),
              "get_last_20_ms": ("`get_items(limit=20)`", True),
              "get_all_ms": ("`get_items()` (all)", True),
              "pop_and_restore_ms": ("`pop_item` + re-add", False),
              "pop_item_ms": ("`pop_item` alone", True)}
CLAUDE_OPS = {"load_ms": ("`load`", True), "append_1_ms": ("append 1 entry", True),
              "append_turn_ms": ("append a turn", True), "append_500_ms": ("append 500", True)}


def op_label(ops: dict[str, tuple[str, bool]], op: str) -> tuple[str, bool]:
    return ops.get(op, (f"`{op.removesuffix('_ms')}`", True))


def vs(ours: float, theirs: float, r: float) -> str:
    return f"{num(ours)} vs {num(theirs)} ms ({r:.2f}x)"


def verdict(checks: list[tuple[str, float]], what: str) -> str:
    ok = [c for c in checks if c[1] <= 1.0]
    bad = [f"{name} ({r:.2f}x)" for name, r in checks if r > 1.0]
    return (f"Targets (issue 30: each <= 1.0x {what}): **met on {len(ok)} of {len(checks)}**"
            + (f"; not met: {', '.join(bad)}." if bad else "."))


def side_by_side(rows: list[dict[str, Any]], size: str, peer: str,
                 ops: dict[str, tuple[str, bool]]) -> tuple[str, list[tuple[str, float]]]:
    """A table of convlog vs ``peer`` per size and operation (ms and ratio), and the
    ratios of the operations that have a target."""
    names = list(rows[0]["convlog"])
    body, checks = [], []
    for row in rows:
        cells = [f"{row[size]:,}"]
        for op in names:
            ours, theirs = row["convlog"][op], row[peer][op]
            cells.append(vs(ours, theirs, ours / theirs))
            label, target = op_label(ops, op)
            if target:
                checks.append((f"{label} @{k(row[size])}", ours / theirs))
        body.append(cells)
    return table([size, *(op_label(ops, op)[0] for op in names)], body), checks


def block_sdks(load: Loader) -> str:
    d = load("sdks")
    text, checks = side_by_side(d["rows"], "items", "sqlite_session", OPENAI_OPS)
    peak = d["peak_read_mib"]
    return (text
            + f"\n\nconvlog vs `SQLiteSession`, medians of {d['repeat']} calls; ratio convlog / "
              f"SQLiteSession (below 1: convlog is faster). Peak Python memory (tracemalloc) "
              f"of one `get_items()` of {peak['items']:,} items: convlog "
              f"{peak['convlog']} MiB, SQLiteSession {peak['sqlite_session']} MiB.\n\n"
            + verdict(checks, "`SQLiteSession`"))


def block_sdks_claude(load: Loader) -> str:
    d = load("sdks-claude")
    text, checks = side_by_side(d["rows"], "entries", "sqlite_reference", CLAUDE_OPS)
    memory = [v for row in d["rows"] for v in row["in_memory"].values()]
    peak = d["peak_load_mib"]
    return (text
            + f"\n\nconvlog vs the SQLite reference store, medians of {d['repeat']} calls "
              f"(fewer for 500 entries and loads); ratio convlog / reference (below 1: convlog "
              f"is faster). The SDK's `InMemorySessionStore` takes {num(min(memory))}-"
              f"{num(max(memory))} ms for these calls (a list copy or extend). Peak memory "
              f"(tracemalloc) of one `load` of {peak['entries']:,} entries: convlog "
              f"{peak['convlog']} MiB, SQLite reference {peak['sqlite_reference']} MiB, "
              f"in-memory {peak['in_memory']} MiB.\n\n"
            + verdict(checks, "the SQLite reference store"))


def adk_label(op: str) -> str:
    """``list_sessions_5000_ms`` -> "`list_sessions`, 5,000 sessions"."""
    match = re.fullmatch(r"(?P<call>[a-z_]+?)(?:_(?P<n>\d+))?_ms", op)
    if not match:
        return f"`{op}`"
    unit = " events" if match["call"] == "get_session" else " sessions"
    return f"`{match['call']}`" + (f", {int(match['n']):,}{unit}" if match["n"] else "")


def block_sdks_adk(load: Loader) -> str:
    d = load("sdks-adk")
    ours, theirs = d["convlog"], d["database_session_service"]
    rows, checks = [], []
    for op in ours:
        r = ours[op] / theirs[op]
        rows.append([adk_label(op), ms(ours[op]), ms(theirs[op]), ratio(r), met(r <= 1.0)])
        checks.append((adk_label(op), r))
    return (table(["operation", "convlog", "ADK `DatabaseSessionService`", "ratio",
                   "<= 1.0x"], rows, right=[False, True, True, True, False])
            + "\n\nRatio: convlog / ADK (below 1: convlog is faster).\n\n"
            + verdict(checks, "`DatabaseSessionService` on SQLite"))


def _when(result: Result) -> str:
    meta, d = result.meta, result.data
    if meta:
        return f"{meta['utc_start'][:16].replace('T', ' ')}-{meta['utc_end'][11:16]}"
    utc = d.get("utc") or d.get("date") or ""
    return f"{utc[:16].replace('T', ' ')} (end)" if len(utc) > 10 else result.date


def _revision(result: Result) -> str:
    meta, machine = result.meta, result.data.get("machine") or {}
    if meta:
        return f"`{meta['revision']}`" + (" (not clean)" if meta.get("dirty") else "")
    commit = machine.get("commit") or result.data.get("revision")
    return f"`{commit}`" if commit else "not recorded"


def block_runs(load: Loader) -> str:
    """Which run each bench's figures come from, so that a mix of days shows at once."""
    rows, revisions = [], set()
    for bench in COMMANDS:
        load(bench)
        result = next(r for r in load.used if r.bench == bench)
        start, end = _loads(result)
        loads = " -> ".join(f"{x[0]:.1f}" if x else "?" for x in (start, end)) \
            if start or end else "not recorded"
        pace = (result.meta.get("noise") or {}).get("host_pace") or result.data.get("host_pace")
        rows.append([f"`{bench}`", result.mode, _when(result), _revision(result), loads,
                     f"{pace['p90_ms'] / pace['min_ms']:.2f}" if pace else "",
                     f"`{result.path.name}`"])
        revisions.add(_revision(result))
    one = len(revisions) == 1 and "not recorded" not in revisions
    summary = ("Every figure below comes from one revision." if one else
               f"**The figures below come from {len(revisions)} different revisions "
               "(or runs without one recorded): re-run `make bench` to make them one run.**")
    return (summary + "\n\n"
            + table(["bench", "mode", "UTC", "revision", "load average (start -> end)",
                     "host pace p90/min", "results"], rows,
                    right=[False, False, False, False, True, True, False]))


BLOCKS: dict[str, Callable[[Loader], str]] = {
    "runs": block_runs,
    "peers-run": block_peers_run, "peers": block_peers, "peers-targets": block_peers_targets,
    "peers-memory": block_peers_memory, "formats": block_formats,
    "core": block_core, "context": block_context, "views": block_views,
    "writers": block_writers, "memory": block_memory, "crypto": block_crypto,
    "importers": block_importers, "watch": block_watch, "replay": block_replay,
    "http": block_http, "scale": block_scale, "acp": block_acp, "html": block_html,
    "sdks": block_sdks, "sdks-claude": block_sdks_claude, "sdks-adk": block_sdks_adk,
}


def render_block(name: str, runs: dict[str, list[Result]], date: str | None = None) -> str:
    """A block's body: one header line per run it reads, then its table(s)."""
    if name not in BLOCKS:
        raise ReportError(f"block {name!r}: no renderer (known: {', '.join(BLOCKS)})")
    load = Loader(runs, date)
    try:
        body = BLOCKS[name](load)
    except (KeyError, TypeError, IndexError, ZeroDivisionError) as error:
        files = ", ".join(r.path.name for r in load.used)
        raise ReportError(f"block {name!r}: cannot read {error!r} from {files}: did the "
                          "bench's JSON change? Update its renderer in bench/report.py") from error
    if name == "runs":  # its table is the headers of every run
        return body + "\n"
    return "\n\n".join(header(r) for r in load.used) + "\n\n" + body + "\n"


def render_text(text: str, runs: dict[str, list[Result]], date: str | None = None) -> str:
    """The file's text with every generated block rewritten."""
    return BLOCK.sub(lambda m: m[1] + render_block(m["name"], runs, date) + m[4], text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 if a file differs from what would be written")
    parser.add_argument("--date", help="use the full runs of this UTC date (YYYY-MM-DD)")
    parser.add_argument("--results", type=Path, default=RESULTS, help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, default=REPO, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.date:
        datetime.strptime(args.date, "%Y-%m-%d")
    runs = scan(args.results)
    stale = []
    try:
        for name in FILES:
            path = args.root / name
            text = path.read_text()
            new = render_text(text, runs, args.date)
            if new == text:
                continue
            if args.check:
                stale.append(name)
            else:
                path.write_text(new)
                print(f"rewrote {name}")
    except ReportError as error:
        print(f"bench.report: {error}", file=sys.stderr)
        return 2
    if stale:
        print(f"bench.report --check: not up to date: {', '.join(stale)}; run "
              "`.venv/bin/python -m bench.report`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
