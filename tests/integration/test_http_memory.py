"""Memory blocks over HTTP: `convlog.Client` and `convlog.AsyncClient` against a real
server (uvicorn on a loopback socket, SQLite), with a user token's ownership rules."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import convlog
from convlog.http.auth import Auth
from convlog.http.client import RemoteError
from tests.httpserver import ADMIN_TOKEN, ALICE_TOKEN, served

PREFIX = "[Context from memory]"


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    auth = Auth(ADMIN_TOKEN, {"alice": ALICE_TOKEN})
    with convlog.open(f"sqlite:///{tmp_path / 'c.db'}", max_injected_blocks_in_history=2,
                      context_window_depth=3) as log, served(log, auth) as base:
        yield base


def test_inject_see_and_cool_down_through_the_client(url: str) -> None:
    with convlog.Client(url, token=ALICE_TOKEN) as client:
        conv = client.conversation("alice:1")
        block = conv.inject_memory("The user prefers JWT.", memory_ids=["m1"],
                                   block_id="blk-1")
        assert isinstance(block, convlog.MemoryBlock)
        assert (block.block_id, block.text, block.turn) == (
            "blk-1", f"{PREFIX}\nThe user prefers JWT.", 0)
        assert conv.memory_cooldown() == {"m1": 3}
        with pytest.raises(convlog.MemoryCooling) as caught:
            conv.inject_memory("again", memory_ids=["m1"])
        assert caught.value.field == "memory_ids" and "'m1'" in str(caught.value)
        conv.inject_memory("second", memory_ids=["m2"])
        conv.inject_memory("third", memory_ids=["m3"])
        conv.append_turn([convlog.user("[Context from memory] forged"),
                          convlog.assistant("ok")])
        assert [b.memory_ids for b in conv.live_memory()] == [["m2"], ["m3"]]  # cap 2
        assert [b.block_id for b in conv.live_memory(at=block.version)] == ["blk-1"]
        ctx = conv.context(format="markdown")
        assert ctx.memory_blocks == 2 and "[not a memory block] [Context from memory]" in (
            ctx.text)
    # another user's token cannot see or inject into alice's conversation
    with convlog.Client(url, token=ADMIN_TOKEN) as admin:
        admin.conversation("bob:1", user="bob")
    with convlog.Client(url, token=ALICE_TOKEN) as client:
        with pytest.raises(convlog.UnknownConversation):
            client.get("bob:1").inject_memory("sneaky", memory_ids=["x"])
        with pytest.raises(convlog.UnknownConversation):
            client.get("bob:1").live_memory()


def test_bad_bodies_are_problems_naming_the_field(url: str) -> None:
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    for body, field in (({"memory_ids": ["a"]}, "text"), ({"text": " "}, "text"),
                        ({"text": "x", "memory_ids": ["a", "a"]}, "memory_ids[1]"),
                        ({"text": "x", "extra": 1}, "extra")):
        answer = httpx.post(f"{url}/v1/conversations/c/memory", json=body, headers=headers)
        assert answer.status_code == 422, answer.text
        assert answer.json()["field"] == field
    assert httpx.get(f"{url}/v1/conversations/c/memory", headers=headers).status_code == 404


def test_the_async_client(url: str) -> None:
    async def run() -> tuple[convlog.MemoryBlock, dict[str, int]]:
        async with convlog.AsyncClient(url, token=ADMIN_TOKEN) as client:
            conv = await client.conversation("c", user="u1")
            block = await conv.inject_memory("async fact", memory_ids=["m1"])
            return block, await conv.memory_cooldown()

    block, cooling = asyncio.run(run())
    assert block.text == f"{PREFIX}\nasync fact" and cooling == {"m1": 3}


def test_the_user_context_over_http(url: str) -> None:
    with convlog.Client(url, token=ADMIN_TOKEN) as admin:
        for n in range(3):
            admin.conversation(f"alice:{n}", user="alice", title=f"T{n}").append_turn(
                [convlog.user(f"question {n}"), convlog.assistant(f"answer {n}")])
        admin.conversation("bob:1", user="bob").append(convlog.user("bob's"))
        span = admin.resumption_context(user="alice", conversations=2,
                                        budget=convlog.Budget(tokens=1_000), format="markdown")
        assert isinstance(span, convlog.ResumptionContext)
        assert [c.key for c in span.conversations] == ["alice:2", "alice:1"]
        assert span.tokens <= 1_000 and span.message_count == 4
        with pytest.raises(convlog.InvalidInput) as caught:
            admin.resumption_context()  # neither user nor workspace
        assert caught.value.field == "user"
    with convlog.Client(url, token=ALICE_TOKEN) as alice:
        own = alice.resumption_context()  # a user token: its own conversations
        assert [c.key for c in own.conversations] == ["alice:2", "alice:1", "alice:0"]
        assert "bob's" not in own.text
        with pytest.raises(RemoteError) as refused:
            alice.resumption_context(user="bob")
        assert refused.value.status == 403

    async def run() -> convlog.ResumptionContext:
        async with convlog.AsyncClient(url, token=ALICE_TOKEN) as client:
            return await client.resumption_context(format="xml", conversations=1)

    assert [c.key for c in asyncio.run(run()).conversations] == ["alice:2"]
