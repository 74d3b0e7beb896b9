"""Not every record is a message (issue 41): the one rule that tells them apart.

The SDK session stores must give back everything they were given, and some of what
they are given is no dialogue: Claude Code's bookkeeping entries (``attachment``,
``queue-operation``, ``last-prompt``, ``tools-used``, ``cost-state``...), Google ADK's
own records (a session's opening record, app- and user-scoped state, events with no
content), an OpenAI Agents session's instructions and items with no words. Each is
stored as a `MessageAppended` that keeps the surface's item (`raw`) for the store's
own read, and is no message anywhere else: not in counts, the catalog, transcripts,
views, the context, HTML pages or spans.

A record says so (`MessageAppended.record`, the kind of record, written by the
stores since issue 41). Rows stored before that field existed are recognised by
what they hold: an assistant row with no content parts, no tool call or result, no
usage and no cost, which keeps a surface's item. Such a row has nothing a reader or
a model could read, so nothing readable is ever hidden. The views apply the same
rule in SQL (convlog.projections.catalog.RECORD_SQL); in an encrypted store they see
only the mark, since content and items are sealed.
"""

from __future__ import annotations

from convlog.domain.events import MessageAppended
from convlog.domain.messages import Message


def is_record(event: MessageAppended | Message) -> bool:
    """Whether `event` is a record its surface keeps, not a message (see the module)."""
    if event.record is not None:
        return True
    return (event.raw is not None and event.role == "assistant" and event.content == []
            and not event.tool_calls and event.tool_call_id is None and event.usage is None
            and event.cost_usd is None)


def record_kind(event: MessageAppended) -> str | None:
    """The kind of record `event` is (its mark, or what its item calls itself), None
    for a message."""
    if not is_record(event):
        return None
    if event.record is not None:
        return event.record
    raw = event.raw or {}
    kind = raw.get("type") or (f"adk:{raw['adk']}" if "adk" in raw else raw.get("role"))
    return str(kind) if kind else "record"
