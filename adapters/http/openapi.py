"""The OpenAPI 3.1 document, generated from the endpoint declarations and the Structs.

Request and answer schemas come from `msgspec.json.schema_components` on the very
types the server decodes and encodes, so the document cannot drift from the server.
A copy is committed as docs/openapi.json (a test checks it equals the served one);
regenerate it with `python -m convlog.http > docs/openapi.json`.

What generators need from it, beyond msgspec's schemas (`_refined`): a
discriminated union is a `oneOf` (its members exclusive by their tag; openapi-generator's
typescript-fetch does not compile `anyOf` + discriminator), a free-form object says
`additionalProperties: true` (else openapi-typescript types `metadata` as
`Record<string, never>`), and every POST declares the `Idempotency-Key` header it
honours (a generated client then has a typed parameter for it). It passes Redocly's
recommended rules (tests/e2e/test_openapi_generators.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from convlog.http.endpoint import Endpoint
from convlog.http.schema import Health, Problem

ERRORS = {
    "400": "Malformed request (not JSON, empty body, bad header)",
    "401": "Missing or unknown bearer token",
    "403": "The token may not do this, or the request came from a web page (`Origin`) "
           "not allowed with --allow-origin",
    "404": "No such conversation (or not this token's), no conversation ever recorded for "
           "the user or workspace asked about (`unknown-user`), or no such route",
    "408": "The request line and headers, or the body, did not arrive in time",
    "409": "Other writers kept winning the race for this conversation; retry",
    "413": "The body is too large",
    "415": "Without a token: a body not sent as `Content-Type: application/json`",
    "421": "Without a token: a `Host` header that is not the server's address (DNS rebinding)",
    "422": "Invalid input: `field` names the offending field",
    "429": "Too many live streams held by this token (--max-streams-per-token)",
    "431": "The request line and headers are too large, or there are too many headers",
    "503": "Overloaded (too many requests in flight) or the storage is unavailable: "
           "retry after Retry-After",
}
REF = "#/components/schemas/{name}"
IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key", "in": "header", "required": False,
    "description": "Makes a retried POST safe: the same key with the same body gets the "
                   "first answer back (`Idempotent-Replayed: true`), with another body a "
                   "422; in a turn, messages without an `id` get `KEY#0`, `KEY#1`...",
    "schema": {"type": "string", "minLength": 1, "maxLength": 255}}
HEALTH_ERRORS = ("400", "408", "421", "431", "503")
"""What /health can answer besides 200 (it takes no token and no body)."""


def _problem_responses() -> dict[str, Any]:
    problem = {"application/problem+json": {"schema": {"$ref": REF.format(name="Problem")}}}
    return {code: {"description": text, "content": problem} for code, text in ERRORS.items()}


def _operation(endpoint: Endpoint, schemas: dict[Any, Any]) -> dict[str, Any]:
    params: list[dict[str, Any]] = []
    if "{key}" in endpoint.path:
        params.append({"name": "key", "in": "path", "required": True,
                       "description": "the conversation key the host chose, URL-encoded",
                       "schema": {"type": "string", "minLength": 1, "maxLength": 512}})
    for p in endpoint.query:
        schema = {"type": "array", "items": p.schema} if p.many else p.schema
        params.append({"name": p.name, "in": "query", "required": p.required,
                       "description": p.description, "schema": schema,
                       **({"style": "form", "explode": True} if p.many else {})})
    if endpoint.stream:  # each event: `id` its position, `data` the JSON of `answer`
        event = {"type": "object", "required": ["data"], "properties": {
            "id": {"type": "string"}, "event": {"type": "string"},
            "data": {"type": "string", "contentMediaType": "application/json",
                     "contentSchema": schemas[endpoint.answer]}}}
        ok: dict[str, Any] = {"description": "text/event-stream, until the client leaves",
                              "content": {"text/event-stream": {"schema": event}}}
    else:
        ok = {"description": "OK", "content": {"application/json": {
            "schema": schemas[endpoint.answer]}}}
    if endpoint.method == "POST":  # app._view honours the header on every POST
        params.append({"$ref": "#/components/parameters/IdempotencyKey"})
    op: dict[str, Any] = {
        "operationId": endpoint.operation_id,
        "summary": endpoint.summary,
        "tags": [endpoint.tag],
        "parameters": params,
        "responses": {"200": ok, **_problem_responses()},
    }
    if endpoint.body is not None:
        op["requestBody"] = {"required": endpoint.body.__name__ not in ("ReasonIn",),
                             "content": {"application/json": {
                                 "schema": schemas[endpoint.body]}}}
    if endpoint.admin:
        op["description"] = "Needs the admin token (CONVLOG_TOKEN)."
    return op


def document(endpoints: Sequence[Endpoint], version: str) -> dict[str, Any]:
    types: list[Any] = [Problem, Health]
    for e in endpoints:
        types.extend(t for t in (e.body, e.answer) if t is not None and t not in types)
    found, components = msgspec.json.schema_components(types, ref_template=REF)
    schemas = dict(zip(types, found, strict=True))
    paths: dict[str, dict[str, Any]] = {}
    for e in endpoints:
        paths.setdefault(e.path, {})[e.method.lower()] = _operation(e, schemas)
    problems = _problem_responses()
    paths["/health"] = {"get": {
        "operationId": "getHealth", "summary": "Liveness, version and backend", "tags": ["meta"],
        "security": [],
        "responses": {"200": {"description": "OK", "content": {"application/json": {
            "schema": schemas[Health]}}}, **{c: problems[c] for c in HEALTH_ERRORS}}}}
    refined: dict[str, Any] = _refined({
        "openapi": "3.1.0",
        "info": {"title": "convlog", "version": version,
                 "description": "An event-sourced conversation log for AI agent hosts, over "
                 "HTTP. Errors are RFC 9457 problem documents.",
                 "license": {"name": "MIT", "identifier": "MIT"}},
        "servers": [{"url": "http://127.0.0.1:8765",
                     "description": "`convlog serve` on its default address"}],
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": dict(sorted(components.items())),
            "parameters": {"IdempotencyKey": IDEMPOTENCY_KEY},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    })
    return refined


def _refined(node: Any) -> Any:
    """`node` as client generators need it (see the module's docstring)."""
    if isinstance(node, list):
        return [_refined(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _refined(value) for key, value in node.items()}
    if "anyOf" in out and "discriminator" in out:  # members exclusive by their tag
        out = {("oneOf" if key == "anyOf" else key): value for key, value in out.items()}
    if out.get("type") == "object" and not {"properties", "additionalProperties",
                                            "patternProperties"} & out.keys():
        out["additionalProperties"] = True  # free-form: any JSON object
    return out


def encoded(endpoints: Sequence[Endpoint], version: str) -> bytes:
    return msgspec.json.format(msgspec.json.encode(document(endpoints, version)), indent=2)
