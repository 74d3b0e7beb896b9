"""The OpenTelemetry export against a real OTLP/HTTP receiver on 127.0.0.1 (the SDK's
own OTLP exporter sends; the receiver decodes with opentelemetry-proto): GenAI
attributes, resume attempts, content only when allowed, each event once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from eventsourcing.tests.persistence import TrackingRecorderTestCase

import convlog
from convlog.otel.exporter import Exporter, ExportFailed
from convlog.otel.sdk import Sender, endpoint
from convlog.otel.tracking import TrackingFile
from convlog.services.jsonlines import parse_lines
from convlog.services.log import application
from tests.otlp_receiver import Receiver, Span, running

KEY = "discord:thread:42"


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[Receiver]:
    with running() as r:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "5")
        yield r


def exporter(log: convlog.ConversationLog, tmp_path: Path, **kwargs: object) -> Exporter:
    sender = Sender()
    return Exporter(log, TrackingFile(tmp_path / "otel.sqlite"), sender.send, endpoint(),
                    **kwargs)  # type: ignore[arg-type]


def record(log: convlog.ConversationLog, key: str, *lines: dict[str, object]) -> None:
    data = "\n".join(json.dumps(line) for line in lines).encode()
    application(log).execute(key, parse_lines(data)[0])


def a_turn(log: convlog.ConversationLog) -> None:
    conv = log.conversation(KEY, user="u1", agent="copilot", channel="discord",
                            metadata={"client": "zed"})
    usage = convlog.Usage(input_tokens=12, output_tokens=7, cache_read_tokens=100,
                          cache_write_tokens=20)
    conv.append_turn([
        convlog.user("What did we decide about auth?", id="u1"),
        convlog.assistant([convlog.ToolUsePart(id="c1", name="search", arguments='{"q":"auth"}')],
                          id="a1", model="claude-sonnet-4-5", usage=usage, response_id="r1"),
        convlog.tool("JWT, decided on 2026-01-02", tool_call_id="c1", id="t1"),
        convlog.assistant("JWT with rotating keys.", id="a2", model="claude-sonnet-4-5",
                          usage=convlog.Usage(input_tokens=3, output_tokens=9),
                          response_id="r2"),
    ])


def by_name(spans: list[Span]) -> dict[str, Span]:
    return {s.name: s for s in spans}


def test_a_turn_is_an_invoke_agent_span_with_a_chat_span_per_response(
        sqlite_url: str, tmp_path: Path, receiver: Receiver) -> None:
    with convlog.open(sqlite_url, preload_tokenizer=False) as log:
        a_turn(log)
        report = exporter(log, tmp_path).run()
    spans = by_name(receiver.spans)
    assert len(receiver.spans) == 4
    assert set(spans) == {"invoke_agent copilot", "chat claude-sonnet-4-5",
                          "execute_tool search"}
    turn = spans["invoke_agent copilot"]
    chats = [s for s in receiver.spans if s.name.startswith("chat")]
    assert len(chats) == 2 and {c.parent_id for c in chats} == {turn.span_id}
    assert {c.trace_id for c in chats} == {turn.trace_id}
    assert turn.resource["service.name"] == "convlog" and turn.scope == "convlog"
    a = turn.attributes
    assert a["gen_ai.operation.name"] == "invoke_agent"
    assert a["gen_ai.conversation.id"] == KEY and a["gen_ai.agent.name"] == "copilot"
    assert a["gen_ai.provider.name"] == "anthropic"
    assert a["gen_ai.request.model"] == "claude-sonnet-4-5"
    # input tokens include the cached ones (the conventions' rule); the parts are given
    assert a["gen_ai.usage.input_tokens"] == 12 + 100 + 20 + 3
    assert a["gen_ai.usage.output_tokens"] == 16
    assert a["gen_ai.usage.cache_read.input_tokens"] == 100
    assert a["gen_ai.usage.cache_creation.input_tokens"] == 20
    assert (a["convlog.user"], a["convlog.channel"], a["convlog.client"]) == (
        "u1", "discord", "zed")
    assert a["convlog.messages"] == 4
    first, second = sorted(chats, key=lambda c: c.attributes["gen_ai.response.id"])
    assert first.attributes["gen_ai.response.id"] == "r1"
    assert first.attributes["gen_ai.usage.input_tokens"] == 132
    assert first.kind == 3  # SPAN_KIND_CLIENT
    assert second.attributes["gen_ai.usage.output_tokens"] == 9
    assert not any(k.startswith(("gen_ai.input", "gen_ai.output")) for s in receiver.spans
                   for k in s.attributes)  # no content unless asked
    tool = spans["execute_tool search"]  # the call, from its message to its result's
    assert (tool.parent_id, tool.trace_id) == (turn.span_id, turn.trace_id)
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert (tool.attributes["gen_ai.tool.name"], tool.attributes["gen_ai.tool.call.id"]) == (
        "search", "c1")
    assert first.end_ns <= tool.start_ns <= tool.end_ns <= second.end_ns
    assert tool.status_code != 2 and "gen_ai.tool.call.arguments" not in tool.attributes
    assert (report.events, report.spans) == (5, 4)


def test_content_only_with_content_and_never_for_a_forgotten_user(
        sqlite_url: str, tmp_path: Path, receiver: Receiver,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONVLOG_KEY", "11" * 32)  # an encrypted store, opened with its key
    with convlog.open(sqlite_url, preload_tokenizer=False) as log:
        a_turn(log)
        gone = log.conversation("support:7", user="alice")
        gone.append_turn([convlog.user("My card ends in 4242", id="x1"),
                          convlog.assistant("Noted.", id="x2", model="gpt-4o")])
        log.forget(user="alice")
        exporter(log, tmp_path, with_content=True).run()
    turns = [s for s in receiver.spans if s.name.startswith("invoke_agent")]
    kept = next(s for s in turns if s.attributes["gen_ai.conversation.id"] == KEY)
    messages = json.loads(str(kept.attributes["gen_ai.input.messages"]))
    assert messages[0] == {"role": "user", "parts": [
        {"type": "text", "content": "What did we decide about auth?"}]}
    assert messages[1]["parts"][0] == {"type": "tool_call_response", "id": "c1",
                                       "response": "JWT, decided on 2026-01-02"}
    output = json.loads(str(kept.attributes["gen_ai.output.messages"]))
    assert output[0]["parts"][0] == {"type": "tool_call", "id": "c1", "name": "search",
                                     "arguments": {"q": "auth"}}
    assert output[0]["finish_reason"] == "tool_call" and output[1]["finish_reason"] == "stop"
    forgotten = next(s for s in turns if s.attributes["gen_ai.conversation.id"] == "support:7")
    assert not any(k.startswith(("gen_ai.input", "gen_ai.output"))
                   for k in forgotten.attributes)
    assert forgotten.attributes["convlog.messages"] == 2  # the figures survive
    assert "4242" not in json.dumps([s.attributes for s in receiver.spans])


def test_resume_attempts_carry_tier_outcome_injection_and_memory_lost(
        sqlite_url: str, tmp_path: Path, receiver: Receiver) -> None:
    with convlog.open(sqlite_url, preload_tokenizer=False) as log:
        a_turn(log)
        log.bind_native_session(KEY, "sess-1")

        def gone(call: convlog.TierCall) -> str:
            raise convlog.TierFailed("not_found", "session sess-1 is gone")

        outcome = log.resume(KEY, [convlog.Tier("session/resume", gone),
                                   convlog.Tier("session/new", lambda call: "sess-2")])
        assert outcome.injection is not None
        # A host that ran its tiers itself, and injected nothing: memory lost.
        record(log, KEY, {"type": "resume_attempted", "strategy": "new"},
               {"type": "resume_succeeded", "strategy": "new", "fresh": True},
               {"type": "message", "role": "user", "content": "Do you remember?"})
        # the user's last message has no answer: the turn is sent as it is at once
        report = exporter(log, tmp_path, grace=0.0).run()
    resumes = sorted((s for s in receiver.spans if s.name.startswith("resume")),
                     key=lambda s: s.attributes["convlog.version.first"])
    assert [s.name for s in resumes] == ["resume session/resume", "resume session/new",
                                         "resume new"]
    failed, fresh, lost = (s.attributes for s in resumes)
    assert (failed["convlog.resume.tier"], failed["convlog.resume.outcome"],
            failed["convlog.resume.reason"]) == (1, "failed", "not_found")
    assert resumes[0].status_code == 2 and failed["error.type"] == "not_found"
    assert "convlog.resume.error" not in failed  # an error text is content
    assert (fresh["convlog.resume.tier"], fresh["convlog.resume.outcome"]) == (2, "succeeded")
    assert fresh["convlog.resume.fresh"] is True and fresh["convlog.memory_lost"] is False
    assert fresh["convlog.injected_tokens"] == outcome.injection.tokens > 0
    assert fresh["gen_ai.conversation.id"] == KEY and fresh["gen_ai.agent.name"] == "copilot"
    assert lost["convlog.memory_lost"] is True and lost["convlog.injected_tokens"] == 0
    assert lost["convlog.resume.tier"] == 1
    assert not report.held


def test_a_fresh_success_waits_for_its_injection(sqlite_url: str, tmp_path: Path,
                                                  receiver: Receiver) -> None:
    with convlog.open(sqlite_url, preload_tokenizer=False) as log:
        a_turn(log)
        record(log, KEY, {"type": "resume_attempted", "strategy": "session/new"},
               {"type": "resume_succeeded", "strategy": "session/new"})
        export = exporter(log, tmp_path)
        first = export.run()
        assert first.held and len(receiver.spans) == 4  # the turn went, the resume waits
        context = log.context(KEY)
        assert log.record_injection(KEY, context, "sess-9")
        second = export.run()
    assert not second.held
    resume = next(s for s in receiver.spans if s.name.startswith("resume"))
    assert resume.attributes["convlog.injected_tokens"] == context.tokens
    assert len(receiver.spans) == 5


def test_each_event_is_sent_once_across_runs_and_a_refused_batch_is_sent_again(
        sqlite_url: str, tmp_path: Path, receiver: Receiver) -> None:
    with convlog.open(sqlite_url, preload_tokenizer=False) as log:
        a_turn(log)
        exporter(log, tmp_path).run()
        log.conversation(KEY).append_turn([convlog.user("and then?", id="u2"),
                                           convlog.assistant("Ship it.", id="a3")])
        receiver.refuse = [400]  # not retryable: the run fails, the position stays
        with pytest.raises(ExportFailed, match="nothing was marked sent"):
            exporter(log, tmp_path).run()
        again = exporter(log, tmp_path)
        assert again.run().spans == 2
        assert again.run().spans == 0  # nothing new
        ids = [s.span_id for s in receiver.spans]
        assert len(ids) == len(set(ids)) == 6
        before = {s.span_id: s.trace_id for s in receiver.spans}
        replay = exporter(log, tmp_path)
        replay.start_from(0)  # --from 0: everything again, with the same ids
        replay.run()
    assert {s.span_id: s.trace_id for s in receiver.spans[6:]} == before


def test_a_transient_refusal_is_retried_by_the_exporter(sqlite_url: str, tmp_path: Path,
                                                        receiver: Receiver) -> None:
    with convlog.open(sqlite_url, preload_tokenizer=False) as log:
        a_turn(log)
        receiver.refuse = [503]
        report = exporter(log, tmp_path).run()
    assert report.spans == 4 and receiver.requests == 2 and len(receiver.spans) == 4


def test_the_feed_reads_whole_transactions_on_postgresql(pg_url: str, tmp_path: Path,
                                                         receiver: Receiver) -> None:
    with convlog.open(pg_url, preload_tokenizer=False, views=str(tmp_path / "v.duckdb")) as log:
        conv = log.conversation("pg:1", agent="bot")
        for n in range(5):
            conv.append_turn([convlog.user(f"q{n}", id=f"u{n}"),
                              convlog.assistant(f"a{n}", id=f"a{n}", model="gpt-4o")])
        conv.append_turn([convlog.user("long", id="long"), *(  # longer than a page
            convlog.assistant(f"part {n}", id=f"p{n}", model="gpt-4o") for n in range(6))])
        export = exporter(log, tmp_path, page=3)  # pages end inside transactions
        report = export.run()
    turns = [s for s in receiver.spans if s.name.startswith("invoke_agent")]
    assert [s.attributes["convlog.messages"] for s in turns] == [2, 2, 2, 2, 2, 7]
    assert {s.attributes["gen_ai.provider.name"] for s in turns} == {"openai"}
    assert report.events == 1 + 10 + 7


class TestTrackingFile(TrackingRecorderTestCase):
    """The library's own contract for a tracking recorder."""

    def create_recorder(self) -> TrackingFile:
        return TrackingFile(Path(":memory:"))


def test_a_turn_written_in_many_transactions_is_one_span(sqlite_url: str, tmp_path: Path,
                                                         receiver: Receiver) -> None:
    """Issue 41: a host that writes a turn step by step (an SDK's runner does) still
    gets ONE invoke_agent span for it; the export waits while the agent still owes
    an answer (here, the tool's result), and sends the turn once it is over."""
    with convlog.open(sqlite_url, preload_tokenizer=False) as log:
        conv = log.conversation(KEY, agent="copilot")
        conv.append(convlog.user("What did we decide about auth?", id="u1"))
        conv.append(convlog.assistant("", id="a1", model="gpt-4o", tool_calls=[
            convlog.ToolCall(id="c1", name="search", arguments='{"q":"auth"}')]))
        export = exporter(log, tmp_path)
        assert export.run().held and receiver.spans == []  # the call has no result yet
        conv.append(convlog.tool("JWT", tool_call_id="c1", id="t1"))
        conv.append(convlog.assistant("JWT with rotating keys.", id="a2", model="gpt-4o"))
        assert not export.run().held
    (turn,) = [s for s in receiver.spans if s.name.startswith("invoke_agent")]
    assert turn.attributes["convlog.messages"] == 4
    assert (turn.attributes["convlog.version.first"], turn.attributes["convlog.version.last"]
            ) == (2, 5)
    assert sorted(s.name for s in receiver.spans) == [
        "chat gpt-4o", "chat gpt-4o", "execute_tool search", "invoke_agent copilot"]
    assert {s.parent_id for s in receiver.spans if s is not turn} == {turn.span_id}


def test_a_turn_left_open_is_sent_after_the_grace_and_what_follows_in_its_trace(
        sqlite_url: str, tmp_path: Path, receiver: Receiver) -> None:
    """A turn whose agent never answered (its process died) waits `grace` seconds,
    then goes as it is: its lost call an ERROR span. Messages of that turn written
    later still go, in spans of their own in the turn's trace: nothing is left out.
    (`grace=0`: any pause ends a turn left open, so each later write is its own.)"""
    with convlog.open(sqlite_url, preload_tokenizer=False) as log:
        conv = log.conversation(KEY, agent="copilot")
        conv.append_turn([convlog.user("Run the slow tool", id="u1"), convlog.assistant(
            "", id="a1", tool_calls=[convlog.ToolCall(id="c1", name="slow")])])
        assert exporter(log, tmp_path, grace=3600.0).run().held
        assert exporter(log, tmp_path, grace=0.0).run().spans == 3
        conv.append(convlog.tool("done at last", tool_call_id="c1", id="t1"))
        conv.append(convlog.assistant("It finished.", id="a2"))
        exporter(log, tmp_path, grace=0.0).run()
    turns = sorted((s for s in receiver.spans if s.name.startswith("invoke_agent")),
                   key=lambda s: s.attributes["convlog.version.first"])
    first, *later = turns
    assert later and {s.trace_id for s in turns} == {first.trace_id}
    assert all(s.parent_id == "" and s.attributes["convlog.turn.version"] ==
               first.attributes["convlog.version.first"] for s in later)
    assert sum(s.attributes["convlog.messages"] for s in turns) == 4  # every message once
    (lost,) = [s for s in receiver.spans if s.name == "execute_tool slow"]
    assert lost.status_code == 2 and lost.attributes["error.type"] == "no_result"
    assert lost.parent_id == first.span_id


def check_tree(log: convlog.ConversationLog, key: str, spans: list[Span]) -> int:
    """One invoke_agent span per user input of `key` (convlog.otel.turns.is_input),
    every chat and execute_tool span a child of one of them, one execute_tool span
    per tool call; returns how many turns."""
    from convlog.domain.content import ToolUsePart
    from convlog.otel.turns import is_input

    mine = [s for s in spans if s.attributes.get("gen_ai.conversation.id") == key]
    roots = {s.span_id: s for s in mine if s.attributes["gen_ai.operation.name"] ==
             "invoke_agent"}
    messages = log.messages(key)
    assert len(roots) == sum(1 for m in messages if is_input(m)), key
    assert sum(s.attributes["convlog.messages"] for s in roots.values()) == len(messages)
    children = [s for s in mine if s.span_id not in roots]
    assert all(s.parent_id in roots and s.trace_id == roots[s.parent_id].trace_id
               for s in children), key
    calls = sum(len(m.tool_calls) + sum(isinstance(p, ToolUsePart) for p in m.content
                                        if not isinstance(m.content, str))
                for m in messages)
    assert sum(s.name.startswith("execute_tool") for s in children) == calls, key
    assert all(s.attributes.get("gen_ai.agent.name") for s in roots.values()), key
    return len(roots)


def test_imported_conversations_are_one_span_per_turn(tmp_path: Path,
                                                      receiver: Receiver) -> None:
    """Issue 41 for the importers: Claude Code, Codex and OpenAI transcripts."""
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "importers"
    with convlog.open(f"sqlite:///{tmp_path / 'i.db'}", preload_tokenizer=False) as log:
        for source in ("claude-code", "codex", "openai"):
            log.import_(source, [fixtures / source])
        exporter(log, tmp_path).run()
        keys = [r.key for r in log.conversations()]
        assert len(keys) >= 6
        assert all(check_tree(log, key, receiver.spans) for key in keys)


def test_the_grace_of_a_turn_left_open_is_on_the_logs_clock(
        sqlite_url: str, tmp_path: Path, receiver: Receiver) -> None:
    """Issue 46 item 4: what expires reads the log's one clock. A turn left open, its
    events stamped by a clock ahead of the machine's, waits its grace on that clock and
    goes once the clock has moved past it (the machine's clock would hold it for years)."""
    from datetime import UTC, datetime

    from tests.clock import ManualClock

    clock = ManualClock(datetime(2031, 5, 1, 9, tzinfo=UTC))
    with convlog.ConversationLog.with_options(
            sqlite_url, convlog.LogOptions(preload_tokenizer=False), clock=clock) as log:
        log.conversation(KEY, agent="copilot").append_turn([
            convlog.user("Run the slow tool", id="u1"),
            convlog.assistant("", id="a1", tool_calls=[convlog.ToolCall(id="c1", name="slow")])])
        assert exporter(log, tmp_path, grace=60.0).run().held
        clock.advance(61)
        report = exporter(log, tmp_path, grace=60.0).run()
    assert not report.held and report.spans == 3
