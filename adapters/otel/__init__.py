"""`convlog export --otel`: the log as OpenTelemetry spans for an observability stack
(Jaeger, Grafana Tempo, Langfuse, Phoenix, Datadog...), with the GenAI semantic
conventions' attributes.

Lives here: the mapping of turns (`spans`) and of resume outcomes (`resumes`) to span
specs, the export loop with its exactly-once position (`exporter`), that position's
store (`tracking`, an eventsourcing TrackingRecorder in SQLite beside the log), and
the SDK's side (`sdk`: SDK spans, the OTLP/HTTP exporter; imported only to send).

Also here:
- `invocation`, `tools`, `content`: a turn's `invoke_agent`, `chat` and `execute_tool`
  spans and their messages in the GenAI conventions' schema.

May import: the facade (`convlog`), convlog.services, convlog.domain,
convlog.projections; eventsourcing's tracking types; opentelemetry (the `otel`
extra) in `sdk` only. Never storage or views.
"""
