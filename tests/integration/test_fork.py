"""Fork as a history operation (issue 47): a new conversation whose history is a
parent's up to a message, by reference (the fork's first event names the parent and
the position; reads assemble both), appends continuing after it, the parent
unaffected, lineage in the catalog; on memory, SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import convlog
from convlog.domain.conversation import conversation_id
from convlog.domain.errors import ConversationForgotten, InvalidInput
from convlog.domain.events import ConversationForked, MessageAppended
from convlog.services.log import application
from tests.conftest import open_backend

BACKENDS = ["memory", "sqlite", "postgresql"]


def turns(conv: Any, n: int, start: int = 1) -> None:
    for i in range(start, start + n):
        conv.append_turn([convlog.user(f"Question {i}?", id=f"q{i}"),
                          convlog.assistant(f"Answer {i}.", id=f"a{i}")])


@pytest.fixture(params=BACKENDS)
def log(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    with open_backend(request.param, tmp_path, request) as opened:
        yield opened


def test_a_fork_reads_the_parents_prefix_then_its_own(log: Any) -> None:
    parent = log.conversation("p", user="u1", agent="bot", channel="cli")
    turns(parent, 3)
    parent_version = parent.state.version
    forked = parent.fork(at="a2", key="f")
    assert (forked.key, forked.parent, forked.fork_at, forked.fork_version) == \
        ("f", "p", "a2", 5)
    fork = log.get("f")
    fork.append_turn([convlog.user("Question 3, other way?", id="q3b"),
                      convlog.assistant("Answer 3b.", id="a3b")])
    said = ["q1", "a1", "q2", "a2", "q3b", "a3b"]
    assert [m.message_id for m in fork.messages()] == said
    assert [m.message_id for m in fork.live_messages()] == said
    assert [m.message_id for m in fork.live_messages(last=3)] == said[-3:]
    assert [m.message_id for m in fork.messages(last=3)] == said[-3:]
    for fmt in ("xml", "markdown", "messages"):
        text = fork.context(format=fmt).text
        assert "Answer 2." in text and "Answer 3b." in text, fmt
        assert "Question 3?" not in text, fmt
    agent = [e.message_id for e in fork.view("agent").entries if e.kind == "message"]
    assert agent == said
    # by reference: the fork's own stream holds its first event and its own messages
    own = application(log).store._recorded(conversation_id("f"), None, None, False, None)
    assert isinstance(own[0].event, ConversationForked)
    assert [r.event.message_id for r in own if isinstance(r.event, MessageAppended)] \
        == ["q3b", "a3b"]
    first = own[0].event
    assert (first.parent_key, first.at_message_id, first.at_version) == ("p", "a2", 5)
    # the parent is unaffected
    assert parent.state.version == parent_version
    assert [m.message_id for m in parent.messages()] == ["q1", "a1", "q2", "a2", "q3", "a3"]
    # same owner, lineage
    info = fork.info()
    assert (info.user, info.agent, info.channel) == ("u1", "bot", "cli")
    assert (info.parent, info.fork_at, info.message_count) == ("p", "a2", 6)
    assert parent.info().parent is None
    rows = {r.key: r for r in log.conversations()}
    assert (rows["f"].parent, rows["f"].fork_at, rows["f"].children) == ("p", "a2", [])
    assert rows["p"].children == ["f"] and rows["p"].parent is None
    assembled = log.events("f")  # the parent's events up to the fork, then its own
    assert [r.version for r in assembled] == list(range(1, 9))
    assert isinstance(assembled[5].event, ConversationForked)
    # the catalog's figures count each message once, where it was recorded
    assert (rows["f"].message_count, rows["p"].message_count) == (2, 6)


def test_a_fork_of_a_fork_and_another_owner(log: Any) -> None:
    parent = log.conversation("p", user="u1")
    turns(parent, 2)
    parent.fork(at="a1", key="c", user="u2")
    child = log.get("c")
    turns(child, 1, start=7)
    child.fork(at="q7", key="g")
    grandchild = log.get("g")
    grandchild.append(convlog.assistant("Answer 7b.", id="a7b"))
    assert [m.message_id for m in grandchild.messages()] == ["q1", "a1", "q7", "a7b"]
    assert grandchild.info().user == "u2" and child.info().user == "u2"
    assert [m.message_id for m in log.get("c").messages()] == ["q1", "a1", "q7", "a7"]


def test_refusals_name_what_is_wrong(log: Any) -> None:
    parent = log.conversation("p", user="u1")
    turns(parent, 2)
    with pytest.raises(InvalidInput) as no_message:
        parent.fork(at="nope", key="f")
    assert no_message.value.field == "at"
    log.conversation("taken")
    with pytest.raises(InvalidInput) as taken:
        parent.fork(at="a1", key="taken")
    assert taken.value.field == "key"
    parent.retract_last()
    with pytest.raises(InvalidInput) as withdrawn:
        parent.fork(at="a2", key="f")
    assert withdrawn.value.field == "at"
    parent.archive()
    with pytest.raises(InvalidInput) as archived:
        parent.fork(at="a1", key="f")
    assert archived.value.field == "key"
    assert not log.exists("f")


def test_what_the_parent_withdrew_or_abandoned_before_the_fork_point_stays_so(log: Any
                                                                             ) -> None:
    parent = log.conversation("p")
    turns(parent, 1)
    parent.retract_last()  # a1
    turns(parent, 2, start=2)
    parent.rewind("a2")  # q3 a3 abandoned
    parent.append_turn([convlog.user("Question 4?", id="q4")])
    parent.fork(at="q4", key="f")
    fork = log.get("f")
    assert [m.message_id for m in fork.live_messages()] == ["q1", "q2", "a2", "q4"]
    assert "Answer 3." not in fork.context(format="markdown").text
    # forking at an abandoned message starts from it as it was: the old branch
    parent.fork(at="a3", key="old")
    old = log.get("old")
    assert [m.message_id for m in old.live_messages()] == ["q1", "q2", "a2", "q3", "a3"]


def test_appends_after_a_restart_continue_the_fork(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    with convlog.open(url) as log:
        turns(log.conversation("p"), 2)
        log.get("p").fork(at="a1", key="f")
    with convlog.open(url) as log:  # a new process: the lineage from the stream
        fork = log.get("f")
        assert [m.message_id for m in fork.messages(last=2)] == ["q1", "a1"]
        turns(fork, 1, start=5)
        assert [m.message_id for m in fork.messages()] == ["q1", "a1", "q5", "a5"]
        assert fork.info().version == 6  # the parent's 1..3 (a1), forked at 4, 5..6


def test_the_async_handle_forks(tmp_path: Path) -> None:
    async def main() -> list[str]:
        log = await convlog.open_async(f"sqlite:///{tmp_path / 'c.db'}")
        conv = await log.conversation("p")
        await conv.append_turn([convlog.user("Hi?", id="q1"),
                                convlog.assistant("Hello.", id="a1")])
        forked = await conv.fork(at="q1", key="f")
        fork = await log.get(forked.key)
        await fork.append(convlog.assistant("Hey.", id="a1b"))
        said = [m.message_id for m in await fork.messages()]
        await log.close()
        return said
    assert asyncio.run(main()) == ["q1", "a1b"]


def test_forgetting_the_user_forgets_the_forks(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.crypto.helpers import use_key
    use_key(monkeypatch)
    with convlog.open(f"sqlite:///{tmp_path / 'c.db'}", views=str(tmp_path / "v.duckdb"),
                      preload_tokenizer=False) as log:
        parent = log.conversation("p", user="alice")
        turns(parent, 2)
        parent.fork(at="a1", key="f")
        log.get("f").append(convlog.user("Secret fork text", id="s"))
        result = log.forget(user="alice")
        assert sorted(result.conversations) == ["f", "p"]
        with pytest.raises(ConversationForgotten):
            log.get("p").fork(at="a1", key="g")
        assert all("Secret" not in str(m.content) for m in log.get("f").messages())


def test_the_openai_session_of_a_fork_reads_the_parents_items(log: Any) -> None:
    pytest.importorskip("agents")
    from convlog.integrations.openai_agents import ConvlogSession

    async def main() -> None:
        parent = ConvlogSession("s", log)
        await parent.add_items([{"role": "user", "content": "one"},
                                {"role": "assistant", "content": "1"},
                                {"role": "user", "content": "two"},
                                {"role": "assistant", "content": "2"}])
        first = log.messages("s")[1].message_id
        log.fork("s", at=first, new_key="s2")
        fork = ConvlogSession("s2", log)
        await fork.add_items([{"role": "user", "content": "three"}])
        items: list[Any] = await fork.get_items()
        assert [i["content"] for i in items] == ["one", "1", "three"]
        for limit in (1, 2, 3):
            assert await fork.get_items(limit=limit) == items[-limit:]
        popped: Any = await fork.pop_item()
        assert popped is not None and popped["content"] == "three"
        parent_items: list[Any] = await parent.get_items()
        assert [i["content"] for i in parent_items] == ["one", "1", "two", "2"]

    asyncio.run(main())


def test_a_fork_of_a_fork_at_a_message_of_the_grandparent(log: Any) -> None:
    turns(log.conversation("p"), 2)
    log.fork("p", at="a2", new_key="c")
    turns(log.get("c"), 1, start=5)
    done = log.fork("c", at="a1", new_key="g")  # inherited by c from p
    assert done.fork_version == 3
    turns(log.get("g"), 1, start=9)
    assert [m.message_id for m in log.messages("g")] == ["q1", "a1", "q9", "a9"]
    assert log.info("g").message_count == 4


def test_a_fork_for_another_user_reads_a_forgotten_parents_words_as_forgotten(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.crypto.helpers import use_key
    use_key(monkeypatch)
    with convlog.open(f"sqlite:///{tmp_path / 'c.db'}", views=str(tmp_path / "v.duckdb"),
                      preload_tokenizer=False) as log:
        parent = log.conversation("p", user="alice")
        parent.append_turn([convlog.user("alice's secret", id="q1"),
                            convlog.assistant("Noted.", id="a1")])
        log.fork("p", at="a1", new_key="f", user="bob")
        log.get("f").append(convlog.user("bob's own", id="b1"))
        assert log.forget(user="alice").conversations == ["p"]
        assert [m.content for m in log.get("f").messages()] == [
            "[forgotten]", "[forgotten]", "bob's own"]
        assert "secret" not in log.get("f").context().text
