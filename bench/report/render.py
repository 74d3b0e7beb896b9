"""The generated blocks of the documentation: which files hold them, which renderer
fills each block, and the rewrite of a file's text.

Why: the registry of blocks is the one place where a block's name in the markdown meets
the code that renders it; a block that cannot be rendered stops with its name, the
results file and the renderer's module instead of a traceback.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from bench.report.library_blocks import (
    block_context,
    block_core,
    block_crypto,
    block_memory,
    block_pg_writers,
    block_replay,
    block_views,
    block_writers,
)
from bench.report.peer_blocks import (
    block_formats,
    block_peers,
    block_peers_memory,
    block_peers_run,
    block_peers_targets,
)
from bench.report.provenance import block_runs, header
from bench.report.results import Loader, ReportError, Result
from bench.report.sdk_blocks import block_sdks, block_sdks_adk, block_sdks_claude
from bench.report.tool_blocks import (
    block_acp,
    block_html,
    block_http,
    block_http_others,
    block_importers,
    block_scale,
    block_watch,
)

# Every file that quotes bench figures; each holds one or more generated blocks.
FILES = ("BENCHMARKS.md", "docs/sdks.md", "docs/http.md", "docs/scale-out.md",
         "docs/security.md")
BLOCK = re.compile(
    r"(<!-- bench:(?P<name>[a-z0-9-]+) -->\n)(?P<body>.*?)(<!-- /bench:(?P=name) -->)", re.DOTALL)

BLOCKS: dict[str, Callable[[Loader], str]] = {
    "runs": block_runs,
    "peers-run": block_peers_run, "peers": block_peers, "peers-targets": block_peers_targets,
    "peers-memory": block_peers_memory, "formats": block_formats,
    "core": block_core, "context": block_context, "views": block_views,
    "writers": block_writers, "pg-writers": block_pg_writers, "memory": block_memory,
    "crypto": block_crypto,
    "importers": block_importers, "watch": block_watch, "replay": block_replay,
    "http": block_http, "http-others": block_http_others,
    "scale": block_scale, "acp": block_acp, "html": block_html,
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
        source = BLOCKS[name].__module__.replace(".", "/") + ".py"
        files = ", ".join(r.path.name for r in load.used)
        raise ReportError(f"block {name!r}: cannot read {error!r} from {files}: did the "
                          f"bench's JSON change? Update its renderer in {source}") from error
    if name == "runs":  # its table is the headers of every run
        return body + "\n"
    return "\n\n".join(header(r) for r in load.used) + "\n\n" + body + "\n"


def render_text(text: str, runs: dict[str, list[Result]], date: str | None = None) -> str:
    """The file's text with every generated block rewritten."""
    return BLOCK.sub(lambda m: m[1] + render_block(m["name"], runs, date) + m[4], text)
