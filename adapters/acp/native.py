"""The `session/update` payloads of a turn, kept as the agent sent them (issue 41).

The readable message convlog records for a turn (convlog.acp.turns) keeps what every
reader needs: text, thinking, each tool call's name, arguments and result. An editor
needs more to show the turn again after a restart: a tool call's `kind` (its icon),
`locations`, its `diff` content (a reviewable edit), `rawOutput`, the agent's
`usage_update` (the context gauge), its title. So the proxy also keeps every update
the agent sent during the turn, verbatim, in the message's `raw` (the field the SDK
stores keep their own items in), and `session/load` replays them (convlog.acp.replay).

The stored shape (docs/events.md): ``raw = {"acp": [update, ...]}``, each `update`
the `update` object of one `session/update` notification, in the order received;
the user message's list holds one ``user_message_chunk`` per content block of the
prompt (as ACP replays a prompt). One normalisation only: consecutive text chunks of
one kind that differ in nothing but their text (same `messageId`, same annotations,
same `_meta`) are kept as one chunk, so a long answer streamed in small pieces is one
update, not a million (docs/acp.md, the round-trip rule).
"""

from __future__ import annotations

from typing import Any

KEY = "acp"
"""The key of `MessageAppended.raw` under which an ACP message keeps its updates."""

CHUNKS = frozenset({"user_message_chunk", "agent_message_chunk", "agent_thought_chunk"})


def native_updates(raw: Any) -> list[dict[str, Any]] | None:
    """The updates a message's `raw` keeps for ACP (None: it keeps none, e.g. a message
    recorded before issue 41, or written by another surface)."""
    if not isinstance(raw, dict):
        return None
    updates = raw.get(KEY)
    if not isinstance(updates, list):
        return None
    return [u for u in updates if isinstance(u, dict)]


def _head(update: dict[str, Any]) -> Any:
    """What a text chunk says besides its text (None: not a text chunk). The usual
    chunk (a kind, maybe a `messageId`, plain text) is said by a tuple, without
    copying dicts: this runs once per streamed chunk."""
    content = update.get("content")
    if update.get("sessionUpdate") not in CHUNKS or type(content) is not dict \
            or content.get("type") != "text" or type(content.get("text")) is not str:
        return None
    if len(content) == 2 and (len(update) == 2 or (len(update) == 3
                                                    and "messageId" in update)):
        return update["sessionUpdate"], update.get("messageId")  # nothing else in it
    return {**update, "content": {k: v for k, v in content.items() if k != "text"}}


class _Said:
    """Consecutive text chunks of one message, kept as their texts (joined once)."""

    def __init__(self, head: Any, first: dict[str, Any]) -> None:
        self.head = head
        self.first = first
        self.texts = [first["content"]["text"]]

    def update(self) -> dict[str, Any]:
        if len(self.texts) == 1:
            return self.first
        return {**self.first, "content": {**self.first["content"],
                                          "text": "".join(self.texts)}}


class Kept:
    """The updates of one turn as they came, text chunks of one message joined."""

    def __init__(self) -> None:
        self._updates: list[dict[str, Any] | _Said] = []
        self._said: _Said | None = None
        """The last update, when it is text chunks (the next may join them)."""

    def add(self, update: dict[str, Any]) -> None:
        head = _head(update)
        if head is None:
            self._updates.append(update)
            self._said = None
        elif self._said is not None and self._said.head == head:
            self._said.texts.append(update["content"]["text"])
        else:
            self._said = _Said(head, update)
            self._updates.append(self._said)

    def __bool__(self) -> bool:
        return bool(self._updates)

    def raw(self) -> dict[str, Any]:
        """The message's `raw`: ``{"acp": [update, ...]}``."""
        return {KEY: [u.update() if isinstance(u, _Said) else u for u in self._updates]}


def prompt_updates(blocks: list[Any]) -> list[dict[str, Any]]:
    """A prompt's content blocks as the updates that replay it."""
    return [{"sessionUpdate": "user_message_chunk", "content": block} for block in blocks
            if isinstance(block, dict)]
