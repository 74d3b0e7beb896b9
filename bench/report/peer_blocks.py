"""The blocks of bench.peers: convlog against the OpenAI Agents SDK, LangChain,
LangGraph and raw sqlite3 (machine, tables, targets, memory), and the stored formats'
bytes per message judged against the peers'.

Why its own module: these blocks read the peers' run, whose JSON carries its own
markdown and machine record (the peers run in .venv-bench, not in the project's venv).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from bench.report.markdown import k, met, table
from bench.report.results import Loader


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
