"""docs/openapi.json is what client generators need (issue 44, item 3): discriminated
unions are `oneOf`, free-form objects say `additionalProperties: true`, a role is an
enum, every POST declares the `Idempotency-Key` it honours. Redocly and a second
generator run on it in tests/e2e/test_openapi_generators.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

DOCUMENT = json.loads((Path(__file__).resolve().parents[2] / "docs" / "openapi.json")
                      .read_text())


def nodes(node: Any, where: str = "$") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        yield where, node
        for key, value in node.items():
            yield from nodes(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from nodes(value, f"{where}[{i}]")


def test_discriminated_unions_are_one_of() -> None:
    unions = [(w, n) for w, n in nodes(DOCUMENT) if "discriminator" in n]
    assert unions
    assert [w for w, n in unions if "oneOf" not in n or "anyOf" in n] == []


def test_free_form_objects_take_any_json_object() -> None:
    loose = [w for w, n in nodes(DOCUMENT) if n.get("type") == "object"
             and not {"properties", "additionalProperties", "patternProperties"} & n.keys()]
    assert loose == []
    start = DOCUMENT["components"]["schemas"]["StartIn"]["properties"]["metadata"]
    assert start["additionalProperties"] is True
    tool = DOCUMENT["components"]["schemas"]["ToolUseIn"]["properties"]["input"]
    assert {"type": "object", "additionalProperties": True} in tool["anyOf"]


def test_a_role_is_an_enum() -> None:
    role = DOCUMENT["components"]["schemas"]["MessageLine"]["properties"]["role"]
    assert role["enum"] == ["user", "assistant", "tool"]


def test_every_post_declares_the_idempotency_key() -> None:
    posts = {path: op for path, item in DOCUMENT["paths"].items()
             for method, op in item.items() if method == "post"}
    assert posts
    ref = {"$ref": "#/components/parameters/IdempotencyKey"}
    assert [p for p, op in posts.items() if ref not in op["parameters"]] == []
    header = DOCUMENT["components"]["parameters"]["IdempotencyKey"]
    assert (header["name"], header["in"], header["required"]) == (
        "Idempotency-Key", "header", False)


def test_a_turns_message_says_its_type_as_the_server_requires() -> None:
    """The server takes a turn's messages as `convlog record` lines, whose `type` it
    requires (one decoder for every body, 0ed2d94): the document says so."""
    schemas = DOCUMENT["components"]["schemas"]
    items = schemas["TurnIn"]["properties"]["messages"]["items"]
    assert items == {"$ref": "#/components/schemas/MessageLine"}
    assert "type" in schemas["MessageLine"]["required"]


def test_servers_and_license_are_given() -> None:
    assert DOCUMENT["servers"][0]["url"] == "http://127.0.0.1:8765"
    assert DOCUMENT["info"]["license"]["identifier"] == "MIT"
