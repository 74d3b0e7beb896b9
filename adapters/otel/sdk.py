"""The OpenTelemetry SDK's side: span specs as SDK spans, sent by its OTLP/HTTP exporter.

The exporter is configured by the standard variables (``OTEL_EXPORTER_OTLP_ENDPOINT``
or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, ``..._HEADERS``, ``..._TIMEOUT``,
``..._COMPRESSION``, certificates) and the resource by ``OTEL_SERVICE_NAME`` and
``OTEL_RESOURCE_ATTRIBUTES`` (service.name defaults to ``convlog``). It retries what
is retryable (429, 502-504, lost connections) within its timeout; a batch it gives up
on is reported as not sent.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

import convlog
from convlog.otel.spans import SpanSpec

_SAMPLED = TraceFlags(TraceFlags.SAMPLED)


def endpoint() -> str:
    """Where the OTLP/HTTP exporter sends traces, as it reads the environment."""
    traces = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if traces:
        return traces
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318/")
    return base + ("v1/traces" if base.endswith("/") else "/v1/traces")


class Sender:
    """Sends span specs through an SDK exporter (OTLP/HTTP unless given one)."""

    def __init__(self, exporter: SpanExporter | None = None):
        self.exporter = exporter or OTLPSpanExporter()
        named = os.environ.get("OTEL_SERVICE_NAME") or "service.name=" in os.environ.get(
            "OTEL_RESOURCE_ATTRIBUTES", "")
        self.resource = Resource.create({} if named else {"service.name": "convlog"})
        self.scope = InstrumentationScope("convlog", convlog.__version__)

    def send(self, specs: Sequence[SpanSpec]) -> bool:
        """True once the receiver acknowledged every span."""
        spans = [self.span(s) for s in specs]
        return self.exporter.export(spans) is SpanExportResult.SUCCESS

    def span(self, spec: SpanSpec) -> ReadableSpan:
        context = SpanContext(spec.trace_id, spec.span_id, is_remote=False,
                              trace_flags=_SAMPLED)
        parent = None if spec.parent_id is None else SpanContext(
            spec.trace_id, spec.parent_id, is_remote=False, trace_flags=_SAMPLED)
        status = (Status(StatusCode.ERROR, spec.error) if spec.error
                  else Status(StatusCode.UNSET))
        return ReadableSpan(
            name=spec.name, context=context, parent=parent, resource=self.resource,
            attributes=spec.attributes,
            kind=SpanKind.CLIENT if spec.kind == "client" else SpanKind.INTERNAL,
            status=status, start_time=spec.start_ns, end_time=spec.end_ns,
            instrumentation_scope=self.scope)

    def close(self) -> None:
        self.exporter.shutdown()
