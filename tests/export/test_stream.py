"""OtlpStreamSink: a live run's spans reach the collector as calls and turns complete; the trace keeps all."""

from __future__ import annotations

import socket

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from fpdebug.demo.registry import load_scenario
from fpdebug.engine.sink import MemorySink
from fpdebug.errors import ExportError, RunInterrupted
from fpdebug.export.spans import build_spans
from fpdebug.export.stream import OtlpStreamSink
from fpdebug.trace.clock import FixedClock
from fpdebug.trace.schema import TraceEvent
from tests.conftest import T0
from tests.export.otlp_helpers import SAMPLES, trace_events
from tests.export.receiver import OtlpReceiver


def support_events() -> list[TraceEvent]:
    return trace_events(next(path for path in SAMPLES if path.name.startswith("support")))


def test_spans_leave_as_soon_as_their_record_is_in() -> None:
    events = support_events()
    exporter = InMemorySpanExporter()
    inner = MemorySink()
    sink = OtlpStreamSink(inner, exporter=exporter)
    first_call = next(i for i, event in enumerate(events) if event.kind == "llm_call")
    for event in events[: first_call + 1]:
        sink.emit(event)
    assert sink.flush()
    assert [span.name for span in exporter.get_finished_spans()] == [f"chat {events[first_call].model}"]
    turn_end = next(i for i, event in enumerate(events) if event.kind == "turn_end")
    for event in events[first_call + 1 : turn_end + 1]:
        sink.emit(event)
    sink.flush()
    names = [span.name for span in exporter.get_finished_spans()]
    assert names[-1].startswith("invoke_agent ") and not any(name.startswith("run ") for name in names)
    for event in events[turn_end + 1 :]:
        sink.emit(event)
    sink.close()
    finished = exporter.get_finished_spans()
    assert len(finished) == len(build_spans(events))
    assert finished[-1].name.startswith("run ")
    assert inner.events == events and inner.closed
    assert sink.exported == len(finished) and sink.failed == 0


def test_an_event_the_trace_refused_is_not_exported() -> None:
    events = support_events()

    class Refusing(MemorySink):
        def emit(self, event: TraceEvent) -> None:
            if event.kind == "llm_call":
                raise RunInterrupted("stopped by the step gate")
            super().emit(event)

    exporter = InMemorySpanExporter()
    sink = OtlpStreamSink(Refusing(), exporter=exporter)
    with pytest.raises(RunInterrupted):
        for event in events:
            sink.emit(event)
    sink.close()
    assert not [span for span in exporter.get_finished_spans() if span.name.startswith("chat ")]
    # What did reach the trace is still closed out, marked incomplete.
    run = next(span for span in exporter.get_finished_spans() if span.name.startswith("run "))
    assert run.attributes["fpdebug.incomplete"] is True


def test_a_live_agent_run_streams_to_a_loopback_collector() -> None:
    scenario = load_scenario("leases")
    inner = MemorySink()
    with OtlpReceiver() as receiver:
        sink = OtlpStreamSink(inner, receiver.endpoint, schedule_delay_millis=10)
        assert sink.next_seq == inner.next_seq == 1
        result = scenario.build_agent().run(
            list(scenario.user_messages),
            provider=scenario.scripted_provider(),
            sink=sink,
            clock=FixedClock(T0),
            run_id="live-1",
        )
        sink.close()
    assert result.status == "completed"
    expected = build_spans(inner.events)
    received = receiver.spans
    assert sorted(span.span_id for span in received) == sorted(s.span_id.to_bytes(8, "big") for s in expected)
    by_id = {span.span_id: span for span in received}
    chats = [span for span in received if span.name.startswith("chat ")]
    assert len(chats) == sum(event.kind == "llm_call" for event in inner.events)
    assert all(by_id[span.parent_span_id].name.startswith("invoke_agent ") for span in chats)
    assert sink.exported == len(received) and sink.failed == 0


def test_an_unreachable_collector_never_stops_the_run() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    scenario = load_scenario("leases")
    inner = MemorySink()
    sink = OtlpStreamSink(inner, f"http://127.0.0.1:{port}", timeout=0.5, schedule_delay_millis=10)
    result = scenario.build_agent().run(
        list(scenario.user_messages),
        provider=scenario.scripted_provider(),
        sink=sink,
        clock=FixedClock(T0),
    )
    sink.close()
    assert result.status == "completed"
    assert sink.exported == 0 and sink.failed == len(build_spans(inner.events))
    assert inner.of_kind("run_end")


def test_a_sink_needs_somewhere_to_send() -> None:
    with pytest.raises(ExportError, match="endpoint"):
        OtlpStreamSink(MemorySink())


def test_the_trace_is_closed_before_the_wait_for_the_collector() -> None:
    events = support_events()
    inner = MemorySink()
    closed_when_exporting: list[bool] = []

    class Watching(InMemorySpanExporter):
        def export(self, spans):  # type: ignore[no-untyped-def]
            closed_when_exporting.append(inner.closed)
            return super().export(spans)

    # A long batch delay: nothing leaves before close(), so close() is what waits for delivery.
    sink = OtlpStreamSink(inner, exporter=Watching(), schedule_delay_millis=60_000)
    for event in events:
        sink.emit(event)
    assert not closed_when_exporting
    sink.close()
    assert closed_when_exporting and all(closed_when_exporting)
    assert sink.exported == len(build_spans(events))
