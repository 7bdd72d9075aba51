"""``fpdebug export`` streams run by run: what it holds does not grow with the number of runs.

Issue 18: a file of 100,000 one-record runs took export to 2.4 GB (533 MB at 20,000), because every
span of every run was built, then held again as SDK spans, a protobuf request, a dict and one JSON
string, before a byte was written; and a run without ``run_end`` stayed open to the end of the file.
These tests count what is alive while the document is written, which is deterministic where an RSS
figure on a shared machine is not; ``python -m bench.export_memory`` measures the RSS.
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path

import pytest

from bench.export_memory import generate
from fpdebug.cli import main
from fpdebug.export import otlp
from fpdebug.export.saved import DEFAULT_BATCH, TraceSpans, batched, unended_run_ends
from fpdebug.export.spans import SpanRecord, build_spans
from fpdebug.trace.reader import TraceReader
from tests.export.otlp_helpers import SAMPLES, mixed_runs, trace_events


def runs_trace(tmp_path: Path, runs: int) -> Path:
    path = tmp_path / f"runs-{runs}.fptrace.jsonl"
    generate(path, runs)
    return path


def live_span_records() -> int:
    return sum(isinstance(thing, SpanRecord) for thing in gc.get_objects())


@pytest.mark.slow
def test_the_export_command_holds_one_batch_not_every_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = 3 * DEFAULT_BATCH + 100
    trace = runs_trace(tmp_path, runs)
    alive: list[int] = []
    original = otlp.OtlpJsonWriter.write

    def counting(self: otlp.OtlpJsonWriter, spans: list[SpanRecord]) -> None:
        alive.append(live_span_records())
        original(self, spans)

    monkeypatch.setattr(otlp.OtlpJsonWriter, "write", counting)
    out = tmp_path / "out.json"
    assert main(["export", str(trace), "-o", str(out)]) == 0
    assert len(alive) == 4  # three full batches and the rest, each written as it was made
    assert max(alive) <= DEFAULT_BATCH + 2  # the batch being written (+ the run in hand), never all runs
    document = json.loads(out.read_text())
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert len(spans) == runs
    assert all(any(a["key"] == "fpdebug.incomplete" for a in span["attributes"]) for span in spans)


def test_a_run_without_run_end_is_closed_after_its_last_line_not_at_the_end_of_the_file(
    tmp_path: Path,
) -> None:
    trace = runs_trace(tmp_path, 2000)
    with TraceReader(trace) as reader:
        ends = unended_run_ends(reader, len(reader))
        assert list(ends.values()) == list(range(1, 2001))
        spans = TraceSpans(reader)
        count = sum(len(run) for run in spans)
    assert count == 2000
    assert spans.held_peak == 1  # each one-record run leaves as soon as its line is read


@pytest.mark.slow
def test_tracemalloc_peak_does_not_grow_with_the_number_of_runs(tmp_path: Path) -> None:
    def peak(runs: int) -> int:
        trace = runs_trace(tmp_path, runs)
        gc.collect()
        tracemalloc.start()
        try:
            with TraceReader(trace) as reader:
                for _batch in batched(TraceSpans(reader), 64):
                    pass
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    small, large = peak(500), peak(2000)
    # Holding the spans (build_spans) grew 1.8 KB per one-record run here, before the OTLP stages
    # even began (they held ~9 KB more). What grows now: the envelope pass's run id and line per
    # unended run (~110 bytes), the reader's line index (8 bytes a line) and pydantic-core's string
    # cache (~90 bytes a run, capped at 16,384 strings): ~340 bytes a run at these sizes.
    assert large - small < 1500 * 600, (small, large)


def test_streamed_output_is_byte_for_byte_the_whole_document(tmp_path: Path) -> None:
    # The sample traces' exports, written batch by batch, equal json.dumps of the one-shot document.
    for sample in SAMPLES:
        events = trace_events(sample)
        spans = build_spans(events, include_content=True)
        whole = json.dumps(otlp.otlp_json(spans, producer="p"), indent=2, ensure_ascii=True) + "\n"
        for size in (1, 3, len(spans)):
            pieces: list[str] = []
            writer = otlp.OtlpJsonWriter(pieces.append, producer="p")
            for start in range(0, len(spans), size):
                writer.write(spans[start : start + size])
            writer.close()
            assert "".join(pieces) == whole, (sample.name, size)


def test_no_span_is_an_empty_request(tmp_path: Path) -> None:
    pieces: list[str] = []
    writer = otlp.OtlpJsonWriter(pieces.append)
    writer.write([])
    writer.close()
    assert "".join(pieces) == json.dumps(otlp.otlp_json([]), indent=2) + "\n" == "{}\n"


def test_runs_that_end_come_out_in_build_spans_order(tmp_path: Path) -> None:
    # Several whole runs one after another in one file: the stream's order is build_spans' order.
    lines: list[bytes] = []
    for sample in SAMPLES[:3]:
        body = sample.read_bytes().splitlines()
        lines.extend(body[1:] if lines else body)
    # Renumber seq densely so the file stays valid.
    renumbered = [lines[0]]
    for seq, line in enumerate(lines[1:], 1):
        record = json.loads(line)
        record["seq"] = seq
        renumbered.append(json.dumps(record, separators=(",", ":")).encode())
    path = tmp_path / "three.fptrace.jsonl"
    path.write_bytes(b"\n".join(renumbered) + b"\n")
    with TraceReader(path) as reader:
        streamed = [span for run in TraceSpans(reader) for span in run]
    expected = build_spans(trace_events(path))
    assert [(s.run_id, s.role, s.seq) for s in streamed] == [(s.run_id, s.role, s.seq) for s in expected]


@pytest.mark.parametrize("seed", range(6))
def test_interleaved_cut_and_broken_runs_give_build_spans_spans(tmp_path: Path, seed: int) -> None:
    # Closing a run after its last line (not at the end of the file) must change no span: the same
    # ids, times, attributes, events and statuses as build_spans, each run's spans in its order,
    # whatever the interleaving, with runs cut short (no run_end) and garbage lines among them.
    path = mixed_runs(tmp_path / "mixed.fptrace.jsonl", seed)
    with TraceReader(path) as reader:
        streamed = [span for run in TraceSpans(reader, include_content=True) for span in run]
    expected = build_spans(trace_events(path), include_content=True)

    def facts(spans: list[SpanRecord]) -> list[tuple[object, ...]]:
        rows = [
            (s.trace_id, s.span_id, s.name, s.start_ns, s.end_ns, s.attributes, s.status,
             [(e.name, e.time_ns, e.attributes) for e in s.events])
            for s in spans
        ]  # fmt: skip
        return sorted(rows, key=lambda row: (row[0], row[1]))  # type: ignore[arg-type,return-value]

    assert facts(streamed) == facts(expected)
    for run_id in {span.run_id for span in expected}:
        assert [s.span_id for s in streamed if s.run_id == run_id] == [
            s.span_id for s in expected if s.run_id == run_id
        ]
