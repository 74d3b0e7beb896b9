"""The host-facing rules, written once. Each is checked on every surface
(tests/parity/test_parity.py) and listed by id in docs/guarantees.md.

A rule's check gets the surface under test and an observer: the library, opened
on the same database, which reads what the surface's operation did (or did not)
record, and does the set-up a surface cannot (an ACP host cannot archive).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from convlog.services.log import application
from tests.parity.surfaces import Library, NotHere, Refused, Surface


@dataclass(frozen=True)
class Rule:
    id: str
    statement: str
    check: Callable[[Surface, Library], None]


RULES: list[Rule] = []


def rule(id: str, statement: str) -> Callable[[Callable[[Surface, Library], None]],
                                              Callable[[Surface, Library], None]]:
    def register(check: Callable[[Surface, Library], None]
                 ) -> Callable[[Surface, Library], None]:
        assert id not in {r.id for r in RULES}, id
        RULES.append(Rule(id, " ".join(statement.split()), check))
        return check
    return register


@contextmanager
def refused(kind: str, field: str | None = None, reason: str | None = None
            ) -> Iterator[None]:
    with pytest.raises(Refused) as caught:
        yield
    exc = caught.value
    assert exc.kind == kind, f"refused as {exc.kind!r}, not {kind!r}: {exc}"
    if field is not None:
        assert exc.field == field, f"field {exc.field!r}, not {field!r}: {exc}"
    if reason is not None:
        assert reason in exc.reason, f"reason {exc.reason!r} does not say {reason!r}"


def setup(s: Surface, o: Library) -> Surface:
    """Who does a rule's set-up: the surface, or the library when it cannot (ACP)."""
    return o if s.name == "acp" else s


def via(s: Surface, o: Library, operation: str, *args: Any) -> Any:
    """A set-up step: done by the surface, or by the library where the surface has
    no such operation (the gap is still checked against test_parity.NOT_HERE)."""
    try:
        return getattr(s, operation)(*args)
    except NotHere:
        return getattr(o, operation)(*args)


def version(o: Library, key: str) -> int:
    return o.log.info(key).version


# ---------------------------------------------------------------------- rules


@rule("archived-is-not-resumed", """An archived conversation is not resumed and its
history is not handed out: a resume or an injection record is refused as archived and
records nothing, until it is reactivated (a new message reactivates it). ACP's
`session/load` is the user reopening the session: the proxy records the reactivation
first, then resumes.""")
def archived_is_not_resumed(s: Surface, o: Library) -> None:
    key = s.key()
    setup(s, o).start(key, user="u1")
    setup(s, o).append(key, {"role": "user", "content": "the plan is X"})
    setup(s, o).archive(key)
    before = version(o, key)
    if s.name == "acp":
        s.resume(key)
        types = [type(r.event).__name__ for r in o.log.events(key, after=before)]
        assert types[0] == "ConversationReactivated" and "ResumeAttempted" in types, types
        return
    with refused("archived", "key"):
        s.resume(key)
    try:
        with refused("archived", "key"):
            s.record_injection(key)
    except NotHere:
        pass
    info = o.log.info(key)
    assert (info.status, info.version, info.resumed_at) == ("archived", before, None)


@rule("unknown-is-not-created", """A key nothing was recorded under is not created by
a read or a resume: reading its messages, resuming it or recording an injection is
refused as unknown (404, UnknownConversation, exit 1, JSON-RPC -32002), and the key
stays unknown.""")
def unknown_is_not_created(s: Surface, o: Library) -> None:
    key = s.key()
    for operation in (s.resume, s.record_injection, s.messages):
        try:
            with refused("unknown"):
                operation(key)
        except NotHere:
            continue
        assert not o.log.exists(key), operation.__name__


@rule("messages-respect-clear", """A read of a conversation's messages gives the
current epoch only: after a clear, the messages from before it are not handed back
(a restarted host does not reload what its user cleared). The whole history stays in
the log, for the transcript, the timeline and the replay.""")
def messages_respect_clear(s: Surface, o: Library) -> None:
    key = s.key()
    setup(s, o).start(key, user="u1")
    setup(s, o).append(key, {"role": "user", "content": "before the clear"})
    setup(s, o).clear(key)
    setup(s, o).append(key, {"role": "user", "content": "after the clear"})
    read = s.messages(key)
    assert "before the clear" not in read and "after the clear" in read, read
    assert [line.text for line in o.log.transcript(key) if line.role == "user"] == [
        "before the clear", "after the clear"]  # the log keeps both


@rule("cooldown-from-the-policy-in-force", """The memory cooldown a surface reports is
computed from the policy in force, the one the injection enforces: a conversation's
pinned policy, else the process's. Every surface's process here runs with depth 1.""")
def cooldown_from_the_policy_in_force(s: Surface, o: Library) -> None:
    longer, shorter = s.key(), s.key()
    for key, depth in ((longer, 10), (shorter, 0)):
        setup(s, o).start(key, user="u1")
        via(s, o, "set_memory_policy", key, 3, depth)
        s.inject_memory(key, "p")
        setup(s, o).append(key, {"role": "user", "content": "turn 1"},
                           {"role": "assistant", "content": "ok"})
        setup(s, o).append(key, {"role": "user", "content": "turn 2"})
    try:
        got = s.memory_cooldown(longer), s.memory_cooldown(shorter)
        assert got == ({"p": 8}, {}), got
    except NotHere:
        pass
    with refused("cooling", "memory_ids"):
        s.inject_memory(longer, "p")
    s.inject_memory(shorter, "p")  # depth 0: no cooldown, whatever the process's


BAD_LINES = [  # (a message line as a host wrote it, the field named, what is said)
    (b'{"type": "message", "role": "user", "role": "assistant", "content": "x"}', "role",
     "key 'role' is given twice in one object"),
    (b'{"type": "message", "role": "user", "content": "x", "colour": "red"}', "colour",
     "unknown field `colour`"),
    (b'{"role": "user", "content": "x"}', "type", "missing required field `type`"),
    (b'{"type": "mesage", "role": "user", "content": "x"}', "type", "unknown event type"),
]


@rule("one-decoder", """Every surface that takes a host's JSON decodes it with one
decoder (`convlog record`'s lines, each message of HTTP `/turns`, each line of
`/events`): a key given twice, an unknown field, a missing or unknown `type` are
refused the same way, naming the same field, and record nothing.""")
def one_decoder(s: Surface, o: Library) -> None:
    key = s.key()
    setup(s, o).start(key, user="u1")
    before = version(o, key)
    for raw, field, reason in BAD_LINES:
        with refused("invalid", field, reason):
            s.send_line(key, raw)
    assert version(o, key) == before
    s.send_line(key, b'{"type": "message", "role": "user", "content": "fine"}')
    assert "fine" in [str(m.content) for m in o.log.messages(key)]


@rule("summary-without-a-context", """One call gives a conversation's summary without
building a context: its status (active: something recorded within `paused_after`;
paused: resumable, idle longer; archived: not resumable until reactivated), dates,
message count, tokens, cost, agents and the latest summary's text.""")
def summary_without_a_context(s: Surface, o: Library) -> None:
    from datetime import UTC, datetime

    from convlog.domain.conversation import RecordFact
    from convlog.domain.events import SummaryRecorded

    key = s.key()
    setup(s, o).start(key, user="u1", agent="helper", workspace="acme")
    setup(s, o).append(key, {"role": "user", "content": "plan X?"},
                       {"role": "assistant", "content": "yes, X", "agent": "helper",
                        "usage": {"input_tokens": 10, "output_tokens": 5}})
    now = o.log.info(key).version
    application(o.log).execute(key, [RecordFact(event=SummaryRecorded(
        at=datetime.now(UTC), from_version=1, to_version=now, message_count=2,
        text="they agreed on X", tokens=4))])  # stamped when recorded
    got = s.summary(key)
    picked = {k: got[k] for k in ("status", "user", "workspace", "message_count",
                                  "input_tokens", "output_tokens", "agents",
                                  "latest_summary")}
    assert picked == {"status": "active", "user": "u1", "workspace": "acme",
                      "message_count": 2, "input_tokens": 10, "output_tokens": 5,
                      "agents": ["helper"], "latest_summary": "they agreed on X"}, picked
    assert got["content_tokens"] > 0 and got["created_at"] and got["last_active_at"], got
    assert not [r for r in o.log.events(key, after=now + 1)], "a summary records nothing"
    assert s.summary(key, paused_after=0.001)["status"] == "paused"
    setup(s, o).archive(key)
    assert s.summary(key)["status"] == "archived"


@rule("markdown-context-has-the-session-header", """The markdown context a surface
hands out opens with the session's header, user, project, status and times, and every
time in it is given to the second.""")
def markdown_context_has_the_session_header(s: Surface, o: Library) -> None:
    import re

    key = s.key()
    setup(s, o).start(key, user="u1", workspace="acme/api")
    setup(s, o).append(key, {"role": "user", "content": "what is the plan?"})
    text = s.markdown_context(key)
    assert "- User: `u1`" in text and "- Project: `acme/api`" in text, text
    assert "- Status: active" in text, text
    times = re.findall(r"\d{4}-\d\d-\d\d \d\d:\d\d(?::\d\d)? UTC", text)
    assert times and all(re.fullmatch(r".* \d\d:\d\d:\d\d UTC", t) for t in times), times
