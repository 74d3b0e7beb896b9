"""convlog.projections: read models built from conversation events.

Projections import only convlog.domain. Each module answers one query: the
transcript a user saw, the timeline a debugger replays, and (later) the resume
context, costs and telemetry.
"""
