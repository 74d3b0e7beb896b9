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

A turn the proxy recorded since issue 41 keeps the updates the agent sent as it sent
them (convlog.acp.native); they are replayed as they are, text chunks of one message
joined, and paired within their turn: a call that got no final status (`completed`,
`failed`) in its turn gets the failed update above, at the turn's end; an update for
a call never made is left out. Of the updates an agent sends, the conversation is
replayed (message and thought chunks, tool calls and their updates, plans, usage,
session info); the agent session's own state (`available_commands_update`,
`current_mode_update`, `config_option_update`, kinds this version does not know) stays
in the log and is not replayed: the agent session the host is attached to now reports
its own. A title or usage the agent sent outside a turn is replayed at its place in
the log, and when the conversation's title was set otherwise (or not replayed), one
`session_info_update` with it ends the replay. Each repair carries
``_meta: {"convlog/repair": {"kind": "synthesized", "cause": ...}}``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from convlog.acp.native import native_updates
from convlog.domain.content import (
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolResultPart,
    ToolUsePart,
)
from convlog.domain.events import (
    ContextWindowReported,
    ConversationCleared,
    ConversationStarted,
    Event,
    MessageAppended,
    TitleChanged,
)
from convlog.projections.pair_causes import CANCELLED_MARK
from convlog.projections.pairing import Cause, Keep, Tools, lost_text, pair

REPLAYED = frozenset({"user_message_chunk", "agent_message_chunk", "agent_thought_chunk",
                      "tool_call", "tool_call_update", "plan", "usage_update",
                      "session_info_update"})
"""The kinds of update that are the conversation (the rest is the agent session's state)."""
TOOL_UPDATES = ("tool_call", "tool_call_update")
FINAL = ("completed", "failed")
REPAIR_META = "convlog/repair"
"""The `_meta` key that marks an update convlog made up (the pairing rule's repair)."""


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
    """user / agent / thought (text), call (`text` is its name), result / error."""
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


def _rendered(messages: Sequence[MessageAppended], ids: _Ids) -> Iterator[dict[str, Any]]:
    """Messages recorded without the agent's own updates, rendered and paired."""
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
            yield lost_update(step.call_id, step.name, step.cause)


def lost_update(call_id: str, name: str, cause: Cause) -> dict[str, Any]:
    """The pairing rule's repair for a call whose result is lost, marked as such."""
    return {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "failed",
            "content": [{"type": "content",
                         "content": {"type": "text", "text": lost_text(cause, name)}}],
            "_meta": {REPAIR_META: {"kind": "synthesized", "cause": cause}}}


def _native_turn(message: MessageAppended, updates: Sequence[dict[str, Any]],
                 ids: _Ids) -> Iterator[dict[str, Any]]:
    """A message's own updates, as the agent sent them, tool calls paired in the turn."""
    cause: Cause = (end_cause(message) if message.role == "assistant" else None) \
        or "process_died"
    mine: dict[str, str] = {}  # this turn's call ids -> their replay ids
    names: dict[str, str] = {}  # the turn's calls without a final status -> their titles
    done: set[str] = set()
    for update in updates:
        kind = update.get("sessionUpdate")
        if kind not in REPLAYED:
            continue
        if kind in TOOL_UPDATES:
            call_id = update.get("toolCallId")
            if not isinstance(call_id, str):
                continue
            replay_id = mine.get(call_id)
            if replay_id is None:
                if kind == "tool_call":
                    replay_id = ids.call(call_id)
                elif call_id in ids.latest:  # a call of an earlier turn, finishing now
                    replay_id = ids.latest[call_id]
                else:
                    continue  # an update for a call never made: left out
                mine[call_id] = replay_id
            title = update.get("title")
            if kind == "tool_call" and replay_id not in done:
                names.setdefault(replay_id, "")
            if replay_id in names and isinstance(title, str):
                names[replay_id] = title
            if update.get("status") in FINAL:
                names.pop(replay_id, None)
                done.add(replay_id)
            if replay_id != call_id:
                update = {**update, "toolCallId": replay_id}
        yield update
    for replay_id, name in names.items():
        yield lost_update(replay_id, name, cause)


def replay_updates(events: Iterable[Event]) -> Iterator[dict[str, Any]]:
    """Every update of a conversation since its latest clear (what a read of its
    messages gives), in order, tool calls and results in pairs. `events`: the
    conversation's events (its messages are enough for a log that holds no title or
    usage the agent reported outside a turn)."""
    events = list(events)
    since = next((i + 1 for i in range(len(events) - 1, -1, -1)
                  if isinstance(events[i], ConversationCleared)), 0)
    ids = _Ids()
    held: list[MessageAppended] = []  # messages without updates of their own
    title = next((e.title for e in reversed(events[:since])
                  if isinstance(e, ConversationStarted | TitleChanged) and e.title), None)
    shown: str | None = None
    for event in events[since:]:
        kept: Sequence[dict[str, Any]] | None = None
        if isinstance(event, MessageAppended):
            kept = native_updates(event.raw)
            if kept is None:
                held.append(event)
                continue
        elif isinstance(event, ConversationStarted | TitleChanged):
            title = event.title
        if isinstance(event, TitleChanged | ContextWindowReported) and event.update:
            kept = [event.update]
        if kept is None:
            continue
        yield from _rendered(held, ids)
        held = []
        updates = _native_turn(event, kept, ids) if isinstance(event, MessageAppended) \
            else iter(kept)
        for update in updates:
            if update.get("sessionUpdate") == "session_info_update" \
                    and isinstance(update.get("title"), str):
                shown = update["title"]
            yield update
    yield from _rendered(held, ids)
    if title and title != shown:  # set by the host, or outside what was replayed
        yield {"sessionUpdate": "session_info_update", "title": title}
