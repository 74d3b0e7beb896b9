"""The ``tool_repairs`` view: rows from convlog.projections.repair_counts, in the batch.

Pairing is one Python function (convlog.projections.pairing), so these rows are not
a SELECT: inside each catch-up batch's transaction (the catch-up's `before_batch`
hook, like the price table's), the conversations the batch touched with tool calls
or results, retractions or clears (or any message, once a conversation has repairs:
a later message may answer or explain them) are read from the event store up to
the batch's last version of each, and their rows are replaced. A conversation
without tool traffic is never read, so plain chat costs the catch-up nothing here.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC
from typing import TYPE_CHECKING
from uuid import UUID

from convlog.projections.repair_counts import conversation_repairs

if TYPE_CHECKING:  # DuckDB is imported when the views are first used
    import duckdb

    from convlog.storage.application import ConversationStore

_TOUCHED = """
    SELECT conversation_id, max(version) AS upto
    FROM batch
    WHERE topic IN ('message_retracted', 'conversation_cleared')
       OR (topic = 'message_appended' AND (
              e.tool_call_id IS NOT NULL OR len(e.tool_calls) > 0
              OR list_has_any(list_transform(e.content, lambda p: p.type),
                              ['tool_use', 'tool_result'])
              OR conversation_id IN (SELECT conversation_id FROM tool_repairs)))
    GROUP BY conversation_id"""


def fill_repairs(store: ConversationStore) -> Callable[[duckdb.DuckDBPyConnection], None]:
    """The catch-up hook that keeps ``tool_repairs`` current (see the module doc)."""
    def fill(con: duckdb.DuckDBPyConnection) -> None:
        touched = con.execute(_TOUCHED).fetchall()
        if not touched:
            return
        rows: list[tuple[object, ...]] = []
        for conversation_id, upto in touched:
            for f in conversation_repairs(store.recorded(UUID(hex=conversation_id),
                                                         upto=upto)):
                rows.append((conversation_id, f.version,
                             f.at.astimezone(UTC).replace(tzinfo=None), f.kind, f.cause,
                             f.call_id, f.agent))
        con.execute("CREATE OR REPLACE TEMP TABLE repairs_touched (conversation_id VARCHAR)")
        con.executemany("INSERT INTO repairs_touched VALUES (?)", [(c,) for c, _ in touched])
        con.execute("DELETE FROM tool_repairs WHERE conversation_id IN "
                    "(SELECT conversation_id FROM repairs_touched)")
        if rows:
            con.executemany("INSERT INTO tool_repairs VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    return fill
