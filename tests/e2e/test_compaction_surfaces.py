"""Compaction and rewind (issue 47) on the HTTP surface, against a real `convlog
serve` process: the plan, the host's summary recorded through `convlog.Client` and
`AsyncClient` (their summarizer runs on the client's side), a plan that moved
answered with a 409 `compacted-meanwhile`, a user token limited to its own
conversations, a rewind; and both from the shell."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

import convlog
from tests.httpserver import ADMIN_TOKEN, spawn_serve

TOKEN_ENV = {"CONVLOG_TOKEN": ADMIN_TOKEN}
ALICE = "alice-token-0123456789"


def seed(conv: Any, n: int) -> None:
    for i in range(1, n + 1):
        conv.append_turn([convlog.user(f"Question {i}?", id=f"q{i}"),
                          convlog.assistant(f"Answer {i}.", id=f"a{i}")])


def test_compaction_over_http(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"alice": ALICE}))
    with spawn_serve(f"sqlite:///{tmp_path / 'c.db'}", tmp_path, "--user-tokens",
                     str(tokens), env=TOKEN_ENV) as (url, _), \
            convlog.Client(url, token=ADMIN_TOKEN) as admin:
        conv = admin.conversation("k", user="alice")
        seed(conv, 4)
        plan = conv.compaction_plan(keep_last=2)
        assert (plan.through_message_id, plan.compacted, plan.kept) == ("a3", 6, 2)
        assert [m.text for m in plan.messages][:2] == ["Question 1?", "Answer 1."]
        assert plan.previous_summary is None

        seen: list[Any] = []

        def summarize(previous: str | None, messages: list[Any]) -> str:
            seen.append((previous, len(messages)))
            return "Questions 1-3 answered."

        done = conv.compact(summarize, keep_last=2, reason="full")
        assert done is not None and seen == [(None, 6)]
        assert (done.compacted, done.kept, done.summarizer, done.reason) == (
            6, 2, "test_compaction_over_http.<locals>.summarize", "full")
        text = conv.context().text
        assert "Questions 1-3 answered." in text and "Question 1?" not in text
        assert len(conv.messages()) == 8  # nothing deleted
        assert conv.compact("nothing new", keep_last=2) is None

        # a plan that moved: refused, nothing recorded
        seed_more = admin.get("k")
        old = seed_more.compaction_plan(keep_last=0)
        seed_more.append_turn([convlog.user("Question 5?", id="q5")])
        moved = httpx.post(url + "/v1/conversations/k/compaction",
                           headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
                           json={"summary": "s", "keep_last": 0,
                                 "through_message_id": old.through_message_id})
        assert moved.status_code == 409 and moved.json()["type"].endswith(
            "compacted-meanwhile")
        bad = httpx.get(url + "/v1/conversations/k/compaction?keep_last=-1",
                        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
        assert bad.status_code == 422

        async def remote() -> None:
            async with convlog.AsyncClient(url, token=ALICE) as alice:
                own = await alice.get("k")

                async def fold(previous: str | None, messages: list[Any]) -> str:
                    return f"{previous} + {len(messages)}"

                again = await own.compact(fold, keep_last=1)
                assert again is not None and again.text == "Questions 1-3 answered. + 2"
                with pytest.raises(convlog.UnknownConversation):
                    await (await alice.conversation("bob's", user="alice")).compact("s")
        admin.conversation("bob's", user="bob").append(convlog.user("mine"))
        asyncio.run(remote())
        assert admin.get("k").info().message_count == 9

        # rewind: back to a message after the latest compaction, for the model
        admin.get("k").append_turn([convlog.user("Question 6?", id="q6"),
                                    convlog.assistant("Answer 6.", id="a6"),
                                    convlog.user("Question 8?", id="q8")])
        back = admin.get("k").rewind("q6", reason="edited")
        assert back is not None and (back.to_message_id, back.abandoned) == ("q6", 2)
        assert "Question 8?" not in admin.get("k").context().text
        assert admin.get("k").rewind("q6") is None
        with pytest.raises(convlog.InvalidInput, match="'to'"):
            admin.get("k").rewind("q5")  # before the latest compaction

        async def rewind_async() -> None:
            async with convlog.AsyncClient(url, token=ALICE) as alice:
                own = await alice.get("k")
                await own.append_turn([convlog.user("Question 7?", id="q7")])
                assert await own.rewind("q6") is not None
        asyncio.run(rewind_async())
        assert "Question 7?" not in admin.get("k").context().text


def test_compaction_from_the_shell(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'c.db'}"
    with convlog.open(db) as log:
        seed(log.conversation("k"), 3)

    def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "convlog.cli.main", *args, "--db", db],
                              input=stdin, capture_output=True, text=True, timeout=120)

    planned = cli("compact", "k", "--keep-last", "2", "--plan", "--json")
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    assert plan["through_message_id"] == "a2" and len(plan["messages"]) == 4
    done = cli("compact", "k", "--keep-last", "2", "--summary", "-", "--through",
               plan["through_message_id"], "--reason", "full", stdin="Two questions answered.")
    assert done.returncode == 0, done.stderr
    assert "compacted 4 messages" in done.stdout
    moved = cli("compact", "k", "--keep-last", "0", "--summary", "x", "--through", "a2")
    assert moved.returncode == 1 and "plan again" in moved.stderr
    with convlog.open(db) as log:
        text = log.context("k").text
        assert "Two questions answered." in text and "Question 1?" not in text
    nothing = cli("compact", "k", "--keep-last", "2", "--summary", "x")
    assert nothing.returncode == 0 and "nothing to compact" in nothing.stdout
    with convlog.open(db) as log:
        seed_turn = log.get("k")
        seed_turn.append_turn([convlog.user("Question 4?", id="q4"),
                               convlog.assistant("Answer 4.", id="a4")])
    rewound = cli("rewind", "k", "--to", "q4", "--reason", "edited")
    assert rewound.returncode == 0, rewound.stderr
    assert "rewound to q4: 1 later messages abandoned" in rewound.stdout
    refused = cli("rewind", "k", "--to", "q1")
    assert refused.returncode == 1 and "'to'" in refused.stderr
    with convlog.open(db) as log:
        assert "Answer 4." not in log.context("k").text
