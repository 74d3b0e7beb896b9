"""Issue 28's property: whatever a conversation went through (tool calls answered,
late, never, twice; pops; cancelled and cut-off turns; clears; memory blocks; any
budget), what convlog hands a model holds tool calls and results in pairs.

Random histories are written through the real library on SQLite, then every format of
`context()` is read back as a model would: its tool markers, in order, must pass the
one pairing checker (convlog.projections.pairing.check_pairs). Each call's tool is
named after the call (``tc7``) and each result says whose it is (``out-c7``), so the
text can be read back without convlog's help.

Issue 47: compactions (`conv.compact`, any `keep_last`), rewinds (`conv.rewind`
to a live message, a call's too) and forks (`conv.fork` at any message, maybe between
a call and its result; the writes then go on in the fork) are among the operations.

Issue 41: agents that number their calls per process reuse ids after a restart
(``restart``: the ids start again at ``c0``) and in every turn. The stored ids are
then reused, but each call's tool is named after that one call (``tc0n12``: call id
``c0``, its 12th write) and its result says so (``out-c0n12``), so the read-back can
tell each call from the others and check that every one has ITS result.
"""

from __future__ import annotations

import contextlib
import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import convlog
from convlog.projections.pairing import Tools, check_pairs

_MARK = re.compile(r"\[called tool (tc\d+n\d+)\(|\[tool (?:result|error): out-(c\d+n\d+)\b"
                   r"|result of tool (tc\d+n\d+) was lost")
_OTHER = re.compile(r"say-\d+|\[turn |mem-\d+|\[truncated\]")


def read_back(text: str) -> list[Tools]:
    """The calls, results and other dialogue of a context's text, in order."""
    items: list[Tools] = []
    last = 0
    for m in _MARK.finditer(text):
        if _OTHER.search(text, last, m.start()):
            items.append(Tools())
        call, result, lost = m.groups()
        if call:
            items.append(Tools(calls=((call[1:], call),), other=False))
        else:
            items.append(Tools(results=(result or lost[1:],), other=False))
        last = m.end()
    if _OTHER.search(text, last):
        items.append(Tools())
    return items


_op = st.one_of(
    st.tuples(st.just("say"), st.sampled_from(["user", "assistant"])),
    st.tuples(st.just("calls"), st.sampled_from(["chat", "anthropic"]),
              st.lists(st.sampled_from(["now", "late", "never", "twice"]), min_size=1,
                       max_size=3)),
    st.tuples(st.just("acp"), st.lists(st.booleans(), min_size=1, max_size=3),
              st.sampled_from([None, "[turn cancelled]", "[turn cut off: the agent died]"])),
    st.tuples(st.just("orphan")),
    st.tuples(st.just("pop")),
    st.tuples(st.just("clear")),
    st.tuples(st.just("memory")),
    st.tuples(st.just("restart")),
    st.tuples(st.just("compact"), st.integers(0, 4)),
    st.tuples(st.just("rewind"), st.integers(0, 5)),
    st.tuples(st.just("fork"), st.integers(0, 5)),
)


class Writer:
    """Turns operations into appends, pops and clears on one conversation. Call ids
    count per process (`restart` starts them again, as a restarted agent does)."""

    def __init__(self, conv: convlog.ConversationHandle) -> None:
        self.conv = conv
        self.n = itertools.count()
        self.calls_made = itertools.count()
        self.late: list[convlog.Message] = []

    def id(self) -> int:
        return next(self.n)

    def call_id(self) -> tuple[str, str]:
        """(the call's id, this call's own name: the id and the write it is in)."""
        call_id = f"c{next(self.calls_made)}"
        return call_id, f"{call_id}n{self.id()}"

    def say(self, role: str) -> convlog.Message:
        i = self.id()
        return (convlog.user if role == "user" else convlog.assistant)(f"say-{i}")

    def result(self, style: str, call_id: str, name: str) -> convlog.Message:
        if style == "chat":
            return convlog.tool(f"out-{name}", tool_call_id=call_id)
        return convlog.user([convlog.ToolResultPart(tool_use_id=call_id,
                                                    content=f"out-{name}")])

    def restart(self) -> None:
        """A new agent process: results still on their way land first (after the new
        process reused their ids, no reader could tell whose they are)."""
        if self.late:
            self.conv.append_turn(self.late)
            self.late = []
        self.calls_made = itertools.count()

    def apply(self, op: tuple[Any, ...]) -> None:
        kind = op[0]
        if kind == "say":
            self.conv.append_turn([*self.late, self.say(op[1])])
            self.late = []
        elif kind == "calls":
            self.calls(op[1], op[2])
        elif kind == "acp":
            parts: list[Any] = [convlog.TextPart(text=f"say-{self.id()}")]
            for answered in op[1]:
                call_id, name = self.call_id()
                parts.append(convlog.ToolUsePart(id=call_id, name=f"t{name}",
                                                 arguments="{}"))
                if answered:
                    parts.append(convlog.ToolResultPart(tool_use_id=call_id,
                                                        content=f"out-{name}"))
            if op[2]:
                parts.append(convlog.TextPart(text=op[2]))
            self.conv.append_turn([self.say("user"), convlog.assistant(parts)])
        elif kind == "orphan":  # a result whose call is nowhere
            i = self.id()
            self.conv.append(self.result("chat", f"gone{i}", f"gone{i}n{i}"))
        elif kind == "pop":
            self.conv.retract_last("pop_item")
        elif kind == "clear":
            self.conv.clear()
        elif kind == "memory":
            i = self.id()
            self.conv.inject_memory(f"mem-{i}", memory_ids=[f"m{i}"])
        elif kind == "restart":
            self.restart()
        elif kind == "compact":  # issue 47: never splits a pair; reads stay paired
            i = self.id()
            self.conv.compact(lambda previous, messages: f"summary-{i}", keep_last=op[1])
        elif kind == "rewind":  # issue 47: back to a live message, maybe a call's
            live = self.conv.live_messages()
            if live:
                with contextlib.suppress(convlog.InvalidInput):  # compacted: refused
                    self.conv.rewind(live[-1 - min(op[1], len(live) - 1)].message_id)
        elif kind == "fork":  # issue 47: at any message, maybe between a call and its
            # result; the writes go on in the fork (its history: the parent's, by reference)
            said = self.conv.messages()
            if said:
                key = f"{self.conv.key}/f{self.id()}"
                with contextlib.suppress(convlog.InvalidInput):  # withdrawn: refused
                    self.conv.fork(at=said[-1 - min(op[1], len(said) - 1)].message_id,
                                   key=key)
                    self.conv = self.conv.log.get(key)

    def calls(self, style: str, fates: list[str]) -> None:
        made = [self.call_id() for _ in fates]
        if style == "chat":
            turn = [convlog.assistant("", tool_calls=[
                convlog.ToolCall(id=c, name=f"t{name}", arguments="{}") for c, name in made])]
        else:
            turn = [convlog.assistant([convlog.ToolUsePart(id=c, name=f"t{name}",
                                                           arguments="{}")
                                       for c, name in made])]
        for (call_id, name), fate in zip(made, fates, strict=True):
            if fate in ("now", "twice"):
                turn.append(self.result(style, call_id, name))
            if fate in ("late", "twice"):
                self.late.append(self.result(style, call_id, name))
        self.conv.append_turn(turn)


@pytest.fixture(scope="module")
def sqlite_log(tmp_path_factory: pytest.TempPathFactory) -> Iterator[convlog.ConversationLog]:
    path: Path = tmp_path_factory.mktemp("pairing") / "c.db"
    with convlog.open(f"sqlite:///{path}") as log:
        yield log


_keys = itertools.count()


_REWIND_GAP = [("calls", "chat", ["now"]), ("restart",), ("calls", "chat", ["late"]),
               ("rewind", 2)]


def _the_open_rewind_gap(ops: list[tuple[Any, ...]]) -> bool:
    """Histories where a rewind and a restart meet: the known gap below (issue 47,
    open), kept out of the property so it stays a check of everything else."""
    kinds = {op[0] for op in ops}
    return {"rewind", "restart"} <= kinds


@pytest.mark.xfail(strict=True, reason=(
    "issue 47, open: a rewind abandons a call whose id a restarted agent reused; the "
    "late result of that abandoned call is then paired with the earlier call of the "
    "same id (pairing's scope does not see the abandoned reuse). Found by this "
    "property test; it passes when the scope reads the abandoned calls too."))
def test_a_late_result_of_a_call_a_rewind_abandoned_is_not_paired_with_an_earlier_one(
        sqlite_log: convlog.ConversationLog) -> None:
    writer = Writer(sqlite_log.conversation(f"p{next(_keys)}"))
    for op in _REWIND_GAP:
        writer.apply(op)
    writer.conv.append_turn(writer.late)
    for fmt in ("xml", "markdown", "messages"):
        ctx = writer.conv.context(format=fmt)
        assert check_pairs(read_back(ctx.text)) == [], (fmt, ctx.text)


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow, HealthCheck.filter_too_much])
@example(ops=[("calls", "chat", ["now"]), ("restart",), ("calls", "anthropic", ["now"]),
              ("acp", [True], None), ("restart",), ("acp", [True, False], None),
              ("say", "user")], budget=convlog.Budget())  # issue 41's reused ids
@given(ops=st.lists(_op, min_size=1, max_size=14),
       budget=st.one_of(  # the default budget too: it shows whole histories, uncut
           st.just(convlog.Budget()),
           st.builds(convlog.Budget, tokens=st.integers(30, 3_000),
                     messages=st.integers(1, 16), chars=st.integers(16, 300))))
def test_every_context_is_paired(sqlite_log: convlog.ConversationLog,
                                 ops: list[tuple[Any, ...]], budget: convlog.Budget) -> None:
    assume(not _the_open_rewind_gap(ops))
    writer = Writer(sqlite_log.conversation(f"p{next(_keys)}"))
    for op in ops:
        writer.apply(op)
    conv = writer.conv  # a fork's, when the writes went on in one
    if writer.late:
        conv.append_turn(writer.late)
    for fmt in ("xml", "markdown", "messages"):
        ctx = conv.context(budget=budget, format=fmt)
        assert check_pairs(read_back(ctx.text)) == [], (fmt, ctx.text, ops, budget)
        assert ctx.tokens <= budget.tokens


# ------------------------------------------- the OpenAI Agents session's items


_item_op = st.one_of(
    st.tuples(st.just("say"), st.sampled_from(["user", "assistant"])),
    st.tuples(st.just("calls"), st.lists(st.sampled_from(["now", "late", "never", "twice"]),
                                         min_size=1, max_size=3)),
    st.tuples(st.just("reasoning")),
    st.tuples(st.just("orphan")),
    st.tuples(st.just("pop")),
    st.tuples(st.just("clear")),
    # another host's messages in the same conversation (no SDK item kept)
    st.tuples(st.just("library"), st.sampled_from(["chat", "anthropic"]),
              st.lists(st.sampled_from(["now", "late", "never", "twice"]), min_size=1,
                       max_size=3)),
    st.tuples(st.just("acp"), st.lists(st.booleans(), min_size=1, max_size=3),
              st.sampled_from([None, "[turn cancelled]"])),
    st.tuples(st.just("restart")),
    st.tuples(st.just("compact"), st.integers(0, 4)),
    st.tuples(st.just("rewind"), st.integers(0, 5)),
    st.tuples(st.just("fork"), st.integers(0, 5)),
)


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@example(ops=[("say", "user"), ("library", "anthropic", ["now", "never"]), ("say", "user"),
              ("library", "chat", ["late"]), ("compact", 1), ("say", "assistant"),
              ("compact", 0)], limits=[1, 3])  # issue 47: another host's turns compacted
@example(ops=[("calls", ["now", "late"]), ("say", "user"), ("rewind", 2), ("say", "user"),
              ("calls", ["twice"]), ("rewind", 1)], limits=[2])  # issue 47: rewinds
@given(ops=st.lists(_item_op, min_size=1, max_size=12),
       limits=st.lists(st.integers(1, 12), min_size=1, max_size=3))
def test_every_get_items_is_paired(sqlite_log: convlog.ConversationLog,
                                   ops: list[tuple[Any, ...]], limits: list[int]) -> None:
    import asyncio

    from convlog.integrations.openai_agents import ConvlogSession
    from tests.sdks.openai_checks import chat_problems, item_tools

    session = ConvlogSession(f"s{next(_keys)}", sqlite_log)
    writer = Writer(sqlite_log.conversation(session.key))
    n = writer.n
    late: list[Any] = []  # the SDK's item types are TypedDicts: plain dicts here

    async def run() -> list[list[Any]]:
        nonlocal late, session
        for op in ops:
            if op[0] == "say":
                said: Any = {"role": op[1], "content": f"say-{next(n)}"}
                await session.add_items([*late, said])
                late = []
            elif op[0] == "calls":
                batch: list[Any] = []
                for fate in op[1]:
                    call_id, name = writer.call_id()
                    batch.append({"type": "function_call", "call_id": call_id,
                                  "name": f"t{name}", "arguments": "{}"})
                    out = {"type": "function_call_output", "call_id": call_id,
                           "output": f"out-{name}"}
                    if fate in ("now", "twice"):
                        batch.append(out)
                    if fate in ("late", "twice"):
                        late.append(out)
                await session.add_items(batch)
            elif op[0] == "reasoning":
                await session.add_items([{"type": "reasoning", "id": f"rs{next(n)}",
                                          "summary": []}])
            elif op[0] == "orphan":
                await session.add_items([{"type": "function_call_output",
                                          "call_id": f"gone{next(n)}", "output": "x"}])
            elif op[0] == "pop":
                await session.pop_item()
            elif op[0] == "clear":
                await session.clear_session()
            elif op[0] == "library":
                writer.calls(op[1], op[2])
            elif op[0] == "restart":
                if late:
                    await session.add_items(late)
                    late = []
                writer.restart()
            elif op[0] == "fork":  # issue 47: the session goes on in the fork
                writer.apply(op)
                session = ConvlogSession(writer.conv.key, sqlite_log)
            else:
                writer.apply(op)
        if late:
            await session.add_items(late)
        if writer.late:
            writer.conv.append_turn(writer.late)
        return [await session.get_items(limit) for limit in [None, *limits]]

    for got in asyncio.run(run()):
        assert check_pairs([item_tools(i) for i in got]) == [], got
        assert chat_problems(got) == [], got  # the SDK's own converter accepts it
        assert own_outputs(got) == [], got


def own_outputs(items: list[Any]) -> list[str]:
    """Outputs answering another call than the one they were written for: each call's
    tool is named after that call (``tc0n12``) and its output says so (``out-c0n12``)."""
    names = {i["call_id"]: i["name"] for i in items if i.get("type") == "function_call"}
    return [f"{i['call_id']}: {i['output']} answers {names.get(i['call_id'])}"
            for i in items if i.get("type") == "function_call_output"
            and str(i.get("output", "")).startswith("out-")
            and i["output"] != f"out-{names.get(i['call_id'], '?')[1:]}"]
