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

The package, a module per part:

- ``results``: the results files by bench, and the newest full run a block reads;
- ``markdown``: tables and number formatting shared by every block;
- ``provenance``: the line heading each block (run, revision, noise, command) and the
  ``runs`` block;
- ``library_blocks``, ``tool_blocks``, ``peer_blocks``, ``sdk_blocks``: the renderers, by
  family of benches (convlog's library, its tools, the peers, the agent SDK stores);
- ``render``: which files hold blocks, which renderer fills each, the rewrite of a file;
- ``cli``: ``python -m bench.report``.
"""

from bench.report.cli import main
from bench.report.render import BLOCK, BLOCKS, FILES, render_block, render_text
from bench.report.results import COMMANDS, REPO, RESULTS, Loader, ReportError, Result, scan

__all__ = ["BLOCK", "BLOCKS", "COMMANDS", "FILES", "REPO", "RESULTS", "Loader", "ReportError",
           "Result", "main", "render_block", "render_text", "scan"]
