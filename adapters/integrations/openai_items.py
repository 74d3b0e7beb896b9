"""OpenAI Responses input items (what the Agents SDK keeps in a session) as convlog
messages, and back.

The way back is trivial on purpose: the item itself is stored as the message's `raw`,
so `get_items` returns exactly what `add_items` was given. The readable message built
here is what everything else of convlog reads: contexts after a restart, token counts,
costs, the HTML pages. The host's instructions (system and developer items) and
kinds of items with no words in them (web searches, computer calls, references) are
records, not messages (`Message.record`: the role or item type; issue 41): kept for
`get_items`, never counted or shown.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import msgspec

from convlog.domain.content import (
    AnyPart,
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolCall,
    Usage,
    content_text,
)
from convlog.domain.errors import InvalidInput
from convlog.domain.events import HistoryCompacted, MessageAppended
from convlog.domain.messages import Message
from convlog.integrations.openai_nearest import nearest_items
from convlog.projections.pair_causes import lost_causes
from convlog.projections.pairing import (
    Cause,
    Lost,
    Tools,
    lost_text,
    message_tools,
    pair,
    scope,
    well_paired,
)
from convlog.services.images import url_image
from convlog.services.items import item_tools, raws_tools, summary_id, texts_skipped

_TEXT_PARTS = ("input_text", "output_text", "text", "refusal")


def json_text(value: object) -> str:
    """Tool arguments as JSON text: a model's malformed arguments are kept, wrapped,
    rather than refused (the item itself is kept verbatim in `raw` anyway)."""
    if isinstance(value, str):
        try:
            json.loads(value)
            return value
        except ValueError:
            return json.dumps({"unparsed_arguments": value})
    return json.dumps(value)


def _parts(content: object) -> str | list[AnyPart]:
    if isinstance(content, str):
        return content
    parts: list[AnyPart] = []
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind in _TEXT_PARTS:
            parts.append(TextPart(text=str(part.get("text") or part.get("refusal") or "")))
        elif kind == "input_image":
            url = part.get("image_url")
            parts.append(url_image(url) if isinstance(url, str) and url else ImagePart(
                ref=str(part.get("file_id") or "inline image")[:200]))
        elif kind == "input_file":
            parts.append(TextPart(text=f"[file: {part.get('filename') or part.get('file_id')}]"))
    return parts


def _role(item: Mapping[str, Any]) -> str:
    role = item.get("role")
    if role == "user":
        return "user"
    # system/developer items are the host's instructions, never stored as a message of
    # the conversation: they live on in `raw` only (the SDK gets them back)
    return "assistant"


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode


def json_copy(item: Mapping[str, Any], field: str = "items") -> dict[str, Any]:
    """The item as plain JSON values, a copy the caller cannot change afterwards: what
    SQLiteSession's ``json.loads(json.dumps(item))`` gives back, or its error as a
    typed one. msgspec makes the copy (~1 us an item, the json module's ~6: a fifth
    of `to_message`, issue 30); when the copy is not equal to the item (a tuple, an
    int key, NaN, or a value msgspec writes and JSON has no form for, as a datetime)
    the json module decides, so what is stored is exactly what it was."""
    try:
        copied = _decode(_encode(item))
        if copied == item:
            return copied  # type: ignore[no-any-return]
    except (TypeError, ValueError, OverflowError, RecursionError, msgspec.MsgspecError):
        pass
    try:
        plain = json.loads(json.dumps(item))
    except RecursionError:
        raise InvalidInput("a session item is nested too deeply to store", field=field
                           ) from None
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"a session item must be JSON: {exc}", field=field) from None
    return plain  # type: ignore[no-any-return]


def to_message(item: Mapping[str, Any], *, model: str | None = None, agent: str | None = None,
               usage: Usage | None = None, field: str = "items") -> Message:
    """One Responses input item as a message that keeps the item as `raw`. `field`:
    where the item is, for errors (``items[2]``)."""
    if not isinstance(item, Mapping):
        raise InvalidInput(f"a session item must be a JSON object, not {type(item).__name__}",
                           field=field)
    raw = json_copy(item, field)
    kind = item.get("type", "message")
    common: dict[str, Any] = {"raw": raw, "agent": agent}
    if kind == "message" and item.get("role") in ("system", "developer"):
        return Message(role="assistant", content=[], record=str(item["role"]), **common)
    if kind == "message":
        role = _role(item)
        if role == "assistant":
            return Message(role=role, content=_parts(item.get("content", "")), model=model,
                           usage=usage, **common)
        return Message(role=role, content=_parts(item.get("content", "")), **common)
    if kind in ("function_call", "custom_tool_call"):
        arguments = item.get("arguments", item.get("input", "{}"))
        call = ToolCall(id=str(item.get("call_id") or item.get("id") or "call"),
                        name=str(item.get("name", "tool")), arguments=json_text(arguments))
        return Message(role="assistant", content=[], tool_calls=[call], model=model,
                       usage=usage, **common)
    if kind in ("function_call_output", "custom_tool_call_output"):
        output = item.get("output", "")
        text = output if isinstance(output, str) else json.dumps(output)
        return Message(role="tool", content=text, tool_call_id=str(item.get("call_id") or "call"),
                       **common)
    if kind == "reasoning":
        summary = [p.get("text", "") for p in item.get("summary") or () if isinstance(p, Mapping)]
        return Message(role="assistant", content=[ThinkingPart(text="\n".join(summary))],
                       model=model, usage=usage, **common)
    if usage is not None:  # the run's tokens: a message, so they count
        return Message(role="assistant", content=[], model=model, usage=usage, **common)
    # a hosted tool's record, a reference...: no words, kept for get_items only
    return Message(role="assistant", content=[], record=str(kind or "item"), **common)


def from_message(message: MessageAppended) -> dict[str, Any]:
    """The item as the SDK added it. A message another host wrote has no `raw`: it is
    given back as the nearest item (a text message, or a tool output)."""
    if message.raw is not None:
        return message.raw
    text = content_text(message.content)
    if message.role == "tool":
        return {"type": "function_call_output", "call_id": message.tool_call_id or "call",
                "output": text}
    return {"role": message.role, "content": text}


def paired_items(messages: Sequence[MessageAppended], limit: int | None = None, *,
                 retracted: Callable[[str], Iterable[MessageAppended]] | None = None,
                 imported: bool | Callable[[], bool] = False,
                 whole: Callable[[], Sequence[MessageAppended]] | None = None
                 ) -> list[dict[str, Any]]:
    """The session's items for a model, calls and outputs in pairs (issue 28; the
    rule is convlog.projections.pairing): a call whose output is missing is followed
    by a synthetic output saying it was lost and why, an output without call is left
    out. `limit` (the messages are then the newest ones): at most that many items,
    and an output whose call the limit cut off is left out too. A message another
    host wrote (no `raw`) becomes its nearest items (convlog.integrations.
    openai_nearest). A well-paired history of SDK items (the usual one) is handed
    back as it is, without planning (issue 30).

    Why an output is lost is read only then (convlog.projections.pair_causes):
    `retracted(message_id)` gives the messages retracted since that message was
    stored (an output `pop_item` removed), `imported` whether the conversation
    came from an importer, `whole()` the same messages decoded whole (asked only
    when a cause reads a text that the lean read skipped)."""
    foreign: list[MessageAppended] = []
    items, tools, tooled = raws_tools(messages, lambda m: _plain(m, foreign))
    steps_tools, owner = tools, None
    if foreign:  # another host's tool messages: their nearest items, paired as such
        items, steps_tools, owner = _expand(messages, tools)
        tooled = True
    if (limit is None or len(items) <= limit) and (not tooled or well_paired(steps_tools)):
        return items
    orphan: Cause = "budget" if limit is not None else "no_call"
    # calls paired within their scope, a reused call id handed back as its key
    # (`call-1~2`): model APIs refuse an id used twice, and the SDK's own input
    # dedupe keeps one item per call id (issue 41)
    scoped = scope(steps_tools)
    keyed = scoped.items
    start = 0
    while True:
        plan = pair(keyed[start:] if start else keyed, orphan=orphan)
        if limit is None or len(plan.steps) <= limit:
            break
        start += len(plan.steps) - limit  # synthetic outputs made it longer: cut more
    causes: Mapping[str, Cause] = {}
    missing: Cause = "process_died"
    lost = [start + r.index for r in plan.repairs if r.kind == "synthesized"]
    if lost:  # the repair path only: say why, reading the log if need be
        calls = [owner[i] for i in lost] if owner else lost
        since = messages[min(calls)].message_id
        causes, missing = lost_causes(_told(messages, calls, whole), tools=tools,
                                      imported=imported,
                                      retracted=retracted(since) if retracted else ())
    kinds: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for step in plan.steps:
        if isinstance(step, Lost):
            kind = kinds.get(step.call_id, "function_call")
            cause = causes.get(step.call_id, missing)
            out.append({"type": f"{kind}_output", "call_id": step.call_id,
                        "output": lost_text(cause, step.name)})
            continue
        at = start + step.index
        item = items[at]
        for call_id, _ in keyed[at].calls:
            kinds[call_id] = str(item.get("type", "function_call"))
        if keyed[at] is not steps_tools[at]:
            item = _rekeyed(item, keyed[at])
        out.append(item)
    return out


def _rekeyed(item: dict[str, Any], tools: Tools) -> dict[str, Any]:
    """A copy of a call or output item under the key of its call (`scope`)."""
    key = next((c for c, _ in tools.calls), None) or next(iter(tools.results), None)
    if key is None or item.get("call_id") == key:
        return item
    return {**item, "call_id": key}


def _told(messages: Sequence[MessageAppended], calls: Sequence[int],
          whole: Callable[[], Sequence[MessageAppended]] | None
          ) -> Sequence[MessageAppended]:
    """The messages the causes read: a cause reads the texts of a lost call's message
    and of the next one (`[Request interrupted by user...]`), which a lean SDK item
    skips (convlog.services.items.texts_skipped); then, and only then, the messages
    are read again whole (`whole`). Kept lean if that read is not the same messages
    (a write in between)."""
    near = {j for i in calls for j in (i, i + 1) if j < len(messages)}
    if whole is None or not any(texts_skipped(messages[j]) for j in near):
        return messages
    full = whole()
    if [m.message_id for m in full] != [m.message_id for m in messages]:
        return messages
    return full


def _plain(message: MessageAppended, foreign: list[MessageAppended]) -> dict[str, Any]:
    """`from_message` of a message without `raw`, noting in `foreign` one that holds
    tool calls or results (it needs `_expand`). Called only for such messages, so
    a history of SDK items pays nothing for it."""
    if message.role == "tool" or message.tool_calls or not isinstance(message.content, str):
        tools = message_tools(message)
        if message.role == "tool" or tools.calls or tools.results:
            foreign.append(message)
    return from_message(message)


def _expand(messages: Sequence[MessageAppended], tools: Sequence[Tools]
            ) -> tuple[list[dict[str, Any]], list[Tools], list[int]]:
    """(items, what pairing sees of each, the message each comes from): a message
    without `raw` holding tool calls or results becomes its nearest items."""
    items: list[dict[str, Any]] = []
    seen: list[Tools] = []
    owner: list[int] = []
    for i, (message, tool) in enumerate(zip(messages, tools, strict=True)):
        if message.raw is None and (message.role == "tool" or tool.calls or tool.results):
            for item, its in nearest_items(message):
                items.append(item)
                seen.append(its)
                owner.append(i)
            continue
        items.append(message.raw if message.raw is not None else from_message(message))
        seen.append(tool)
        owner.append(i)
    return items, seen, owner


def compaction_summary(event: HistoryCompacted) -> MessageAppended:
    """A compaction's summary as a session item: a user message, where OpenAI's own
    compaction (`responses.compact`) puts its opaque `compaction` item after the user
    messages it keeps. A user message, so the SDK's compaction session counts it as
    it counts its own item: never a compaction candidate."""
    text = summary_text(event)
    item = {"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": text}]}
    return MessageAppended(at=event.at, message_id=summary_id(event), role="user",
                           content=text, raw=item)


def summary_text(event: HistoryCompacted) -> str:
    return (f"[convlog: summary of the {event.message_count} earlier messages of this "
            f"conversation]\n{event.text}")


def is_user_item(item: Any) -> bool:
    """Whether a stored item is a user message (the rule of the SDK's compaction
    session, `_is_user_message`): what OpenAI's compaction keeps of its range."""
    raw = getattr(item, "raw", None)
    if not isinstance(raw, dict):  # another host's message: a user's words, no results
        return getattr(item, "role", None) == "user" and not getattr(item, "record", None) \
            and not item_tools(item).results
    if raw.get("type") == "message":
        return raw.get("role") == "user"
    return raw.get("role") == "user" and "content" in raw
