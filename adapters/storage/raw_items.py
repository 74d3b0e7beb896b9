"""A `message_appended` row read as an SDK session store needs it, and no further.

An SDK store hands back the item it was given (the message's `raw`); what it needs
of the readable message beside it is only what tool-call pairing reads: the role,
the ids and names of its calls, the id its result answers, and which KINDS of parts
its content holds. The texts themselves (the content is stored beside `raw`, so
every row holds its words twice) are skipped unparsed into Python: decoding them was
a third of `get_items()` at 10k items (issue 30). Decoding only, no stored format:
the structs below read the same JSON `MessageAppended` writes, and `RawItem` is what
`ConversationLog.live_items` hands back (convlog.services.items.item_tools reads it);
`RawEntry` what it hands back with `raw_only=True` (the Claude store's `load`), and
`RawJson` with `raw_json=True` (the Google ADK service's `get_session`).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec


class PartRef(msgspec.Struct, frozen=True, gc=False, tag_field="type"):
    """A content part (convlog.domain.content) reduced to its kind and, for tool
    parts, the ids pairing reads. Tags are the stored ones: a part of a kind not
    listed fails the decode, and the row is then decoded in full (with its error)."""


class TextRef(PartRef, tag="text", frozen=True, gc=False):
    pass


class ImageRef(PartRef, tag="image", frozen=True, gc=False):
    pass


class ThinkingRef(PartRef, tag="thinking", frozen=True, gc=False):
    pass


class ToolUseRef(PartRef, tag="tool_use", frozen=True, gc=False):
    id: str
    name: str


class ToolResultRef(PartRef, tag="tool_result", frozen=True, gc=False):
    tool_use_id: str


AnyPartRef = TextRef | ImageRef | ThinkingRef | ToolUseRef | ToolResultRef


class CallRef(msgspec.Struct, frozen=True, gc=False):
    """A `ToolCall` without its arguments."""

    id: str
    name: str


class RawItem(msgspec.Struct, frozen=True, gc=False):
    """A `message_appended` row carrying an SDK item: its id, the item (`raw`) and
    what pairing reads. Unknown fields of the stored JSON (usage, costs, tokens,
    times) are skipped, and so are the texts of the content (see the module).

    `gc=False`: it holds only values decoded from JSON and can be in no cycle, and
    parts/calls are in tuples, which the collector need not track either (a 100k-item
    read made the collector walk every item; issue 30)."""

    message_id: str
    role: Literal["user", "assistant", "tool"] = "user"
    """A Literal, as in `MessageAppended`: msgspec hands back its one shared string
    rather than a new one per row (a tenth of the lean decode at 10k items)."""
    content: str | tuple[AnyPartRef, ...] = ""
    """The content's text when it is one string (pairing reads whether it is empty),
    else its parts' kinds."""
    tool_calls: tuple[CallRef, ...] = ()
    tool_call_id: str | None = None
    raw: dict[str, Any] | None = None


class RawEntry(msgspec.Struct, frozen=True, gc=False):
    """A `message_appended` row decoded to its id and SDK item (`raw`) only: for a
    store whose items say themselves what pairing needs (a Claude transcript entry
    holds its tool_use/tool_result blocks), decoding the readable copy beside the
    item too was a fifth of a whole-session `load` (issue 30)."""

    message_id: str
    raw: dict[str, Any] | None = None


class RawJson(msgspec.Struct, frozen=True, gc=False):
    """A `message_appended` row decoded to its id and the JSON of its SDK item, not
    decoded at all: `msgspec.Raw` is a view of the row's bytes, which the collector
    never tracks. For a store that turns each item into objects of its own one at a
    time (Google ADK's `Event.model_validate`): a whole session's items decoded up
    front stayed alive through every validation, and the collector walked them again
    and again (issue 30: a 3,000-event `get_session`, about a second full collection
    per call)."""

    message_id: str
    raw: msgspec.Raw = msgspec.Raw()
    """Empty when the row holds no item (msgspec has no ``Raw | None``)."""


def json_item(raw: object) -> bool:
    """Whether a `RawJson.raw` holds an item (a message without one stores none, or,
    written by hand, ``null``); for the other rows, whether their `raw` is not None."""
    if not isinstance(raw, msgspec.Raw):
        return raw is not None
    return len(raw) > 4 or (len(raw) > 0 and bytes(raw) != b"null")


Lean = type[RawItem] | type[RawEntry] | type[RawJson]
"""Which of the lean rows above a read hands back for messages carrying an item."""

RAW_ITEMS: msgspec.json.Decoder[RawItem] = msgspec.json.Decoder(RawItem)
