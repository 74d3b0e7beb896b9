"""A stored conversation as the `session/update` notifications of a `session/load`.

ACP says an agent answering `session/load` MUST first stream the whole conversation
to the client. The proxy (and the Python-agent helper) build those updates from the
log with the SDK's own helpers, so they are exactly the schema's shapes: user text as
``user_message_chunk``, agent text as ``agent_message_chunk``, thinking as
``agent_thought_chunk``, each tool use as a ``tool_call`` and its result as a
``tool_call_update`` (status completed or failed).

Tool calls are replayed in pairs (issue 28), by convlog's one rule
(convlog.projections.pairing): every ``tool_call`` is followed by a final
``tool_call_update``. A call whose result the log does not hold (the agent process
died mid-tool, the turn was cancelled) gets one with status ``failed`` whose text says
the result was lost and why; a result without its call is left out. The log is only
read. Each PART is one pairing item: the proxy records a whole turn, calls and results
together, as one assistant message. And an id an agent used again for a later call
(many count "t0", "t1"... per process) is replayed as ``<id>~2``, ``<id>~3``: each
call is its own, with its own result.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from convlog.domain.content import (
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolResultPart,
    ToolUsePart,
)
from convlog.domain.events import MessageAppended
from convlog.projections.pair_causes import CANCELLED_MARK
from convlog.projections.pairing import Cause, Keep, Tools, pair


def _dump(model: Any) -> dict[str, Any]:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)  # type: ignore[no-any-return]


def _arguments(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


class _Piece(NamedTuple):
    """One pairing item of the replay: what pairing needs, and what to show (the
    update is built only when it is sent, so a long replay holds no update dicts)."""

    tools: Tools
    kind: str
    """user / agent / thought (text), call (`text` is its name), result / error / lost."""
    text: str
    call_id: str = ""
    arguments: str = ""


_TEXT, _NEUTRAL = Tools(), Tools(other=False)


def _show(piece: _Piece) -> dict[str, Any]:
    """The `session/update` payload of one piece, as a wire dict."""
    import acp

    kind = piece.kind
    if kind == "user":
        return _dump(acp.update_user_message_text(piece.text))
    if kind == "agent":
        return _dump(acp.update_agent_message_text(piece.text))
    if kind == "thought":
        return _dump(acp.update_agent_thought_text(piece.text))
    if kind == "call":
        return _dump(acp.start_tool_call(piece.call_id, piece.text, status="in_progress",
                                         raw_input=_arguments(piece.arguments)))
    return _dump(acp.update_tool_call(
        piece.call_id, status="completed" if kind == "result" else "failed",
        content=[acp.tool_content(acp.text_block(piece.text))]))


class _Ids:
    """Replay ids of tool calls: a call id used before names a new call (`id~2`), and
    a result answers the latest call with its id."""

    def __init__(self) -> None:
        self.latest: dict[str, str] = {}
        self.used: set[str] = set()
        self.uses: dict[str, int] = {}  # how often each id was used: linear, not k^2

    def call(self, call_id: str) -> str:
        n = self.uses.get(call_id, 0)
        replay_id = f"{call_id}~{n + 1}" if n else call_id
        while replay_id in self.used:  # an agent's own id looks like ours: next one
            n += 1
            replay_id = f"{call_id}~{n + 1}"
        self.uses[call_id] = n + 1
        self.used.add(replay_id)
        self.latest[call_id] = replay_id
        return replay_id

    def result(self, call_id: str) -> str:
        return self.latest.get(call_id, call_id)


def end_cause(message: MessageAppended) -> Cause | None:
    """Why a recorded ACP turn left a call without result, from its end marker
    (convlog.acp.turns): ``[turn cancelled]`` is "cancelled"; anything else (``[turn cut
    off: ...]``: the agent process exited, or was stopped as the client went away) is
    pairing's default, "process_died". The same reading as the resume context's
    (convlog.projections.pair_causes), per turn here: a call id an agent reuses in a
    later turn is a call of its own in the replay."""
    content = message.content
    last = content if isinstance(content, str) else next(
        (p.text for p in reversed(content) if isinstance(p, TextPart)), "")
    return "cancelled" if last.startswith(CANCELLED_MARK) else None


def _pieces(message: MessageAppended, ids: _Ids) -> Iterator[_Piece]:
    """The pairing items of one stored message, in order."""
    if message.role == "tool":
        content = message.content if isinstance(message.content, str) else "\n".join(
            p.text if isinstance(p, TextPart) else p.content
            for p in message.content if isinstance(p, TextPart | ToolResultPart))
        call_id = ids.result(message.tool_call_id or message.message_id)
        yield _Piece(Tools(results=(call_id,), other=False), "result", content, call_id)
        return
    user = message.role == "user"
    said = "user" if user else "agent"
    if isinstance(message.content, str):
        if message.content:
            yield _Piece(_TEXT, said, message.content)
    else:
        for part in message.content:
            if isinstance(part, TextPart):
                yield _Piece(_TEXT, said, part.text)
            elif isinstance(part, ThinkingPart) and not user:
                yield _Piece(_NEUTRAL, "thought", part.text)
            elif isinstance(part, ImagePart):
                yield _Piece(_TEXT, said, f"[image: {part.ref}]")
            elif isinstance(part, ToolUsePart):
                call_id = ids.call(part.id)
                yield _Piece(Tools(calls=((call_id, part.name),), other=False), "call",
                             part.name, call_id, part.arguments)
            elif isinstance(part, ToolResultPart):
                call_id = ids.result(part.tool_use_id)
                yield _Piece(Tools(results=(call_id,), other=False),
                             "error" if part.is_error else "result", part.content, call_id)
    for call in message.tool_calls:
        call_id = ids.call(call.id)
        yield _Piece(Tools(calls=((call_id, call.name),), other=False), "call", call.name,
                     call_id, call.arguments)


def replay_updates(messages: Sequence[MessageAppended]) -> Iterator[dict[str, Any]]:
    """Every update of a conversation, in order, tool calls and results in pairs."""
    ids = _Ids()
    pieces: list[_Piece] = []
    causes: dict[str, Cause] = {}
    for message in messages:
        start = len(pieces)
        pieces.extend(_pieces(message, ids))
        cause = end_cause(message) if message.role == "assistant" else None
        if cause is not None:
            causes.update((call_id, cause) for piece in pieces[start:]
                          for call_id, _ in piece.tools.calls)
    plan = pair([p.tools for p in pieces], causes=causes)
    for step in plan.steps:
        if isinstance(step, Keep):
            yield _show(pieces[step.index])  # `drop` is empty: no piece mixes
        else:  # a call whose result is lost: a failed update saying why
            yield _show(_Piece(_NEUTRAL, "lost", step.text, step.call_id))
