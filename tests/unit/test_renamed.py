"""Renamed public classes: the old names still work, warn when used, and are the very
same classes; what is stored (event tags) did not change with the names."""

from __future__ import annotations

import importlib

import pytest

import convlog
from convlog.domain import conversation, events
from convlog.services import jsonlines, results

OLD_NAMES = [
    ("convlog", "SessionInfo", convlog.ConversationInfo),
    ("convlog.services.results", "SessionInfo", results.ConversationInfo),
    ("convlog.domain.events", "SessionStarted", events.ConversationStarted),
    ("convlog.domain.events", "SessionArchived", events.ConversationArchived),
    ("convlog.domain.events", "SessionReactivated", events.ConversationReactivated),
    ("convlog.domain.conversation", "StartSession", conversation.StartConversation),
    ("convlog.services.jsonlines", "SessionStartedLine", jsonlines.ConversationStartedLine),
    ("convlog.services.jsonlines", "SessionArchivedLine", jsonlines.ConversationArchivedLine),
    ("convlog.services.jsonlines", "SessionReactivatedLine",
     jsonlines.ConversationReactivatedLine),
]


@pytest.mark.parametrize(("module", "old", "new"), OLD_NAMES)
def test_an_old_name_is_the_new_class_and_says_so(module: str, old: str, new: type) -> None:
    with pytest.warns(DeprecationWarning, match=f"{old} is deprecated: use {new.__name__}"):
        found = getattr(importlib.import_module(module), old)
    assert found is new
    with pytest.warns(DeprecationWarning, match=old):  # every use warns, not the first only
        exec(f"from {module} import {old}", {})


def test_the_stored_names_did_not_change() -> None:
    assert [events.ConversationStarted.event_name(), events.ConversationArchived.event_name(),
            events.ConversationReactivated.event_name()] == [
        "session_started", "session_archived", "session_reactivated"]


@pytest.mark.parametrize("module", [events, conversation, results, convlog])
def test_unknown_names_are_still_attribute_errors(module: object) -> None:
    missing = "NoSuchThing"
    with pytest.raises(AttributeError, match=missing):
        getattr(module, missing)


def test_the_old_name_of_the_conversation_list_warns_and_answers_the_same() -> None:
    """`sessions()` listed conversations (not agent sessions): now `conversations()`
    (the HTTP clients' old name is checked in test_http_client.py)."""
    import asyncio
    import inspect

    log = convlog.open("memory://")
    log.conversation("k")
    with pytest.warns(DeprecationWarning, match=r"ConversationLog\.sessions\(\) is deprecated"):
        assert log.sessions(include_archived=True) == log.conversations(include_archived=True)
    alog = convlog.AsyncConversationLog(log)
    with pytest.warns(DeprecationWarning, match=r"AsyncConversationLog\.sessions\(\) is"):
        assert [r.key for r in asyncio.run(alog.sessions())] == ["k"]
    for cls in (convlog.ConversationLog, convlog.AsyncConversationLog, convlog.Client,
                convlog.AsyncClient):
        assert inspect.signature(cls.sessions) == inspect.signature(cls.conversations)
    log.close()


MOVED = {  # members that left the host API for the application (issue 46), one release
    "store": "store", "writer": "writer", "write_lock": "write_lock", "config": "config",
    "analytics": "analytics", "execute": "execute", "builder": "builder",
    "request_answer": "requests.answer", "keep_request_answer": "requests.keep",
    "import_conversations": "imports.record", "refresh_views": "catalog.refresh",
    "rebuild_views": "catalog.rebuild", "follow_views": "catalog.follow",
}


@pytest.mark.parametrize(("old", "where"), sorted(MOVED.items()))
def test_a_member_that_left_the_host_api_still_answers_and_says_where_it_is(
        old: str, where: str) -> None:
    from convlog.services.log import application

    with convlog.open("memory://") as log:
        with pytest.warns(DeprecationWarning, match=rf"ConversationLog\.{old} is deprecated: "
                          rf"use convlog\.services\.log\.application\(log\)\.{where}"):
            found = getattr(log, old)
        expected: object = application(log)
        for part in where.split("."):
            expected = getattr(expected, part)
        assert found == expected


def test_the_moved_commands_api_still_writes() -> None:
    from convlog.domain.conversation import StartConversation

    with convlog.open("memory://") as log:
        with pytest.warns(DeprecationWarning, match="ConversationLog.execute"):
            log.execute("k", [StartConversation(user="u")])
        assert log.state("k").user == "u"
