"""Why a tool call's result is missing, read from the log: the one place that decides
the cause a synthetic lost result names (convlog.projections.pairing.lost_text).

The log says it, without any new event:
- ``retracted``: the message that carried the result was retracted (MessageRetracted,
  an SDK session's `pop_item`);
- ``cancelled``: the turn was cancelled while the tool ran: the call's message ends
  with ``[turn cancelled]`` (how the ACP proxy records a cancelled prompt), or the
  next message is Claude Code's ``[Request interrupted by user...]``;
- ``missing_in_import``: the conversation was imported (its start names the importer
  in ``metadata["source"]``, which every importer of convlog sets) and the transcript
  holds no result;
- ``process_died`` otherwise: nothing recorded the result, the process that ran the
  tool stopped first (the ACP proxy's ``[turn cut off: ...]`` says so too).
``budget`` is not read from the log: the caller that cut the history knows it.

Cheap on purpose: one pass over the messages' tool ids (which the caller already has
for pairing), then a look at the few calls left without a result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from convlog.domain.content import TextPart, ToolUsePart
from convlog.domain.events import ConversationStarted, MessageAppended
from convlog.projections.pairing import SEPARATOR, Cause, Tools, message_tools, scope

CANCELLED_MARK = "[turn cancelled]"
INTERRUPTED_MARK = "[Request interrupted by user"


def imported(start: ConversationStarted | Mapping[str, Any] | None) -> bool:
    """Whether a conversation came from an importer: its start's metadata (or the
    metadata itself) names a ``source``."""
    metadata = start.metadata if isinstance(start, ConversationStarted) else start
    return bool(metadata and metadata.get("source"))


def lost_causes(messages: Sequence[MessageAppended], *,
                tools: Sequence[Tools] | None = None,
                retracted: Iterable[MessageAppended] = (),
                imported: bool | Callable[[], bool] = False,
                sep: str = SEPARATOR) -> tuple[dict[str, Cause], Cause]:
    """(cause per call key, default cause) for `pair(causes=..., missing=...)`.

    `messages` are the live messages in stored order (`tools` their
    `message_tools`, when the caller has them), `retracted` the retracted messages
    that may have carried results, `imported` whether the conversation was imported
    (a callable is asked only when some call has no result). A call is named by its
    key (convlog.projections.pairing.scope, with `sep`): its id, unless an earlier
    call used that id; a retracted result is the newest open call's with its id."""
    tools = tools if tools is not None else [message_tools(m) for m in messages]
    scoped = scope(tools, sep)
    answered: set[str] = set()
    calls: dict[str, int] = {}
    for i, item in enumerate(scoped.items):
        answered.update(item.results)
        for key, _ in item.calls:
            calls.setdefault(key, i)
    open_calls = {c: i for c, i in calls.items() if c not in answered}
    causes: dict[str, Cause] = {}
    if not open_calls:
        return causes, "process_died"
    default: Cause = ("missing_in_import" if (imported() if callable(imported) else imported)
                      else "process_died")
    newest_open: dict[str, str] = {}  # call id -> its newest open call's key
    for key in open_calls:
        newest_open[scoped.id_of(key)] = key
    for message in retracted:
        for call_id in message_tools(message).results:
            if call_id in newest_open:
                causes[newest_open[call_id]] = "retracted"
    for key, i in open_calls.items():
        if key not in causes and _cancelled(messages, i, scoped.id_of(key)):
            causes[key] = "cancelled"
    return causes, default


def _cancelled(messages: Sequence[MessageAppended], i: int, call_id: str) -> bool:
    content = messages[i].content
    if not isinstance(content, str):
        seen = False
        for part in content:
            if isinstance(part, ToolUsePart) and part.id == call_id:
                seen = True
            elif seen and isinstance(part, TextPart) and part.text.startswith(CANCELLED_MARK):
                return True
    if i + 1 < len(messages) and messages[i + 1].role == "user":
        following = messages[i + 1].content
        first = following if isinstance(following, str) else next(
            (p.text for p in following if isinstance(p, TextPart)), "")
        return first.lstrip().startswith(INTERRUPTED_MARK)
    return False
