"""The pairing rule (convlog.projections.pairing): every history it plans is well
paired, and a well-paired history comes back unchanged (issue 28)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from convlog.domain.content import TextPart, ThinkingPart, ToolUsePart
from convlog.domain.events import MessageAppended
from convlog.projections.pairing import (
    Keep,
    Lost,
    Tools,
    _plan,
    check_pairs,
    message_tools,
    pair,
    scope,
    well_paired,
)


def call(*ids: str, other: bool = False) -> Tools:
    return Tools(calls=tuple((i, f"tool_{i}") for i in ids), other=other)


def result(*ids: str, other: bool = False) -> Tools:
    return Tools(results=ids, other=other)


TEXT = Tools()
AT = datetime(2026, 11, 25, tzinfo=UTC)


def apply(items: list[Tools], plan_steps: list[Keep | Lost]) -> list[Tools]:
    out = []
    for step in plan_steps:
        if isinstance(step, Lost):
            out.append(Tools(results=(step.call_id,), other=False))
        else:
            item = items[step.index]
            out.append(Tools(calls=item.calls,
                             results=tuple(r for r in item.results if r not in step.drop),
                             other=item.other))
    return out


def test_a_call_without_result_gets_a_lost_result_right_after_it() -> None:
    items = [TEXT, call("a"), TEXT]
    plan = pair(items, causes={"a": "cancelled"})
    assert plan.steps[:3] == [Keep(index=0), Keep(index=1), Lost("a", "tool_a", "cancelled")]
    assert "cancelled" in plan.steps[2].text  # type: ignore[union-attr]
    assert [r.kind for r in plan.repairs] == ["synthesized"]
    assert check_pairs(apply(items, plan.steps)) == []


def test_a_trailing_call_is_answered_with_the_default_cause() -> None:
    plan = pair([TEXT, call("a", "b")], missing="budget")
    assert [s for s in plan.steps if isinstance(s, Lost)] == [
        Lost("a", "tool_a", "budget"), Lost("b", "tool_b", "budget")]


def test_a_result_without_call_is_left_out() -> None:
    items = [result("x"), TEXT, call("a"), result("a"), result("a")]
    plan = pair(items, orphan="budget")
    assert plan.steps == [Keep(index=1), Keep(index=2), Keep(index=3)]
    assert [(r.kind, r.cause) for r in plan.repairs] == [("dropped", "budget"),
                                                          ("dropped", "duplicate")]


def test_a_late_result_is_moved_up_to_its_call() -> None:
    items = [call("a"), TEXT, result("a")]
    plan = pair(items)
    assert plan.steps == [Keep(index=0), Keep(index=2), Keep(index=1)]
    assert [r.kind for r in plan.repairs] == ["moved"]


def test_mixed_results_and_text_keep_the_text() -> None:
    items = [call("a", "b"), result("a", "z", other=True)]
    plan = pair(items)
    # the lost result of b goes before the message, whose text ends the exchange
    assert plan.steps[1:] == [Lost("b", "tool_b", "process_died"),
                              Keep(index=1, drop=frozenset({"z"}))]
    assert check_pairs(apply(items, plan.steps)) == []


def test_an_item_holding_a_call_and_its_result_is_an_answered_exchange() -> None:
    """The ACP proxy records a whole turn as ONE assistant message: its tool calls and
    their results together. Such an item answers its own calls: nothing to repair."""
    from datetime import UTC, datetime

    import convlog
    from convlog.domain.events import MessageAppended
    from convlog.projections.pairing import message_tools

    turn = MessageAppended(at=datetime(2026, 1, 1, tzinfo=UTC), message_id="m",
                           role="assistant", content=[
                               convlog.ToolUsePart(id="a", name="tool_a"),
                               convlog.ToolResultPart(tool_use_id="a", content="out"),
                               convlog.ToolUsePart(id="b", name="tool_b"),
                               convlog.TextPart(text="[turn cancelled]")])
    items = [TEXT, message_tools(turn), TEXT]
    assert check_pairs([TEXT, Tools(calls=(("a", "tool_a"),), results=("a",)), TEXT]) == []
    plan = pair(items)
    assert plan.steps == [Keep(index=0), Keep(index=1), Lost("b", "tool_b", "process_died"),
                          Keep(index=2)]
    assert [(r.kind, r.call_id) for r in plan.repairs] == [("synthesized", "b")]
    assert check_pairs(apply(items, plan.steps)) == []


ids = st.sampled_from("abcdef")
tools = st.one_of(
    st.just(TEXT),
    st.just(Tools(other=False)),
    st.lists(ids, min_size=1, max_size=3, unique=True).map(lambda c: call(*c)),
    st.lists(ids, min_size=1, max_size=3, unique=True).map(lambda c: call(*c, other=True)),
    st.lists(ids, min_size=1, max_size=2, unique=True).map(lambda r: result(*r)),
    st.lists(ids, min_size=1, max_size=2, unique=True).map(lambda r: result(*r, other=True)),
    st.lists(ids, min_size=1, max_size=3, unique=True).map(  # a call and its result: ACP
        lambda c: Tools(calls=call(*c).calls, results=(c[0],), other=True)),
)


def unique_calls(items: list[Tools]) -> list[Tools]:
    """A call id is unique in a real history: number repeated ones apart."""
    seen: dict[str, int] = {}
    fixed = []
    for item in items:
        calls = []
        for cid, name in item.calls:
            seen[cid] = seen.get(cid, 0) + 1
            calls.append((f"{cid}{seen[cid]}", name))
        results = tuple(f"{r}{max(seen.get(r, 0), 1)}" for r in item.results)
        fixed.append(Tools(calls=tuple(calls), results=results, other=item.other))
    return fixed


@settings(max_examples=500)
@given(st.lists(tools, max_size=14))
def test_every_plan_is_well_paired(items: list[Tools]) -> None:
    fixed = unique_calls(items)
    plan = pair(fixed)
    out = apply(fixed, plan.steps)
    assert check_pairs(out) == []
    kept = [s.index for s in plan.steps if isinstance(s, Keep)]
    assert len(kept) == len(set(kept))
    # nothing but tool results is ever left out
    assert all(i in kept for i, item in enumerate(fixed)
               if item.other or item.calls or not item.results)
    if check_pairs(fixed) == []:
        assert plan.repairs == [] and kept == list(range(len(fixed)))


@settings(max_examples=1000)
@given(st.lists(tools, max_size=14), st.booleans())
def test_the_well_paired_shortcut_is_the_checker_and_changes_nothing(
        items: list[Tools], unique: bool) -> None:
    """`pair` skips planning when `well_paired` says so (issue 30): that must be exactly
    when the checker finds nothing, and the long way must then plan nothing either."""
    history = unique_calls(items) if unique else items
    assert well_paired(history) == (check_pairs(history) == [])
    if well_paired(history):
        slow = _plan(history, {}, "process_died", "no_call")
        assert slow.repairs == []
        assert slow.steps == [Keep(index=i) for i in range(len(history))]
        assert pair(history) == slow
    elif not scope(history).real:  # ids reused: see the test below
        assert pair(history) == _plan(history, {}, "process_died", "no_call")


def test_plain_messages_share_constant_tools() -> None:
    """Describing a long history of plain messages allocates nothing per message."""
    def described(**fields: Any) -> Tools:
        return message_tools(MessageAppended(message_id="m", at=AT, **fields))

    assert described(role="user", content="hi") is described(role="assistant", content="x")
    assert described(role="user", content="hi") == Tools()
    assert described(role="assistant", content=[TextPart(text="t")]) == Tools()
    assert described(role="assistant", content="") == Tools(other=False)
    assert described(role="assistant", content=[ThinkingPart(text="t")]) == Tools(other=False)
    assert described(role="tool", content="out", tool_call_id="c") == Tools(
        results=("c",), other=False)
    assert described(role="assistant", content=[ThinkingPart(text="t"),
                                                ToolUsePart(id="u", name="f")]
                     ) == Tools(calls=(("u", "f"),), other=False)


def test_a_reused_call_id_is_a_call_of_its_own() -> None:
    """Issue 41: a call id used again opens a new call; a result answers the newest
    call before it with its id (or its own item's, in order)."""
    items = [call("a"), result("a"), TEXT, call("a"), TEXT, call("a"), result("a"), TEXT]
    scoped = scope(items)
    assert [t.calls for t in scoped.items if t.calls] == [
        (("a", "tool_a"),), (("a~2", "tool_a"),), (("a~3", "tool_a"),)]
    assert [t.results for t in scoped.items if t.results] == [("a",), ("a~3",)]
    assert scoped.real == {"a~2": "a", "a~3": "a"}
    plan = pair(items)
    assert plan.steps == [Keep(index=0), Keep(index=1), Keep(index=2), Keep(index=3),
                          Lost("a", "tool_a", "process_died", key="a~2"), Keep(index=4),
                          Keep(index=5), Keep(index=6), Keep(index=7)]
    assert [(r.kind, r.call_id, r.scoped_id) for r in plan.repairs] == [
        ("synthesized", "a", "a~2")]
    # a key never takes an id the history holds; an ACP turn answers its own calls
    held = [call("a"), result("a"), call("a", "a~2"), result("a", "a~2"),
            Tools(calls=(("a", "t"), ("a", "t")), results=("a", "a"))]
    assert [t.calls for t in scope(held).items if t.calls] == [
        (("a", "tool_a"),), (("a~3", "tool_a"), ("a~2", "tool_a~2")),
        (("a~4", "t"), ("a~5", "t"))]
    assert scope(held).items[-1].results == ("a~4", "a~5")
    assert pair(held).repairs == []


def apply_keyed(items: list[Tools], plan_steps: list[Keep | Lost]) -> list[Tools]:
    """`apply`, with every call and result under its key (`scope`)."""
    scoped = scope(items)
    out = []
    for step in plan_steps:
        if isinstance(step, Lost):
            out.append(Tools(results=(step.scoped_id,), other=False))
        else:
            item = scoped.items[step.index]
            out.append(Tools(calls=item.calls, other=item.other, results=tuple(
                r for r in item.results if scoped.id_of(r) not in step.drop)))
    return out


@settings(max_examples=500)
@given(st.lists(tools, max_size=14))
def test_every_plan_with_reused_ids_is_well_paired_within_scope(items: list[Tools]) -> None:
    """Issue 41: ids used again (as agents that number their calls per process do):
    the plan, under the calls' keys, is well paired; nothing but results is left out;
    and a history paired within its scope is not repaired at all."""
    plan = pair(items)
    assert check_pairs(apply_keyed(items, plan.steps)) == []
    kept = [s.index for s in plan.steps if isinstance(s, Keep)]
    assert len(kept) == len(set(kept))
    assert all(i in kept for i, item in enumerate(items)
               if item.other or item.calls or not item.results)
    if check_pairs(list(scope(items).items)) == []:
        assert plan.repairs == [] and kept == list(range(len(items)))
