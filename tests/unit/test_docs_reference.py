"""The generated reference pages are current (issue 29): docs/cli-reference.md is the
parser's own help and docs/http-reference.md is docs/openapi.json, so a new option or
endpoint fails here until `python -m docs.gen_reference` is run and the pages committed."""

from __future__ import annotations

import json
from pathlib import Path

from docs.gen_reference import DOCS, cli_reference, http_reference, pages


def test_the_committed_reference_pages_are_what_the_generator_prints() -> None:
    for path, text in pages().items():
        assert path.read_text() == text, f"{path.name} is stale: python -m docs.gen_reference"


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
    assert http_reference(document) != (DOCS / "http-reference.md").read_text()
