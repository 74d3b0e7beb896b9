"""The resume context: what to inject into a fresh agent session, cut to a budget.

Built from the TAIL of the log, newest first, and it stops reading as soon as the
budget is spent, at the latest clear, or at the latest summary's range: its cost
depends on the budget, never on how long the conversation is. The caller passes the
tail as a lazy, descending iterable (the adapter pages it with limited queries).

Rules, from what hosts write by hand in the field:
- newest messages are chosen first; the output is chronological;
- each message is capped (default 2,000 characters, cut visibly);
- tool calls become their names (arguments cut short), tool results are cut short,
  thinking is dropped;
- nothing before the latest clear; never the message the user is sending now;
- the latest summary (if any) comes first and covers what the window does not;
  without one, the context says how many earlier messages were left out;
- memory blocks (`memory_injected`) appear only while live (convlog.projections.memory),
  marked as blocks, and cost tokens like any text; they are not messages (they count
  in no message limit and are never summarized);
- a line of dialogue that starts like a memory block is marked as not one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime

import msgspec

from convlog.domain.content import (
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolResultPart,
    ToolUsePart,
)
from convlog.domain.errors import InvalidInput
from convlog.domain.events import (
    ConversationCleared,
    MemoryInjected,
    MessageAppended,
    Recorded,
    SummaryRecorded,
)
from convlog.domain.memory import neutralise
from convlog.projections.memory import DEFAULT_CAP, TailLiveness

TRUNCATED = "... [truncated]"
TOOL_ARGS_CHARS = 80
TOOL_RESULT_CHARS = 200


class Budget(msgspec.Struct, frozen=True, kw_only=True):
    """How much history a fresh session may receive."""

    tokens: int = 10_000
    messages: int = 30
    chars: int = 2_000
    """Per-message cap, in characters."""

    def __post_init__(self) -> None:
        for name in ("tokens", "messages", "chars"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise InvalidInput(f"must be a positive whole number, not {value!r}",
                                   field=f"budget.{name}")
        if self.chars < len(TRUNCATED) + 1:
            raise InvalidInput(f"must be at least {len(TRUNCATED) + 1}", field="budget.chars")


class ContextMessage(msgspec.Struct, frozen=True, kw_only=True):
    """One item of a context: a message, or (role ``memory``) a live memory block."""

    version: int
    at: datetime
    role: str
    text: str
    tokens: int
    truncated: bool = False
    memory_ids: list[str] = []

    @property
    def is_block(self) -> bool:
        return self.role == "memory"


class Window(msgspec.Struct, frozen=True, kw_only=True):
    """What the budget admitted, before formatting."""

    messages: list[ContextMessage]
    summary: SummaryRecorded | None
    omitted: int
    """Messages of this epoch neither in the window nor covered by the summary."""
    from_version: int
    to_version: int
    tokens: int


def cap(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[: limit - len(TRUNCATED)].rstrip() + TRUNCATED, True


def render_for_context(event: MessageAppended, chars: int) -> tuple[str, bool]:
    """The message as the agent should re-read it: text, tool names, short results."""
    pieces: list[str] = []
    content = event.content
    if isinstance(content, str):
        pieces.append(content)
    else:
        for part in content:
            if isinstance(part, TextPart):
                pieces.append(part.text)
            elif isinstance(part, ImagePart):
                pieces.append(f"[image: {part.ref}]")
            elif isinstance(part, ToolUsePart):
                args = cap(part.arguments, TOOL_ARGS_CHARS)[0]
                pieces.append(f"[called tool {part.name}({args})]")
            elif isinstance(part, ToolResultPart):
                kind = "tool error" if part.is_error else "tool result"
                pieces.append(f"[{kind}: {cap(part.content, TOOL_RESULT_CHARS)[0]}]")
            elif isinstance(part, ThinkingPart):
                continue
    for call in event.tool_calls:
        pieces.append(f"[called tool {call.name}({cap(call.arguments, TOOL_ARGS_CHARS)[0]})]")
    text = neutralise("\n".join(p for p in pieces if p))
    if event.role == "tool" and isinstance(content, str):  # parts carry their own marker
        text = f"[tool result: {cap(text, TOOL_RESULT_CHARS)[0]}]"
    return cap(text, chars)


def block_item(version: int, event: MemoryInjected, chars: int, count: Callable[[str], int],
               per_message_tokens: int) -> ContextMessage:
    """A live block as a context item: its exact text, capped like a message."""
    text, truncated = cap(event.text, chars)
    return ContextMessage(version=version, at=event.at, role="memory", text=text,
                          tokens=count(text) + per_message_tokens, truncated=truncated,
                          memory_ids=list(event.memory_ids))


def select_window(
    tail: Iterable[Recorded],
    budget: Budget,
    count: Callable[[str], int],
    *,
    epoch_messages: int,
    summary: SummaryRecorded | None = None,
    exclude: frozenset[str] = frozenset(),
    overhead_tokens: int = 0,
    per_message_tokens: int = 4,
    memory_cap: int = DEFAULT_CAP,
) -> Window:
    """Choose the newest messages that fit `budget`, reading `tail` (newest first)
    only as far as needed. `epoch_messages` is how many messages the current epoch
    holds and `summary` its latest summary (both from the conversation's state, so
    neither needs a scan). The summary is kept when it fits the budget; the messages
    it covers are then never repeated. Live memory blocks (at most `memory_cap`)
    are chosen like messages, newest first, against the same token budget."""
    chosen: list[ContextMessage] = []
    liveness = TailLiveness(memory_cap)
    messages = 0
    spent = overhead_tokens
    if summary is not None:
        if summary.tokens + spent <= budget.tokens:
            spent += summary.tokens
        else:
            summary = None
    skipped_current = 0
    for recorded in tail:
        event = recorded.event
        if isinstance(event, ConversationCleared):
            break
        if isinstance(event, MemoryInjected):
            if summary is not None and recorded.version <= summary.to_version:
                break
            if liveness.live(event):
                block = block_item(recorded.version, event, budget.chars, count,
                                   per_message_tokens)
                if spent + block.tokens > budget.tokens:
                    break
                spent += block.tokens
                chosen.append(block)
            continue
        if not isinstance(event, MessageAppended):
            continue
        liveness.saw(event)
        if event.message_id in exclude:
            skipped_current += 1
            continue
        if summary is not None and recorded.version <= summary.to_version:
            break  # the summary covers this message and everything before it
        if messages >= budget.messages:
            break
        text, truncated = render_for_context(event, budget.chars)
        raw = event.content if isinstance(event.content, str) else None
        tokens = event.tokens if (raw == text and event.tokens is not None) else count(text)
        tokens += per_message_tokens  # the format's wrapper around each message
        if spent + tokens > budget.tokens:
            break
        spent += tokens
        messages += 1
        chosen.append(ContextMessage(version=recorded.version, at=event.created_at or event.at,
                                     role=event.role, text=text, tokens=tokens,
                                     truncated=truncated))
    chosen.reverse()
    covered = summary.message_count if summary else 0
    omitted = max(0, epoch_messages - skipped_current - messages - covered)
    first = summary.from_version if summary else (chosen[0].version if chosen else 0)
    last = chosen[-1].version if chosen else (summary.to_version if summary else 0)
    return Window(messages=chosen, summary=summary, omitted=omitted, from_version=first,
                  to_version=last, tokens=spent)
