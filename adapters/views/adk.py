"""The ``adk_sessions`` view: rows from convlog.projections.adk_sessions, in the batch.

Folding state deltas is Python (the ADK service's own fold), so these rows are not a
SELECT: inside each catch-up batch's transaction (the catch-up's `before_batch` hook,
like the price and repair tables'), the records of the batch's ADK conversations are
folded from the batch's own JSON onto their stored rows, and the rows are replaced.
Only a retraction reads a conversation's history from the event store. An encrypted
store's records are sealed: nothing is kept (the service folds each session itself),
and rows folded before the store was made encrypted are dropped at its next batch
(making a store encrypted rewrites its events, so its views are rebuilt anyway).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import groupby
from typing import TYPE_CHECKING, Any
from uuid import UUID

import msgspec

from convlog.projections.adk_sessions import CHANNELS, AdkRow, fold_batch, fold_history

if TYPE_CHECKING:  # DuckDB is imported when the views are first used
    import duckdb

    from convlog.storage.application import ConversationStore

_CHANNELS = ", ".join(f"'{c}'" for c in CHANNELS)
_EVENTS = f"""
    WITH adk AS (
        SELECT conversation_id FROM batch
        WHERE topic = 'session_started' AND e.channel IN ({_CHANNELS})
        UNION SELECT conversation_id FROM adk_sessions)
    SELECT conversation_id, version, topic, CAST(e.raw AS VARCHAR)
    FROM batch
    WHERE conversation_id IN (SELECT conversation_id FROM adk)
      AND topic IN ('session_started', 'message_appended', 'conversation_cleared',
                    'message_retracted')
    ORDER BY conversation_id, version"""


def fill_adk_sessions(store: ConversationStore
                      ) -> Callable[[duckdb.DuckDBPyConnection], None]:
    """The catch-up hook that keeps ``adk_sessions`` current (see the module doc)."""
    decode = msgspec.json.Decoder(dict[str, Any]).decode

    def fill(con: duckdb.DuckDBPyConnection) -> None:
        if store.keyring.enabled:  # sealed records: never copied here in clear, and
            con.execute("DELETE FROM adk_sessions")  # rows from before encryption go
            return
        events = con.execute(_EVENTS).fetchall()
        if not events:
            return
        con.execute("CREATE OR REPLACE TEMP TABLE adk_touched (conversation_id VARCHAR)")
        con.executemany("INSERT INTO adk_touched VALUES (?)",
                        [(c,) for c in {row[0] for row in events}])
        stored = {c: AdkRow(version=v, kind=k, state=decode(s) if s else {}, updated=u or 0.0)
                  for c, v, k, s, u in con.execute(
                      "SELECT conversation_id, version, kind, state, updated FROM adk_sessions "
                      "WHERE conversation_id IN (SELECT conversation_id FROM adk_touched)"
                  ).fetchall()}
        rows: list[tuple[object, ...]] = []
        for cid, group in groupby(events, key=lambda r: r[0]):
            batch = [(v, t, decode(raw) if raw else None) for _, v, t, raw in group]
            row = stored.get(cid) or AdkRow()
            if not fold_batch(row, batch):
                row = fold_history(store.recorded(UUID(hex=cid), upto=batch[-1][0]))
            rows.append((cid, row.version, row.kind,
                         msgspec.json.encode(row.state).decode(), row.updated))
        con.execute("DELETE FROM adk_sessions WHERE conversation_id IN "
                    "(SELECT conversation_id FROM adk_touched)")
        con.executemany("INSERT INTO adk_sessions VALUES (?, ?, ?, ?, ?)", rows)
    return fill
