"""The one shape of every analytical view: tables and projections declared as data.

A view declares its tables (columns with a SQL type and a merge rule) and, for each
table, a SELECT over one batch of stored events that yields that table's rows. The
adapter (convlog.views.duckdb) stages each batch as a relation named ``batch`` and runs
the SELECTs inside the same transaction that advances the tracking position. The
work per event then happens in DuckDB's vectorised engine instead of Python: the
difference measured between ~40k and >100k events/s (see `make bench`).

``batch`` columns: position (in the whole log), conversation_id (32 hex digits),
version (in the conversation), topic (the stored event name), v (its class version),
at (TIMESTAMP, UTC), ``e``: the stored event's fields that the views declare
(`View.fields`, a name -> DuckDB type map), parsed from its JSON ONCE for all views,
and ``tokens``: a message's token count, the one stored on it (a host's, or one
counted at append before issue 45), else the one the catch-up counted
(convlog.views.token_counts; NULL when no process could read its text). These SELECTs
read the STORED FORMAT: they name stored fields and handle every class version still
in databases (see domain/events.py and the golden files), like the mapper's upcasters.
An absent field (omitted default) is NULL.

Tables are written in declaration order, so a later table may read an earlier one
(e.g. the rows a batch just added to ``messages``). Derived tables come last: their
rows for the conversations in ``touched`` are deleted and selected again.

Merge rules for keyed tables (a row per key, updated batch after batch):
``key`` identifies the row; ``first`` keeps the earliest non-null value; ``last``
takes the newest non-null value; ``sum`` adds; ``nullsum`` adds, and stays null
while every value is null (a cost nobody could price is not $0); ``max`` keeps the
largest; ``any`` is a boolean OR. Tables without a key are append-only fact tables.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

Merge = Literal["key", "first", "last", "sum", "nullsum", "max", "any"]


class Column(NamedTuple):
    name: str
    type: str
    merge: Merge = "last"


class Table(NamedTuple):
    name: str
    columns: tuple[Column, ...]
    select: str
    """SQL over ``batch`` (and tables written before it) yielding the rows to add."""
    doc: str = ""
    derived: bool = False
    """Recomputed for the conversations a batch touched (relation ``touched``):
    for per-conversation figures that need the whole history, such as windows."""
    touched_by: tuple[str, ...] = ()
    """For a derived table: the stored event names that change it (empty: any).
    A batch without them leaves the table alone, so most batches cost nothing."""

    @property
    def key(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.merge == "key")


class View(NamedTuple):
    name: str
    tables: tuple[Table, ...]
    fields: dict[str, Any]
    """Stored fields the view reads, with their DuckDB types (nested: a dict)."""
