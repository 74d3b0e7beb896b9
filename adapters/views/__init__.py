"""Read models in DuckDB, for analysts: the view store, the queries on it, charts.

Lives here: the DuckDB store that catches up from the event log exactly once
(`duckdb`), the catalog and cost queries (`analytics`), resume telemetry
(`telemetry`) and the PNG chart of it (`chart`).

May import: the domain, the projections, `storage/` and `accounting/`. Never the
services or `cli/`.
"""
