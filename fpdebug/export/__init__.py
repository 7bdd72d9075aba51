"""Hand a trace to the systems teams already run: OpenTelemetry spans, run reports, OTLP export.

- :mod:`~fpdebug.export.spans`: trace events → spans following the OpenTelemetry GenAI semantic
  conventions (pure Python; no OpenTelemetry import).
- :mod:`~fpdebug.export.otlp`: those spans as OTLP/JSON, as an OTLP protobuf request, or sent to a
  collector over OTLP/HTTP with the OpenTelemetry SDK's exporter (needs the ``otel`` extra).
- :mod:`~fpdebug.export.stream`: :class:`OtlpStreamSink`, an event sink that streams a live run's
  spans as its turns and calls complete (needs the ``otel`` extra).
- :mod:`~fpdebug.export.report`: a run report for a ticket, as Markdown or JSON.

The OpenTelemetry-backed names are loaded on first use, so importing this package (or making a
report) never needs the SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fpdebug.export.spans import (
    AttributeValue,
    SpanBuilder,
    SpanEventRecord,
    SpanRecord,
    build_spans,
    span_id_for,
    trace_id_for,
)

if TYPE_CHECKING:
    from fpdebug.export.stream import OtlpStreamSink

__all__ = [
    "AttributeValue",
    "OtlpStreamSink",
    "SpanBuilder",
    "SpanEventRecord",
    "SpanRecord",
    "build_spans",
    "span_id_for",
    "trace_id_for",
]


def __getattr__(name: str) -> object:
    # The stream sink needs the OpenTelemetry SDK: import it only when someone asks for it.
    if name == "OtlpStreamSink":
        from fpdebug.export.stream import OtlpStreamSink

        return OtlpStreamSink
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
