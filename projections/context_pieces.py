"""A message as the resume context shows it: pieces of text, tool calls and results,
and the window's pieces paired (issue 28) by the one rule, convlog.projections.pairing.

A context is text, but a model reads "[called tool X(...)]" and "[tool result: ...]"
as a call and its result, and a result whose call is not shown (the budget cut the
call off) or a call whose result never comes is the same broken history in prose. So
each message is rendered as pieces, tool markers are never cut in half by the
per-message cap (a marker that does not fit is left out whole), and the window's
pieces go through `pair`: a result without its call is left out, a call without its
result is followed, right after it, by a note saying the result was lost and why.
Pieces stay in their own message, except a late result moved up to its call and a
lost-result note, which join the message they follow.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import msgspec

from convlog.domain.content import (
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolResultPart,
    ToolUsePart,
)
from convlog.domain.events import MessageAppended
from convlog.domain.memory import neutralise
from convlog.projections.pairing import Cause, Lost, Tools, pair

TRUNCATED = "... [truncated]"
TOOL_ARGS_CHARS = 80
TOOL_RESULT_CHARS = 200


class Piece(msgspec.Struct, frozen=True):
    kind: Literal["text", "call", "result"]
    text: str
    call_id: str = ""
    name: str = ""


def cap(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[: limit - len(TRUNCATED)].rstrip() + TRUNCATED, True


def _result(call_id: str | None, text: str, error: bool = False) -> Piece:
    kind = "tool error" if error else "tool result"
    marker = neutralise(f"[{kind}: {cap(text, TOOL_RESULT_CHARS)[0]}]")
    return Piece("result", marker, call_id) if call_id else Piece("text", marker)


def _call(call_id: str, name: str, arguments: str) -> Piece:
    return Piece("call", f"[called tool {name}({cap(arguments, TOOL_ARGS_CHARS)[0]})]",
                 call_id, name)


def pieces_of(event: MessageAppended) -> list[Piece]:
    """The message's pieces, uncapped: text, tool names with short arguments, short
    results; thinking dropped."""
    content = event.content
    if isinstance(content, str):
        if event.role == "tool":
            return [_result(event.tool_call_id, neutralise(content))]
        pieces = [Piece("text", neutralise(content))] if content else []
    else:
        pieces = []
        for part in content:
            if isinstance(part, TextPart):
                if part.text:
                    pieces.append(Piece("text", neutralise(part.text)))
            elif isinstance(part, ImagePart):
                pieces.append(Piece("text", neutralise(f"[image: {part.ref}]")))
            elif isinstance(part, ToolUsePart):
                pieces.append(_call(part.id, part.name, part.arguments))
            elif isinstance(part, ToolResultPart):
                pieces.append(_result(part.tool_use_id, part.content, part.is_error))
            elif isinstance(part, ThinkingPart):
                continue
        if event.role == "tool" and event.tool_call_id and pieces and not any(
                p.kind == "result" for p in pieces):  # a chat tool message in parts
            pieces = [_result(event.tool_call_id, "\n".join(p.text for p in pieces))]
    pieces += [_call(c.id, c.name, c.arguments) for c in event.tool_calls]
    return pieces


def joined(pieces: Sequence[Piece]) -> str:
    return "\n".join(p.text for p in pieces)


def capped(pieces: list[Piece], limit: int) -> tuple[list[Piece], bool]:
    """At most `limit` characters, cut visibly; a tool marker is kept whole or not
    at all (half a marker would show a call, or a result, that is not there)."""
    if len(joined(pieces)) <= limit:
        return pieces, False
    room = limit - len(TRUNCATED)
    kept: list[Piece] = []
    used = 0
    for piece in pieces:
        start = used + (1 if kept else 0)
        if start + len(piece.text) <= room:
            kept.append(piece)
            used = start + len(piece.text)
            continue
        if piece.kind == "text":
            kept.append(Piece("text", piece.text[: max(0, room - start)]))
        break
    while kept and kept[-1].kind == "text" and not kept[-1].text.rstrip():
        kept.pop()
    if not kept:
        return [Piece("text", TRUNCATED)], True
    last = kept[-1]
    if last.kind != "text":  # the mark is text of its own: a lost-result note for a
        return [*kept, Piece("text", TRUNCATED)], True  # call it cut comes before it
    kept[-1] = msgspec.structs.replace(last, text=last.text.rstrip() + TRUNCATED)
    return kept, True


def render_for_context(event: MessageAppended, chars: int) -> tuple[str, bool]:
    """The message as the agent should re-read it: text, tool names, short results."""
    pieces, truncated = capped(pieces_of(event), chars)
    return joined(pieces), truncated


def segments(pieces: Sequence[Piece]) -> list[tuple[Tools, list[Piece]]]:
    """Pieces as pairing sees them: a run of text and calls is one item (like a
    chat message with text and tool calls), each result its own item."""
    out: list[tuple[Tools, list[Piece]]] = []
    run: list[Piece] = []

    def flush() -> None:
        if run:
            calls = tuple((p.call_id, p.name) for p in run if p.kind == "call")
            out.append((Tools(calls=calls, other=any(p.kind == "text" for p in run)),
                        list(run)))
            run.clear()

    for piece in pieces:
        if piece.kind == "result":
            flush()
            out.append((Tools(results=(piece.call_id,), other=False), [piece]))
            continue
        if piece.kind == "text" and run and run[-1].kind == "call":
            flush()
        run.append(piece)
    flush()
    return out


class Paired(msgspec.Struct, frozen=True):
    """Each input message's pieces after pairing (empty: nothing of it is left), and
    how many repairs were made."""

    pieces: list[list[Piece]]
    repairs: int


def pair_pieces(messages: Sequence[list[Piece] | None], *, causes: Mapping[str, Cause],
                missing: Cause, orphan: Cause) -> Paired:
    """Pair the pieces of a window's items (in order; None: an item that is not
    dialogue, e.g. a memory block, which ends a call's exchange)."""
    items: list[Tools] = []
    owner: list[tuple[int, list[Piece]]] = []
    for i, pieces in enumerate(messages):
        if pieces is None:
            items.append(Tools(other=True))
            owner.append((i, []))
            continue
        for tools, run in segments(pieces):
            items.append(tools)
            owner.append((i, run))
    plan = pair(items, causes=causes, missing=missing, orphan=orphan)
    moved = {r.index for r in plan.repairs if r.kind == "moved"}
    out: list[list[Piece]] = [[] for _ in messages]
    host = 0
    for step in plan.steps:
        if isinstance(step, Lost):
            text = f"[tool result: {step.text}]"
            out[host].append(Piece("result", text, step.call_id))
            continue
        i, run = owner[step.index]
        if step.index not in moved:
            host = i
        out[host].extend(run)
    return Paired(pieces=out, repairs=len(plan.repairs))
