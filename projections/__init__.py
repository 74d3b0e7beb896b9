"""convlog.projections: read models built from conversation events, pure functions of
the events (no storage, no I/O). They import only convlog.domain.

Each module answers one question:
    transcript    what the user saw, line by line
    timeline      every event, one line each, for a debugger; `moment` is THE parser of
                  "a moment" (version or time, naive = UTC) and THE cut of the log at it
    replay_views, agent_view, view_model, view_diff
                  the user's view and the agent's view at any moment, and where they part
    context, context_pieces, formats
                  the history to inject after a restart, cut to a token budget, and how
                  it reads (xml, markdown, messages)
    resumption    the same across a user's recent conversations
    pairing, pair_causes, repair_marks, repair_counts
                  THE tool-call/result pairing rule, why a result is missing, and how
                  the repairs show and are counted
    compaction    where a compaction may end: never inside a tool call's exchange
    rewind        what a rewind abandoned, for readers walking the log forwards
    memory        the live window of injected memory blocks and the re-injection cooldown
    views, catalog, usage, telemetry, adk_sessions
                  the analytical views declared as data (the catalog of conversations,
                  tokens and USD per message, resume telemetry, ADK's session rows);
                  convlog.views runs them in DuckDB
    money         the one way a USD figure is written
"""
