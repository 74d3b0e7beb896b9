"""Resuming a conversation after a restart: where each part of it lives.

A resume tries the agent's own resume first and injects history only when that failed
(native resume -> load -> a new session + the history, cut to a budget).

Decided (the algorithm, written once for both APIs)
    `tiers`       the plan: each tier's attempt, call, outcome, and the injection
                  after a fresh tier; its blocking and asyncio drivers
    convlog.domain.conversation  the rules checked in the write: a conversation must
                  exist and not be archived; history at most once per native session
Recorded (the events every surface writes the same way)
    `run`         `Tier`, `TierCall`, `TierFailed`, `Attempt`, `ResumeOutcome`;
                  `ResumeRun` records ResumeAttempted / ResumeSucceeded / ResumeFailed
                  and HistoryInjected (`record_injection`); reason classes (`classify`)
Served (the surfaces)
    Python        `ConversationLog.resume` / `AsyncConversationLog.resume` (services.log,
                  services.aio) run `tiers` with the host's tier callables
    ACP           convlog.acp.sessions: the proxy's own tiers (session/resume, load, new)
    HTTP          convlog.http.resume: hosts that run the tiers themselves report
                  attempts and outcomes and ask for the injection
Read back
    convlog.projections.telemetry, convlog.views.telemetry: success per tier, strategy,
    agent, day; convlog.otel.resumes: each outcome as a span

Not a resume of one conversation: `resumption` builds ONE context across a user's (or
a workspace's) recent conversations (`ConversationLog.resumption_context`), laid out
by convlog.projections.resumption.

May import: what services/ may (the domain, the projections, storage/, views/,
accounting/, crypto/, the other services).
"""
