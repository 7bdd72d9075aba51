"""OTLP bytes → neutral spans and log records: every encoding a producer or a collector writes.

Accepted encodings, told apart by content (never by file extension):

- OTLP/JSON: one ``ExportTraceServiceRequest`` (``resourceSpans``) or ``ExportLogsServiceRequest``
  (``resourceLogs``). Ids may be hex (the OTLP/HTTP JSON spec, collectors) or base64 (what
  ``google.protobuf.json_format`` writes for ``bytes``): hex of the right length (32 characters for
  a trace id, 16 for a span id) is read as hex, anything else as base64.
- OTLP/protobuf: the binary body an ``OTLPSpanExporter`` POSTs (or a logs request).
- JSON Lines of either: one request per line, as a collector's ``file`` exporter writes. Read line
  by line, so memory stays bounded by the largest line, not the file.

Parsing goes through ``opentelemetry-proto`` and ``google.protobuf.json_format``: no hand-written
protobuf. The result is plain dataclasses (:class:`OtlpSpan`, :class:`OtlpLog`) with attribute
values already turned into Python values, so the GenAI readers never see protobuf types.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any, Literal, TypeAlias

import orjson
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from fpdebug.errors import FpdebugError

__all__ = [
    "OtlpDecodeError",
    "OtlpEncoding",
    "OtlpLog",
    "OtlpSpan",
    "decode_json_object",
    "decode_protobuf",
    "detect_encoding",
    "iter_file",
    "json_kind",
    "log_from_proto",
    "logs_of",
    "normalise_ids",
    "resource_attributes",
    "scope_name",
    "span_from_proto",
    "spans_of",
]

OtlpEncoding: TypeAlias = Literal["otlp-json", "otlp-jsonl", "otlp-protobuf"]
"""How an OTLP file is encoded."""

_SNIFF = 4096
_HEX = re.compile(rb"^[0-9a-fA-F]*$")
_ID_FIELDS = {
    "traceId": 32,
    "spanId": 16,
    "parentSpanId": 16,
    "trace_id": 32,
    "span_id": 16,
    "parent_span_id": 16,
}


class OtlpDecodeError(FpdebugError):
    """The bytes are not OTLP (not JSON of a request, a truncated protobuf, a bad id)."""


@dataclass(slots=True)
class OtlpSpan:
    """One span, decoded: hex ids, ns times, attributes as Python values."""

    trace_id: str
    """32 hex digits."""
    span_id: str
    """16 hex digits."""
    parent_span_id: str
    """16 hex digits, or ``""`` for a root span."""
    name: str
    """The span name."""
    kind: int
    """The OTLP span kind (1 INTERNAL, 2 SERVER, 3 CLIENT…)."""
    start_ns: int
    """Start, ns since the epoch."""
    end_ns: int
    """End, ns since the epoch."""
    attributes: dict[str, Any]
    """Attribute values: str, bool, int, float, list or dict."""
    status_code: int = 0
    """0 UNSET, 1 OK, 2 ERROR."""
    status_message: str = ""
    """The status description."""
    events: list[tuple[str, int, dict[str, Any]]] = field(default_factory=list)
    """Span events: (name, time ns, attributes)."""
    scope: str = ""
    """The instrumentation scope's name and version (``pydantic-ai 2.68.0``)."""
    resource: dict[str, Any] = field(default_factory=dict)
    """The resource attributes (``service.name``…)."""
    dropped: int = 0
    """Attributes, events and links the producer says it dropped from this span (its limits)."""


@dataclass(slots=True)
class OtlpLog:
    """One log record, decoded (the legacy GenAI layout keeps message content in these)."""

    trace_id: str
    """32 hex digits, or ``""``."""
    span_id: str
    """16 hex digits, or ``""``."""
    time_ns: int
    """When it was observed (``timeUnixNano``, else ``observedTimeUnixNano``)."""
    event_name: str
    """``gen_ai.user.message``…: the ``event_name`` field, else the ``event.name`` attribute."""
    body: Any
    """The body as a Python value."""
    attributes: dict[str, Any]
    """The record's attributes."""


def any_value(value: AnyValue) -> Any:
    """An OTLP ``AnyValue`` as a Python value (bytes as base64 text)."""
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [any_value(item) for item in value.array_value.values]
    if which == "kvlist_value":
        return {item.key: any_value(item.value) for item in value.kvlist_value.values}
    if which == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    return getattr(value, which)


def _attributes(items: Iterable[KeyValue]) -> dict[str, Any]:
    return {item.key: any_value(item.value) for item in items}


def _scope_name(name: str, version: str) -> str:
    return f"{name} {version}".strip()


def span_from_proto(span: Span, scope: str, resource: dict[str, Any]) -> OtlpSpan:
    """One decoded ``Span`` message as an :class:`OtlpSpan` of ``scope`` and ``resource``."""
    return OtlpSpan(
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_span_id=span.parent_span_id.hex(),
        name=span.name,
        kind=int(span.kind),
        start_ns=int(span.start_time_unix_nano),
        end_ns=int(span.end_time_unix_nano),
        attributes=_attributes(span.attributes),
        status_code=int(span.status.code),
        status_message=span.status.message,
        events=[
            (event.name, int(event.time_unix_nano), _attributes(event.attributes)) for event in span.events
        ],
        scope=scope,
        resource=resource,
        dropped=int(span.dropped_attributes_count)
        + int(span.dropped_events_count)
        + int(span.dropped_links_count),
    )


def log_from_proto(record: LogRecord) -> OtlpLog:
    """One decoded ``LogRecord`` message as an :class:`OtlpLog`."""
    attributes = _attributes(record.attributes)
    return OtlpLog(
        trace_id=record.trace_id.hex(),
        span_id=record.span_id.hex(),
        time_ns=int(record.time_unix_nano or record.observed_time_unix_nano),
        event_name=record.event_name or str(attributes.get("event.name") or ""),
        body=any_value(record.body),
        attributes=attributes,
    )


def resource_attributes(resource: Resource) -> dict[str, Any]:
    """A ``Resource`` message's attributes as Python values."""
    return _attributes(resource.attributes)


def scope_name(scope: InstrumentationScope) -> str:
    """An instrumentation scope's name and version, as :attr:`OtlpSpan.scope` holds it."""
    return _scope_name(scope.name, scope.version)


def spans_of(request: ExportTraceServiceRequest) -> Iterator[OtlpSpan]:
    """The spans of a decoded traces request."""
    for resource_spans in request.resource_spans:
        resource = resource_attributes(resource_spans.resource)
        for scope_spans in resource_spans.scope_spans:
            scope = scope_name(scope_spans.scope)
            for span in scope_spans.spans:
                yield span_from_proto(span, scope, resource)


def logs_of(request: ExportLogsServiceRequest) -> Iterator[OtlpLog]:
    """The log records of a decoded logs request."""
    for resource_logs in request.resource_logs:
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                yield log_from_proto(record)


def normalise_ids(node: Any) -> Any:
    """Rewrite hex ids as base64 in place, since ``json_format`` reads every ``bytes`` field as base64."""
    if isinstance(node, dict):
        for key, value in node.items():
            size = _ID_FIELDS.get(key)
            if size is not None and isinstance(value, str):
                raw = value.encode("ascii", "replace")
                if len(raw) == size and _HEX.match(raw):
                    node[key] = base64.b64encode(binascii.unhexlify(raw)).decode("ascii")
            else:
                normalise_ids(value)
    elif isinstance(node, list):
        for item in node:
            normalise_ids(item)
    return node


def json_kind(obj: object) -> Literal["traces", "logs"] | None:
    """``traces`` / ``logs`` for a JSON object that is an OTLP export request, else ``None``."""
    if not isinstance(obj, dict):
        return None
    if "resourceSpans" in obj or "resource_spans" in obj:
        return "traces"
    if "resourceLogs" in obj or "resource_logs" in obj:
        return "logs"
    return None


def decode_json_object(obj: object, *, where: str = "") -> tuple[list[OtlpSpan], list[OtlpLog]]:
    """Decode one parsed OTLP/JSON request (traces or logs).

    Raises:
        OtlpDecodeError: It is not an OTLP request, or ``json_format`` refuses it.
    """
    kind = json_kind(obj)
    if kind is None:
        raise OtlpDecodeError(f"{where}JSON that is not OTLP (no resourceSpans or resourceLogs)")
    try:
        if kind == "traces":
            traces = ExportTraceServiceRequest()
            json_format.ParseDict(normalise_ids(obj), traces, ignore_unknown_fields=True)
            return list(spans_of(traces)), []
        logs = ExportLogsServiceRequest()
        json_format.ParseDict(normalise_ids(obj), logs, ignore_unknown_fields=True)
        return [], list(logs_of(logs))
    except (json_format.ParseError, ValueError, TypeError) as error:
        raise OtlpDecodeError(f"{where}not a valid OTLP/JSON {kind} request: {error}") from error


def decode_protobuf(
    data: bytes, *, signal: Literal["traces", "logs"] | None = None
) -> tuple[list[OtlpSpan], list[OtlpLog]]:
    """Decode an OTLP/protobuf body; ``signal`` says which request it is (both are tried when unknown).

    The two requests share their field numbers, so a logs body read as traces either fails (the
    record's fields clash with a span's) or parses to nothing: an unknown body is read as traces,
    then as logs when that failed or was empty.

    Raises:
        OtlpDecodeError: A truncated or corrupt body.
    """
    failure: DecodeError | None = None
    if signal in (None, "traces"):
        traces = ExportTraceServiceRequest()
        try:
            traces.ParseFromString(data)
            spans = list(spans_of(traces))
            if spans or signal == "traces":
                return spans, []
        except DecodeError as error:
            if signal == "traces":
                raise OtlpDecodeError(
                    f"not a valid OTLP/protobuf traces body (truncated or corrupt): {error}"
                ) from error
            failure = error
    logs = ExportLogsServiceRequest()
    try:
        logs.ParseFromString(data)
    except DecodeError as error:
        raise OtlpDecodeError(
            f"not a valid OTLP/protobuf body (truncated or corrupt): {failure or error}"
        ) from error
    return [], list(logs_of(logs))


def detect_encoding(handle: IO[bytes]) -> OtlpEncoding | None:
    """Tell an open file's encoding from its content (the handle is left at its start).

    Not starting with ``{``: protobuf (an export request's first byte is a field tag, never
    ``{``). A file of one line (however long), or whose first line is not a whole JSON value, is
    one JSON request (compact or pretty-printed), read by :mod:`fpdebug.ingest.otlp_stream`
    without holding it. Several lines, the first a whole JSON value: JSON Lines. ``None`` for an
    empty file. Only the first line of JSON Lines is ever read whole, never a whole document.
    """
    head = handle.read(_SNIFF)
    handle.seek(0)
    stripped = head.lstrip()
    if not stripped:
        return None
    if not stripped.startswith(b"{"):
        return "otlp-protobuf"
    first_end = _find(handle, 0, lambda chunk: chunk.find(b"\n"))
    if first_end is None or _find(handle, first_end, _first_non_space) is None:
        handle.seek(0)
        return "otlp-json"
    handle.seek(max(first_end - 64, 0))
    if not handle.read(first_end - max(first_end - 64, 0)).rstrip().endswith(b"}"):
        handle.seek(0)
        return "otlp-json"
    handle.seek(0)
    first_line = handle.readline()
    handle.seek(0)
    try:
        orjson.loads(first_line)
    except orjson.JSONDecodeError:
        return "otlp-json"
    return "otlp-jsonl"


def _first_non_space(chunk: bytes) -> int:
    return len(chunk) - len(chunk.lstrip()) if chunk.strip() else -1


def _find(handle: IO[bytes], start: int, where: Callable[[bytes], int]) -> int | None:
    """The offset of the first byte at or after ``start`` that ``where`` finds in a chunk, or ``None``."""
    handle.seek(start)
    at = start
    while chunk := handle.read(1 << 20):
        index = where(chunk)
        if index >= 0:
            return at + index
        at += len(chunk)
    return None


def iter_file(
    handle: IO[bytes],
    encoding: OtlpEncoding,
    *,
    name: str,
    progress: Callable[[int], None] | None = None,
    only: Literal["traces", "logs"] | None = None,
) -> Iterator[tuple[list[OtlpSpan], list[OtlpLog]]]:
    """Yield the spans and logs of an open file, one request at a time (a line for JSON Lines).

    ``progress`` is called with the bytes read so far. With ``only``, JSON Lines of the other
    signal are skipped without being parsed (a line is a logs request when it names
    ``resourceLogs``). A single JSON document or protobuf body is read whole here; the importer
    reads those with :mod:`fpdebug.ingest.otlp_stream` instead, in bounded memory.

    Raises:
        OtlpDecodeError: A line or the file is not OTLP; the message names the line.
    """
    if encoding == "otlp-jsonl":
        done = 0
        for number, line in enumerate(handle, start=1):
            done += len(line)
            is_logs = b'"resourceLogs"' in line or b'"resource_logs"' in line
            if line.strip() and (only is None or (only == "logs") == is_logs):
                try:
                    obj = orjson.loads(line)
                except orjson.JSONDecodeError as error:
                    raise OtlpDecodeError(f"{name}:{number}: not JSON: {error}") from error
                yield decode_json_object(obj, where=f"{name}:{number}: ")
            if progress is not None:
                progress(done)
        return
    data = handle.read()
    if progress is not None:
        progress(len(data))
    if encoding == "otlp-json":
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError as error:
            raise OtlpDecodeError(f"{name}: not JSON: {error}") from error
        yield decode_json_object(obj, where=f"{name}: ")
        return
    try:
        yield decode_protobuf(data)
    except OtlpDecodeError as error:
        raise OtlpDecodeError(f"{name}: {error}") from error
