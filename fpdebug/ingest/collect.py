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

**Bodies are not held in memory.** A body is spooled to an anonymous temporary file in ``DIR``
(gunzipped chunk by chunk into a second one), checked whole by
:func:`fpdebug.ingest.otlp_stream.plan`, then read again span by span: memory holds one trace of
the request at a time, and the verbatim line is written in pieces.

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

import io
import os
import tempfile
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any, Literal

import orjson
from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from fpdebug.errors import FpdebugError
from fpdebug.ingest import otlp_stream
from fpdebug.ingest.otlp import NOT_RECORDED, service_name, write_atomically
from fpdebug.ingest.otlp_build import RunBuilder, SeqCounter, run_id_of
from fpdebug.ingest.otlp_decode import OtlpDecodeError, OtlpLog, OtlpSpan, normalise_ids
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
    "plan_body",
    "raw_json_pieces",
    "spool_body",
]

DEFAULT_MAX_BODY = 16 << 20
"""The default body size limit (16 MiB), before and after decompression."""

RAW_FILE = "received.otlp.jsonl"
"""The verbatim log of every accepted request, in ``--dir``."""

_CHUNK = 1 << 20

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


def spool_body(
    rfile: io.BufferedIOBase | IO[bytes],
    length: int,
    *,
    directory: Path,
    content_encoding: str = "",
    limit: int = DEFAULT_MAX_BODY,
) -> IO[bytes]:
    """Copy a request body of ``length`` bytes to an anonymous temporary file in ``directory``, gunzipped.

    The body is never held in memory: it goes to disk in chunks (``directory`` is on disk, unlike
    a tmpfs ``/tmp``), and a gzip body is inflated chunk by chunk into a second file, refused once
    its output passes ``limit``. The caller closes the file.

    Raises:
        BadRequest: A short body or bad gzip (400), too large once inflated (413), an unsupported
            Content-Encoding (415).
    """
    encoding = content_encoding.strip().lower()
    if encoding not in ("", "identity", "gzip"):
        raise BadRequest(415, f"unsupported Content-Encoding {content_encoding!r} (use gzip or none)")
    spool = tempfile.TemporaryFile(dir=directory)  # noqa: SIM115 - returned to the caller, closed on error
    try:
        left = length
        while left:
            chunk = rfile.read(min(left, _CHUNK))
            if not chunk:
                raise BadRequest(400, f"the body ended after {length - left} of its {length} bytes")
            spool.write(chunk)
            left -= len(chunk)
        if encoding == "gzip":
            spool.seek(0)
            inflated = tempfile.TemporaryFile(dir=directory)  # noqa: SIM115 - as spool
            try:
                _inflate_file(spool, inflated, limit)
            except BaseException:
                inflated.close()
                raise
            spool.close()
            spool = inflated
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return spool


def _inflate_file(source: IO[bytes], target: IO[bytes], limit: int) -> None:
    """Gunzip ``source`` into ``target``, refusing more than ``limit`` bytes of output (a bomb stays small)."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    written = 0
    try:
        while not inflater.eof:
            chunk = inflater.unconsumed_tail or source.read(_CHUNK)
            if not chunk:
                raise BadRequest(400, "the body is not valid gzip: it ends before its end of stream")
            data = inflater.decompress(chunk, _CHUNK)
            written += len(data)
            if written > limit:
                raise BadRequest(413, f"the body is over {limit} bytes once decompressed")
            target.write(data)
    except zlib.error as error:
        raise BadRequest(400, f"the body is not valid gzip: {error}") from error


def plan_body(signal: Signal, body: IO[bytes], *, content_type: str) -> otlp_stream.Plan:
    """Check a spooled body whole (every span parsed) and plan its reading, before anything is written.

    Raises:
        BadRequest: An unsupported media type (415), or a body that is not the request it should be (400).
    """
    media = content_type.split(";", 1)[0].strip().lower()
    encodings: dict[str, Literal["otlp-json", "otlp-protobuf"]] = {
        "application/x-protobuf": "otlp-protobuf",
        "application/json": "otlp-json",
    }
    encoding = encodings.get(media)
    if encoding is None:
        raise BadRequest(
            415, f"unsupported Content-Type {content_type!r} (use application/x-protobuf or application/json)"
        )
    try:
        return otlp_stream.plan(body, encoding, name="body", signal=signal, validate=True)
    except OtlpDecodeError as error:
        kind = "protobuf" if encoding == "otlp-protobuf" else "JSON"
        raise BadRequest(400, f"not a valid OTLP/{kind} {signal} request: {error}") from error


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
        body = io.BytesIO(message.SerializeToString())
        return self.accept_file(
            signal, body, otlp_stream.plan(body, "otlp-protobuf", name="request", signal=signal)
        )

    def accept_file(self, signal: Signal, body: IO[bytes], plan: otlp_stream.Plan) -> list[Path]:
        """Write one request, spooled to ``body`` and checked by :func:`plan_body`, durably.

        The verbatim line first (fsynced), then each trace once its last span in the request has
        been read (a trace's spans are ordered and mapped together): memory holds one trace of
        the request at a time, not the request.
        """
        with self.lock:
            self._append_raw(signal, body, plan)
            by_trace: dict[str, list[OtlpSpan]] = {}
            touched: list[Path] = []
            for ordinal, record in enumerate(otlp_stream.records(body, plan)):
                if isinstance(record, OtlpLog):
                    if record.span_id:
                        self._logs.setdefault(record.span_id, []).append(record)
                    continue
                by_trace.setdefault(record.trace_id, []).append(record)
                if ordinal in plan.ends:
                    touched.append(self._write_trace(record.trace_id, by_trace.pop(record.trace_id)))
            for trace_id, spans in by_trace.items():  # none, unless two spellings of one id
                touched.append(self._write_trace(trace_id, spans))
            return touched

    def _write_trace(self, trace_id: str, spans: list[OtlpSpan]) -> Path:
        """Map one trace's spans of a request and append them to its file (one fsync)."""
        spans.sort(key=lambda span: (span.end_ns, span.start_ns))
        trace = self._trace(trace_id, spans)
        events = [event for span in spans for event in trace.builder.feed(span)]
        if events:
            self._writer(trace_id, trace).append_many(events)  # policy "every": one fsync
        if trace.builder.ended:
            trace.writer.close()  # later spans of an ended run map to nothing
        return trace.path

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

    def _append_raw(self, signal: Signal, body: IO[bytes], plan: otlp_stream.Plan) -> None:
        """Append the request as one OTLP/JSON line, written piece by piece, then fsync.

        Should a write fail, the file is cut back to where the line began: no half line stays
        before the next one.
        """
        if self._raw_fd is None:
            path = self.directory / RAW_FILE
            created = not path.exists()
            self._raw_fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
            if created:
                _sync_directory(self.directory)
            else:
                _cut_partial_line(self._raw_fd)  # a line a kill interrupted, never acknowledged
        fd = self._raw_fd
        start = os.fstat(fd).st_size
        try:
            pending = bytearray()
            for piece in raw_json_pieces(signal, body, plan):
                pending += piece
                if len(pending) >= _CHUNK:
                    _write_all(fd, pending)
                    pending.clear()
            _write_all(fd, pending)
            os.fsync(fd)
        except BaseException:
            os.ftruncate(fd, start)
            raise

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


def raw_json_pieces(signal: Signal, body: IO[bytes], plan: otlp_stream.Plan) -> Iterator[bytes]:
    """The request as one line of OTLP/JSON (``MessageToDict``'s spelling), in pieces: never whole.

    Resources and scopes without a span or record are left out (they hold nothing to import).
    """
    outer, middle, leaf_key = (
        (b"resourceSpans", b"scopeSpans", b"spans")
        if signal == "traces"
        else (b"resourceLogs", b"scopeLogs", b"logRecords")
    )
    yield b'{"' + outer + b'":['
    at: tuple[int, int] | None = None
    for leaf in otlp_stream.leaves(body, plan):
        if at is None or at[0] != leaf.resource:
            if at is not None:
                yield b"]}]},"
            resource = plan.resources[leaf.resource]
            yield b"{" + _members(
                otlp_stream.part(body, plan, leaf.resource), b"resource", resource.schema_url
            )
            yield b'"' + middle + b'":['
        elif at[1] != leaf.scope:
            yield b"]},"
        if at != (leaf.resource, leaf.scope):
            scope = plan.resources[leaf.resource].scopes[leaf.scope]
            part = otlp_stream.part(body, plan, leaf.resource, leaf.scope)
            yield b"{" + _members(part, b"scope", scope.schema_url) + b'"' + leaf_key + b'":['
        else:
            yield b","
        at = (leaf.resource, leaf.scope)
        yield orjson.dumps(json_format.MessageToDict(leaf.message))
    yield (b"]}]}]}" if at is not None else b"]}") + b"\n"


def _members(message: Message, key: bytes, schema_url: str) -> bytes:
    """``"resource": {...}, "schemaUrl": "...",`` (each only when set), for a line being pieced together."""
    out = b""
    if message.ListFields():
        out += b'"' + key + b'":' + orjson.dumps(json_format.MessageToDict(message)) + b","
    if schema_url:
        out += b'"schemaUrl":' + orjson.dumps(schema_url) + b","
    return out


def _write_all(fd: int, data: bytes | bytearray) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _cut_partial_line(fd: int) -> None:
    """Cut the file after its last newline: what follows is a line whose write a kill interrupted."""
    size = os.fstat(fd).st_size
    end = size
    while end > 0:
        start = max(end - _CHUNK, 0)
        chunk = os.pread(fd, end - start, start)
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            end = start + newline + 1
            break
        end = start
    if end != size:
        os.ftruncate(fd, end)


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
        content_type = self.headers.get("Content-Type", "")
        collector = self.server.collector
        body: IO[bytes] | None = None
        try:
            body = spool_body(
                self.rfile,
                length,
                directory=collector.directory,
                content_encoding=self.headers.get("Content-Encoding", ""),
                limit=limit,
            )
            collector.accept_file(signal, body, plan_body(signal, body, content_type=content_type))
        except BadRequest as error:
            self._error(error.status, str(error))
            return
        except (OSError, FpdebugError) as error:
            self._error(503, f"could not write the data durably: {error}")  # the exporter retries
            return
        finally:
            if body is not None:
                body.close()
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
