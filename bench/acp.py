"""What `convlog acp` adds: latency per forwarded frame and per prompt, and its memory.

Run with ``.venv/bin/python -m bench.acp [--quick]`` (``make bench`` runs it). The
same SDK client talks to the same SDK agent twice: directly, and through `convlog acp`
(recording into a SQLite file). Figures:

- per forwarded frame: the round trip of an extension request (`_bench/ping`: one
  request and one response, both forwarded) through the proxy minus directly, halved;
- streamed notifications: a prompt answered with 1,000 `agent_message_chunk`s, time
  per chunk at the client (the proxy also assembles them into the turn it records);
- per prompt round trip: a prompt answered with 5 chunks, p50 and p95; through the
  proxy this includes recording the turn (one `append_turn`, token counts and all),
  which happens before the answer goes back, so an answered turn is never lost;
- memory: the proxy process's resident set (VmRSS) and peak (VmHWM) at the end.

Target: ≤ 1 ms added at p50 per forwarded frame and per prompt round trip.
Results go to ``bench/results/acp-<UTC date>[-quick].json``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any, cast

import acp

from bench import meta

RESULTS = Path(__file__).resolve().parent / "results"

AGENT = textwrap.dedent("""
    import asyncio
    import acp

    class BenchAgent:
        def on_connect(self, conn):
            self.conn = conn
        async def initialize(self, protocol_version, **kw):
            return acp.InitializeResponse(protocol_version=acp.PROTOCOL_VERSION)
        async def new_session(self, cwd, **kw):
            return acp.NewSessionResponse(session_id="s")
        async def prompt(self, session_id, prompt, **kw):
            count = int(prompt[-1].text)
            for i in range(count):
                await self.conn.session_update(session_id, acp.update_agent_message_text(f"w{i} "))
            return acp.PromptResponse(stop_reason="end_turn")
        async def ext_method(self, method, params):
            return {"pong": params.get("n")}

    asyncio.run(acp.run_agent(BenchAgent()))
""")


class Counter:
    def __init__(self) -> None:
        self.updates = 0

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates += 1


def ms(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 3)


async def measure(command: list[str], pings: int, prompts: int, proxy: bool) -> dict[str, Any]:
    client = Counter()
    async with acp.spawn_agent_process(cast(acp.Client, client), *command, env=dict(os.environ),
                                       transport_kwargs={"limit": 2**20}) as (conn, proc):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        session = (await conn.new_session(cwd="/", mcp_servers=[])).session_id
        for _ in range(20):  # warm up: imports, the proxy's tokenizer, the database file
            await conn.ext_method("bench/ping", {"n": 0})
            await conn.prompt(session_id=session, prompt=[acp.text_block("5")])
        ping: list[float] = []
        for n in range(pings):
            started = time.perf_counter()
            await conn.ext_method("bench/ping", {"n": n})
            ping.append(time.perf_counter() - started)
        turn: list[float] = []
        for _ in range(prompts):
            started = time.perf_counter()
            await conn.prompt(session_id=session, prompt=[acp.text_block("5")])
            turn.append(time.perf_counter() - started)
        stream: list[float] = []
        for _ in range(3):
            before = client.updates
            started = time.perf_counter()
            await conn.prompt(session_id=session, prompt=[acp.text_block("1000")])
            stream.append((time.perf_counter() - started) / (client.updates - before))
        memory = {}
        if proxy:
            status = Path(f"/proc/{proc.pid}/status").read_text()
            memory = {k: int(line.split()[1]) / 1024 for line in status.splitlines()
                      for k in ("VmRSS", "VmHWM") if line.startswith(k + ":")}
    return {"ping_p50_ms": ms(ping, 0.5), "ping_p95_ms": ms(ping, 0.95),
            "prompt_p50_ms": ms(turn, 0.5), "prompt_p95_ms": ms(turn, 0.95),
            "chunk_us": round(statistics.median(stream) * 1e6, 1),
            **{f"{k}_mib": round(v, 1) for k, v in memory.items()}}


def assembly(megabytes: list[int]) -> dict[str, float]:
    """Microseconds per 1 KB chunk to assemble a streamed answer of each size in
    memory (the proxy's Turn): flat across sizes means the cost grows linearly."""
    from convlog.acp.turns import Turn

    piece = {"sessionUpdate": "agent_message_chunk",
             "content": {"type": "text", "text": "x" * 1024}}
    found = {}
    for size in megabytes:
        turn = Turn(prompt=[{"type": "text", "text": "hi"}], agent="a", model="m")
        count = size * 1024
        started = time.perf_counter()
        for _ in range(count):
            turn.add(piece, None)
        messages = turn.close("end_turn")
        elapsed = time.perf_counter() - started
        assert messages is not None and len(str(messages[1].content)) == count * 1024
        found[f"{size}MB_us_per_chunk"] = round(elapsed / count * 1e6, 2)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer round trips")
    args = parser.parse_args()
    stamp = meta.begin("acp", args.quick)
    pings, prompts = (300, 100) if args.quick else (3000, 500)
    with tempfile.TemporaryDirectory() as tmp:
        agent = Path(tmp) / "bench_agent.py"
        agent.write_text(AGENT)
        agent_command = [sys.executable, str(agent)]
        proxy_command = [sys.executable, "-m", "convlog.cli.main", "acp", "--db",
                         f"sqlite:///{tmp}/acp.db", "--", *agent_command]
        direct = asyncio.run(measure(agent_command, pings, prompts, proxy=False))
        through = asyncio.run(measure(proxy_command, pings, prompts, proxy=True))
    added = {
        "frame_p50_ms": round((through["ping_p50_ms"] - direct["ping_p50_ms"]) / 2, 3),
        "prompt_p50_ms": round(through["prompt_p50_ms"] - direct["prompt_p50_ms"], 3),
        "chunk_us": round(through["chunk_us"] - direct["chunk_us"], 1),
    }
    print(f"convlog acp overhead ({pings} pings, {prompts} prompts of 5 chunks, "
          "3 prompts of 1,000 chunks)")
    print(f"{'':28}{'direct':>10}{'proxy':>10}{'added':>10}")
    print(f"{'request round trip p50 ms':28}{direct['ping_p50_ms']:>10}"
          f"{through['ping_p50_ms']:>10}{added['frame_p50_ms'] * 2:>10.3f}")
    print(f"{'  per forwarded frame ms':28}{'':>10}{'':>10}{added['frame_p50_ms']:>10}")
    print(f"{'prompt round trip p50 ms':28}{direct['prompt_p50_ms']:>10}"
          f"{through['prompt_p50_ms']:>10}{added['prompt_p50_ms']:>10}")
    print(f"{'prompt round trip p95 ms':28}{direct['prompt_p95_ms']:>10}"
          f"{through['prompt_p95_ms']:>10}"
          f"{through['prompt_p95_ms'] - direct['prompt_p95_ms']:>10.3f}")
    print(f"{'streamed chunk us':28}{direct['chunk_us']:>10}{through['chunk_us']:>10}"
          f"{added['chunk_us']:>10}")
    print(f"proxy memory: {through.get('VmRSS_mib')} MiB resident, "
          f"{through.get('VmHWM_mib')} MiB peak")
    sizes = [1, 4] if args.quick else [1, 4, 16]
    assembled = assembly(sizes)
    print("assembling a streamed answer in 1 KB chunks: "
          + ", ".join(f"{k.split('_')[0]} {v} us/chunk" for k, v in assembled.items()))
    path = stamp.save({"direct": direct, "proxy": through, "added": added,
                       "assembly": assembled, "pings": pings, "prompts": prompts})
    print(f"saved {path}")


if __name__ == "__main__":
    main()
