"""`convlog acp [options] -- AGENT_COMMAND [ARGS...]`: the ACP recording proxy.

Its arguments are declared here too (`add_arguments`); convlog.cli.registry names it.
"""

from __future__ import annotations

import argparse
import shutil

import convlog
from convlog.cli.arguments import UsageError, positive_float, positive_int
from convlog.domain.errors import ConvlogError
from convlog.services.application import Application


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tokens", type=positive_int, default=10_000, metavar="N",
                   help="token budget of the history injected into a new agent session "
                        "(default 10000)")
    p.add_argument("--messages", type=positive_int, default=30, metavar="N",
                   help="at most N messages of injected history (default 30)")
    p.add_argument("--chars", type=positive_int, default=2_000, metavar="N",
                   help="cut each injected message at N characters (default 2000)")
    p.add_argument("--agent-name", metavar="NAME",
                   help="the agent's name in the log (default: the agent's own, from "
                        "initialize, else the command's file name)")
    p.add_argument("--max-frame-mb", type=positive_float, default=64.0, metavar="MB",
                   help="largest JSON-RPC frame passed through (default 64)")
    p.add_argument("--init-timeout", type=positive_float, default=60.0, metavar="SECONDS",
                   help="how long the agent has to answer initialize before the host gets "
                        "an error (default 60)")
    p.add_argument("--preamble", default="first-blocks", choices=("first-blocks", "none"),
                   help="the host's system prompt, when the host does not mark it "
                        "(annotations audience [\"assistant\"], or _meta convlog/preamble): "
                        "first-blocks (default) takes the first text block of a session's "
                        "first prompt when more text follows; none takes no block, so an "
                        "unmarked system prompt is recorded as the user's words. What is "
                        "taken is recorded as the preamble, not as dialogue")
    p.add_argument("--log-level", default="warning",
                   choices=("debug", "info", "warning", "error"),
                   help="what the proxy logs on stderr (default warning)")
    p.add_argument("agent", nargs=argparse.REMAINDER, metavar="-- AGENT_COMMAND [ARGS...]",
                   help="the agent to run, after --")


def check(args: argparse.Namespace) -> None:
    """Before a database is created for nothing: an agent to run (a usage error
    without one), the extra, stdio an ACP client can talk on, and an agent command
    that exists. `args.agent` becomes the command, without the ``--``."""
    command = list(args.agent)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise UsageError("field 'AGENT_COMMAND': give the agent to run after --, e.g. "
                         "convlog acp -- my-agent --stdio")
    args.agent = command
    from convlog.acp import require_sdk

    require_sdk()
    from convlog.acp.run import check_stdio

    check_stdio()
    if shutil.which(command[0]) is None:
        raise ConvlogError(f"cannot start the agent {command[0]!r}: no such command")


def cmd_acp(app: Application, args: argparse.Namespace) -> None:
    import asyncio  # here: the other commands never load asyncio
    import logging

    from convlog.acp.run import run_stdio

    logging.basicConfig(level=args.log_level.upper(),
                        format="convlog acp: %(levelname)s: %(message)s")
    budget = convlog.Budget(tokens=args.tokens, messages=args.messages, chars=args.chars)
    status = asyncio.run(run_stdio(
        app, args.agent, budget=budget,
        agent_name=args.agent_name, max_frame=int(args.max_frame_mb * 1024 * 1024),
        init_timeout=args.init_timeout, preamble=args.preamble))
    if status:
        raise ConvlogError("some turns could not be recorded (see the messages above)")
