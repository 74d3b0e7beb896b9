"""The host's memory policy is part of the log (issue 26): a conversation recorded
with `max_injected_blocks_in_history=1` gives the same answer from every reader,
whatever that reader was opened with, and a change of policy applies from where it
was recorded.

Before the fix, every reader applied its own options (3 and 10 by default), so
`context`, `replay --view agent`, `diff` and `html` opened without the host's
options showed three live blocks where the host's agent had one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import convlog
from convlog.cli.main import main
from convlog.domain.events import MemoryPolicySet
from tests.integration.test_memory import PREFIX, blocks_in, turn


def record(url: str, cap: int, blocks: int = 3) -> None:
    with convlog.open(url, max_injected_blocks_in_history=cap, context_window_depth=4,
                      preload_tokenizer=False) as log:
        conv = log.conversation("c")
        for i in range(blocks):
            conv.inject_memory(f"fact {i}", memory_ids=[f"m{i}"])
            turn(conv, i)


def live_agent_blocks(view: convlog.ConversationView) -> list[str]:
    return [e.text for e in view.entries if e.kind == "memory" and e.live]


def test_every_reader_applies_the_recorded_policy(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    record(url, cap=1)
    newest = [f"{PREFIX}\nfact 2"]
    with convlog.open(url, preload_tokenizer=False) as log:  # a reader with the defaults
        conv = log.conversation("c")
        policies = [r.event for r in conv.events() if isinstance(r.event, MemoryPolicySet)]
        assert [(p.max_injected_blocks_in_history, p.context_window_depth)
                for p in policies] == [(1, 4)]
        assert blocks_in(conv.context()) == newest
        assert [b.text for b in conv.live_memory()] == newest
        assert live_agent_blocks(log.view("c", "agent")) == newest
        assert [b.text for b in log.live_memory("c", at=log.info("c").version)] == newest
        gone = [e.gone for e in log.view("c", "agent").entries if e.kind == "memory"]
        assert sum(g is not None and "at most 1 blocks" in g for g in gone) == 2
        extra = [e.text for e in log.diff("c").extra if e.kind == "memory" and e.live]
        assert extra == newest
    assert main(["--db", url, "context", "c", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "fact 2" in out and "fact 1" not in out and "fact 0" not in out
    assert main(["--db", url, "replay", "c", "--view", "agent", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    entries = rows["entries"] if isinstance(rows, dict) else rows
    assert [e["text"] for e in entries if e["kind"] == "memory" and e["live"]] == newest
    page = tmp_path / "c.html"
    assert main(["--db", url, "html", "c", "-o", str(page)]) == 0
    html = page.read_text()
    assert "at most 1 blocks stay live" in html and "at most 3 blocks" not in html


def test_a_change_of_policy_applies_from_where_it_was_recorded(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    record(url, cap=3)  # the defaults' cap: only the depth (4) differs
    with convlog.open(url, preload_tokenizer=False) as log:
        before = log.info("c").version
        assert len(log.live_memory("c")) == 3
    record(url, cap=1, blocks=0)  # no host write: the policy is unchanged
    with convlog.open(url, max_injected_blocks_in_history=1, context_window_depth=4,
                      preload_tokenizer=False) as log:
        log.conversation("c").append_turn([convlog.user("q"), convlog.assistant("a")])
    with convlog.open(url, preload_tokenizer=False) as log:
        assert [b.text for b in log.live_memory("c")] == [f"{PREFIX}\nfact 2"]
        assert len(log.live_memory("c", at=before)) == 3  # a replay before the change
        assert len(live_agent_blocks(log.view("c", "agent", at=before))) == 3
        assert log.state("c").policy() == (1, 4)


def test_a_maintenance_write_does_not_change_the_policy(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    record(url, cap=1)
    with convlog.open(url, preload_tokenizer=False) as log:  # defaults: archive only
        log.conversation("c").archive()
        assert log.state("c").policy() == (1, 4)


def test_a_conversation_with_no_recorded_policy_uses_the_defaults(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    record(url, cap=3, blocks=4)
    with convlog.open(url, max_injected_blocks_in_history=1, preload_tokenizer=False,
                      context_window_depth=4) as log:
        assert log.state("c").policy() == (3, 4)
    with convlog.open(url, preload_tokenizer=False) as log:
        assert len(log.live_memory("c")) == 3


def test_a_policy_set_for_one_conversation_wins_over_the_writers_options(
        tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    record(url, cap=3)
    with convlog.open(url, preload_tokenizer=False) as log:
        assert log.set_memory_policy("c", max_injected_blocks_in_history=1,
                                     context_window_depth=2) == (1, 2)
        with pytest.raises(convlog.InvalidInput):
            log.set_memory_policy("c", max_injected_blocks_in_history=-1,
                                  context_window_depth=2)
        with pytest.raises(convlog.UnknownConversation):
            log.set_memory_policy("nope", max_injected_blocks_in_history=1,
                                  context_window_depth=2)
    record(url, cap=5)  # a host with other options writes on: the setting stays
    with convlog.open(url, preload_tokenizer=False) as log:
        assert log.state("c").policy() == (1, 2)
        assert len(log.live_memory("c")) == 1


def test_over_http_a_conversation_gets_its_own_policy(tmp_path: Path) -> None:
    import httpx

    from tests.httpserver import served

    url = f"sqlite:///{tmp_path / 'c.db'}"
    record(url, cap=3)
    with convlog.open(url, preload_tokenizer=False) as log, served(log) as base:
        put = httpx.put(f"{base}/v1/conversations/c/memory/policy", timeout=10,
                        json={"max_injected_blocks_in_history": 0, "context_window_depth": 3})
        assert put.status_code == 200, put.text
        assert (put.json()["max_injected_blocks_in_history"],
                put.json()["context_window_depth"]) == (0, 3)
        assert put.json()["live"] == []  # cap 0: the blocks of earlier turns are gone
        bad = httpx.put(f"{base}/v1/conversations/c/memory/policy", timeout=10,
                        json={"max_injected_blocks_in_history": 5000,
                              "context_window_depth": 3})
        assert bad.status_code == 422 and "max_injected_blocks_in_history" in bad.text
    with convlog.open(url, preload_tokenizer=False) as log:
        assert log.state("c").policy() == (0, 3)
        assert live_agent_blocks(log.view("c", "agent")) == []


def test_the_handle_and_the_async_log_set_it_too(tmp_path: Path) -> None:
    import asyncio

    url = f"sqlite:///{tmp_path / 'c.db'}"
    record(url, cap=3)
    with convlog.open(url, preload_tokenizer=False) as log:
        assert log.conversation("c").set_memory_policy(
            max_injected_blocks_in_history=2, context_window_depth=1) == (2, 1)

        async def run() -> tuple[int, int]:
            alog = convlog.AsyncConversationLog(log)
            return await (await alog.get("c")).set_memory_policy(
                max_injected_blocks_in_history=1, context_window_depth=1)

        assert asyncio.run(run()) == (1, 1)
        assert len(log.live_memory("c")) == 1
