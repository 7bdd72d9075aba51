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


class StallingCollector:
    """A hostile OTLP/HTTP endpoint on 127.0.0.1 (raw sockets, one thread per connection).

    ``trickle``: answers ``200 OK`` and then one header line a second, never ending the headers.
    ``huge-error``: answers ``500`` with a ``body_size``-byte body, and counts the bytes it got out.
    """

    def __init__(self, mode: str, *, body_size: int = 200 * 1024 * 1024) -> None:
        import socket
        import threading

        self.mode = mode
        self.body_size = body_size
        self.requests = 0
        """How many requests arrived."""
        self.body_bytes_sent = 0
        """Bytes of the error body the client accepted before it hung up."""
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def endpoint(self) -> str:
        """The base URL to export to."""
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def __enter__(self) -> StallingCollector:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._listener.close()

    def _serve(self) -> None:
        import threading

        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection) -> None:  # type: ignore[no-untyped-def]

        with connection:
            connection.settimeout(5)
            try:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += connection.recv(65536)
                head, _, body = data.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                while len(body) < length:
                    body += connection.recv(65536)
                self.requests += 1
                if self.mode == "trickle":
                    connection.sendall(b"HTTP/1.1 200 OK\r\n")
                    for number in range(120):
                        if self._stop.wait(1.0):
                            return
                        connection.sendall(b"X-Slow-%d: still here\r\n" % number)
                    return
                connection.sendall(
                    b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\n"
                    b"Content-Length: %d\r\n\r\n" % self.body_size
                )
                chunk = b"x" * 65536
                while self.body_bytes_sent < self.body_size and not self._stop.is_set():
                    connection.sendall(chunk)
                    self.body_bytes_sent += len(chunk)
            except OSError:
                return  # the client hung up: what the tests want
