"""`session/list` from the catalog (real SQLite + DuckDB views): only this agent's
sessions recorded by the proxy, filtered by cwd, newest first, in pages."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import convlog
from convlog.acp.catalog import LIST_PAGE, list_page

acp = pytest.importorskip("acp")


def test_list_pages_through_this_agents_acp_sessions(tmp_path: Path) -> None:
    async def main() -> None:
        log = await convlog.open_async(f"sqlite:///{tmp_path / 'c.db'}")
        for i in range(LIST_PAGE + 5):
            await log.conversation(f"acp:s{i:03}", agent="a1", workspace="/w1",
                                   title=f"t{i}" if i == 0 else None)
            await log.append(f"acp:s{i:03}", convlog.user(f"hello {i}"))
        await log.conversation("acp:other-agent", agent="a2", workspace="/w1")
        await log.conversation("discord:1", agent="a1", workspace="/w1")
        await log.conversation("acp:elsewhere", agent="a1", workspace="/w2")
        first = await list_page(log, "a1", {"cwd": "/w1"})
        assert len(first["sessions"]) == LIST_PAGE and first["nextCursor"] == str(LIST_PAGE)
        assert first["sessions"][0]["sessionId"] == f"s{LIST_PAGE + 4:03}"  # newest first
        rest = await list_page(log, "a1", {"cwd": "/w1", "cursor": first["nextCursor"]})
        assert len(rest["sessions"]) == 5 and "nextCursor" not in rest
        assert rest["sessions"][-1] == {**rest["sessions"][-1], "sessionId": "s000",
                                        "cwd": "/w1", "title": "t0"}
        everywhere = await list_page(log, "a1", {})
        ids = {s["sessionId"] for s in everywhere["sessions"]}
        assert "elsewhere" in ids and "other-agent" not in ids
        for session in first["sessions"]:  # each one is valid for the SDK's schema
            acp.schema.SessionInfo.model_validate(session)
        for cursor in ("nope", "\u00b2", "9" * 5000):  # "²".isdigit(): int() refused it
            with pytest.raises(acp.RequestError):
                await list_page(log, "a1", {"cursor": cursor})
        await log.close()

    asyncio.run(main())
