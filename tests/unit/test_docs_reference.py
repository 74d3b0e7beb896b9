"""The generated reference pages (issue 29): docs/cli-reference.md is the parser's own
help and docs/http-reference.md is docs/openapi.json, made at build time, so every
command and every operation is there and a change shows at once."""

from __future__ import annotations

import json
from pathlib import Path

from docs.gen_reference import DOCS, cli_reference, http_reference, main


def test_the_generator_writes_both_pages_where_it_is_told(tmp_path: Path) -> None:
    assert main([str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cli-reference.md",
                                                         "http-reference.md"]
    assert (tmp_path / "cli-reference.md").read_text() == cli_reference()


def test_every_command_and_every_operation_has_a_section() -> None:
    from convlog.cli.registry import COMMANDS

    cli = cli_reference()
    for command in COMMANDS:
        assert f"\n## convlog {command.name}\n" in cli
    document = json.loads((DOCS / "openapi.json").read_text())
    http = http_reference(document)
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            assert f"## `{method.upper()} {path}`" in http
            assert operation["operationId"] in http


def test_a_changed_document_changes_the_page(tmp_path: Path) -> None:
    document = json.loads((DOCS / "openapi.json").read_text())
    document["paths"]["/health"]["get"]["summary"] = "Changed"
    assert "`getHealth`: Changed" in http_reference(document)
    assert "`getHealth`: Changed" not in http_reference(
        json.loads((DOCS / "openapi.json").read_text()))
