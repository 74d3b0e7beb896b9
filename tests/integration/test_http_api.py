"""`convlog serve`'s endpoints over a real socket (uvicorn in a thread), on SQLite and
PostgreSQL: every host operation, with raw httpx where the wire matters."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import open_backend
from tests.httpserver import served

TURN = {"messages": [
    {"type": "message", "role": "user", "content": "What did we decide about auth?", "id": "m1"},
    {"type": "message", "role": "assistant", "content": "JWT with rotating keys.", "id": "m2",
     "model": "gpt-4o", "usage": {"input_tokens": 812, "output_tokens": 9}},
]}


@pytest.fixture(params=["sqlite", "postgres"])
def http(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[httpx.Client]:
    with open_backend(request.param, tmp_path, request) as log, served(log) as url, \
            httpx.Client(base_url=url, timeout=10) as client:
        yield client


def problem(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == status and body["type"].startswith("urn:convlog:problem:")
    assert body["title"] and body["detail"]
    return dict(body)


def test_a_host_session_over_http(http: httpx.Client) -> None:
    started = http.post("/v1/conversations", json={"key": "discord:thread:42", "user": "u1",
                                                   "agent": "copilot"})
    assert started.status_code == 200 and started.json()["user"] == "u1"
    appended = http.post("/v1/conversations/discord:thread:42/turns", json=TURN).json()
    assert appended["appended"] == ["m1", "m2"] and appended["version"] == 3
    again = http.post("/v1/conversations/discord:thread:42/turns", json=TURN).json()
    assert again["appended"] == [] and again["skipped"] == ["m1", "m2"]  # a retry is safe
    last = http.get("/v1/conversations/discord:thread:42/messages", params={"last": 1}).json()
    assert [m["message_id"] for m in last] == ["m2"]
    assert last[0]["usage"] == {"input_tokens": 812, "output_tokens": 9}
    lines = http.get("/v1/conversations/discord:thread:42/transcript").json()
    assert [line["text"] for line in lines] == ["What did we decide about auth?",
                                                "JWT with rotating keys."]
    rows = http.get("/v1/conversations/discord:thread:42/timeline").json()
    assert [r["type"] for r in rows] == ["session_started", "message_appended",
                                         "message_appended"]
    assert rows[1]["event"]["message_id"] == "m1"
    until = http.get("/v1/conversations/discord:thread:42/timeline", params={"until": 2})
    assert len(until.json()) == 2
    info = http.get("/v1/conversations/discord:thread:42").json()
    assert info["message_count"] == 2 and info["agent"] == "copilot"


def test_context_in_every_format_and_budget(http: httpx.Client) -> None:
    http.post("/v1/conversations/k/turns", json=TURN)
    xml = http.get("/v1/conversations/k/context").json()
    assert "JWT with rotating keys." in xml["text"] and xml["format"] == "xml"
    assert xml["message_count"] == 2 and xml["tokens"] <= 10_000
    md = http.get("/v1/conversations/k/context", params={"format": "markdown"}).json()
    assert md["text"].startswith("## Conversation history")
    msgs = http.get("/v1/conversations/k/context", params={"format": "messages"}).json()
    assert [m["role"] for m in msgs["messages"]][-2:] == ["user", "assistant"]
    one = http.get("/v1/conversations/k/context", params={"messages": 1}).json()
    assert one["message_count"] == 1 and one["omitted"] == 1
    excluded = http.get("/v1/conversations/k/context", params={"exclude": ["m2"]}).json()
    assert "rotating" not in excluded["text"]
    tight = http.get("/v1/conversations/k/context", params={"tokens": 60}).json()
    assert tight["tokens"] <= 60


def test_idempotency_key_derives_ids_and_replays_answers(http: httpx.Client) -> None:
    turn = {"messages": [{"type": "message", "role": "user", "content": "hi"},
                         {"type": "message", "role": "assistant", "content": "hello"}]}
    headers = {"Idempotency-Key": "req-1"}
    first = http.post("/v1/conversations/k/turns", json=turn, headers=headers)
    assert first.json()["appended"] == ["req-1#0", "req-1#1"]
    retry = http.post("/v1/conversations/k/turns", json=turn, headers=headers)
    assert retry.headers["idempotent-replayed"] == "true" and retry.json() == first.json()
    assert len(http.get("/v1/conversations/k/messages").json()) == 2
    other = http.post("/v1/conversations/k/turns", json={"messages": [
        {"type": "message", "role": "user", "content": "something else"}]}, headers=headers)
    assert problem(other, 422)["field"] == "Idempotency-Key"
    archived = http.post("/v1/conversations/k/archive", json={}, headers={
        "Idempotency-Key": "a-1"})
    replayed = http.post("/v1/conversations/k/archive", json={}, headers={
        "Idempotency-Key": "a-1"})
    assert archived.json()["changed"] is True and replayed.json()["changed"] is True


def test_errors_are_problems_naming_the_field(http: httpx.Client) -> None:
    url = "/v1/conversations/k/turns"
    typed = {"Content-Type": "application/json"}  # untyped bodies: 415 without a token
    assert problem(http.post(url, content=b"{not json", headers=typed),
                   400)["type"].endswith("malformed-json")
    problem(http.post(url, content=b"", headers=typed), 400)
    assert problem(http.post(url, json={"messages": [
        {"type": "message", "role": "system", "content": "x"}]}), 422)["field"] == (
        "messages[0].role")
    untyped = problem(http.post(url, json={"messages": [{"role": "user", "content": "x"}]}),
                      422)  # `type` is required, as in `convlog record` (issue 42)
    assert untyped["field"] == "messages[0].type", untyped
    assert problem(http.post(url, json={"messages": [
        {"type": "message", "role": "user", "content": 3}]}), 422)["field"] == "messages[0].content"
    assert problem(http.post(url, json={"messages": [], "extra": 1}), 422)["field"] == "extra"
    assert problem(http.post(url, json={"messages": []}), 422)["field"] == "messages"
    bad_call = {"messages": [{"type": "message", "role": "assistant", "content": "x",
                              "tool_calls": [
        {"id": "c", "name": "f", "arguments": "{oops"}]}]}
    assert problem(http.post(url, json=bad_call), 422)["field"] == (
        "messages[0].tool_calls[0].arguments")
    assert problem(http.get("/v1/conversations/nope/messages"), 404)["field"] == "key"
    assert problem(http.get("/v1/conversations/nope/context"), 404)
    assert problem(http.get("/v1/nowhere"), 404)["type"].endswith("no-such-route")
    assert problem(http.delete("/v1/conversations/k/turns"), 405)
    http.post(url, json=TURN)
    assert problem(http.get("/v1/conversations/k/context", params={"tokens": "lots"}),
                   422)["field"] == "tokens"
    assert problem(http.get("/v1/conversations/k/context", params={"format": "yaml"}),
                   422)["field"] == "format"
    assert problem(http.get("/v1/conversations/k/messages", params={"last": 0}),
                   422)["field"] == "last"
    assert problem(http.get("/v1/costs", params={"by": "moon"}), 422)["field"] == "by"
    record = {"events": [{"type": "message", "role": "user", "content": "a"},
                         {"type": "nope"}]}
    assert problem(http.post("/v1/conversations/k/events", json=record),
                   422)["field"] == "events[1].type"
    long_key = "k" * 600
    assert problem(http.get(f"/v1/conversations/{long_key}"), 422)["field"] == "key"


def test_record_lines_are_one_atomic_batch(http: httpx.Client) -> None:
    lines = [{"type": "session_started", "user": "u1", "agent": "claude"},
             {"type": "message", "role": "user", "content": "hi", "id": "a"},
             {"type": "native_session_bound", "native_session_id": "sess-1"}]
    result = http.post("/v1/conversations/k/events", json={"events": lines}).json()
    assert result["appended"] == ["a"] and result["events"] == 3
    bad = [{"type": "message", "role": "user", "content": "b", "id": "b"},
           {"type": "message", "role": "robot", "content": "c"}]
    assert problem(http.post("/v1/conversations/k/events", json={"events": bad}),
                   422)["field"] == "events[1].role"
    assert [m["message_id"] for m in http.get("/v1/conversations/k/messages").json()] == ["a"]


def test_state_changes(http: httpx.Client) -> None:
    http.post("/v1/conversations/k/turns", json=TURN)
    archived = http.post("/v1/conversations/k/archive", json={"reason": "done"}).json()
    assert archived == {"key": "k", "changed": True, "version": 4, "status": "archived"}
    assert http.post("/v1/conversations/k/archive").json()["changed"] is False  # no body
    assert http.get("/v1/conversations").json() == []  # the catalog hides archived ones
    assert len(http.get("/v1/conversations", params={"include_archived": "true"}).json()) == 1
    assert http.post("/v1/conversations/k/reactivate").json()["status"] == "active"
    http.post("/v1/conversations/k/clear", json={})
    assert http.get("/v1/conversations/k/context").json()["message_count"] == 0
    assert problem(http.post("/v1/conversations/unknown/archive"), 404)


def test_tiered_resume_bookkeeping_feeds_telemetry(http: httpx.Client) -> None:
    key = "/v1/conversations/k"
    http.post(key + "/turns", json=TURN)
    http.post(key + "/native-session", json={"native_session_id": "old"})
    http.post(key + "/resume/attempts", json={"strategy": "session/resume",
                                              "native_session_id": "old"})
    failed = http.post(key + "/resume/outcomes", json={
        "strategy": "session/resume", "ok": False, "reason": "not_found",
        "error": "Session not found", "latency_ms": 12.5})
    assert failed.status_code == 200
    assert problem(http.post(key + "/resume/outcomes", json={"strategy": "x", "ok": False}),
                   422)["field"] == "reason"
    assert problem(http.post(key + "/resume/outcomes", json={
        "strategy": "x", "ok": False, "reason": "lost"}), 422)["field"] == "reason"
    http.post(key + "/resume/attempts", json={"strategy": "session/new"})
    http.post(key + "/resume/outcomes", json={"strategy": "session/new", "ok": True,
                                              "native_session_id": "new-1", "fresh": True,
                                              "latency_ms": 40})
    given = http.post(key + "/resume/injection", json={
        "native_session_id": "new-1", "budget": {"tokens": 2000}}).json()
    assert given["injected"] is True and "rotating keys" in given["context"]["text"]
    again = http.post(key + "/resume/injection", json={"native_session_id": "new-1"}).json()
    assert again == {"injected": False, "already_injected": True, "context": None}
    assert http.get(key).json()["native_session_id"] == "new-1"
    rows = {r["group"]: r for r in http.get("/v1/telemetry").json()}
    assert rows["session/resume"]["failed"] == 1 and rows["session/new"]["succeeded"] == 1
    types = [r["type"] for r in http.get(key + "/timeline").json()]
    assert types.count("history_injected") == 1


def test_catalog_costs_and_read_only_sql(http: httpx.Client) -> None:
    http.post("/v1/conversations", json={"key": "k", "user": "u1"})
    http.post("/v1/conversations/k/turns", json=TURN)
    [row] = http.get("/v1/conversations", params={"user": "u1"}).json()
    assert row["key"] == "k" and row["message_count"] == 2 and row["cost_usd"] > 0
    costs = {r["group"]: r for r in http.get("/v1/costs", params={"by": "model"}).json()}
    assert costs["gpt-4o"]["input_tokens"] == 812
    out = http.post("/v1/sql", json={"query": "SELECT count(*) AS n FROM messages WHERE "
                                     "role = ?", "params": ["user"]}).json()
    assert out == {"columns": ["n"], "rows": [[1]]}
    for query in ("DROP VIEW messages", "SELECT * FROM read_text('/etc/passwd')",
                  "SELECT * FROM '/etc/hostname.csv'", "COPY messages TO '/tmp/x.csv'",
                  "SELECT 1; SELECT 2", "SELECT * FROM no_such_view"):
        assert problem(http.post("/v1/sql", json={"query": query}), 422)["field"] == "query"


def test_tool_pairing_repairs_over_http(http: httpx.Client) -> None:
    """Issue 28: the agent view marks convlog's repairs (`repairs` fields), the user
    view does not, and `tool_repair_counts` counts them per agent over `/v1/sql`."""
    key = "/v1/conversations/k"
    http.post(key + "/turns", json={"messages": [
        {"type": "message", "role": "user", "content": "list the files"},
        {"type": "message", "role": "assistant", "content": "", "agent": "coder",
         "tool_calls": [{"id": "c1", "name": "ls"}]},
        {"type": "message", "role": "user", "content": "hello?"},
        {"type": "message", "role": "tool", "content": "stale", "tool_call_id": "c9"}]})
    agent = http.get(key + "/replay", params={"view": "agent"}).json()
    assert [(e["kind"], e["repairs"]) for e in agent["entries"] if e["repairs"]] == [
        ("repair", [{"kind": "synthesized", "call_id": "c1", "cause": "process_died"}]),
        ("message", [{"kind": "dropped", "call_id": "c9", "cause": "no_call"}])]
    user = http.get(key + "/replay", params={"view": "user"}).json()
    assert [e["repairs"] for e in user["entries"]] == [[]] * 4
    out = http.post("/v1/sql", json={"query": "SELECT agent, kind, repairs FROM "
                                              "tool_repair_counts ORDER BY ALL"}).json()
    assert out["rows"] == [["coder", "synthesized", 1], [None, "dropped", 1]]  # NULLS LAST


def test_a_large_turn_is_appended_off_the_event_loop_all_the_same(http: httpx.Client) -> None:
    big = [{"type": "message", "role": "user", "content": f"{i} " + "word " * 2_000, "id": f"b{i}"}
           for i in range(10)]  # ~100 KB: past the inline limit, written in a thread
    assert http.post("/v1/conversations/k/turns", json={"messages": big}).json()[
        "appended"] == [f"b{i}" for i in range(10)]
    assert len(http.get("/v1/conversations/k/messages").json()) == 10


def test_replay_views_and_diff(http: httpx.Client) -> None:
    """`/replay?view=user|agent` and `/diff`: the two views over HTTP, as of `at`."""
    key = "/v1/conversations/k"
    http.post(key + "/turns", json=TURN)
    cleared = http.post(key + "/clear", json={"reason": "new topic"}).json()["version"]
    http.post(key + "/turns", json={"messages": [{"type": "message", "role": "user",
                                                  "content": "again"}]})
    user = http.get(key + "/replay", params={"view": "user"}).json()
    assert user["view"] == "user" and [e["kind"] for e in user["entries"]] == [
        "message", "message", "marker", "message"]
    agent = http.get(key + "/replay", params={"view": "agent"}).json()
    assert [e["version"] for e in agent["entries"]] == [cleared, cleared + 1]
    assert agent["since"] == cleared
    before = http.get(key + "/replay", params={"view": "agent", "at": cleared - 1}).json()
    assert [e["text"] for e in before["entries"]] == [
        "What did we decide about auth?", "JWT with rotating keys."]
    d = http.get(key + "/diff").json()
    assert [m["reason"] for m in d["missing"]] == [f"before the clear at #{cleared}"] * 2
    assert d["in_context"] == 1
    assert http.get(key + "/diff", params={"at": 3}).json()["missing"] == []
    assert problem(http.get(key + "/replay"), 422)["field"] == "view"
    assert problem(http.get(key + "/replay", params={"view": "bot"}), 422)["field"] == "view"
    bad = problem(http.get(key + "/diff", params={"at": "soon"}), 422)
    assert bad["field"] == "at" and "'soon'" in bad["detail"]
    problem(http.get("/v1/conversations/nobody/replay", params={"view": "agent"}), 404)
