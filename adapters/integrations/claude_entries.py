"""Claude Code transcript entries (what the Claude Agent SDK mirrors to a SessionStore)
read back: what pairing needs of each stored entry, and the entries handed back to the
SDK with tool_use and tool_result in pairs. An entry as the message stored beside it
is convlog.integrations.claude_messages (`to_message`, re-exported here).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from convlog.domain.events import MessageAppended
from convlog.integrations.claude_messages import to_message as to_message
from convlog.projections.pair_causes import lost_causes
from convlog.projections.pairing import (
    Cause,
    Keep,
    Lost,
    Tools,
    lost_text,
    pair,
    scope,
    well_paired,
)
from convlog.services.items import RawEntry, RawItem, items_tools

_TEXT, _NEUTRAL = Tools(), Tools(other=False)
_SPEAKERS = frozenset(("user", "assistant"))


def entry_tools(entry: dict[str, Any]) -> Tools:
    """What pairing needs of one stored entry (plain JSON, as `to_message` copied
    it), read from the entry itself: what `message_tools` says of the readable
    message `to_message` built from it (the same blocks count: text and images,
    tool_use with an id and a name, tool_result with the id it answers; thinking and
    server tools' blocks are neutral), without decoding that readable copy (issue 30).
    Exact types (`type(x) is dict`), not ABC checks: this runs once per entry."""
    body = entry.get("message")
    if type(body) is not dict or entry.get("type") not in _SPEAKERS:
        return _NEUTRAL
    content = body.get("content", "")
    shape = type(content)
    if shape is str:
        return _TEXT if content else _NEUTRAL
    if shape is not list:
        return _NEUTRAL
    calls: list[tuple[str, str]] = []
    results: list[str] = []
    other = False
    for block in content:
        if type(block) is not dict:
            continue
        kind = block.get("type")
        if kind == "text":
            other = other or type(block.get("text")) is str
        elif kind == "tool_use":
            call_id, name = block.get("id"), block.get("name")
            if call_id and name and type(call_id) is str and type(name) is str:
                calls.append((call_id, name))
        elif kind == "tool_result":
            answered = block.get("tool_use_id")
            if answered and type(answered) is str:
                results.append(answered)
        elif kind == "image":
            other = other or type(block.get("source")) is dict
    if not calls and not results:
        return _TEXT if other else _NEUTRAL
    return Tools(calls=tuple(calls), results=tuple(results), other=other)


def sound_entries(messages: Sequence[MessageAppended | RawItem | RawEntry]
                  ) -> list[dict[str, Any]] | None:
    """The stored entries when they are already well paired (what `load` almost
    always finds), judged from the entries alone (`entry_tools`); None when some
    tool_use or tool_result needs `paired_entries`' repair."""
    raws = [m.raw for m in messages if m.raw is not None]
    # described on the fly: a 100k-entry load then keeps no Tools alive, which was
    # a fifth more garbage collections than the reference store's load (issue 30)
    return raws if well_paired(map(entry_tools, raws)) else None


def paired_entries(messages: Sequence[MessageAppended | RawItem],
                   imported: bool | Callable[[], bool] = False) -> list[dict[str, Any]]:
    """The stored entries for the SDK to resume from, tool_use and tool_result in
    pairs (issue 28; the rule is convlog.projections.pairing). A tool_use without
    result gets a synthetic user entry answering it (chained after its call, and the
    call's next entry re-chained after it) that says why the result is missing
    (convlog.projections.pair_causes: the turn was cancelled, the transcript was
    imported (`imported`, asked only then), else the process died); a tool_result
    without tool_use is taken out of its entry (an entry left empty is dropped, its
    children re-chained to its parent). A well-paired transcript comes back exactly
    as appended: what `load` almost always finds, so it is checked in one lean pass
    and handed back as it is (issue 30: planning and re-chaining every entry of a
    sound transcript was a third of `load`). A lost result's cause reads the texts
    near its call (``[Request interrupted by user...]``), which a `RawItem` does not
    hold: pass whole messages when a repair is expected (`load` does)."""
    kept = [m for m in messages if m.raw is not None]
    tools = items_tools(kept)
    if well_paired(tools):
        return [m.raw for m in kept]  # type: ignore[misc]  # not None: kept
    # a tool_use id used again is a call of its own (issue 41), handed back under its
    # key (`toolu_1_2`: the Messages API refuses an id used twice, and takes only
    # [a-zA-Z0-9_-] in one)
    scoped = scope(tools, sep=ANTHROPIC_SEP)
    plan = pair(scoped.items)
    causes: Mapping[str, Cause] = {}
    missing: Cause = "process_died"
    if any(r.kind == "synthesized" for r in plan.repairs):  # why, read only now
        causes, missing = lost_causes(kept, tools=tools,  # type: ignore[arg-type]
                                      imported=imported, sep=ANTHROPIC_SEP)
    redirect: dict[str, Any] = {}  # uuid -> the uuid its children now hang from
    out: list[dict[str, Any]] = []
    shown = {s.index for s in plan.steps if isinstance(s, Keep)}
    for i, m in enumerate(kept):  # fully dropped entries: children go to their parent
        if i not in shown and isinstance(m.raw, dict) and isinstance(m.raw.get("uuid"), str):
            redirect[m.raw["uuid"]] = m.raw.get("parentUuid")
    last: dict[str, Any] | None = None
    for step in plan.steps:
        if isinstance(step, Lost):
            base = last or {}
            made = {"type": "user", "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL,
                                                           f"convlog-lost:{step.call_id}")),
                    "parentUuid": base.get("uuid"), "sessionId": base.get("sessionId"),
                    "timestamp": base.get("timestamp"), "isSidechain":
                    base.get("isSidechain", False), "isMeta": False,
                    "message": {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": step.call_id,
                         "content": lost_text(causes.get(step.call_id, missing), step.name),
                         "is_error": True}]}}
            if isinstance(base.get("uuid"), str):
                redirect[base["uuid"]] = made["uuid"]
            out.append(made)
            last = made
            continue
        raw: dict[str, Any] = kept[step.index].raw or {}
        entry = dict(raw)
        renamed = scoped.items[step.index] is not tools[step.index]
        if renamed:
            entry["message"] = _rekeyed(entry.get("message"), tools[step.index],
                                        scoped.items[step.index])
        if step.drop:
            body = dict(entry.get("message") or {})
            body["content"] = [b for b in body.get("content") or ()
                               if not (isinstance(b, Mapping) and b.get("type") == "tool_result"
                                       and b.get("tool_use_id") in step.drop)]
            entry["message"] = body
        parent = entry.get("parentUuid")
        seen: set[str] = set()
        while isinstance(parent, str) and parent in redirect and parent not in seen:
            seen.add(parent)
            parent = redirect[parent]
        if parent != entry.get("parentUuid"):
            entry["parentUuid"] = parent
        out.append(entry if renamed or step.drop or parent != raw.get("parentUuid") else raw)
        if isinstance(entry.get("uuid"), str):
            last = entry
    return out


ANTHROPIC_SEP = "_"


def _rekeyed(body: Any, tools: Tools, keyed: Tools) -> Any:
    """An entry's ``message`` with its tool_use ids and tool_result ids under their
    keys (`scope`), block by block in order."""
    if not isinstance(body, Mapping) or not isinstance(body.get("content"), list):
        return body
    keys: dict[tuple[str, str], list[str]] = {}  # (block type, id) -> keys in order
    for (real, _), (key, _) in zip(tools.calls, keyed.calls, strict=True):
        keys.setdefault(("tool_use", real), []).append(key)
    for real, key in zip(tools.results, keyed.results, strict=True):
        keys.setdefault(("tool_result", real), []).append(key)
    blocks = []
    for block in body["content"]:
        kind = block.get("type") if isinstance(block, Mapping) else None
        field = "id" if kind == "tool_use" else "tool_use_id"
        found = keys.get((kind, block.get(field))) if kind in _TOOL_BLOCKS else None
        if found:
            key = found.pop(0)
            if key != block.get(field):
                block = {**block, field: key}
        blocks.append(block)
    return {**body, "content": blocks}


_TOOL_BLOCKS = ("tool_use", "tool_result")
