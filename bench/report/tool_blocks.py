"""The blocks of the benches of convlog's tools: the importers, ``convlog watch``, the
HTTP server and its scale-out, the ACP proxy and the HTML viewer.

Why: one renderer per bench that measures a program built on the library, apart from
the library's own benches (library_blocks).
"""

from __future__ import annotations

from typing import Any

from bench.report.markdown import met, ms, num, ratio, table
from bench.report.results import Loader


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


def block_http_others(load: Loader) -> str:
    d = load("http")
    o = d["others"]
    labels = {"baseline": "none (the baseline)",
              "huge_writer": f"one client posting {o['huge_writer']['huge']['messages']:,}-"
                             "message turns back to back",
              "streams": f"{o['streams']['streams']['open']} streams open, following the "
                         "conversations written to"}
    rows = []
    for name, label in labels.items():
        a, h = o[name]["append"], o[name]["health"]
        rows.append([label, f"{a['messages_per_s']:,.0f}",
                     f"{num(a['p50_ms'], 2)} / {num(a['p99_ms'], 3)} ms",
                     f"{num(h['p50_ms'], 2)} / {num(h['p99_ms'], 3)} ms"])
    huge = o["huge_writer"]["huge"]
    return (table(["hostile load", "others' messages/s", "others' append p50 / p99",
                   "/health p50 / p99"], rows)
            + f"\n\nOthers: {o['appenders']} clients appending 2-message turns and "
              f"{o['health_clients']} asking for `/health`, {d['seconds']:g} s per load, "
              "each load on a server of its own. The huge writer wrote "
              f"{huge['turns']} turns of {huge['messages']:,} messages ({huge['mb']:.1f} MB "
              f"each), {huge['p50_s']:.2f} s a turn (median).")


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
