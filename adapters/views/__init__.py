"""Read models in DuckDB, for analysts: the view store, the queries on it, charts.

Lives here: the DuckDB store that catches up from the event log exactly once
(`duckdb`), the catalog and cost queries (`analytics`; the catalog's statement in
`catalog_sql`), resume telemetry
(`telemetry`) and the PNG chart of it (`chart`).

Also here:
- `adk`, `repairs`: the `adk_sessions` and `tool_repairs` views.
- `pricing`: every cost computed with the price table in force.
- `readonly`: the one statement an analyst's SQL may be (a read).
- `token_counts`: token counts for the views, made when a catch-up first needs them.

May import: the domain, the projections, `storage/` and `accounting/`. Never the
services or `cli/`.
"""
