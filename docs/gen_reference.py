"""Generate the two reference pages that must never be written by hand (issue 29):
docs/cli-reference.md from the `convlog` parser itself (each command's --help), and
docs/http-reference.md from docs/openapi.json (each operation, its parameters and its
answers). They are made at build time (`make docs` runs this first) and not committed
(.gitignore), so they cannot go stale, and a new option never makes a merge conflict;
docs/openapi.json itself is checked current by tests/unit/test_openapi*.py.

    python -m docs.gen_reference [DIR]    # write both pages into DIR (default: docs/)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent
WIDTH = "88"  # argparse wraps help to $COLUMNS: fixed, so the page is the same everywhere


def cli_reference() -> str:
    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        return _cli_reference()
    finally:  # put the environment back: tests run in this process too
        if columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = columns


def _cli_reference() -> str:
    from convlog.cli.main import build_parser

    parser = build_parser()
    parser.prog = "convlog"
    out = ["# CLI reference", "",
           "Generated from the parser by `python -m docs.gen_reference` (do not edit by hand;",
           "[the CLI](cli.md) explains the commands). Every command also takes `--db URL`.", "",
           "## convlog", "", "```text", parser.format_help().rstrip(), "```", ""]
    for name, sub in _subcommands(parser):
        out += [f"## convlog {name}", "", "```text", sub.format_help().rstrip(), "```", ""]
    return "\n".join(out)


def _subcommands(parser: argparse.ArgumentParser,
                 prefix: str = "") -> list[tuple[str, argparse.ArgumentParser]]:
    found: list[tuple[str, argparse.ArgumentParser]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.append((f"{prefix}{name}", sub))
                found += _subcommands(sub, f"{prefix}{name} ")
    return found


def _resolved(document: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """`node`, or what its local `$ref` (``#/components/...``) points to."""
    ref = node.get("$ref")
    if not isinstance(ref, str):
        return node
    for part in ref.removeprefix("#/").split("/"):
        document = document[part]
    return document


def http_reference(document: dict[str, Any]) -> str:
    out = ["# HTTP reference", "",
           "Generated from [openapi.json](openapi.json) by `python -m docs.gen_reference` (do",
           "not edit by hand; [the HTTP service](http.md) explains tokens, retries and limits).",
           ""]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            out += [f"## `{method.upper()} {path}`", "",
                    f"`{operation['operationId']}`: {operation.get('summary', '')}", ""]
            parameters = [_resolved(document, p) for p in operation.get("parameters", [])]
            if parameters:
                out += ["| parameter | in | required | what |", "| --- | --- | --- | --- |"]
                out += [f"| `{p['name']}` | {p['in']} | {'yes' if p.get('required') else 'no'}"
                        f" | {_cell(p.get('description', ''))} |" for p in parameters]
                out.append("")
            body = operation.get("requestBody", {}).get("content", {})
            for media, content in body.items():
                out += [f"Body ({media}): {_schema(content.get('schema', {}))}", ""]
            out += ["| status | answer |", "| --- | --- |"]
            for status, answer in operation.get("responses", {}).items():
                out.append(f"| {status} | {_cell(answer.get('description', ''))} |")
            out.append("")
    return "\n".join(out)


def _schema(schema: dict[str, Any]) -> str:
    ref = schema.get("$ref", "")
    return f"`{ref.rsplit('/', 1)[-1]}`" if ref else f"`{json.dumps(schema)}`"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def pages(folder: Path = DOCS) -> dict[Path, str]:
    document = json.loads((DOCS / "openapi.json").read_text())
    return {folder / "cli-reference.md": cli_reference(),
            folder / "http-reference.md": http_reference(document)}


def main(argv: list[str]) -> int:
    for path, text in pages(Path(argv[0]) if argv else DOCS).items():
        path.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
