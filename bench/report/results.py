"""Which saved run fills a block: the results files of ``bench/results/`` by bench, and
the newest FULL run of each (or that of one ``--date``).

Why its own module: this is the one rule the documentation's figures depend on (a quick
run never fills a block; a missing or quick-only bench stops the render, naming the bench,
its files and the command that produces them), kept apart from how a block looks.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench" / "results"
NAME = re.compile(
    r"^(?:(?P<bench>[a-z][a-z-]*?)-)?(?P<date>\d{4}-\d{2}-\d{2})(?P<quick>-quick)?\.json$")

# The command that produces each bench's results (what `make bench` runs).
COMMANDS = {
    "core": ".venv/bin/python -m bench.core", "context": ".venv/bin/python -m bench.context",
    "memory": ".venv/bin/python -m bench.memory", "views": ".venv/bin/python -m bench.views",
    "writers": ".venv/bin/python -m bench.writers", "scale": ".venv/bin/python -m bench.scale",
    "pg-writers": ".venv/bin/python -m bench.pg_writers",
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
