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

import pytest

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
def refused(kind: str, field: str | None = None) -> Iterator[None]:
    with pytest.raises(Refused) as caught:
        yield
    exc = caught.value
    assert exc.kind == kind, f"refused as {exc.kind!r}, not {kind!r}: {exc}"
    if field is not None:
        assert exc.field == field, f"field {exc.field!r}, not {field!r}: {exc}"


def setup(s: Surface, o: Library) -> Surface:
    """Who does a rule's set-up: the surface, or the library when it cannot (ACP)."""
    return o if s.name == "acp" else s


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
