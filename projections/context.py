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
- a line of dialogue that starts like a memory block is marked as not one;
- what a rewind abandoned (`history_rewound`) is never read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime

import msgspec

from convlog.domain.errors import InvalidInput
from convlog.domain.events import (
    ConversationCleared,
    HistoryRewound,
    MemoryInjected,
    MessageAppended,
    MessageRetracted,
    Recorded,
    SummaryRecorded,
)
from convlog.domain.memory import neutralise
from convlog.projections.context_pieces import (
    TOOL_ARGS_CHARS,
    TOOL_RESULT_CHARS,
    TRUNCATED,
    Piece,
    cap,
    capped,
    joined,
    pair_pieces,
    pieces_of,
    render_for_context,
)
from convlog.projections.memory import DEFAULT_CAP, TailLiveness
from convlog.projections.pair_causes import lost_causes
from convlog.projections.pairing import Cause

__all__ = ["TOOL_ARGS_CHARS", "TOOL_RESULT_CHARS", "TRUNCATED", "Budget", "ContextMessage",
           "Window", "block_item", "cap", "front_cut", "render_for_context", "select_window"]


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
    follows: bool = False
    """It starts with results of the calls of the item before it (or a note that
    they were lost): a cut that drops that item drops this one too."""

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


def block_item(version: int, event: MemoryInjected, chars: int, count: Callable[[str], int],
               per_message_tokens: int) -> ContextMessage:
    """A live block as a context item: its exact text, capped like a message."""
    text, truncated = cap(event.text, chars)
    return ContextMessage(version=version, at=event.at, role="memory", text=text,
                          tokens=count(text) + per_message_tokens, truncated=truncated,
                          memory_ids=list(event.memory_ids))


class _Said(msgspec.Struct):
    """A chosen message's pieces, before pairing."""

    event: MessageAppended
    pieces: list[Piece]
    cut: set[str]
    """Results the per-message cap left out (their calls' notes say "budget")."""


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
    imported: bool | Callable[[], bool] = False,
    own_tokens: Callable[[MessageAppended], int] | None = None,
    floor: int = 0,
) -> Window:
    """Choose the newest messages that fit `budget`, reading `tail` (newest first)
    only as far as needed. `epoch_messages` is how many messages the current epoch
    holds and `summary` its latest summary (both from the conversation's state, so
    neither needs a scan). The summary is kept when it fits the budget; the messages
    it covers are then never repeated. Live memory blocks (at most `memory_cap`)
    are chosen like messages, newest first, against the same token budget. Tool
    calls and results are then paired (`pair_window`); `imported` says whether the
    conversation came from an importer (asked only when a result is missing).
    `own_tokens(event)`: the tokens of a message shown whole as its own text (its
    stored count, else its text counted in its model's family, as appends counted
    before issue 45); without it, the stored count or `count`. `floor`: the last log
    position a compaction replaced (convlog.domain.events.HistoryCompacted): nothing
    at or before it is shown, even when its summary does not fit the budget."""
    chosen: list[ContextMessage] = []
    said: dict[int, _Said] = {}
    liveness = TailLiveness(memory_cap)
    messages = 0
    spent = overhead_tokens
    if summary is not None:
        if summary.tokens + spent <= budget.tokens:
            spent += summary.tokens
        else:
            summary = None
    skipped_current = 0
    retracted: set[str] = set()  # met before their messages: the tail runs backwards
    gone: list[MessageAppended] = []
    rewound_to = 0  # a rewind met: what lies after its message is not read
    for recorded in tail:
        event = recorded.event
        if isinstance(event, ConversationCleared) or recorded.version <= floor:
            break
        if rewound_to:
            if recorded.version > rewound_to:
                if isinstance(event, MessageAppended):
                    skipped_current += 1
                continue
            rewound_to = 0
        if isinstance(event, HistoryRewound):
            rewound_to = event.to_version
            continue
        if isinstance(event, MessageRetracted):
            retracted.add(event.message_id)
            continue
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
        if event.message_id in exclude or event.message_id in retracted:
            skipped_current += 1
            if event.message_id in retracted:
                gone.append(event)
            continue
        if summary is not None and recorded.version <= summary.to_version:
            break  # the summary covers this message and everything before it
        if messages >= budget.messages:
            break
        whole = pieces_of(event)
        pieces, truncated = capped(whole, budget.chars)
        text = _text(pieces)
        if not text:  # nothing to re-read (an SDK's marker or title record): no line
            skipped_current += 1
            continue
        if text != event.content:
            tokens = count(text)
        elif own_tokens is not None:
            tokens = own_tokens(event)
        else:
            tokens = event.tokens if event.tokens is not None else count(text)
        tokens += per_message_tokens  # the format's wrapper around each message
        if spent + tokens > budget.tokens:
            break
        spent += tokens
        messages += 1
        chosen.append(ContextMessage(version=recorded.version, at=event.created_at or event.at,
                                     role=event.role, text=text, tokens=tokens,
                                     truncated=truncated))
        cut = ({p.call_id for p in whole if p.kind == "result"}
               - {p.call_id for p in pieces if p.kind == "result"}) if truncated else set()
        said[recorded.version] = _Said(event, pieces, cut)
    chosen.reverse()
    chosen, dropped = pair_window(chosen, said, gone, count, per_message_tokens, imported)
    messages -= dropped
    spent = overhead_tokens + (summary.tokens if summary else 0) + sum(m.tokens for m in chosen)
    if spent > budget.tokens:  # the notes made it longer: cut the oldest exchanges
        at = front_cut(chosen, spent - budget.tokens)
        messages -= sum(1 for m in chosen[:at] if not m.is_block)
        spent -= sum(m.tokens for m in chosen[:at])
        chosen = chosen[at:]
    covered = summary.message_count if summary else 0
    omitted = max(0, epoch_messages - skipped_current - messages - covered)
    first = summary.from_version if summary else (chosen[0].version if chosen else 0)
    last = chosen[-1].version if chosen else (summary.to_version if summary else 0)
    return Window(messages=chosen, summary=summary, omitted=omitted, from_version=first,
                  to_version=last, tokens=spent)


def pair_window(chosen: list[ContextMessage], said: dict[int, _Said],
                retracted: list[MessageAppended], count: Callable[[str], int],
                per_message_tokens: int, imported: bool | Callable[[], bool]
                ) -> tuple[list[ContextMessage], int]:
    """The chosen items with their tool calls and results paired (issue 28), and how
    many messages were left out entirely (results whose calls are not shown)."""
    shown = [said.get(m.version) for m in chosen]  # None: a memory block
    if all(p.kind == "text" for s in shown if s is not None for p in s.pieces):
        return chosen, 0  # no tool traffic: nothing to pair
    cut: dict[str, Cause] = {c: "budget" for s in shown if s is not None for c in s.cut}
    items = [s.pieces if s is not None else None for s in shown]
    paired = pair_pieces(items, causes=cut, missing="process_died", orphan="budget")
    if paired.lost:  # why, from the log (only now: most windows lose nothing)
        events = [s.event for s in shown if s is not None]
        causes, missing = lost_causes(events, retracted=retracted, imported=imported)
        paired = pair_pieces(items, causes={**causes, **cut}, missing=missing,
                             orphan="budget")
    out: list[ContextMessage] = []
    dropped = 0
    for m, s, pieces in zip(chosen, shown, paired.pieces, strict=True):
        if s is None:
            out.append(m)
            continue
        if not pieces:
            dropped += 1
            continue
        follows = pieces[0].kind == "result"
        if not paired.repairs or pieces == s.pieces:
            out.append(msgspec.structs.replace(m, follows=follows) if follows else m)
            continue
        text = _text(pieces)
        out.append(msgspec.structs.replace(m, text=text, follows=follows,
                                           tokens=count(text) + per_message_tokens))
    return out, dropped


def _text(pieces: list[Piece]) -> str:
    """The pieces as one text; neutralised again as a whole when there are several
    (each piece already is, but a forged block could span two of them)."""
    return neutralise(joined(pieces)) if len(pieces) > 1 else joined(pieces)


def front_cut(messages: list[ContextMessage], excess: int) -> int:
    """How many of the oldest items to drop to save `excess` tokens, never keeping a
    result (or lost-result note) whose call was dropped."""
    cut = 0
    while cut < len(messages) and excess > 0:
        excess -= messages[cut].tokens
        cut += 1
    while cut < len(messages) and messages[cut].follows:
        cut += 1
    return cut
