"""The agent's view shows what tool pairing changes in the model's input (issue 28).

convlog repairs a history on read so a model never gets a tool call without its
result or a result without its call (convlog.projections.pairing, THE rule). The log
keeps exactly what happened and the user's view is unchanged; the agent's view is
where a debugger sees the repairs, so it runs the same rule over what the agent
holds in context (its live messages) and marks:

- a synthesized lost result as an entry of kind ``repair`` right after its call
  (after the call's other results), with the cause;
- a result without its call as left out (`gone`, not live) when nothing else of its
  message reaches the model, else as a mark on the message;
- a late result moved up to its call, as a mark on it.

Why a result is missing is `lost_causes`' answer (convlog.projections.pair_causes:
retracted, cancelled, missing in an import, else the process died).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec

from convlog.domain.events import MessageAppended
from convlog.projections.pair_causes import lost_causes
from convlog.projections.pairing import Keep, Lost, message_tools, pair
from convlog.projections.view_model import RepairMark, ViewEntry


def _note(mark: RepairMark) -> str:
    if mark.kind == "synthesized":
        return (f"convlog's repair: the result of call {mark.call_id} is missing "
                f"({mark.cause}); the model gets this text in its place")
    if mark.kind == "dropped":
        why = ("an earlier result answered the call" if mark.cause == "duplicate"
               else "its call is not in the agent's context")
        return (f"convlog left the result for call {mark.call_id} out of the model's "
                f"input ({mark.cause}: {why})")
    return f"convlog moved the result for call {mark.call_id} up to its call"


def mark_repairs(entries: Sequence[ViewEntry], messages: Sequence[MessageAppended | None],
                 retracted: Iterable[MessageAppended] = (), *, imported: bool = False
                 ) -> list[ViewEntry]:
    """`entries` with the repairs marked; `messages[i]` is entry i's message (None
    for any other entry). Only live messages are paired: they are what the agent's
    model reads."""
    live = [i for i, e in enumerate(entries) if e.kind == "message" and e.live]
    held = [m for i in live if (m := messages[i]) is not None]
    live = [i for i in live if messages[i] is not None]
    position = {i: pos for pos, i in enumerate(live)}
    tools = [message_tools(m) for m in held]
    causes, missing = lost_causes(held, tools=tools, retracted=retracted, imported=imported)
    plan = pair(tools, causes=causes, missing=missing)
    if not plan.repairs:
        return list(entries)
    marks: dict[int, list[RepairMark]] = {}
    call_at: dict[str, int] = {}
    moved: set[int] = set()
    for r in plan.repairs:
        mark = RepairMark(kind=r.kind, call_id=r.call_id, cause=r.cause)
        if r.kind == "synthesized":  # by the call's key: an id may be reused
            call_at[r.scoped_id] = r.index
            continue
        marks.setdefault(r.index, []).append(mark)
        if r.kind == "moved":
            moved.add(r.index)
    after: dict[int, list[ViewEntry]] = {}  # entry index -> repair entries after it
    kept: set[int] = set()
    last: int | None = None
    for step in plan.steps:
        if isinstance(step, Keep):
            kept.add(step.index)
            if step.index not in moved:
                last = step.index
            continue
        assert isinstance(step, Lost)
        at = call_at[step.scoped_id]
        anchor = last if last is not None and last >= at else at
        called = entries[live[at]]
        mark = RepairMark(kind="synthesized", call_id=step.call_id, cause=step.cause)
        after.setdefault(live[anchor], []).append(ViewEntry(
            version=called.version, at=called.at, kind="repair", role="tool", text=step.text,
            session=called.session, note=_note(mark), repairs=(mark,)))
    out: list[ViewEntry] = []
    for i, entry in enumerate(entries):
        found = marks.get(pos) if (pos := position.get(i)) is not None else None
        if found:
            out.append(_marked(entry, found, left_out=pos not in kept))
        else:
            out.append(entry)
        out.extend(after.get(i, ()))
    return out


def _marked(entry: ViewEntry, found: list[RepairMark], *, left_out: bool) -> ViewEntry:
    """A message with its repairs: left out of the model's input altogether (not
    live, `gone` says why), or kept with its marks in the note."""
    if left_out:
        which = ", ".join(f"{m.call_id} ({m.cause})" for m in found)
        return msgspec.structs.replace(
            entry, repairs=tuple(found), live=False,
            gone=f"left out of the model's input by convlog: a result without its call "
                 f"in context, for call {which}")
    notes = "; ".join(_note(m) for m in found)
    return msgspec.structs.replace(entry, repairs=tuple(found),
                                   note="; ".join(filter(None, [entry.note, notes])))
