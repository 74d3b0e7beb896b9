"""The one statement an analyst's SQL may be: a read.

`sql` runs a query over the views, which are a cache of the log. Rolling the
transaction back is not enough: `...; COMMIT` ends it early, and COPY TO, ATTACH,
INSTALL and LOAD reach outside the views. So the query is parsed first and must be
exactly one statement that only reads (SELECT, including WITH, DESCRIBE, SHOW and
SUMMARIZE, which DuckDB parses as SELECT); anything else is refused before it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from convlog.domain.errors import InvalidInput

if TYPE_CHECKING:
    import duckdb


def check_read_only(con: duckdb.DuckDBPyConnection, query: str) -> None:
    """Raise InvalidInput(field="sql") unless `query` is a single read-only statement."""
    import duckdb

    try:
        statements = con.extract_statements(query)
    except duckdb.Error as exc:
        raise InvalidInput(str(exc).splitlines()[0], field="sql") from None
    if len(statements) != 1:
        msg = (f"sql is read-only and runs one statement; got {len(statements)} "
               "statements")
        raise InvalidInput(msg, field="sql")
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        msg = (f"sql is read-only: {kind.name} statements are refused (the views are "
               "a cache of the log; write through record, append or import)")
        raise InvalidInput(msg, field="sql")
