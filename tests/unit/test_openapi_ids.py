"""The OpenAPI operationIds are names clients are generated with (`appendTurn` becomes
a TypeScript method): each is declared with its endpoint, unique, meaningful, and
does not move when the endpoints are listed in another order."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from convlog.http.app import ENDPOINTS
from convlog.http.endpoint import Endpoint
from convlog.http.openapi import document

ROOT = Path(__file__).resolve().parents[2]
CAMEL = re.compile(r"[a-z]+(?:[A-Z][a-z]+)*")  # no digits, no underscores: never `start_0`


def ids(doc: dict[str, Any]) -> dict[tuple[str, str], str]:
    return {(method, path): op["operationId"] for path, ops in doc["paths"].items()
            for method, op in ops.items()}


def test_every_operation_id_is_declared_unique_and_camel_case() -> None:
    found = ids(document(ENDPOINTS, "0"))
    names = list(found.values())
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    assert [n for n in names if not CAMEL.fullmatch(n)] == []
    declared = {(e.method.lower(), e.path): e.operation_id for e in ENDPOINTS}
    assert {k: v for k, v in found.items() if k[1] != "/health"} == declared


def test_operation_ids_do_not_depend_on_the_order_of_the_endpoints() -> None:
    assert ids(document(ENDPOINTS, "0")) == ids(document(ENDPOINTS[::-1], "0"))
    assert ids(document(ENDPOINTS, "0")) == ids(document(ENDPOINTS[1::2] + ENDPOINTS[::2],
                                                         "0"))


def test_the_names_clients_were_generated_with_stay() -> None:
    """Renaming one of these breaks generated clients: add names, never change them."""
    committed = ids(json.loads((ROOT / "docs" / "openapi.json").read_text()))
    assert {committed[("post", "/v1/conversations/{key}/turns")],
            committed[("get", "/v1/conversations/{key}/context")],
            committed[("post", "/v1/conversations")],
            committed[("get", "/health")]} == {
        "appendTurn", "getContext", "startConversation", "getHealth"}
    assert committed == ids(document(ENDPOINTS, "0"))


def test_an_endpoint_cannot_be_declared_without_its_operation_id() -> None:
    async def handler(call: Any) -> None:
        return None

    with pytest.raises(TypeError, match="operation_id"):
        Endpoint("GET", "/v1/x", handler, "x")  # type: ignore[call-arg]
