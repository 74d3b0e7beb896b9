"""Resume telemetry facts: every resume attempt and outcome, every injection."""

from __future__ import annotations

from collections.abc import Sequence

from convlog.domain.events import HistoryInjected, ResumeAttempted, ResumeFailed, ResumeSucceeded
from convlog.projections.views import Column, Notified, Rows, Table

RESUME_EVENTS = Table("resume_events", (
    Column("conversation_id", "VARCHAR"),
    Column("version", "BIGINT"),
    Column("position", "BIGINT"),
    Column("at", "TIMESTAMP"),
    Column("kind", "VARCHAR"),
    Column("strategy", "VARCHAR"),
    Column("native_session_id", "VARCHAR"),
    Column("reason", "VARCHAR"),
    Column("error", "VARCHAR"),
    Column("latency_ms", "DOUBLE"),
), doc="resume_attempted / resume_succeeded / resume_failed, one row each")

INJECTIONS = Table("injections", (
    Column("conversation_id", "VARCHAR"),
    Column("version", "BIGINT"),
    Column("position", "BIGINT"),
    Column("at", "TIMESTAMP"),
    Column("native_session_id", "VARCHAR"),
    Column("from_version", "BIGINT"),
    Column("to_version", "BIGINT"),
    Column("message_count", "BIGINT"),
    Column("tokens", "BIGINT"),
    Column("format", "VARCHAR"),
), doc="history injected into fresh agent sessions: range, size, format")


class TelemetryView:
    tables = (RESUME_EVENTS, INJECTIONS)

    def rows(self, batch: Sequence[Notified]) -> Rows:
        resumes: list[tuple[object, ...]] = []
        injections: list[tuple[object, ...]] = []
        for n in batch:
            e = n.event
            head = (str(n.conversation_id), n.version, n.position, e.at)
            if isinstance(e, ResumeAttempted):
                resumes.append((*head, "attempted", e.strategy, e.native_session_id,
                                None, None, None))
            elif isinstance(e, ResumeSucceeded):
                resumes.append((*head, "succeeded", e.strategy, e.native_session_id,
                                None, None, e.latency_ms))
            elif isinstance(e, ResumeFailed):
                resumes.append((*head, "failed", e.strategy, e.native_session_id,
                                e.reason, e.error, e.latency_ms))
            elif isinstance(e, HistoryInjected):
                injections.append((*head, e.native_session_id, e.from_version, e.to_version,
                                   e.message_count, e.tokens, e.format))
        return {RESUME_EVENTS.name: resumes, INJECTIONS.name: injections}
