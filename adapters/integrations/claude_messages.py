"""One Claude Code transcript entry (what the Claude Agent SDK mirrors to a
SessionStore) as the convlog message stored beside it.

The store must hand entries back deep-equal, and treats them as opaque: the entry is
the message's `raw`. The readable message follows the transcript's shape where there
is one (``type`` user/assistant with a ``message`` in the Messages API form), so
contexts, token counts (made when needed) and costs work: an assistant record carries its model, its
usage and the API message id as `response_id` (the CLI writes one record per content
block of a response, each repeating the usage: counted once). Entries that are no
dialogue (titles, tags, mode markers, snapshots, and Claude Code's bookkeeping:
``attachment``, ``queue-operation``, ``last-prompt``, ``tools-used``...) are records,
not messages (`Message.record`, their type; convlog.domain.records): kept for `load`,
never counted or shown.

Why two ways to the same message (issue 30: an `append` of 500 entries spent more
time here than the SDK's reference store spends on the whole append):

- the usual one encodes the entry once (which proves it JSON and valid Unicode, the
  checks `Message` would run again) and reads the readable fields from those bytes
  with ONE typed decode (`_Entry`), rather than an encode and a decode per block plus
  a decode to copy the entry; the message is then built as a `_Built` (no second
  validation pass: each check it would make already holds, see `_fast`);
- any entry that typed decode refuses (a block that is not an object, a model that
  is not a string...) takes the original, lenient way (`_slowly`), which keeps what
  it can. Both give the same message: tests/unit/test_claude_messages.py.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import msgspec

from convlog.domain.content import MAX_TOKENS, AnyPart, Usage, check_unicode
from convlog.domain.errors import InvalidInput
from convlog.domain.messages import Message
from convlog.services.anthropic_blocks import Block, to_part

_blocks = msgspec.json.Decoder(Block)
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode
_SPEAKERS = ("user", "assistant")


class _Use(msgspec.Struct, gc=False):
    """A record's ``usage``, each count as stored (judged by `_count`, as `_usage`)."""

    input_tokens: Any = None
    output_tokens: Any = None
    cache_read_input_tokens: Any = None
    cache_creation_input_tokens: Any = None


class _Body(msgspec.Struct, gc=False):
    """What the readable message takes of a record's ``message``; a field of another
    type than these fails the decode, and the entry goes the lenient way."""

    content: str | list[Block] = ""
    model: str | None = None
    usage: _Use | None = None
    id: str | None = None


class _Entry(msgspec.Struct, gc=False):
    """`gc=False` (and `_Body`, `_Use`): values decoded from JSON are in no cycle, and
    objects the collector need not track make its collections rarer and shorter (a
    500-entry append made ~6 collections, the reference store's 2; issue 30)."""

    type: Any = None
    message: _Body | None = None


_entries = msgspec.json.Decoder(_Entry)


class _Built(Message, frozen=True, kw_only=True, gc=False):
    """A `Message` whose checks hold by how `_fast` builds it (so they are not run a
    second time): a fixed role, an id the store made non-empty, parts made by the one
    Anthropic mapping from bytes that were just encoded (valid UTF-8; tool arguments
    are JSON text cut from them), a dict `raw` that encoded; usage and the store's
    agent checked by `_fast` (`_usage_of`, `_agent`). Untracked by the collector, as
    `_Entry`: it holds JSON values and parts only."""

    def __post_init__(self) -> None:
        pass


def to_message(entry: Mapping[str, Any], message_id: str, *, agent: str | None = None
               ) -> Message:
    """One transcript entry as a message that keeps the entry as `raw`. `message_id`
    must be a non-empty string (the store makes it)."""
    if type(entry) is not dict and not isinstance(entry, Mapping):  # dict: no ABC check
        raise InvalidInput(f"a session store entry must be a JSON object, not "
                           f"{type(entry).__name__}", field="entries")
    try:
        data = _encode(entry)
    except (TypeError, msgspec.EncodeError) as exc:
        raise InvalidInput(f"a session store entry must be JSON: {exc}",
                           field="entries") from None
    try:
        return _fast(entry, data, message_id, agent)
    except msgspec.ValidationError:
        return _slowly(entry, _decode(data), message_id, agent)


def _fast(entry: Mapping[str, Any], data: bytes, message_id: str, agent: str | None
          ) -> Message:
    # `raw`: the caller's own dict when it is a plain one (encoded again, to the same
    # bytes, when the event is stored, in this same call), else a plain JSON copy
    raw = entry if type(entry) is dict else _decode(data)
    head = _entries.decode(data)
    body = head.message
    if head.type not in _SPEAKERS or body is None:
        return _Built(id=message_id, role="assistant", content=[], raw=raw,
                      agent=_agent(agent), record=_kind(head.type))
    content = body.content
    parts: str | list[AnyPart] = content if isinstance(content, str) else [
        part for part in map(_part, content) if part is not None]
    if head.type == "user":
        return _Built(id=message_id, role="user", content=parts, raw=raw)
    use = body.usage
    return _Built(id=message_id, role="assistant", content=parts, raw=raw,
                  agent=_agent(agent), model=body.model, response_id=body.id,
                  usage=None if use is None else _usage_of(use))


def _kind(kind: object) -> str:
    """What a non-dialogue entry is, as its record's kind: the entry's own `type`
    (``attachment``, ``queue-operation``, ``last-prompt``...; issue 41)."""
    return kind if isinstance(kind, str) and kind else "entry"


def _usage_of(use: _Use) -> Usage:
    """The record's usage, each count as `_usage` reads it; past `MAX_TOKENS`, the
    error `Usage.check` gives (`Message` would have raised it)."""
    i, o = use.input_tokens, use.output_tokens
    r, w = use.cache_read_input_tokens, use.cache_creation_input_tokens
    if (type(i) is int and type(o) is int and type(r) is int and type(w) is int
            and 0 <= i <= MAX_TOKENS and 0 <= o <= MAX_TOKENS
            and 0 <= r <= MAX_TOKENS and 0 <= w <= MAX_TOKENS):
        # the usual record: four plain counts in range, kept as they are (the general
        # way below, ~0.85 us, was a tenth of an assistant entry's message; issue 30)
        return Usage(input_tokens=i, output_tokens=o, cache_read_tokens=r,
                     cache_write_tokens=w)
    counts = (_count(use.input_tokens), _count(use.output_tokens),
              _count(use.cache_read_input_tokens), _count(use.cache_creation_input_tokens))
    usage = Usage(input_tokens=counts[0], output_tokens=counts[1],
                  cache_read_tokens=counts[2], cache_write_tokens=counts[3])
    if max(counts) > MAX_TOKENS:
        usage.check()
    return usage


_AGENTS: set[str] = set()
"""The store agents already found valid Unicode (a store has one: checked once)."""


def _agent(agent: str | None) -> str | None:
    if agent is not None and agent not in _AGENTS:
        check_unicode(agent, "agent")
        if len(_AGENTS) < 64:
            _AGENTS.add(agent)
    return agent


class _Uncounted(Counter[str]):
    """Where `to_part` counts the blocks it skips: the store reports none (its entry
    keeps them), so nothing is kept, and one object serves every block (a Counter
    made per block was a tenth of `_fast`)."""

    def __setitem__(self, key: str, value: int) -> None:
        pass


_SKIPPED = _Uncounted()


def _part(block: Block) -> AnyPart | None:
    try:
        return to_part(block, _SKIPPED)
    except InvalidInput:  # an image whose inline data is not base64
        return None


def _count(value: object) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


# ------------------------------------------------------------------ the lenient way


def _block(block: Mapping[str, Any]) -> AnyPart | None:
    """The one Anthropic mapping (convlog.services.anthropic_blocks, as the importer
    uses it). The store may not refuse what the SDK appends: a block that does not
    decode, or an image whose inline data is not base64, is kept out of the readable
    message (the entry itself stays whole in `raw`)."""
    try:
        return to_part(_blocks.decode(_encode(block)), Counter())
    except (msgspec.ValidationError, msgspec.DecodeError, InvalidInput):
        return None


def _usage(usage: object) -> Usage | None:
    if not isinstance(usage, Mapping):
        return None
    return Usage(input_tokens=_count(usage.get("input_tokens")),
                 output_tokens=_count(usage.get("output_tokens")),
                 cache_read_tokens=_count(usage.get("cache_read_input_tokens")),
                 cache_write_tokens=_count(usage.get("cache_creation_input_tokens")))


def _slowly(entry: Mapping[str, Any], raw: dict[str, Any], message_id: str,
            agent: str | None) -> Message:
    """The message of an entry the typed decode refused: each field read leniently
    from the entry as given, a block that does not map left out."""
    body = entry.get("message")
    kind = entry.get("type")
    if kind not in _SPEAKERS or not isinstance(body, Mapping):
        return Message(id=message_id, role="assistant", content=[], raw=raw, agent=agent,
                       record=_kind(kind))
    content = body.get("content", "")
    parts: str | list[AnyPart] = content if isinstance(content, str) else [
        part for part in (_block(b) for b in content if isinstance(b, Mapping))
        if part is not None] if isinstance(content, list) else ""
    if kind == "user":
        return Message(id=message_id, role="user", content=parts, raw=raw)
    return Message(id=message_id, role="assistant", content=parts, raw=raw, agent=agent,
                   model=body.get("model") if isinstance(body.get("model"), str) else None,
                   usage=_usage(body.get("usage")),
                   response_id=body.get("id") if isinstance(body.get("id"), str) else None)
