"""Tool calls and results in pairs: the one rule for everything handed to a model.

A model API rejects (HTTP 400) a history holding a tool call without its result, or a
result without its call, and then every later request with that history fails too: the
conversation is dead. Such histories happen for ordinary reasons (the process died
mid-tool, a turn was cancelled, `pop_item` retracted the output, a budget or a limit
cut between call and result, an imported transcript was truncated), so every surface
that hands a model history repairs it ON READ with this one function; the log itself
keeps exactly what happened.

The rule (`pair`):
- a call with no result gets, right after its call block, a synthetic result saying
  the result was lost and why (`Lost`, see `lost_text`);
- a result with no call (its call cut off, retracted, or never recorded) is left out;
- a result stored later than the first message after its call block is moved up to
  its call (results always directly after their call: chat-style APIs require it);
- a history that is already well paired comes back unchanged, item for item;
- an item holding a call AND its result (the ACP proxy records a whole turn, calls and
  results, as one message) is an exchange answered in itself;
- a call is paired within its scope (`scope`): an id used again (agents that number
  their calls per process reuse ``call-1`` after a restart, or in every turn) opens a
  new call, and a result answers the newest call before it with its id. Each call
  is then paired under a key of its own: its id the first time, ``<id>~2``,
  ``<id>~3``... after (never an id the history itself holds); a surface whose
  readers need ids unique (model APIs refuse a reused call id) hands those keys on.

It is pure and linear: the caller describes each item once (`Tools`, built without
decoding anything twice) and renders the plan (`Plan.steps`) in its own item types.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, NamedTuple, get_args

import msgspec

from convlog.domain.content import ImagePart, TextPart, ThinkingPart, ToolResultPart, ToolUsePart
from convlog.domain.events import MessageAppended

Cause = Literal["cancelled", "process_died", "retracted", "budget", "missing_in_import",
                "no_call", "duplicate"]
CAUSES: tuple[str, ...] = get_args(Cause)

_WHY: dict[str, str] = {
    "cancelled": "the turn was cancelled before the tool finished",
    "process_died": "the process running the tool stopped before recording its result",
    "retracted": "the result was retracted (removed from the session)",
    "budget": "the result was cut off by the history limit",
    "missing_in_import": "the imported transcript does not contain it",
}


def lost_text(cause: Cause, name: str = "") -> str:
    """The synthetic result's text: what a model (and a reader) needs to go on."""
    tool = f" of tool {name}" if name else ""
    why = _WHY.get(cause, "it was not recorded")
    return (f"[convlog: the result{tool} was lost: {why}. "
            "The tool may or may not have run; do not assume its outcome.]")


class Tools(msgspec.Struct, frozen=True):
    """What pairing needs to know of one item: the calls it makes (id, name), the
    results it carries (call ids), and whether it holds anything else (text, ...).
    An item with none of these (an SDK's marker, a hosted tool's record) is neutral:
    kept where it is, it does not end a call's exchange."""

    calls: tuple[tuple[str, str], ...] = ()
    results: tuple[str, ...] = ()
    other: bool = True


class Lost(msgspec.Struct, frozen=True):
    """A synthetic result to insert for a call whose result is missing."""

    call_id: str
    name: str
    cause: Cause
    key: str = ""
    """The call's key when its id was used before (`scope`); empty: the id is the key."""

    @property
    def text(self) -> str:
        return lost_text(self.cause, self.name)

    @property
    def scoped_id(self) -> str:
        """The id this call is paired under: its key, unique in the history."""
        return self.key or self.call_id


_EMPTY: frozenset[str] = frozenset()


class Keep(msgspec.Struct, frozen=True):
    """Input item `index`, without the results named in `drop` (left out: no call)."""

    index: int
    drop: frozenset[str] = frozenset()


class Repair(msgspec.Struct, frozen=True):
    """One repair, for the agent view and telemetry: `synthesized` a lost result,
    `dropped` a result without call, `moved` a late result up to its call."""

    kind: Literal["synthesized", "dropped", "moved"]
    call_id: str
    cause: Cause | None
    index: int
    """The input item the repair concerns (the call's for `synthesized`)."""
    key: str = ""
    """As `Lost.key`: the call's key when its id was used before."""

    @property
    def scoped_id(self) -> str:
        return self.key or self.call_id


class Plan(msgspec.Struct, frozen=True):
    steps: list[Keep | Lost]
    repairs: list[Repair]


class Scope(msgspec.Struct, frozen=True):
    """A history with each call under its own key (see `scope`)."""

    items: Sequence[Tools]
    """The items, calls and results under their keys (the input itself when no call
    id is used twice: the usual history)."""
    real: dict[str, str]
    """key -> the call id it stands for, for the keys that are not ids."""

    def id_of(self, key: str) -> str:
        return self.real.get(key, key)


SEPARATOR = "~"


def scope(items: Sequence[Tools], sep: str = SEPARATOR) -> Scope:
    """Each call under a key of its own, each result under the key of the call it
    answers: the newest call before it (or in its own item) with its id. A call id
    used for the first time is its own key; used again it opens a new call, keyed
    ``<id><sep>2``, ``<id><sep>3``... skipping any id the history holds. A result
    with no call before it keeps its id (pairing leaves it out, or finds its call
    later). `sep`: the separator a surface's readers accept in an id (``~`` by
    default; ``_`` where ids must match ``[a-zA-Z0-9_-]+``, as Anthropic's)."""
    seen: set[str] = set()
    for item in items:
        for call_id, _ in item.calls:
            if call_id in seen:
                return _rekeyed(items, sep)
            seen.add(call_id)
    return Scope(items=items, real={})


def _rekeyed(items: Sequence[Tools], sep: str) -> Scope:
    taken = {i for item in items for i in (*(c for c, _ in item.calls), *item.results)}
    uses: dict[str, int] = {}
    latest: dict[str, str] = {}
    real: dict[str, str] = {}
    out: list[Tools] = []
    for item in items:
        calls = []
        own: dict[str, list[str]] = {}  # this item's keys per id, for its own results
        for call_id, name in item.calls:
            n = uses[call_id] = uses.get(call_id, 0) + 1
            key = call_id
            if n > 1:
                key = f"{call_id}{sep}{n}"
                while key in taken:
                    n += 1
                    key = f"{call_id}{sep}{n}"
                taken.add(key)
                real[key] = call_id
            latest[call_id] = key
            calls.append((key, name))
            if item.results:
                own.setdefault(call_id, []).append(key)
        # an item's results answer its own calls in order (an ACP turn that used
        # `call-1` twice), then the newest call before it
        results = tuple(own[r].pop(0) if own.get(r) else latest.get(r, r)
                        for r in item.results)
        same = results == item.results and all(
            c == k for (c, _), (k, _) in zip(item.calls, calls, strict=True))
        out.append(item if same else Tools(calls=tuple(calls), results=results,
                                            other=item.other))
    return Scope(items=out, real=real)


def pair(items: Sequence[Tools], *, causes: Mapping[str, Cause] | None = None,
         missing: Cause = "process_died", orphan: Cause = "no_call") -> Plan:
    """Plan a well-paired history from `items` (in stored order). `causes` names why
    a given call's result is missing, when the caller knows (a retracted or cancelled
    call), by the call's key (`scope`: its id, unless the id was used before); else
    `missing` is used. `orphan` is why a result without call is left out ("budget"
    when the caller cut the front of the history). Calls are paired within their
    scope (`scope`); `Lost` and `Repair` name the call's own id, and its key when
    that differs."""
    if well_paired(items):  # the common case: one lean pass, nothing to plan
        return Plan(steps=[Keep(index=i, drop=_EMPTY) for i in range(len(items))],
                    repairs=[])
    scoped = scope(items)
    plan = _plan(scoped.items, causes or {}, missing, orphan)
    if not scoped.real:
        return plan
    real = scoped.real
    steps: list[Keep | Lost] = [
        s if isinstance(s, Keep) or s.call_id not in real else
        Lost(call_id=real[s.call_id], name=s.name, cause=s.cause, key=s.call_id)
        for s in plan.steps]
    repairs = [r if r.call_id not in real else
               Repair(kind=r.kind, call_id=real[r.call_id], cause=r.cause, index=r.index,
                      key=r.call_id) for r in plan.repairs]
    drops = [s for s in steps if isinstance(s, Keep) and s.drop & real.keys()]
    if drops:  # a Keep names the results it drops by the item's own ids
        steps = [Keep(index=s.index, drop=frozenset(real.get(r, r) for r in s.drop))
                 if isinstance(s, Keep) and s.drop & real.keys() else s for s in steps]
    return Plan(steps=steps, repairs=repairs)


def _plan(items: Sequence[Tools], causes: Mapping[str, Cause], missing: Cause,
          orphan: Cause) -> Plan:
    """`pair` the long way (also what it computes for a well-paired history)."""
    # pass 1: where each call is, and the first result-only item answering it
    call_at: dict[str, int] = {}
    answer_at: dict[str, int] = {}
    for i, item in enumerate(items):
        for call_id, _ in item.calls:
            call_at.setdefault(call_id, i)
        if not item.calls and not item.other:
            for call_id in item.results:
                answer_at.setdefault(call_id, i)
    steps: list[Keep | Lost] = []
    repairs: list[Repair] = []
    pending: dict[str, tuple[str, int]] = {}  # open calls: id -> (name, index)
    answered: set[str] = set()
    pulled: set[int] = set()
    answering = False  # the open block has had results: a call now starts a new one

    def close() -> None:
        for call_id, (name, at) in pending.items():
            j = answer_at.get(call_id)
            if j is not None and j > at and j not in pulled and all(r in pending or r in answered
                                                           for r in items[j].results):
                pulled.add(j)
                steps.append(_keep(j, items[j], pending, answered, repairs))
                repairs.append(Repair(kind="moved", call_id=call_id, cause=None, index=j))
                continue
            if call_id in answered:
                continue
            cause = causes.get(call_id, missing)
            steps.append(Lost(call_id=call_id, name=name, cause=cause))
            repairs.append(Repair(kind="synthesized", call_id=call_id, cause=cause, index=at))
            answered.add(call_id)
        pending.clear()
        nonlocal answering
        answering = False

    for i, item in enumerate(items):
        if i in pulled:
            continue
        answers_pending = bool(item.results) and any(r in pending for r in item.results)
        if pending and item.calls and answering:
            close()  # a new call block: the open calls' results come before it
        if pending and not item.calls and (item.results or item.other):
            if not answers_pending:
                close()
            elif item.other:  # results then text (an Anthropic user message): the
                mine = {r: pending.pop(r) for r in item.results if r in pending}
                close()       # other calls' results go before it, and its text ends
                pending.update(mine)  # the exchange
        own = _own(item)
        dropped = frozenset(r for r in item.results if r not in own and (
            r in answered or r not in pending)) if item.results else _EMPTY
        for r in item.results:
            if r in dropped:
                cause: Cause = ("duplicate" if r in answered else
                                "no_call" if call_at.get(r, -1) > i else orphan)
                repairs.append(Repair(kind="dropped", call_id=r, cause=cause, index=i))
            else:
                answered.add(r)
        for r in item.results:
            if pending.pop(r, None) is not None:
                answering = True
        if dropped and not item.calls and not item.other and dropped >= set(item.results):
            continue  # nothing left of it
        steps.append(Keep(index=i, drop=dropped))
        if not pending:
            answering = False
        for call_id, name in item.calls:
            if call_id not in answered and call_id not in pending:
                pending[call_id] = (name, i)
    close()
    return Plan(steps=steps, repairs=repairs)


def _own(item: Tools) -> frozenset[str]:
    """The results of `item` that answer its own calls."""
    if not item.calls or not item.results:
        return _EMPTY
    return frozenset(item.results) & {call_id for call_id, _ in item.calls}


def _keep(j: int, item: Tools, pending: dict[str, tuple[str, int]], answered: set[str],
          repairs: list[Repair]) -> Keep:
    drop = frozenset(r for r in item.results if r in answered)
    for r in drop:
        repairs.append(Repair(kind="dropped", call_id=r, cause="duplicate", index=j))
    answered.update(item.results)
    return Keep(index=j, drop=drop)


_TEXT = Tools()
_NEUTRAL = Tools(other=False)


class PartKinds(NamedTuple):
    """The classes of the five content part kinds pairing tells apart: the domain's
    (`DOMAIN_PARTS`), or a lean reader's own (a storage adapter decoding rows without
    their texts), so both are described by the one rule in `describe`."""

    text: type
    image: type
    thinking: type
    tool_use: type
    tool_result: type


DOMAIN_PARTS = PartKinds(TextPart, ImagePart, ThinkingPart, ToolUsePart, ToolResultPart)


def message_tools(event: MessageAppended) -> Tools:
    """A stored message as pairing sees it: chat-style `tool_calls` / `tool_call_id`
    and Anthropic-style `tool_use` / `tool_result` parts alike."""
    return describe(event.role, event.content, event.tool_calls, event.tool_call_id)


def describe(role: str, content: str | Sequence[object], tool_calls: Sequence[Any],
             tool_call_id: str | None, kinds: PartKinds = DOMAIN_PARTS) -> Tools:
    """`message_tools` of a message given by its fields, its parts of the `kinds`
    classes (tool calls and parts need `.id` / `.name`, results `.tool_use_id`). Most
    messages make no call and carry no result: they share one of two constant
    answers, so describing a long history allocates almost nothing (issue 30)."""
    text, image, thinking, tool_use, tool_result = kinds
    if not tool_calls and role != "tool":  # the usual message: text, images, reasoning
        if type(content) is str:
            return _TEXT if content else _NEUTRAL
        other = False
        for part in content:
            kind = type(part)
            if kind is text or kind is image:
                other = True
            elif kind is not thinking:
                break  # a tool part: the general way below
        else:
            return _TEXT if other else _NEUTRAL
    result = tool_call_id if role == "tool" else None
    if isinstance(content, str):
        other = bool(content) and role != "tool"
        if not tool_calls and not result:
            return _TEXT if other else _NEUTRAL
        return Tools(calls=tuple((c.id, c.name) for c in tool_calls),
                     results=(result,) if result else (), other=other)
    calls = [(c.id, c.name) for c in tool_calls]
    results = [result] if result else []
    other = False
    for part in content:
        kind = type(part)
        if kind is tool_use:
            calls.append((part.id, part.name))  # type: ignore[attr-defined]
        elif kind is tool_result:
            results.append(part.tool_use_id)  # type: ignore[attr-defined]
        elif kind is not thinking:  # reasoning may sit between calls
            other = True
    if not calls and not results:
        return _TEXT if other else _NEUTRAL
    return Tools(calls=tuple(calls), results=tuple(results), other=other)


def well_paired(items: Iterable[Tools]) -> bool:
    """`check_pairs(items) == []`, in one lean pass and without the sentences. A
    well-paired history is what a read almost always finds; `pair` (and callers that
    need no plan) then hand it back as it is without planning anything (issue 30:
    planning nothing was 40% of reading a long history). One pass over any iterable:
    items described on the fly are never all alive at once (fewer GC collections)."""
    pending: set[str] = set()
    seen: set[str] = set()
    answering = False
    for item in items:
        calls, results = item.calls, item.results
        if not calls and not results:  # with nothing open, `answering` is already off
            if pending and item.other:
                return False
            continue
        if pending and calls and answering:
            return False
        own = _own(item) if calls and results else _EMPTY  # an ACP turn answers itself
        for r in results:
            if r in own:
                continue
            if r not in pending:
                return False
            pending.discard(r)
            answering = True
        if pending and not calls and item.other:
            return False
        if not pending:
            answering = False
        for call_id, _ in calls:
            if call_id in seen:
                return False
            seen.add(call_id)
            if call_id not in own:
                pending.add(call_id)
    return not pending


def check_pairs(items: Sequence[Tools]) -> list[str]:
    """What is wrong with a history, as sentences (empty: well paired). A call's
    results must all come before any item that is neither a call nor a result."""
    problems: list[str] = []
    pending: set[str] = set()
    seen: set[str] = set()
    answering = False
    for i, item in enumerate(items):
        if pending and item.calls and answering:
            problems.append(f"item {i}: calls {sorted(pending)} have no result before it")
            pending.clear()
        own = _own(item)
        for r in item.results:
            if r in own:
                continue  # answers a call of this very item (below)
            if r not in pending:
                problems.append(f"item {i}: result for {r!r} without an open call")
            pending.discard(r)
            answering = True
            seen.add(r)
        if pending and not item.calls and item.other:
            problems.append(f"item {i}: calls {sorted(pending)} have no result before it")
            pending.clear()
        if not pending:
            answering = False
        for call_id, _ in item.calls:
            if call_id in seen:
                problems.append(f"item {i}: call id {call_id!r} used twice")
            seen.add(call_id)
            if call_id not in own:
                pending.add(call_id)
    if pending:
        problems.append(f"end: calls {sorted(pending)} have no result")
    return problems
