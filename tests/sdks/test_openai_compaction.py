"""Compaction on the OpenAI Agents SDK session, against the SDK's own compaction session.

The SDK's `OpenAIResponsesCompactionSession` (run with its own code, over its own
`SQLiteSession`) hands the model, after a compaction, what `responses.compact`
returned: every user message of the history, then one item standing for the rest
(OpenAI's opaque `compaction` item). The stand-in client here answers `compact` by
that documented contract, with convlog's summary item in the place of the opaque
one (a host's summary is text, not OpenAI's encrypted content). convlog's session,
compacted by `conv.compact`, must then hand the model the same items, before and
after later turns: and keep every item in the log.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import convlog

agents = pytest.importorskip("agents")
from agents import SQLiteSession  # noqa: E402
from agents.memory.openai_responses_compaction_session import (  # noqa: E402
    OpenAIResponsesCompactionSession,
    _is_user_message,
)

from convlog.integrations.openai_agents import ConvlogSession  # noqa: E402

HISTORY: list[Any] = [
    {"role": "user", "content": "Find the auth notes"},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "grep"}]},
    {"type": "function_call", "call_id": "call_1", "name": "grep",
     "arguments": '{"q": "auth"}', "status": "completed"},
    {"type": "function_call_output", "call_id": "call_1", "output": "notes/auth.md:3 JWT"},
    {"type": "message", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "JWT with rotating keys.",
                  "annotations": []}]},
    {"role": "user", "content": [{"type": "input_text", "text": "and the refresh tokens?"}]},
    {"type": "message", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "Kept 30 days.", "annotations": []}]},
]
LATER: list[Any] = [
    {"role": "user", "content": "thanks"},
    {"type": "message", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "You are welcome.", "annotations": []}]},
]


class _Compacted:
    def __init__(self, output: list[Any]) -> None:
        self.output = output
        self.usage = None


class _Responses:
    def __init__(self, summary: dict[str, Any]) -> None:
        self.summary = summary
        self.inputs: list[list[Any]] = []

    async def compact(self, *, model: str, input: list[Any] | None = None,
                      **_: Any) -> _Compacted:
        """`responses.compact` by its documented contract: "all user messages,
        followed by a single compaction item"."""
        assert input is not None
        self.inputs.append(input)
        return _Compacted([i for i in input if _is_user_message(i)] + [self.summary])


class ContractClient:
    def __init__(self, summary: dict[str, Any]) -> None:
        self.responses = _Responses(summary)


def summarize(previous: str | None, messages: list[Any]) -> str:
    return "Auth: JWT with rotating keys; refresh tokens kept 30 days."


def test_get_items_after_compaction_match_the_sdks_own_compaction_session(
        tmp_path: Path) -> None:
    async def main() -> None:
        log = convlog.open(f"sqlite:///{tmp_path / 'convlog.db'}")
        ours = ConvlogSession("s", log)
        await ours.add_items(HISTORY)
        result = log.get("s").compact(summarize, keep_last=0, reason="context full")
        assert result is not None and result.compacted == len(HISTORY) and result.kept == 0
        compacted: list[Any] = await ours.get_items()
        summary = compacted[-1]
        assert summary["role"] == "user" and result.text in summary["content"][0]["text"]

        client = ContractClient(summary)
        theirs = OpenAIResponsesCompactionSession(
            "s", SQLiteSession("s", str(tmp_path / "sdk.db")), client=client,  # type: ignore[arg-type]
            model="gpt-4.1", compaction_mode="input")
        await theirs.add_items(HISTORY)
        await theirs.run_compaction({"force": True, "compaction_mode": "input"})
        assert client.responses.inputs  # the SDK's own code asked for the compaction

        assert compacted == await theirs.get_items()
        assert await ours.get_items(limit=2) == await theirs.get_items(limit=2)
        for session in (ours, theirs):
            await session.add_items(LATER)
        assert await ours.get_items() == await theirs.get_items()
        assert await ours.get_items(limit=3) == await theirs.get_items(limit=3)
        # nothing was deleted: every item is still in the log, and the user's view
        assert len(log.messages("s")) == len(HISTORY) + len(LATER)
        log.close()

    asyncio.run(main())


def test_a_compaction_never_splits_a_call_from_its_output(tmp_path: Path) -> None:
    async def main() -> None:
        log = convlog.open(f"sqlite:///{tmp_path / 'convlog.db'}")
        ours = ConvlogSession("s", log)
        await ours.add_items(HISTORY)
        # keeping the newest 4 would cut between call_1 and its output: the cut moves
        # before the call, so the call, its output and the reasoning before it stay
        result = log.get("s").compact(summarize, keep_last=4)
        assert result is not None and result.kept == 5 and result.compacted == 2
        items: list[Any] = await ours.get_items()
        assert items[0] == HISTORY[0]  # OpenAI keeps the user messages of the range
        assert items[2:] == HISTORY[2:]
        assert items[1]["role"] == "user" and "summary of the 2 earlier" in str(items[1])
        for limit in range(1, len(items) + 1):  # the newest `limit`, an output whose
            newest = await ours.get_items(limit=limit)  # call the limit cut left out
            assert newest == [i for i in items[-limit:] if i != HISTORY[3]
                              or HISTORY[2] in items[-limit:]]
        log.close()

    asyncio.run(main())
