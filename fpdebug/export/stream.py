"""``OtlpStreamSink``: an event sink that streams a live run to an OTLP collector as calls and turns complete.

It wraps the sink that really keeps the events (normally the trace file's)::

    exporter_sink = OtlpStreamSink(TraceFileSink.create(path, clock=clock), "http://localhost:4318")
    agent.run("Refund A-17", provider=model, sink=exporter_sink, clock=clock)
    exporter_sink.close()            # flushes the last spans, then closes the trace file

Every event goes to the wrapped sink first; only an event it accepted becomes telemetry, so the
collector never sees a record the trace does not hold. The spans are those of
:mod:`fpdebug.export.spans` (same ids, names and attributes as ``fpdebug export``): a chat or tool
span is exported when its record arrives, a turn span at ``turn_end``, the run span at ``run_end``.

Telemetry never stops a run. Spans are handed to the OpenTelemetry SDK's ``BatchSpanProcessor``,
which exports from its own thread, so a slow or unreachable collector does not slow the agent; a
failure is counted (:attr:`OtlpStreamSink.failed`) and logged by the SDK, never raised into the loop.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from fpdebug import __version__
from fpdebug.engine.sink import EventSink
from fpdebug.export.otlp import (
    DEFAULT_SERVICE_NAME,
    DEFAULT_TIMEOUT,
    make_exporter,
    resource_for,
    to_readable_spans,
)
from fpdebug.export.spans import SpanBuilder, SpanRecord
from fpdebug.trace.schema import TraceEvent

__all__ = ["OtlpStreamSink"]

_log = logging.getLogger(__name__)


class _CountingExporter(SpanExporter):
    """Passes batches to the real exporter and counts what it delivered and what it did not."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.exported = 0
        self.failed = 0
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
        except Exception:  # an exporter bug must not kill the processor's thread
            _log.exception("the OTLP exporter raised; %d span(s) dropped", len(spans))
            result = SpanExportResult.FAILURE
        with self._lock:
            if result is SpanExportResult.SUCCESS:
                self.exported += len(spans)
            else:
                self.failed += len(spans)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


class OtlpStreamSink:
    """An :class:`~fpdebug.engine.sink.EventSink`: keeps events in ``inner``, streams them as OTLP spans.

    Args:
        inner: The sink that keeps the events (a ``TraceFileSink``, a ``MemorySink``…). It is closed
            by :meth:`close`.
        endpoint: The collector's OTLP/HTTP URL (``http://localhost:4318``; ``/v1/traces`` is added
            to a URL without a path). Ignored when ``exporter`` is given.
        exporter: Any OpenTelemetry ``SpanExporter`` to use instead of a new ``OTLPSpanExporter``.
        headers: Extra HTTP headers (an API key); ``None`` reads ``OTEL_EXPORTER_OTLP_HEADERS``.
        timeout: Seconds per OTLP request, retries included.
        include_content: Also export prompts, replies, tool arguments and results.
        service_name: The ``service.name`` resource attribute.
        producer: The ``fpdebug.trace.producer`` resource attribute (``fpdebug <version>`` by default).
        schedule_delay_millis: How long the processor waits to fill a batch before sending it.

    Raises:
        ExportError: Neither ``endpoint`` nor ``exporter`` was given, or the endpoint is invalid.
    """

    def __init__(
        self,
        inner: EventSink,
        endpoint: str | None = None,
        *,
        exporter: SpanExporter | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        include_content: bool = False,
        service_name: str = DEFAULT_SERVICE_NAME,
        producer: str | None = None,
        schedule_delay_millis: float = 200.0,
    ) -> None:
        from fpdebug.errors import ExportError

        if exporter is None:
            if endpoint is None:
                raise ExportError("OtlpStreamSink needs an OTLP endpoint URL or an exporter")
            exporter = make_exporter(endpoint, headers=headers, timeout=timeout)
        self.inner = inner
        """The sink that keeps the events."""
        self._exporter = _CountingExporter(exporter)
        self._processor = BatchSpanProcessor(
            self._exporter, schedule_delay_millis=schedule_delay_millis, export_timeout_millis=timeout * 1000
        )
        self._builder = SpanBuilder(include_content=include_content)
        producer = producer or f"fpdebug {__version__}"
        self._resource = resource_for(service_name=service_name, producer=producer)
        self._closed = False
        self._queued = 0
        self.dropped_events = 0
        """Events the span builder could not turn into spans (counted, never raised into the run)."""

    @property
    def next_seq(self) -> int:
        """The wrapped sink's next ``seq`` (1 when it does not say), so a recorder numbers events right."""
        return int(getattr(self.inner, "next_seq", 1))

    @property
    def exported(self) -> int:
        """Spans the collector accepted so far."""
        return self._exporter.exported

    @property
    def failed(self) -> int:
        """Spans that could not be delivered so far; after :meth:`close`, every span not delivered.

        Closed, a span still queued when the processor gave up (its collector never answered in
        time) counts as failed too: what was not delivered is never reported as a success.
        """
        if self._closed:
            return max(self._exporter.failed, self._queued - self._exporter.exported)
        return self._exporter.failed

    def emit(self, event: TraceEvent) -> None:
        """Hand the event to the wrapped sink, then queue the spans it completed.

        Raises:
            Whatever the wrapped sink raises (``RunInterrupted``, ``TraceWriteError``…); the event
            then becomes no telemetry either.
        """
        self.inner.emit(event)
        try:
            self._queue(self._builder.feed(event))
        except Exception:  # telemetry is a side channel: a bug here must not end the user's run
            self.dropped_events += 1
            _log.exception("fpdebug could not turn event seq %s into spans", event.seq)

    def flush(self, timeout_millis: int = 30000) -> bool:
        """Send every queued span now; ``True`` when the processor finished in time."""
        return self._processor.force_flush(timeout_millis)

    def close(self) -> None:
        """Close ``inner``, then export the spans still open (incomplete if the run never ended) and flush.

        The wrapped sink is closed first so the trace is complete on disk before the wait for the
        collector, which lasts up to the exporter's timeout when the collector is slow or absent.
        """
        if self._closed:
            return
        self._closed = True
        try:
            self.inner.close()
        finally:
            try:
                self._queue(self._builder.finish())
            finally:
                self._processor.shutdown()

    def _queue(self, spans: list[SpanRecord]) -> None:
        for span in to_readable_spans(spans, resource=self._resource):
            self._queued += 1
            self._processor.on_end(span)

    def __enter__(self) -> OtlpStreamSink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"OtlpStreamSink({self.inner!r}, exported={self.exported}, failed={self.failed})"
