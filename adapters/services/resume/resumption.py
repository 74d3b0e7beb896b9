"""One budgeted context across a user's (or a workspace's) recent conversations.

The catalog (DuckDB views) picks the conversations and gives their metadata, so the
numbers here are the catalog's own; each conversation's part is then chosen from the
TAIL of its log by the single-context rules (convlog.projections.context), newest
conversation first, against one shared token budget. Nothing reads a whole
conversation: the cost depends on the budget and on how many conversations, never
on how long they are.
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from convlog.domain.errors import InvalidInput, UnknownUser
from convlog.projections.context import Budget, Window, front_cut
from convlog.projections.resumption import (
    ConversationHeader,
    SpanFormat,
    check_span_format,
    part,
    wrap,
)
from convlog.services.context import ContextBuilder
from convlog.views.analytics import Analytics, CatalogRow

TOP_AGENTS = 5


class ConversationPart(ConversationHeader, frozen=True, kw_only=True):
    """One conversation of a `ResumptionContext`: the catalog's row, and how much of it
    the budget let in."""

    input_tokens: int
    output_tokens: int
    included: int
    """Messages of this conversation in the text."""
    summarized: int
    """Messages covered by the summary in the text (0: no summary shown)."""
    in_text: bool
    """False when the budget ran out before this conversation's header."""
    summary: str | None = None
    """The text of its latest summary (of its current epoch), where one was recorded."""
    resumed_at: datetime | None = None
    """When a resume of it last succeeded."""


class AgentInteractions(msgspec.Struct, frozen=True, kw_only=True):
    """An agent of the context's conversations, and how many interactions it had."""

    agent: str
    interactions: int


class ResumptionContext(msgspec.Struct, frozen=True, kw_only=True):
    user: str | None
    workspace: str | None
    format: str
    text: str
    tokens: int
    """Tokens of `text` (never more than the budget)."""
    counter: str
    conversation_count: int
    message_count: int
    """Messages included in `text`, over all conversations."""
    total_tokens: int
    """Content tokens of the conversations (the catalog's `content_tokens`, summed)."""
    agent_interactions: int
    top_agents: list[str]
    agents: list[AgentInteractions] = []
    """The top agents WITH their interaction counts, most active first."""
    latest_summary: str | None = None
    """The latest summary text of the newest conversation that has one (None: no
    summary was recorded)."""
    cost_usd: float | None
    input_tokens: int
    output_tokens: int
    conversations: list[ConversationPart]


def _header(row: CatalogRow) -> ConversationHeader:
    return ConversationHeader(key=row.key, title=row.title, created_at=row.created_at,
                              last_active_at=row.last_active_at,
                              message_count=row.message_count, tokens=row.content_tokens,
                              cost_usd=row.cost_usd, cost_incomplete=row.cost_incomplete)


def _trimmed(window: Window, excess: int) -> Window:
    """`window` without its oldest items worth `excess` tokens (or its summary)."""
    cut = front_cut(window.messages, excess)
    if cut == 0 and window.summary is not None:
        return msgspec.structs.replace(window, summary=None,
                                       omitted=window.omitted + window.summary.message_count)
    dropped = sum(1 for m in window.messages[:cut] if not m.is_block)
    return msgspec.structs.replace(window, messages=window.messages[cut:],
                                   omitted=window.omitted + dropped)


def _empty(window: Window) -> bool:
    return not window.messages and window.summary is None


SPAN_MESSAGES = 20
"""The resumption service's default: at most 20 messages IN TOTAL across the
conversations of a user-level context (a single conversation's context allows 30)."""


def span_budget(tokens: int | None = None, messages: int | None = None,
                chars: int | None = None) -> Budget:
    """A user-level context's budget: what is given, the service's defaults otherwise."""
    base = Budget(messages=SPAN_MESSAGES)
    return Budget(tokens=tokens or base.tokens, messages=messages or base.messages,
                  chars=chars or base.chars)


class Span:
    """Lays out the parts newest first while the shared budget lasts: tokens AND
    messages are shared (the newest conversation claims both first)."""

    def __init__(self, builder: ContextBuilder, fmt: SpanFormat, who: str, budget: Budget):
        self.builder, self.fmt, self.who, self.budget = builder, fmt, who, budget
        self.parts: list[str] = []
        self.windows: list[Window] = []
        self.spent = builder.count(wrap(fmt, who, []))
        self.messages_left = budget.messages

    def add(self, row: CatalogRow) -> Window | None:
        """The part of `row` that fits (None: not even its header)."""
        header = _header(row)
        state = self.builder.state(row.key)
        epoch = state.message_count - state.epoch_start_message_count
        window = Window(messages=[], summary=None, omitted=epoch, from_version=0,
                        to_version=0, tokens=0)
        base = self.builder.count(part(self.fmt, header, window)) + 1
        if self.spent + base > self.budget.tokens:
            return None
        left = self.budget.tokens - self.spent - base
        if left > 0 and self.messages_left > 0:
            window = self.builder.window(
                state, msgspec.structs.replace(self.budget, tokens=left,
                                               messages=self.messages_left),
                frozenset(), self.fmt)
        while True:
            text = part(self.fmt, header, window)
            cost = self.builder.count(text) + 1  # + the line break joining the parts
            if self.spent + cost <= self.budget.tokens or _empty(window):
                break
            window = _trimmed(window, self.spent + cost - self.budget.tokens)
        self.spent += cost
        self.messages_left -= sum(1 for m in window.messages if not m.is_block)
        self.parts.append(text)
        self.windows.append(window)
        return window

    def text(self) -> tuple[str, int]:
        """The whole text and its tokens: the joins may tokenize a little differently
        from the parts, so the last part gives way until the total fits."""
        while True:
            text = wrap(self.fmt, self.who, self.parts)
            tokens = self.builder.count(text)
            if tokens <= self.budget.tokens:
                return text, tokens
            if not self.parts:  # not even the empty wrapper fits: nothing, not too much
                return "", 0
            self.parts.pop()
            self.windows.pop()


def build(builder: ContextBuilder, analytics: Analytics, *, user: str | None,
          workspace: str | None, conversations: int, budget: Budget | None, fmt: str
          ) -> ResumptionContext:
    form = check_span_format(fmt)
    budget = budget or span_budget()
    if user is None and workspace is None:
        raise InvalidInput("give a user, a workspace, or both", field="user")
    if not isinstance(conversations, int) or isinstance(conversations, bool) or \
            conversations <= 0:
        raise InvalidInput(f"must be a positive whole number, not {conversations!r}",
                           field="conversations")
    with analytics.views.connect():  # both catalog queries on one open of the views
        rows = analytics.sessions(user=user, workspace=workspace, limit=conversations)
        if not rows and not analytics.sessions(user=user, workspace=workspace,
                                               include_archived=True, limit=1):
            raise UnknownUser(user, workspace)
        activity = analytics.agent_activity([r.key for r in rows])
    who = " / ".join(x for x in (user, workspace) if x is not None)
    span = Span(builder, form, who, budget)
    for row in rows:
        if span.add(row) is None:
            break
    text, tokens = span.text()
    windows = span.windows
    costs = [r.cost_usd for r in rows if r.cost_usd is not None]
    out = []
    for i, row in enumerate(rows):
        w = windows[i] if i < len(windows) else None
        state = builder.state(row.key)
        found = builder.latest_summary(state)
        out.append(ConversationPart(
            summary=found.text if found else None, resumed_at=state.resumed_at,
            **msgspec.structs.asdict(_header(row)), input_tokens=row.input_tokens,
            output_tokens=row.output_tokens, in_text=w is not None,
            included=sum(1 for m in w.messages if not m.is_block) if w else 0,
            summarized=w.summary.message_count if w and w.summary else 0))
    return ResumptionContext(
        user=user, workspace=workspace, format=form, text=text, tokens=tokens,
        counter=builder.counter, conversation_count=len(rows),
        message_count=sum(p.included for p in out),
        total_tokens=sum(r.content_tokens for r in rows),
        agent_interactions=sum(n for _, n in activity),
        top_agents=[a for a, _ in activity if a is not None][:TOP_AGENTS],
        agents=[AgentInteractions(agent=a, interactions=n)
                for a, n in activity if a is not None][:TOP_AGENTS],
        latest_summary=next((p.summary for p in out if p.summary), None),
        cost_usd=sum(costs) if costs else None,
        input_tokens=sum(r.input_tokens for r in rows),
        output_tokens=sum(r.output_tokens for r in rows), conversations=out)
