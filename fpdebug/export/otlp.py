"""Spans → OTLP: SDK ``ReadableSpan`` s, the protobuf request, its OTLP/JSON form, and OTLP/HTTP delivery.

One path for both outputs: :class:`~fpdebug.export.spans.SpanRecord` s become OpenTelemetry SDK
``ReadableSpan`` s, which the SDK's OTLP encoder turns into an ``ExportTraceServiceRequest``. The
OTLP/HTTP exporter (``OTLPSpanExporter``) sends exactly that request; the file export writes the
same request in the OTLP/JSON encoding, which differs from protobuf's canonical JSON mapping in one
respect this module handles: trace and span ids are hex strings, not base64. Everything else is the
canonical mapping (lowerCamelCase keys, enums as integers, 64-bit integers as decimal strings,
attribute values as ``AnyValue`` objects such as ``{"stringValue": …}``, ``{"intValue": "3"}``,
``{"arrayValue": {"values": […]}}``, ``{"kvlistValue": {"values": […]}}``).

The resource is built from explicit attributes only (``service.name``, the trace's producer), never
from the environment, so a file export is the same on every machine. Headers for the HTTP exporter
(a collector's API key) come from ``--header`` or from ``OTEL_EXPORTER_OTLP_HEADERS`` /
``OTEL_EXPORTER_OTLP_TRACES_HEADERS``; they are never written anywhere.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

import requests
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from fpdebug import __version__
from fpdebug.errors import ExportError
from fpdebug.export.otlp_text import ItemRedactor, span_json
from fpdebug.export.spans import AttributeValue, SpanRecord, attribute
from fpdebug.trace.redact import default_redactor

__all__ = [
    "ANSWER_LIMIT",
    "DEFAULT_SERVICE_NAME",
    "DEFAULT_TIMEOUT",
    "ENDPOINT_ENV",
    "SCHEMA_URL",
    "SCOPE_NAME",
    "TRACES_ENDPOINT_ENV",
    "TRACES_PATH",
    "DeadlineExporter",
    "OtlpJsonWriter",
    "SdkLog",
    "SpanSender",
    "capture_sdk_log",
    "endpoint_from_env",
    "export_request",
    "make_exporter",
    "otlp_json",
    "request_to_json",
    "resource_for",
    "send_spans",
    "to_readable_spans",
    "traces_endpoint",
    "undelivered_reason",
]

DEFAULT_SERVICE_NAME = "fpdebug"
"""The ``service.name`` of exported spans unless the caller names another."""

SCOPE_NAME = "fpdebug.export"
"""The instrumentation scope every exported span carries."""

TRACES_PATH = "/v1/traces"
"""The OTLP/HTTP traces path, appended to a base URL."""

SCHEMA_URL = "https://opentelemetry.io/schemas/1.37.0"
"""The semantic-conventions version the attributes follow (GenAI messages as JSON strings, cache_write)."""

ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
"""A base URL: ``/v1/traces`` is appended to it, whatever its path (the SDK's rule)."""

TRACES_ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
"""A full traces URL: used as given (the SDK's rule); it wins over :data:`ENDPOINT_ENV`."""

DEFAULT_TIMEOUT = 10.0
"""Seconds the HTTP exporter may spend on one request, retries included."""

ANSWER_LIMIT = 64 * 1024
"""Bytes of a collector's answer (an error page, usually) that are read; the rest is never downloaded."""

_BATCH = 512  # spans per OTLP/HTTP request: small enough for any collector's default body limit
_ID_FIELDS = ("traceId", "spanId", "parentSpanId")
_KINDS = {"internal": SpanKind.INTERNAL, "client": SpanKind.CLIENT}


def resource_for(*, service_name: str = DEFAULT_SERVICE_NAME, producer: str | None = None) -> Resource:
    """The resource of exported spans: ``service.name`` and the trace's producer (never the environment).

    Args:
        service_name: The ``service.name`` attribute.
        producer: The trace header's producer (``fpdebug 0.1.0``), as ``fpdebug.trace.producer``.
    """
    attributes: dict[str, str] = {"service.name": service_name}
    if producer:
        attributes["fpdebug.trace.producer"] = producer
    return Resource(attributes, schema_url=SCHEMA_URL)


def _scope() -> InstrumentationScope:
    return InstrumentationScope(SCOPE_NAME, __version__, schema_url=SCHEMA_URL)


def to_readable_spans(spans: Sequence[SpanRecord], *, resource: Resource | None = None) -> list[ReadableSpan]:
    """Build OpenTelemetry SDK spans (what any ``SpanExporter`` accepts) from span records.

    Args:
        spans: The records (:func:`~fpdebug.export.spans.build_spans`).
        resource: Their resource (:func:`resource_for` by default). Spans sharing one resource
            object are encoded in one ``ResourceSpans``.
    """
    resource = resource if resource is not None else resource_for()
    redact = default_redactor().redact_value  # every export (file, collector, stream) passes here
    scope = _scope()
    sampled = TraceFlags(TraceFlags.SAMPLED)
    out: list[ReadableSpan] = []
    for span in spans:
        context = SpanContext(span.trace_id, span.span_id, is_remote=False, trace_flags=sampled)
        parent = (
            SpanContext(span.trace_id, span.parent_span_id, is_remote=False, trace_flags=sampled)
            if span.parent_span_id is not None
            else None
        )
        _check_times(span)
        status = Status(StatusCode.UNSET)
        if span.status == "error":
            status = Status(StatusCode.ERROR, redact(span.status_message))
        events = [Event(e.name, redact(_attributes(e.attributes)), timestamp=e.time_ns) for e in span.events]
        out.append(
            ReadableSpan(
                name=span.name,
                context=context,
                parent=parent,
                resource=resource,
                attributes=redact(_attributes(span.attributes)),
                events=events,
                kind=_KINDS[span.kind],
                status=status,
                start_time=span.start_ns,
                end_time=span.end_ns,
                instrumentation_scope=scope,
            )
        )
    return out


_UINT64_MAX = 2**64 - 1


def _attributes(attributes: Mapping[str, object]) -> dict[str, AttributeValue]:
    # Every value through the one path that knows OTLP's limits: an integer beyond int64 becomes
    # text (the SDK would log a traceback and drop it), whoever set it.
    return {key: attribute(value) for key, value in attributes.items()}


def _check_times(span: SpanRecord) -> None:
    times = [span.start_ns, span.end_ns, *(event.time_ns for event in span.events)]
    for value in times:
        if not 0 <= value <= _UINT64_MAX:
            raise ExportError(
                f"span {span.name!r}: time {value} ns since 1970 cannot be encoded in OTLP "
                "(unsigned 64 bits: 1970 to 2554); `fpdebug validate` reports the record's time"
            )


def export_request(
    spans: Sequence[SpanRecord], *, service_name: str = DEFAULT_SERVICE_NAME, producer: str | None = None
) -> ExportTraceServiceRequest:
    """The OTLP ``ExportTraceServiceRequest`` for the spans, as the SDK's encoder builds it."""
    resource = resource_for(service_name=service_name, producer=producer)
    return encode_spans(to_readable_spans(spans, resource=resource))


def _hex_ids(node: object) -> None:
    # The OTLP/JSON encoding's one departure from protobuf's JSON mapping: ids are hex, not base64.
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _ID_FIELDS and isinstance(value, str):
                node[key] = base64.b64decode(value).hex()
            else:
                _hex_ids(value)
    elif isinstance(node, list):
        for item in node:
            _hex_ids(item)


def request_to_json(request: ExportTraceServiceRequest) -> dict[str, object]:
    """A request in the OTLP/JSON encoding (hex ids, integer enums, int64 as strings, camelCase keys)."""
    document: dict[str, object] = MessageToDict(request, use_integers_for_enums=True)
    _hex_ids(document)
    return document


def otlp_json(
    spans: Sequence[SpanRecord], *, service_name: str = DEFAULT_SERVICE_NAME, producer: str | None = None
) -> dict[str, object]:
    """The spans as one OTLP/JSON ``ExportTraceServiceRequest`` (what ``--format otlp-json`` writes)."""
    return request_to_json(export_request(spans, service_name=service_name, producer=producer))


_SPANS_MARK = "@@fpdebug-spans@@"


class OtlpJsonWriter:
    """Write one OTLP/JSON ``ExportTraceServiceRequest`` batch by batch, never holding it whole.

    The text is byte for byte ``json.dumps(otlp_json(spans), indent=2, ensure_ascii=True)`` of all
    the batches' spans together: the document's frame (resource, scope, schema URLs) is written from
    the first batch, each span is encoded with its batch and written at its depth, and the frame is
    closed by :meth:`close`. With no span at all the document is ``{}``, as the encoder makes it.

    Args:
        write: Called with each piece of text, in order.
        service_name: The ``service.name`` resource attribute.
        producer: The trace's producer, as ``fpdebug.trace.producer``.
        redact_json: Applied to each piece that is a JSON document of its own (the frame, each
            span), so a crafted producer or a secret the attributes' redaction missed is caught
            without a pass over the whole document.
    """

    def __init__(
        self,
        write: Callable[[str], object],
        *,
        service_name: str = DEFAULT_SERVICE_NAME,
        producer: str | None = None,
        redact_json: Callable[[str], str] | None = None,
    ) -> None:
        self._write = write
        self._resource = resource_for(service_name=service_name, producer=producer)
        self._redact = redact_json or _same
        self._tail: str | None = None
        self._indent = ""
        self._redact_value = ItemRedactor(default_redactor().redact_value)  # what to_readable_spans applies
        self.spans = 0
        """Spans written so far."""

    def write(self, spans: Sequence[SpanRecord]) -> None:
        """Append the spans to the document (the first call also writes its frame)."""
        if not spans:
            return
        separator = ",\n" + self._indent
        if self._tail is None:
            self._write(self._frame(spans[0]))
            separator = ""
        for span in spans:
            _check_times(span)
            piece = self._redact(span_json(span, self._redact_value))
            self._write(separator + piece.replace("\n", "\n" + self._indent))
            separator = ",\n" + self._indent
            self.spans += 1

    def _frame(self, first: SpanRecord) -> str:
        """The document up to its first span, through the SDK's encoder (once: the spans then come
        from :func:`~fpdebug.export.otlp_text.span_json`, which writes what it would, faster)."""
        document = request_to_json(encode_spans(to_readable_spans([first], resource=self._resource)))
        resource_spans: list[dict[str, object]] = document["resourceSpans"]  # type: ignore[assignment]
        scopes: list[dict[str, object]] = resource_spans[0]["scopeSpans"]  # type: ignore[assignment]
        if len(resource_spans) != 1 or len(scopes) != 1:  # one resource and one scope, always
            raise ExportError("internal error: a batch of spans encoded to more than one resource or scope")
        scopes[0]["spans"] = [_SPANS_MARK]
        frame = self._redact(json.dumps(document, indent=2, ensure_ascii=True))
        head, _, self._tail = frame.partition(json.dumps(_SPANS_MARK))
        self._indent = head[head.rindex("\n") + 1 :]
        return head

    def close(self) -> None:
        """End the document (and its last line)."""
        self._write(("{}" if self._tail is None else self._tail) + "\n")


def _same(text: str) -> str:
    return text


def traces_endpoint(url: str, *, as_given: bool = False) -> str:
    """The OTLP/HTTP traces URL for ``url``, a base URL as ``OTEL_EXPORTER_OTLP_ENDPOINT`` is.

    ``/v1/traces`` is appended to the path (``http://host:4318`` → ``http://host:4318/v1/traces``,
    Langfuse's ``https://cloud.langfuse.com/api/public/otel`` → ``…/api/public/otel/v1/traces``),
    unless the path already ends with it: a full traces URL given to ``--endpoint`` still works.
    With ``as_given`` (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) the URL is used exactly as given.

    Raises:
        ExportError: Not an ``http``/``https`` URL with a host.
    """
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ExportError(f"not an OTLP/HTTP endpoint: {url!r} (expected http://HOST:PORT or https://…)")
    path = parts.path
    if not as_given and not path.rstrip("/").endswith(TRACES_PATH):
        path = path.rstrip("/") + TRACES_PATH
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def endpoint_from_env(environ: Mapping[str, str]) -> str | None:
    """The traces URL the OTel environment names, by the SDK's rules, or ``None`` when it names none.

    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is used as given; else ``OTEL_EXPORTER_OTLP_ENDPOINT`` is
    a base URL that gets ``/v1/traces``.
    """
    traces = environ.get(TRACES_ENDPOINT_ENV, "").strip()
    if traces:
        return traces_endpoint(traces, as_given=True)
    base = environ.get(ENDPOINT_ENV, "").strip()
    if base:
        parts = urlsplit(base)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return traces_endpoint(base)  # raises the usual message
        return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") + TRACES_PATH, parts.query, ""))
    return None


def make_exporter(
    endpoint: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    as_given: bool = False,
) -> DeadlineExporter:
    """The SDK's OTLP/HTTP (protobuf) span exporter for ``endpoint`` (see :func:`traces_endpoint`).

    It reads at most :data:`ANSWER_LIMIT` bytes of an answer, and each export ends within
    ``timeout`` seconds of wall-clock time (:class:`DeadlineExporter`).

    Args:
        endpoint: A base or full traces URL.
        headers: Extra request headers; ``None`` lets the SDK read ``OTEL_EXPORTER_OTLP_HEADERS``.
        timeout: Seconds per request, retries included.
        as_given: Use ``endpoint`` exactly as given (a ``..._TRACES_ENDPOINT`` URL).
    """
    return DeadlineExporter(
        OTLPSpanExporter(
            endpoint=traces_endpoint(endpoint, as_given=as_given),
            headers=headers,
            timeout=timeout,
            session=_BoundedSession(),
        ),
        timeout,
    )


class _BoundedSession(requests.Session):
    """A session that reads at most :data:`ANSWER_LIMIT` bytes of an answer (a 200 MB error page costs 64 KB)."""

    def request(
        self, method: str | bytes, url: str | bytes, *args: object, **kwargs: object
    ) -> requests.Response:
        kwargs["stream"] = True  # headers only: the body is read below, up to the limit
        response = super().request(method, url, *args, **kwargs)  # type: ignore[arg-type]
        try:
            response._content = response.raw.read(ANSWER_LIMIT, decode_content=True) or b""
        except Exception:  # a torn answer body: its status is what matters
            response._content = b""
        finally:
            response.close()
        return response


class DeadlineExporter(SpanExporter):
    """Wraps a span exporter so that no :meth:`export` call outlives a wall-clock deadline.

    The SDK's timeout bounds each socket read, not the request: a server that answers ``200`` and
    then sends one header line a second holds it for as long as it likes. Here each export runs in
    a daemon thread that is abandoned (and its spans reported as not delivered) when the deadline
    passes. :meth:`start_deadline` lets a caller share one budget across many exports: the time
    spent inside them, summed, may not pass ``timeout`` (time between exports, reading a trace, is
    not counted).

    Args:
        inner: The exporter doing the work.
        timeout: Seconds an export may take, when no shared budget is set.
    """

    def __init__(self, inner: SpanExporter, timeout: float) -> None:
        self.inner = inner
        """The wrapped exporter."""
        self.timeout = timeout
        """Seconds an export (or, after :meth:`start_deadline`, all of them together) may take."""
        self.timed_out = False
        """Whether an export was abandoned at its deadline."""
        self._budget: float | None = None

    def start_deadline(self) -> None:
        """From now on every export draws on one budget of :attr:`timeout` seconds."""
        self._budget = self.timeout

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Export through the wrapped exporter; ``FAILURE`` when the deadline passes first."""
        remaining = self._budget if self._budget is not None else self.timeout
        if remaining <= 0:
            self.timed_out = True
            logging.getLogger("opentelemetry.fpdebug").warning(self.timeout_message())
            return SpanExportResult.FAILURE
        outcome: list[SpanExportResult] = []

        def run() -> None:
            try:
                outcome.append(self.inner.export(spans))
            except Exception:  # reported as a failed export
                outcome.append(SpanExportResult.FAILURE)

        began = time.monotonic()
        worker = threading.Thread(target=run, name="fpdebug-otlp-export", daemon=True)
        worker.start()
        worker.join(remaining)
        if self._budget is not None:
            self._budget -= time.monotonic() - began
        if not outcome:
            self.timed_out = True
            logging.getLogger("opentelemetry.fpdebug").warning(self.timeout_message())
            return SpanExportResult.FAILURE
        return outcome[0]

    def timeout_message(self) -> str:
        """Why an abandoned export failed."""
        return f"no complete answer within the {self.timeout:g} s timeout"

    def shutdown(self) -> None:
        """Shut the wrapped exporter down (its abandoned requests stay with their daemon threads)."""
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush the wrapped exporter."""
        return self.inner.force_flush(timeout_millis)


class SdkLog(logging.Handler):
    """The warnings and errors the OpenTelemetry SDK logged, kept to say why an export failed.

    The SDK reports failures only through logging, and its last line is generic ("Failed to export
    spans batch due to timeout, max retries or shutdown") while its first one names the cause
    (``[Errno 111] Connection refused``): :attr:`reason` joins the two.
    """

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.first: str | None = None
        """The first warning or error logged."""
        self.last: str | None = None
        """The last warning or error logged."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a malformed log record must not hide the export's own failure
            message = str(record.msg)
        if self.first is None:
            self.first = message
        self.last = message

    @property
    def reason(self) -> str | None:
        """Why delivery failed, in one line: the last message, with the first one's cause when it differs."""
        if self.last is None:
            return None
        cause = _short_cause(self.first or "")
        if not cause or cause in self.last:
            return self.last
        return f"{self.last} (first error: {cause})"


def _short_cause(message: str) -> str:
    # urllib3 buries the OS error in a long repr; the errno text is what a person needs.
    errno_text = _ERRNO.search(message)
    if errno_text:
        return errno_text.group(0)
    return message if len(message) <= 300 else message[:299] + "…"


def undelivered_reason(endpoint: str, log: SdkLog, *, connect_timeout: float = 2.0) -> str | None:
    """Why spans did not reach ``endpoint``: what the SDK logged, and whether anything answers there.

    With a short timeout the SDK logs only its generic last line; a plain connection attempt then
    tells "nothing listens at that address" apart from "the collector answered with an error".
    """
    reason = log.reason
    if reason and _ERRNO.search(reason):
        return reason
    unreachable = _connect_error(endpoint, connect_timeout)
    if unreachable is None:
        return reason
    return f"{reason} ({unreachable})" if reason else unreachable


def _connect_error(endpoint: str, timeout: float) -> str | None:
    parts = urlsplit(traces_endpoint(endpoint, as_given=True))  # only the host and port matter here
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None  # a malformed port: the exporter's own message says more
    host = parts.hostname or ""
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as error:
        return f"cannot connect to {host}:{port}: {error.strerror or error}"
    return None


_ERRNO = re.compile(r"\[Errno -?\d+\] [^'\")\]]+")


@contextmanager
def capture_sdk_log() -> Iterator[SdkLog]:
    """Catch what the OpenTelemetry SDK logs while the block runs, and keep it off the terminal.

    The SDK's lines (with tracebacks) would otherwise land on stderr, or on the debugger's screen;
    the caller reports :attr:`SdkLog.reason` in its own words instead.
    """
    logger = logging.getLogger("opentelemetry")
    handler = SdkLog()
    propagate = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


class SpanSender:
    """Send spans to an OTLP/HTTP collector batch by batch, as a trace is read, under one time limit.

    Each :meth:`send` delivers its spans in requests of at most 512; after the first refused or
    undelivered batch nothing more is sent, but the spans are still counted, so :meth:`close` can
    say how many of how many were delivered. The ``timeout`` bounds the time spent sending, summed
    over every batch (time spent reading the trace between batches does not count).

    Args: as :func:`send_spans`.
    """

    def __init__(
        self,
        endpoint: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        service_name: str = DEFAULT_SERVICE_NAME,
        producer: str | None = None,
        exporter: SpanExporter | None = None,
        as_given: bool = False,
    ) -> None:
        self.target = traces_endpoint(endpoint, as_given=as_given)
        """The traces URL."""
        self._own = exporter is None
        if exporter is None:
            exporter = make_exporter(self.target, headers=headers, timeout=timeout, as_given=True)
        self._exporter = exporter
        self._resource = resource_for(service_name=service_name, producer=producer)
        if isinstance(exporter, DeadlineExporter):
            exporter.start_deadline()  # one budget for the whole send, not one per batch or read
        self.sent = 0
        """Spans delivered."""
        self.total = 0
        """Spans handed to :meth:`send`."""
        self._failure: tuple[int, int, str | None] | None = None

    def send(self, spans: Sequence[SpanRecord]) -> None:
        """Deliver the spans (or only count them, once a batch has failed)."""
        for start in range(0, len(spans), _BATCH):
            batch = spans[start : start + _BATCH]
            first = self.total + 1
            self.total += len(batch)
            if self._failure is None:
                self._send(to_readable_spans(batch, resource=self._resource), first)

    def _send(self, batch: list[ReadableSpan], first: int) -> None:
        exporter = self._exporter
        with capture_sdk_log() as log:
            if exporter.export(batch) is SpanExportResult.SUCCESS:
                self.sent += len(batch)
                return
            if isinstance(exporter, DeadlineExporter) and exporter.timed_out:
                reason: str | None = exporter.timeout_message()
            else:
                reason = undelivered_reason(self.target, log)
        self._failure = (first, first + len(batch) - 1, reason)

    def abort(self) -> None:
        """Shut the exporter down (when it is this sender's own) without a verdict: the send was given up."""
        if self._own:
            self._exporter.shutdown()

    def close(self) -> int:
        """Shut the exporter down (when it is this sender's own); return the spans delivered.

        Raises:
            ExportError: A batch was refused or could not be delivered (it says which, and why).
        """
        self.abort()
        if self._failure is not None:
            first, last, reason = self._failure
            why = f": {reason}" if reason else ""
            raise ExportError(
                f"{self.target} did not accept spans {first}-{last} of {self.total} "
                f"({self.sent} delivered, {self.total - self.sent} not){why}"
            )
        return self.sent


def send_spans(
    spans: Iterable[SpanRecord],
    endpoint: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    service_name: str = DEFAULT_SERVICE_NAME,
    producer: str | None = None,
    exporter: SpanExporter | None = None,
    as_given: bool = False,
) -> int:
    """Send the spans to an OTLP/HTTP collector (Jaeger, Tempo, Phoenix, Langfuse…) with the SDK's exporter.

    Args:
        spans: The records (any iterable: they are converted and sent a batch at a time).
        endpoint: A base URL (``http://localhost:4318``) or a full traces URL.
        headers: Extra request headers (an API key); ``None`` reads ``OTEL_EXPORTER_OTLP_HEADERS``.
        timeout: Seconds the whole send may take (every batch, retry and read, summed).
        service_name: The ``service.name`` resource attribute.
        producer: The trace's producer, as ``fpdebug.trace.producer``.
        exporter: Use this exporter instead of a new ``OTLPSpanExporter`` (tests).
        as_given: Use ``endpoint`` exactly as given, not as a base URL (see :func:`traces_endpoint`).

    Returns:
        How many spans were delivered.

    Raises:
        ExportError: The endpoint is invalid, or a batch was refused or could not be delivered.
    """
    sender = SpanSender(
        endpoint,
        headers=headers,
        timeout=timeout,
        service_name=service_name,
        producer=producer,
        exporter=exporter,
        as_given=as_given,
    )
    batch: list[SpanRecord] = []
    try:
        for span in spans:
            batch.append(span)
            if len(batch) == _BATCH:
                sender.send(batch)
                batch = []
        sender.send(batch)
    except BaseException:
        sender.abort()
        raise
    return sender.close()
