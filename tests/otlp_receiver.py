"""A real OTLP/HTTP trace receiver on 127.0.0.1 for the export tests: it parses what
it is sent with opentelemetry-proto (the protocol's own generated classes) and keeps
every batch it ACKNOWLEDGED (answered 200). It can refuse batches (an HTTP status)
or hold one unanswered until released, to test what a sender does then."""

from __future__ import annotations

import gzip
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


@dataclass
class Span:
    trace_id: str
    span_id: str
    parent_id: str
    name: str
    kind: int
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    status_code: int
    status_message: str
    resource: dict[str, Any]
    scope: str


@dataclass
class Receiver:
    port: int = 0
    batches: list[list[Span]] = field(default_factory=list)
    refuse: list[int] = field(default_factory=list)
    """HTTP statuses to answer the next requests with, in order (then 200)."""
    holding: bool = False
    """Hold the next request unanswered until `release()`."""
    held: threading.Event = field(default_factory=threading.Event)
    requests: int = 0
    _release: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def spans(self) -> list[Span]:
        with self._lock:
            return [s for batch in self.batches for s in batch]

    def release(self) -> None:
        self._release.set()

    def take(self, body: bytes) -> tuple[int, bytes]:
        with self._lock:
            self.requests += 1
            status = self.refuse.pop(0) if self.refuse else 200
            hold, self.holding = self.holding, False
        if hold:
            self.held.set()
            self._release.wait(120)
            return 503, b""  # a held batch is never acknowledged
        if status != 200:
            return status, b""
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        spans = [_span(span, rs, ss) for rs in request.resource_spans
                 for ss in rs.scope_spans for span in ss.spans]
        with self._lock:
            self.batches.append(spans)
        return 200, ExportTraceServiceResponse().SerializeToString()


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


def _span(span: Any, rs: Any, ss: Any) -> Span:
    return Span(
        trace_id=span.trace_id.hex(), span_id=span.span_id.hex(),
        parent_id=span.parent_span_id.hex(), name=span.name, kind=span.kind,
        start_ns=span.start_time_unix_nano, end_ns=span.end_time_unix_nano,
        attributes={a.key: _value(a.value) for a in span.attributes},
        status_code=span.status.code, status_message=span.status.message,
        resource={a.key: _value(a.value) for a in rs.resource.attributes},
        scope=ss.scope.name)


@contextmanager
def running() -> Iterator[Receiver]:
    receiver = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            encoding = self.headers.get("Content-Encoding", "")
            if encoding == "gzip":
                body = gzip.decompress(body)
            elif encoding == "deflate":
                body = zlib.decompress(body)
            if self.path != "/v1/traces" or "protobuf" not in self.headers.get(
                    "Content-Type", ""):
                status, answer = 404, b""
            else:
                status, answer = receiver.take(body)
            self.send_response(status)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    receiver.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        receiver.release()
        server.shutdown()
        server.server_close()
