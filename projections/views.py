"""The one shape of every analytical view: tables declared as data, rows from events.

A view declares its tables (columns with a SQL type and a merge rule) and turns a
batch of events into rows, purely. The storage adapter (convlog.duckdb) creates the
tables from the declarations, appends rows, and merges keyed rows by the rules; it
knows nothing of conversations, and this module knows nothing of DuckDB.

Merge rules for keyed tables (a row per key, updated batch after batch):
``key`` identifies the row; ``first`` keeps the earliest non-null value; ``last``
takes the newest non-null value; ``sum`` adds; ``max`` keeps the largest; ``any``
is a boolean OR. Tables without a key are append-only fact tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple, Protocol
from uuid import UUID

from convlog.domain.events import Event

Merge = Literal["key", "first", "last", "sum", "max", "any"]


class Column(NamedTuple):
    name: str
    type: str
    merge: Merge = "last"


class Table(NamedTuple):
    name: str
    columns: tuple[Column, ...]
    doc: str = ""

    @property
    def key(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.merge == "key")


class Notified(NamedTuple):
    """An event as the views see it: its place in the whole log and in its stream."""

    position: int
    conversation_id: UUID
    version: int
    event: Event


Rows = dict[str, list[tuple[object, ...]]]


class View(Protocol):
    """Anything with `tables` and a pure `rows(batch)` is a view."""

    @property
    def tables(self) -> tuple[Table, ...]: ...

    def rows(self, batch: Sequence[Notified]) -> Rows: ...
