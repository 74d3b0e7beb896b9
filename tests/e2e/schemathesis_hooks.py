"""Loaded by schemathesis (SCHEMATHESIS_HOOKS) in test_serve_schemathesis: the API's own
rule on top of the stock checks. Every error is an RFC 9457 problem document, and
every 422 names the field it is about."""

from __future__ import annotations

import json
from typing import Any

import schemathesis


@schemathesis.check
def problem_documents(ctx: Any, response: Any, case: Any) -> None:
    if response.status_code < 400:
        return
    kind = (response.headers.get("content-type") or [""])[0]
    assert kind == "application/problem+json", f"an error answered as {kind!r}"
    body = json.loads(response.content)
    assert body["status"] == response.status_code, body
    assert body["type"].startswith("urn:convlog:problem:"), body
    assert body["title"] and body["detail"], body
    if response.status_code == 422:
        assert body.get("field"), f"a 422 that names no field: {body}"
