"""The asyncio API: same behaviour as the sync one, and the event loop stays free."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import convlog


def test_async_api_records_and_reads(sqlite_url: str) -> None:
    async def main() -> None:
        async with await convlog.open_async(sqlite_url) as log:
            conv = await log.conversation("async:1", user="u1")
            result = await conv.append_turn([convlog.user("hi", id="1"),
                                             convlog.assistant("hello", id="2")])
            assert result.appended == ["1", "2"]
            assert (await conv.append_turn([convlog.user("hi", id="1")])).skipped == ["1"]
            assert [m.content for m in await conv.messages()] == ["hi", "hello"]
            assert (await log.info("async:1")).message_count == 2
            assert [r.type for r in await conv.timeline()][:1] == ["session_started"]
            with pytest.raises(convlog.UnknownConversation):
                await log.get("nobody")
    asyncio.run(main())


def test_async_open_takes_the_same_options_as_open(tmp_path: Path) -> None:
    prices = {"my-llm": convlog.ModelPrice(input_per_mtok=1.0, output_per_mtok=2.0)}
    views = tmp_path / "elsewhere.duckdb"

    async def main() -> float | None:
        async with await convlog.open_async(f"sqlite:///{tmp_path / 'a.db'}", prices=prices,
                                            views=str(views), preload_tokenizer=False) as log:
            await log.append("k", convlog.assistant("x", model="my-llm", tokens=1,
                                                    usage=convlog.Usage(
                                                        input_tokens=1_000_000)))
            (row,) = await log.costs(by="model")
            return row.cost_usd

    assert asyncio.run(main()) == pytest.approx(1.0)
    assert views.exists()


def test_many_conversations_concurrently_from_one_loop(sqlite_url: str) -> None:
    async def one(log: convlog.AsyncConversationLog, n: int) -> None:
        for t in range(10):
            await log.append_turn(f"c{n}", [convlog.user(f"{n}-{t}", id=f"{n}-{t}")])

    async def main() -> None:
        log = await convlog.open_async(sqlite_url)
        try:
            await asyncio.gather(*(one(log, n) for n in range(8)))
            sessions = await log.conversations()
            assert len(sessions) == 8 and all(s.message_count == 10 for s in sessions)
        finally:
            await log.close()
    asyncio.run(main())


def test_blocking_storage_work_runs_off_the_event_loop(sqlite_url: str) -> None:
    """While a write waits on a lock held by another connection, the loop keeps ticking."""
    import sqlite3

    async def main() -> int:
        log = await convlog.open_async(sqlite_url + "?timeout=5")
        await log.conversation("k")
        blocker = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"), isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # hold the write lock
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        tick_task = asyncio.create_task(ticker())
        write = asyncio.create_task(log.append("k", convlog.user("waits for the lock")))
        await asyncio.sleep(0)  # the write starts, and meets the lock
        before = ticks
        await asyncio.sleep(0.3)
        # The write still waits, and the loop went on meanwhile: a write that blocked
        # the loop would have run to its end (or its lock error) before the ticker
        # ticked again.
        assert not write.done()
        assert ticks > before, "the loop was blocked while the write waited"
        blocker.execute("COMMIT")
        await write
        tick_task.cancel()
        blocker.close()
        await log.close()
        return ticks

    asyncio.run(main())
