"""The blocks of convlog's own library benches: appends and reads against raw sqlite3
(core), context building (context), projections (views), concurrent writers, live blocks
(memory), encryption (crypto) and event replay.

Why: one renderer per bench that measures the library itself, apart from the tools
around it (tool_blocks) and the stores compared with others (peer_blocks, sdk_blocks).
"""

from __future__ import annotations

from bench.report.markdown import met, ms, num, ratio, table
from bench.report.results import Loader


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


def block_pg_writers(load: Loader) -> str:
    d = load("pg-writers")
    per_s, ratios = d["appends_per_s"], d["ratio"]
    rows = [[n, f"{per_s['convlog'][n]:,.0f}/s", f"{per_s['raw'][n]:,.0f}/s",
             f"{ratio(ratios[n])} ({', '.join(ratio(r) for r in d['ratio_rounds'][n])})"]
            for n in (str(c) for c in d["counts"])]
    s = d["server"]
    return (table(["writer processes", "convlog", "raw psycopg", "convlog/raw (rounds)"], rows)
            + f"\n\nOne message per append, each writer its own conversation; "
              f"{d['rounds']} rounds of {d['seconds_per_point']:g} s per point, the median "
              f"shown. PostgreSQL {s['server_version'].split()[0]}, synchronous_commit "
              f"{s['synchronous_commit']}, fsync {s['fsync']}. Target >= "
              f"{ratio(d['target_at_8'])} raw at 8 writers: {met(d['met_at_8'])}.")


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
