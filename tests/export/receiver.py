"""A tiny OTLP/HTTP trace receiver on 127.0.0.1: accepts POST /v1/traces, decodes and keeps each request."""

from __future__ import annotations

import gzip
import zlib

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests.fakeservers import FakeResponse, FakeServer, RecordedRequest

__all__ = ["OtlpReceiver"]


class OtlpReceiver(FakeServer):
    """Answers ``POST /v1/traces`` with an empty ``ExportTraceServiceResponse``; anything else with 404.

    ``status`` lets a test make it refuse (e.g. 400) to see how failures surface.
    """

    def __init__(self, *, status: int = 200) -> None:
        super().__init__(self._answer)
        self.status = status
        """The HTTP status to answer POST /v1/traces with."""
        self.received: list[ExportTraceServiceRequest] = []
        """Each decoded request, in arrival order."""

    def _answer(self, request: RecordedRequest) -> FakeResponse:
        if request.method != "POST" or request.path != "/v1/traces":
            return FakeResponse(404, b"not found")
        if request.headers.get("content-type") != "application/x-protobuf":
            return FakeResponse(415, b"OTLP/HTTP protobuf expected")
        body = request.body
        encoding = request.headers.get("content-encoding")
        if encoding == "gzip":
            body = gzip.decompress(body)
        elif encoding == "deflate":
            body = zlib.decompress(body)
        if self.status != 200:
            return FakeResponse(self.status, b"refused by the test")
        self.received.append(ExportTraceServiceRequest.FromString(body))
        answer = ExportTraceServiceResponse().SerializeToString()
        return FakeResponse(200, answer, headers={"Content-Type": "application/x-protobuf"})

    @property
    def spans(self) -> list[Span]:
        """Every span received, in arrival order."""
        return [
            span
            for request in self.received
            for rs in request.resource_spans
            for ss in rs.scope_spans
            for span in ss.spans
        ]

    @property
    def endpoint(self) -> str:
        """The base URL to export to (the exporter adds ``/v1/traces``)."""
        return self.url
