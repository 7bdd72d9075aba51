"""``fpdebug collect``: an OTLP/HTTP receiver that writes each incoming trace as an fpdebug trace.

Endpoints: ``POST /v1/traces`` and ``POST /v1/logs``, bodies in OTLP/protobuf
(``application/x-protobuf``) or OTLP/JSON (``application/json``), optionally gzip-compressed
(``Content-Encoding: gzip``). Parsing is opentelemetry-proto's (no hand-written protobuf).

**What is written.** Each OTel trace becomes ``DIR/otlp-<trace id>.fptrace.jsonl``, appended to as
its spans arrive (mapped as :mod:`fpdebug.ingest.otlp_build` says; a turn and the run end when the
trace's root span arrives), so ``fpdebug view --follow`` on that file shows the run live. Every
accepted request is also appended, as one OTLP/JSON line, to ``DIR/received.otlp.jsonl``: the
verbatim record, from which ``fpdebug import`` can rebuild every trace, with log records that
arrived after their span merged.

**Durability.** A request is answered 200 only after its lines are written and fsynced (the trace
file with the trace writer's ``every`` policy, the raw file with ``fsync``, a new file's directory
too): a kill after the 200 loses nothing. A body that does not parse gets 400 and nothing of it is
written; a body over the size limit (compressed or not) gets 413.

**HTTP server.** The standard library's :class:`http.server.ThreadingHTTPServer`: maintained with
CPython, no dependency to install, and enough for a local receiver that one or a few exporters
post batches to (each request is parsed and written under one lock anyway, since every write must
be durable before its answer). It binds to loopback unless told otherwise.
"""

from __future__ import annotations

import os
import threading
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

import orjson
from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from fpdebug.errors import FpdebugError
from fpdebug.ingest.otlp import NOT_RECORDED, service_name, write_atomically
from fpdebug.ingest.otlp_build import RunBuilder, SeqCounter, run_id_of
from fpdebug.ingest.otlp_decode import OtlpLog, OtlpSpan, logs_of, normalise_ids, spans_of
from fpdebug.ingest.otlp_genai import classify
from fpdebug.trace.schema import ImportSource, TraceHeader
from fpdebug.trace.writer import TraceWriter, dump_record

__all__ = [
    "DEFAULT_MAX_BODY",
    "RAW_FILE",
    "BadRequest",
    "Collector",
    "CollectorServer",
    "decode_body",
    "make_server",
]

DEFAULT_MAX_BODY = 16 << 20
"""The default body size limit (16 MiB), before and after decompression."""

RAW_FILE = "received.otlp.jsonl"
"""The verbatim log of every accepted request, in ``--dir``."""

Signal = Literal["traces", "logs"]


class BadRequest(FpdebugError):
    """A body the collector refuses; ``status`` is the HTTP answer (400, 413, 415)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _inflate(body: bytes, limit: int) -> bytes:
    """Gunzip ``body``, refusing more than ``limit`` bytes of output (a small bomb stays small)."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        data = inflater.decompress(body, limit + 1)
    except zlib.error as error:
        raise BadRequest(400, f"the body is not valid gzip: {error}") from error
    if len(data) > limit or inflater.unconsumed_tail:
        raise BadRequest(413, f"the body is over {limit} bytes once decompressed")
    return data


def decode_body(
    signal: Signal,
    body: bytes,
    *,
    content_type: str,
    content_encoding: str = "",
    limit: int = DEFAULT_MAX_BODY,
) -> Message:
    """Parse one request body into its OTLP request message.

    Raises:
        BadRequest: Bad gzip (400), too large once inflated (413), an unsupported media type
            (415), or a body that is not the request it should be (400).
    """
    encoding = content_encoding.strip().lower()
    if encoding == "gzip":
        body = _inflate(body, limit)
    elif encoding not in ("", "identity"):
        raise BadRequest(415, f"unsupported Content-Encoding {content_encoding!r} (use gzip or none)")
    media = content_type.split(";", 1)[0].strip().lower()
    message: Message = ExportTraceServiceRequest() if signal == "traces" else ExportLogsServiceRequest()
    if media == "application/x-protobuf":
        try:
            message.ParseFromString(body)
        except DecodeError as error:
            raise BadRequest(400, f"not a valid OTLP/protobuf {signal} request: {error}") from error
        return message
    if media == "application/json":
        try:
            obj = orjson.loads(body)
            if not isinstance(obj, dict):
                raise BadRequest(400, f"not an OTLP/JSON {signal} request: the body is not a JSON object")
            json_format.ParseDict(normalise_ids(obj), message, ignore_unknown_fields=True)
        except orjson.JSONDecodeError as error:
            raise BadRequest(400, f"the body is not JSON: {error}") from error
        except (json_format.ParseError, ValueError, TypeError) as error:
            raise BadRequest(400, f"not a valid OTLP/JSON {signal} request: {error}") from error
        return message
    raise BadRequest(
        415, f"unsupported Content-Type {content_type!r} (use application/x-protobuf or application/json)"
    )


@dataclass
class _TraceFile:
    path: Path
    writer: TraceWriter
    builder: RunBuilder


@dataclass
class Collector:
    """Turns accepted requests into trace files in ``directory``; thread-safe (one lock)."""

    directory: Path
    """Where the traces go."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    max_open: int = 128
    """Trace files kept open at once; the least recently written beyond it are closed (and reopened)."""
    _traces: dict[str, _TraceFile] = field(default_factory=dict)
    _logs: dict[str, list[OtlpLog]] = field(default_factory=dict)
    _raw_fd: int | None = None

    def accept(self, signal: Signal, message: Message) -> list[Path]:
        """Write one decoded request durably; returns the trace files it appended to."""
        with self.lock:
            self._append_raw(message)
            if signal == "logs":
                assert isinstance(message, ExportLogsServiceRequest)
                for log in logs_of(message):
                    if log.span_id:
                        self._logs.setdefault(log.span_id, []).append(log)
                return []
            assert isinstance(message, ExportTraceServiceRequest)
            by_trace: dict[str, list[OtlpSpan]] = {}
            for span in spans_of(message):
                by_trace.setdefault(span.trace_id, []).append(span)
            touched = []
            for trace_id, spans in by_trace.items():
                spans.sort(key=lambda span: (span.end_ns, span.start_ns))
                trace = self._trace(trace_id, spans)
                events = [event for span in spans for event in trace.builder.feed(span)]
                if events:
                    self._writer(trace_id, trace).append_many(events)  # policy "every": one fsync
                touched.append(trace.path)
                if trace.builder.ended:
                    trace.writer.close()  # later spans of an ended run map to nothing
            return touched

    def _writer(self, trace_id: str, trace: _TraceFile) -> TraceWriter:
        """The trace's writer, reopened if it was closed to bound the open files (least recently used)."""
        self._traces[trace_id] = self._traces.pop(trace_id)  # most recently used last
        if trace.writer.closed:
            trace.writer = TraceWriter.resume(trace.path, durability="every")
        open_writers = [t for t in self._traces.values() if not t.writer.closed]
        for idle in open_writers[: max(len(open_writers) - self.max_open, 0)]:
            idle.writer.close()
        return trace.writer

    def close(self) -> None:
        """Close every open trace and the raw file."""
        with self.lock:
            for trace in self._traces.values():
                trace.writer.close()
            if self._raw_fd is not None:
                os.close(self._raw_fd)
                self._raw_fd = None

    def _append_raw(self, message: Message) -> None:
        line = orjson.dumps(json_format.MessageToDict(message)) + b"\n"
        if self._raw_fd is None:
            path = self.directory / RAW_FILE
            created = not path.exists()
            self._raw_fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
            if created:
                _sync_directory(self.directory)
        view = memoryview(line)
        while view:
            view = view[os.write(self._raw_fd, view) :]
        os.fsync(self._raw_fd)

    def _trace(self, trace_id: str, spans: list[OtlpSpan]) -> _TraceFile:
        known = self._traces.get(trace_id)
        if known is not None:
            return known
        path = self.directory / f"otlp-{trace_id}.fptrace.jsonl"
        number = 1
        while path.exists():  # a trace seen by an earlier collector: a file of its own
            number += 1
            path = self.directory / f"otlp-{trace_id}-{number}.fptrace.jsonl"
        from fpdebug import __version__

        scope = next((span.scope for span in spans if span.scope), None)
        header = TraceHeader(
            producer=f"fpdebug {__version__} collect",
            created=_now(),
            source=ImportSource(format="otlp", path=None, producer=scope, not_recorded=NOT_RECORDED),
        )
        write_atomically(path, dump_record(header))
        _sync_directory(self.directory)
        writer = TraceWriter.resume(path, durability="every")
        root = next((span for span in spans if not span.parent_span_id), spans[0])
        trace = _TraceFile(
            path,
            writer,
            RunBuilder(
                run_id=run_id_of(root),
                seq=SeqCounter(writer.next_seq),
                agent_hint=service_name(spans),
                # live, a span's ancestors may not have arrived: only the root ends the turn
                closes_turn=lambda span: not span.parent_span_id and classify(span) in ("agent", "other"),
                logs_for=lambda span_id: self._logs.pop(span_id, []),
            ),
        )
        self._traces[trace_id] = trace
        return trace


def _now() -> datetime:
    return datetime.now(UTC)


def _sync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class CollectorServer(ThreadingHTTPServer):
    """The HTTP server, holding its :class:`Collector` and the body limit."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], collector: Collector, *, max_body: int) -> None:
        super().__init__(address, _Handler)
        self.collector = collector
        """Where accepted requests go."""
        self.max_body = max_body
        """The body size limit, in bytes."""


class _Handler(BaseHTTPRequestHandler):
    server: CollectorServer
    protocol_version = "HTTP/1.1"
    server_version = "fpdebug-collect"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # one line per request would drown the terminal; errors are answered to the sender

    def _answer(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        if status >= 400:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: int, message: str) -> None:
        self._answer(status, message.encode("utf-8", "replace") + b"\n", "text/plain; charset=utf-8")

    def do_GET(self) -> None:
        self._error(405, "fpdebug collect takes POST /v1/traces and POST /v1/logs (OTLP/HTTP)")

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        signal: Signal | None = {"/v1/traces": "traces", "/v1/logs": "logs"}.get(path)  # type: ignore[assignment]
        if signal is None:
            self._error(404, f"no such endpoint {path!r}: use /v1/traces or /v1/logs")
            return
        length_text = self.headers.get("Content-Length")
        if length_text is None or not length_text.isdigit():
            self._error(411, "a Content-Length is required")
            return
        length = int(length_text)
        limit = self.server.max_body
        if length > limit:
            self._error(413, f"the body is {length} bytes, over the limit of {limit}")
            return
        body = self.rfile.read(length)
        content_type = self.headers.get("Content-Type", "")
        try:
            message = decode_body(
                signal,
                body,
                content_type=content_type,
                content_encoding=self.headers.get("Content-Encoding", ""),
                limit=limit,
            )
            self.server.collector.accept(signal, message)
        except BadRequest as error:
            self._error(error.status, str(error))
            return
        except (OSError, FpdebugError) as error:
            self._error(503, f"could not write the data durably: {error}")  # the exporter retries
            return
        if content_type.startswith("application/json"):
            self._answer(200, b"{}", "application/json")
        else:
            self._answer(200, b"", "application/x-protobuf")  # an empty Export*ServiceResponse


def make_server(
    directory: Path, *, host: str = "127.0.0.1", port: int = 4318, max_body: int = DEFAULT_MAX_BODY
) -> CollectorServer:
    """A bound (not yet serving) collector writing into ``directory`` (created ``0700`` if missing).

    Raises:
        OSError: The address cannot be bound, or the directory cannot be created.
    """
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    return CollectorServer((host, port), Collector(directory), max_body=max_body)
