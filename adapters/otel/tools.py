"""A turn's tool calls as ``execute_tool {tool}`` spans, children of its
``invoke_agent`` span (GenAI conventions: ``gen_ai.operation.name`` execute_tool,
``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.type``; with content,
``gen_ai.tool.call.arguments`` and ``gen_ai.tool.call.result``).

Each call is paired with its result within the turn by convlog's pairing rule
(convlog.projections.pairing.scope): a call id used again is a call of its own, a
result answers the newest call before it with its id. A span runs from the call's
message to its result's; a result marked as an error, or no result in the turn (the
tool's process died, the turn was cancelled), makes the span's status ERROR.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple
from uuid import UUID

from convlog.domain.content import ToolResultPart, ToolUsePart
from convlog.domain.events import MessageAppended, Recorded
from convlog.otel.spans import Attributes, SpanSpec, derived_id, nanos
from convlog.projections.pairing import Tools, scope

NO_RESULT = "the call has no result in its turn"


class _Call(NamedTuple):
    at: int  # nanoseconds
    version: int
    place: int  # its place among the message's calls
    call_id: str
    name: str
    arguments: str


class _Result(NamedTuple):
    at: int
    text: str
    error: bool


class _Answer(NamedTuple):
    """A result, with the call id it answers."""

    call_id: str
    result: _Result


def _pieces(messages: Sequence[Recorded]) -> list[_Call | _Answer]:
    """Each message's calls and results, in order (a result with the id it answers)."""
    out: list[_Call | _Answer] = []
    for r in messages:
        event = r.event
        assert isinstance(event, MessageAppended)
        at = nanos(event.created_at or event.at)
        calls = 0
        if event.role == "tool" and event.tool_call_id:
            text = event.content if isinstance(event.content, str) else "\n".join(
                getattr(p, "text", "") or getattr(p, "content", "") for p in event.content)
            out.append(_Answer(event.tool_call_id, _Result(at, text, False)))
        if not isinstance(event.content, str):
            for part in event.content:
                if isinstance(part, ToolUsePart):
                    out.append(_Call(at, r.version, calls, part.id, part.name, part.arguments))
                    calls += 1
                elif isinstance(part, ToolResultPart) and not (
                        event.role == "tool" and event.tool_call_id):
                    out.append(_Answer(part.tool_use_id, _Result(at, part.content, part.is_error)))
        for call in event.tool_calls:
            out.append(_Call(at, r.version, calls, call.id, call.name, call.arguments))
            calls += 1
    return out


def tool_spans(messages: Sequence[Recorded], stream: UUID, trace: int, parent: int,
               common: Attributes, content: bool) -> list[SpanSpec]:
    pieces = _pieces(messages)
    keyed = scope([Tools(calls=((p.call_id, p.name),), other=False) if isinstance(p, _Call)
                   else Tools(results=(p.call_id,), other=False) for p in pieces])
    results: dict[str, _Result] = {}
    for piece, tools in zip(pieces, keyed.items, strict=True):
        if isinstance(piece, _Answer):
            results.setdefault(tools.results[0], piece.result)  # the first answer counts
    out: list[SpanSpec] = []
    for piece, tools in zip(pieces, keyed.items, strict=True):
        if not isinstance(piece, _Call):
            continue
        result = results.get(tools.calls[0][0])
        attributes: Attributes = {**common, "gen_ai.operation.name": "execute_tool",
                                  "gen_ai.tool.name": piece.name,
                                  "gen_ai.tool.call.id": piece.call_id,
                                  "gen_ai.tool.type": "function"}
        if content:
            attributes["gen_ai.tool.call.arguments"] = piece.arguments
            if result is not None:
                attributes["gen_ai.tool.call.result"] = result.text
        error = NO_RESULT if result is None else "tool error" if result.error else None
        if error is not None:
            attributes["error.type"] = "no_result" if result is None else "tool_error"
        out.append(SpanSpec(
            name=f"execute_tool {piece.name}", trace_id=trace,
            span_id=derived_id(64, "tool", stream, piece.version, piece.place),
            parent_id=parent, start_ns=piece.at,
            end_ns=max(piece.at, result.at) if result is not None else piece.at,
            attributes=attributes, error=error))
    return out
