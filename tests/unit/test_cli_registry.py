"""A `convlog` command is declared in one place, convlog.cli.registry: the parser and
`main` are built from its table, and no module adds a command of its own."""

from __future__ import annotations

import ast
from pathlib import Path

from convlog.cli.main import build_parser
from convlog.cli.registry import COMMANDS

CLI = Path(__file__).resolve().parents[2] / "adapters" / "cli"


def test_the_parser_has_exactly_the_registered_commands_in_their_order() -> None:
    parser = build_parser()
    choices = next(a for a in parser._actions if a.dest == "command").choices
    assert choices is not None
    assert list(choices) == [c.name for c in COMMANDS]
    assert len({c.name for c in COMMANDS}) == len(COMMANDS)


def test_each_command_runs_one_way() -> None:
    for command in COMMANDS:
        ways = (command.run, command.run_app, command.run_on_url)
        assert sum(way is not None for way in ways) == 1, command.name


def test_no_module_registers_a_command_by_itself() -> None:
    found = [f"{path.name}:{node.lineno}" for path in sorted(CLI.glob("*.py"))
             if path.name != "main.py"
             for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Attribute) and node.attr in ("add_subparsers",
                                                                  "add_parser")]
    assert found == []
