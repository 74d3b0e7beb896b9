"""Injected memory blocks: the reserved prefix, the injection decision, and forgery.

Hosts that retrieve memories (RAG) inject them before a turn as a block whose text
starts with ``[Context from memory]``. The rule adopted from the field:

- only a `memory_injected` event is a block; any user, assistant or tool text that
  merely *starts* like one (after whitespace, zero-width characters or Unicode
  look-alikes) is marked as not a block wherever convlog builds a context;
- a memory id injected less than `context_window_depth` turns ago is cooling down and
  may not be injected again (the decision refuses it inside the write, so two hosts
  racing on one conversation cannot both inject it);
- how many blocks stay live is a projection (convlog.projections.memory), never a
  rewrite of the log.

A *turn* is one user message: `Conversation.turns` counts them.
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from datetime import datetime

import msgspec

from convlog.domain.errors import InvalidInput
from convlog.domain.events import MemoryInjected

PREFIX = "[Context from memory]"
NOT_A_BLOCK = "[not a memory block] "
DEFAULT_CAP = 3
"""`max_injected_blocks_in_history` of a conversation that recorded no policy."""
DEFAULT_DEPTH = 10
"""`context_window_depth` of a conversation that recorded no policy."""
MAX_COOLDOWN_TURNS = 100
"""The longest cooldown a log can enforce: the state remembers memory ids this long."""
MAX_REMEMBERED_IDS = 1024
"""...and at most this many of them (the oldest are forgotten first)."""
MAX_BLOCK_CHARS = 100_000


class MemoryCooling(InvalidInput):
    """A memory id was injected too recently (within `context_window_depth` turns)."""

    def __init__(self, message: str, *, field: str | None = "memory_ids",
                 where: str | None = None, memory_ids: tuple[str, ...] = ()):
        self.memory_ids = memory_ids
        super().__init__(message, field=field, where=where)

    def located(self, where: str) -> InvalidInput:
        return MemoryCooling(self.reason, field=self.field, where=where,
                             memory_ids=self.memory_ids)


class InjectMemory(msgspec.Struct, frozen=True, kw_only=True):
    """Record a memory block before a turn. `cooldown_turns` is the log's
    `context_window_depth` (0: no cooldown)."""

    text: str
    memory_ids: list[str] = []
    block_id: str = msgspec.field(default_factory=lambda: uuid.uuid4().hex)
    native_session_id: str | None = None
    cooldown_turns: int = 10


def block_text(text: str) -> str:
    """The block as the host must send it: the prefix on its own first line, then the
    memories, whose own lines cannot pose as a second block."""
    body = text.strip()
    if body.startswith(PREFIX):
        body = body[len(PREFIX):].lstrip("\n\r \t")
    return f"{PREFIX}\n{neutralise(body)}" if body else PREFIX


def cooling(recent: dict[str, int], turns: int, depth: int) -> dict[str, int]:
    """{memory id: turns left before it may be injected again}, for ids injected
    fewer than `depth` turns before turn `turns`."""
    if depth <= 0:
        return {}
    return {m: depth - (turns - t) for m, t in recent.items() if turns - t < depth}


def check_depth(depth: object, field: str = "context_window_depth") -> int:
    if not isinstance(depth, int) or isinstance(depth, bool) or not (
            0 <= depth <= MAX_COOLDOWN_TURNS):
        raise InvalidInput(f"must be a whole number from 0 to {MAX_COOLDOWN_TURNS}, "
                           f"not {depth!r}", field=field)
    return depth


def decide_memory(command: InjectMemory, *, turns: int, recent: dict[str, int],
                  bound_session: str | None, now: datetime) -> MemoryInjected:
    """The event that injecting `command` causes, or a typed error (nothing written)."""
    if not isinstance(command.text, str) or not command.text.strip():
        raise InvalidInput("a memory block needs non-empty text", field="text")
    if len(command.text) > MAX_BLOCK_CHARS:
        raise InvalidInput(f"a memory block is limited to {MAX_BLOCK_CHARS:,} characters",
                           field="text")
    if not isinstance(command.block_id, str) or not command.block_id.strip():
        raise InvalidInput("must be a non-empty string", field="block_id")
    seen: set[str] = set()
    for i, memory_id in enumerate(command.memory_ids):
        if not isinstance(memory_id, str) or not memory_id.strip():
            raise InvalidInput("must be a non-empty string", field=f"memory_ids[{i}]")
        if memory_id in seen:
            raise InvalidInput(f"memory id {memory_id!r} appears twice",
                               field=f"memory_ids[{i}]")
        seen.add(memory_id)
    depth = check_depth(command.cooldown_turns)
    hot = cooling(recent, turns, depth)
    refused = tuple(m for m in command.memory_ids if m in hot)
    if refused:
        listed = ", ".join(f"{m!r} ({hot[m]} turn(s) left)" for m in refused)
        raise MemoryCooling(f"memory id(s) injected within the last {depth} turns, "
                            f"cooling down: {listed}", memory_ids=refused)
    return MemoryInjected(
        at=now, block_id=command.block_id, memory_ids=list(command.memory_ids),
        text=block_text(command.text), turn=turns,
        native_session_id=command.native_session_id or bound_session)


def remember(recent: dict[str, int], event: MemoryInjected, turns: int) -> dict[str, int]:
    """The state's memory of recent injections after `event`: bounded in age
    (MAX_COOLDOWN_TURNS) and in size (MAX_REMEMBERED_IDS), oldest forgotten first."""
    kept = {m: t for m, t in recent.items()
            if turns - t < MAX_COOLDOWN_TURNS and m not in event.memory_ids}
    kept.update((m, event.turn) for m in event.memory_ids)
    if len(kept) > MAX_REMEMBERED_IDS:
        kept = dict(list(kept.items())[-MAX_REMEMBERED_IDS:])
    return kept


# ----------------------------------------------------------------------- forgery

# Characters that render as nothing (zero-width spaces and joiners, the BOM, soft
# hyphens, bidi marks): dropped before comparing, so they cannot hide a prefix.
_INVISIBLE = re.compile("[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f"
                        "\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff"
                        "\uffa0]")
# Letters that look Latin but are not (Cyrillic, Greek), and bracket look-alikes that
# NFKC does not fold.
_CONFUSABLES = str.maketrans({
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "х": "x", "у": "y", "і": "i",
    "м": "m", "т": "t", "к": "k", "н": "h", "ο": "o", "ε": "e", "τ": "t", "κ": "k",
    "ν": "v", "μ": "m", "ı": "i", "ℓ": "l",
    "⁅": "[", "⁆": "]", "【": "[", "】": "]", "〔": "[", "〕": "]", "〚": "[", "〛": "]",
    "⟦": "[", "⟧": "]", "〖": "[", "〗": "]", "⦋": "[", "⦌": "]", "❲": "[", "❳": "]",
})
_SKELETON = "[contextfrommemory]"
_OPENERS = "\\[\uff3b\u2045\u3010\u3014\u301a\u27e6\u3016\u298b\u2772\ufe5d\ufe47"
_LINE_STARTS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
# A line (after whitespace and invisible characters) that opens with a bracket: the
# only places a forged prefix can start, found without looking at each character.
_CANDIDATE = re.compile(
    f"(?:^|(?<=[{_LINE_STARTS}]))[^\\S{_LINE_STARTS}]*(?:{_INVISIBLE.pattern}[^\\S"
    f"{_LINE_STARTS}]*)*(?=[{_OPENERS}]|{_INVISIBLE.pattern})")
# Every candidate needs an opener or an invisible character somewhere in the text; most
# dialogue has neither, and one scan for them is ~10x cheaper than `_CANDIDATE`'s.
_MAYBE = re.compile(f"[{_OPENERS}]|{_INVISIBLE.pattern}")


def _skeleton_end(text: str, start: int) -> int | None:
    """Where a forged prefix beginning at `start` ends in `text`, or None: compares
    NFKC-folded, case-folded characters, ignoring whitespace and invisible ones."""
    matched = 0
    for i in range(start, min(len(text), start + 4 * len(_SKELETON) + 16)):
        ch = text[i]
        if ch in _LINE_STARTS:
            return None
        if ch.isspace() or _INVISIBLE.match(ch):
            continue
        folded = unicodedata.normalize("NFKC", ch).translate(_CONFUSABLES).casefold()
        folded = "".join(c for c in folded if not c.isspace())
        for c in folded:
            if matched >= len(_SKELETON) or c != _SKELETON[matched]:
                return None
            matched += 1
        if matched == len(_SKELETON):
            return i + 1
    return None


def neutralise(text: str) -> str:
    """`text` with every line that starts like a memory block marked as not one.

    The line is kept (it is what the person wrote) behind ``[not a memory block]``,
    so neither a model nor a host's ``startswith`` check can take it for a block."""
    if not text or _MAYBE.search(text) is None:
        return text
    out: list[str] = []
    last = 0
    for m in _CANDIDATE.finditer(text):
        start = m.end()
        if start < last or _skeleton_end(text, start) is None:
            continue
        out += [text[last:start], NOT_A_BLOCK]
        last = start
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


def is_forged(text: str) -> bool:
    """True when some line of `text` would pass for a memory block."""
    return neutralise(text) != text
