"""Fork (issue 47) on the HTTP surface, against a real `convlog serve` process: through
`convlog.Client` and `AsyncClient`, the lineage in the catalog, the refusals (422
naming `at` or `key`), a user token limited to its own conversations and its own
user; and from the shell."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

import convlog
from tests.e2e.test_compaction_surfaces import ALICE, TOKEN_ENV, seed
from tests.httpserver import ADMIN_TOKEN, spawn_serve


def test_fork_over_http(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"alice": ALICE, "bob": "bob-token-0123456789"}))
    with spawn_serve(f"sqlite:///{tmp_path / 'c.db'}", tmp_path, "--user-tokens",
                     str(tokens), env=TOKEN_ENV) as (url, _), \
            convlog.Client(url, token=ADMIN_TOKEN) as admin:
        conv = admin.conversation("k", user="alice", agent="bot")
        seed(conv, 3)
        done = conv.fork(at="a2", key="k2", title="the other way")
        assert (done.key, done.parent, done.fork_at, done.user) == ("k2", "k", "a2", "alice")
        fork = admin.get("k2")
        fork.append_turn([convlog.user("Question 3, again?", id="q3b")])
        assert [m.message_id for m in fork.messages()] == ["q1", "a1", "q2", "a2", "q3b"]
        assert "Answer 2." in fork.context().text and "Answer 3." not in fork.context().text
        assert len(conv.messages()) == 6  # the parent unaffected
        info = fork.info()
        assert (info.parent, info.fork_at, info.agent, info.title) == (
            "k", "a2", "bot", "the other way")
        rows = {r.key: r for r in admin.conversations()}
        assert rows["k"].children == ["k2"] and rows["k2"].parent == "k"
        with pytest.raises(convlog.InvalidInput, match="'at'"):
            conv.fork(at="nope", key="k3")
        with pytest.raises(convlog.InvalidInput, match="'key'"):
            conv.fork(at="a1", key="k2")

        async def as_alice() -> None:
            async with convlog.AsyncClient(url, token=ALICE) as alice:
                own = await alice.get("k")
                forked = await own.fork(at="q1", key="k4")
                assert forked.user == "alice"
                assert [m.message_id for m in await (await alice.get("k4")).messages()] \
                    == ["q1"]
                with pytest.raises(convlog.ConvlogError):
                    await own.fork(at="q1", key="k5", user="bob")
        asyncio.run(as_alice())
        with convlog.Client(url, token="bob-token-0123456789") as bob, \
                pytest.raises(convlog.UnknownConversation):
            bob.get("k").fork(at="q1", key="b1")  # not bob's: as if it did not exist
        keys = {r.key for r in admin.conversations()}
        assert "k4" in keys and "k5" not in keys and "b1" not in keys


def test_fork_from_the_shell(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'c.db'}"
    with convlog.open(db) as log:
        seed(log.conversation("k"), 2)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "convlog.cli.main", *args, "--db", db],
                              capture_output=True, text=True, timeout=120)

    done = cli("fork", "k", "--at", "a1", "--key", "k2")
    assert done.returncode == 0, done.stderr
    assert "k2: forked from k at a1" in done.stdout
    refused = cli("fork", "k", "--at", "zz", "--key", "k3")
    assert refused.returncode == 1 and "'at'" in refused.stderr
    as_json = cli("fork", "k", "--at", "q2", "--key", "k4", "--json")
    assert json.loads(as_json.stdout)["forked"]["fork_at"] == "q2"
    with convlog.open(db) as log:
        assert [m.message_id for m in log.messages("k2")] == ["q1", "a1"]
        assert log.info("k4").parent == "k"
