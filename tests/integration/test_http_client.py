"""`convlog.Client` against a real server: the handle API over HTTP, typed answers,
typed errors, and the live stream of a conversation's events."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import convlog
from convlog.domain.events import MessageAppended
from convlog.http.auth import Auth
from convlog.http.client import RemoteConversation, RemoteError
from convlog.http.schema import EventOut
from tests.httpserver import ADMIN_TOKEN, ALICE_TOKEN, served


@pytest.fixture
def client(tmp_path: Path) -> Iterator[convlog.Client]:
    auth = Auth(ADMIN_TOKEN, {"alice": ALICE_TOKEN})
    with convlog.open(f"sqlite:///{tmp_path / 'c.db'}") as log, served(log, auth) as url, \
            convlog.Client(url, token=ADMIN_TOKEN) as remote:
        yield remote


def test_the_client_mirrors_the_handle(client: convlog.Client) -> None:
    conv = client.conversation("discord:thread:42", user="u1", agent="copilot")
    result = conv.append_turn([
        convlog.user("What did we decide about auth?", id="q"),
        convlog.assistant("JWT with rotating keys.", id="a", model="gpt-4o",
                          usage=convlog.Usage(input_tokens=812, output_tokens=9),
                          tool_calls=[convlog.ToolCall(id="c1", name="search",
                                                       arguments='{"q": "auth"}')]),
        convlog.tool([convlog.ToolResultPart(tool_use_id="c1", content="found")],
                     tool_call_id="c1", id="t"),
    ])
    assert isinstance(result, convlog.AppendResult) and result.appended == ["q", "a", "t"]
    assert conv.append_turn([convlog.user("What did we decide about auth?", id="q")]
                            ).skipped == ["q"]
    [last] = conv.messages(last=1)
    assert isinstance(last, MessageAppended) and last.message_id == "t"
    assert conv.messages()[1].tool_calls[0].name == "search"
    assert conv.messages()[1].usage == convlog.Usage(input_tokens=812, output_tokens=9)
    info = conv.info()
    assert isinstance(info, convlog.ConversationInfo) and info.message_count == 3
    context = conv.context(budget=convlog.Budget(tokens=2_000), format="markdown")
    assert isinstance(context, convlog.Context) and "rotating keys" in context.text
    assert [line.role for line in conv.transcript()][:2] == ["user", "assistant"]
    assert isinstance(conv.timeline(until=2)[-1].event, MessageAppended)
    assert conv.archive("done").status == "archived"
    assert conv.reactivate().changed is True
    assert [r.key for r in client.conversations(user="u1")] == ["discord:thread:42"]
    with pytest.warns(DeprecationWarning, match=r"Client\.sessions\(\) is deprecated"):
        assert client.sessions(user="u1") == client.conversations(user="u1")  # old name
    assert client.costs(by="model")[0].group in ("gpt-4o", None)
    assert client.sql("SELECT count(*) FROM messages") == (["count_star()"], [(3,)])
    assert client.get("discord:thread:42").key == "discord:thread:42"


def test_a_key_with_slashes_and_spaces_round_trips(client: convlog.Client) -> None:
    conv = client.conversation("slack/C42/thread 1.5?x=1#y %2F 100%", user="u1")
    conv.append(convlog.user("hi"))
    assert conv.info().key == "slack/C42/thread 1.5?x=1#y %2F 100%"
    assert len(conv.messages()) == 1
    tricky = client.conversation("a/messages")  # one key, not the messages of "a"
    client.conversation("a").append(convlog.user("of a"))
    assert tricky.info().key == "a/messages" and tricky.messages() == []


def test_resume_bookkeeping_through_the_client(client: convlog.Client) -> None:
    conv = client.conversation("k")
    conv.append_turn([convlog.user("remember: blue"), convlog.assistant("noted")])
    conv.resume_attempt("session/load")
    conv.resume_outcome("session/load", ok=False, reason="not_found", latency_ms=3.0)
    conv.resume_attempt("session/new")
    conv.resume_outcome("session/new", ok=True, native_session_id="s2", fresh=True)
    given = conv.injection(native_session_id="s2")
    assert given.injected and given.context is not None and "blue" in given.context.text
    assert conv.injection(native_session_id="s2").already_injected
    rows = {r.group: r for r in client.telemetry(by="strategy")}
    assert rows["session/load"].failed == 1 and rows["session/new"].succeeded == 1


def test_errors_come_back_typed(client: convlog.Client) -> None:
    with pytest.raises(convlog.UnknownConversation):
        client.get("nope")
    conv = client.conversation("k")
    with pytest.raises(convlog.InvalidInput) as caught:
        conv.record([{"type": "message", "role": "robot", "content": "x"}])
    assert caught.value.field == "events[0].role"
    with pytest.raises(convlog.InvalidInput) as caught:
        conv.context(budget=convlog.Budget(tokens=100), format="yaml")
    assert caught.value.field == "format"
    with convlog.Client(client.http.base_url.__str__(), token="nobody-0123456789abc") as bad, \
            pytest.raises(RemoteError) as denied:
        bad.conversations()
    assert denied.value.status == 401 and denied.value.field == "Authorization"


def test_follow_streams_new_events_live(client: convlog.Client) -> None:
    conv = client.conversation("live")
    conv.append(convlog.user("before", id="b"))
    seen: list[EventOut] = []
    got_three = threading.Event()

    def reader() -> None:
        for item in conv.follow(after=0, timeout=10):
            seen.append(item)
            if len(seen) == 3:
                got_three.set()
                return

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    conv.append(convlog.assistant("after", id="a"))  # recorded while it follows
    assert got_three.wait(10), seen
    assert [e.version for e in seen] == [1, 2, 3]
    assert [getattr(e.event, "message_id", None) for e in seen] == [None, "b", "a"]
    resumed = conv.follow(after=2, timeout=10)
    assert next(resumed).version == 3  # a reconnecting reader misses nothing
    resumed.close()
    with pytest.raises(convlog.UnknownConversation):
        next(RemoteConversation(client, "missing").follow())


def test_last_event_id_resumes_a_stream(client: convlog.Client) -> None:
    conv = client.conversation("k")
    conv.append_turn([convlog.user("1", id="1"), convlog.assistant("2", id="2")])
    with client.http.stream("GET", conv.path + "/stream", headers={"Last-Event-ID": "2"},
                            timeout=10) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = response.iter_lines()
        block = []
        for line in lines:
            if line.startswith(("id:", "event:")):
                block.append(line)
            if len(block) == 2:
                break
    assert block == ["id: 3", "event: message_appended"]


def test_import_convlog_loads_no_http_stack() -> None:
    code = ("import sys, convlog; bad = [m for m in ('httpx', 'starlette', 'uvicorn', "
            "'convlog.http') if m in sys.modules]; print(bad); "
            "convlog.Client; print('httpx' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["[]", "True"]


def test_the_async_client_is_the_same_api_as_coroutines(tmp_path: Path) -> None:
    import asyncio

    async def host(url: str) -> None:
        async with convlog.AsyncClient(url, token=ADMIN_TOKEN) as client:
            conv = await client.conversation("async:1", user="u1")
            result = await conv.append_turn([convlog.user("hi", id="q"),
                                             convlog.assistant("hello", id="a")])
            assert result.appended == ["q", "a"]
            assert [m.message_id for m in await conv.messages(last=1)] == ["a"]
            assert "hello" in (await conv.context()).text
            assert (await conv.archive()).status == "archived"
            listed = await client.conversations(include_archived=True)
            assert [r.key for r in listed] == ["async:1"]
            with pytest.warns(DeprecationWarning, match=r"AsyncClient\.sessions\(\) is dep"):
                assert await client.sessions(include_archived=True) == listed  # old name
            with pytest.raises(convlog.UnknownConversation):
                await client.get("nope")
            seen = []
            async for item in conv.follow(timeout=10):
                seen.append(item.version)
                if len(seen) == 4:
                    break
            assert seen == [1, 2, 3, 4]

    auth = Auth(ADMIN_TOKEN)
    with convlog.open(f"sqlite:///{tmp_path / 'c.db'}") as log, served(log, auth) as url:
        asyncio.run(host(url))
