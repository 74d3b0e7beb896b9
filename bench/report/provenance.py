"""Where a block's figures come from: the line that heads each block (run, revision,
machine noise, command, file) and the ``runs`` block that lists the run behind every bench.

Why: a figure is only worth quoting beside the run that measured it; runs of different
days or revisions must show at once. Older results files predate ``bench.meta`` and
record these facts in other places, which this module alone knows.
"""

from __future__ import annotations

from bench.report.markdown import table
from bench.report.results import COMMANDS, Loader, Result


def load_averages(result: Result) -> tuple[list[float] | None, list[float] | None]:
    """The load averages at the start and end of a run, wherever its file kept them."""
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
    start_load, end_load = load_averages(result)
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
        start, end = load_averages(result)
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
