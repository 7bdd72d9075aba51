"""``fpdebug report`` writes run by run: what it holds does not grow with the number of runs.

Issue 18 (item 8): the report of a file of 50,000 one-record runs took 262 MB (90 MB at 10,000),
because one model of the whole file and the report of every run were built before a byte was
written, then the Markdown held as one string and again redacted. The Markdown is now written run
by run (:mod:`fpdebug.export.report_stream`); these tests hold it to the same bytes as the whole
report and count what is alive while it is written. ``python -m bench.export_memory --command
report`` measures the RSS.
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path

import pytest

from bench.export_memory import generate
from fpdebug.cli import main
from fpdebug.export import report_stream
from fpdebug.export.report import report_trace
from fpdebug.export.report_markdown import render_markdown
from fpdebug.export.report_stream import write_markdown_report
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.redact import Redactor, default_redactor
from tests.export.otlp_helpers import SAMPLES, mixed_runs

GOLDEN = Path(__file__).parent / "golden"


def streamed(path: Path, *, cache_size: int | None = None) -> str:
    pieces: list[str] = []
    with TraceReader(path, **({} if cache_size is None else {"cache_size": cache_size})) as reader:
        write_markdown_report(reader, pieces.append, name=path.name, redactor=default_redactor())
    return "".join(pieces)


def whole(path: Path) -> str:
    return render_markdown(default_redactor().redact_value(report_trace(path, find_sidecar=False)))


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda path: path.name.split(".")[0])
def test_the_command_writes_each_sample_as_its_golden_file(sample: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.md"
    assert main(["report", str(sample), "-o", str(out)]) == 0
    golden = GOLDEN / f"{sample.name.split('.')[0]}.report.md"
    assert out.read_text(encoding="utf-8") == golden.read_text(encoding="utf-8")


def _mixed(tmp_path: Path, seed: int) -> Path:
    # Half the files hold runs one after another, half interleaved.
    return mixed_runs(tmp_path / f"mixed-{seed}.fptrace.jsonl", seed, sequential=seed % 2 == 0)


@pytest.mark.parametrize("seed", range(6))
def test_interleaved_cut_and_broken_runs_give_the_whole_reports_bytes(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _mixed(tmp_path, seed)
    fallbacks: list[object] = []
    original = report_stream.build_report
    monkeypatch.setattr(
        report_stream, "build_report", lambda *a, **k: fallbacks.append(1) or original(*a, **k)
    )
    assert streamed(path) == whole(path)
    assert fallbacks == []  # streamed, not rebuilt from the whole model


def test_a_record_the_envelopes_put_in_another_run_falls_back_to_the_whole_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A duplicate "run_id" key: the envelope reader takes the first, the parser the last. Streaming
    # would have closed the first run before this line; the report notices and builds the whole model.
    path = _mixed(tmp_path, 0)  # its runs one after another
    lines = path.read_bytes().splitlines()
    record = json.loads(lines[2])
    record["seq"] = len(lines)
    crafted = json.dumps(record, separators=(",", ":")).replace(
        '"run_id":', '"run_id":"elsewhere","run_id":', 1
    )
    path.write_bytes(b"\n".join([*lines, crafted.encode()]) + b"\n")
    fallbacks: list[object] = []
    original = report_stream.build_report
    monkeypatch.setattr(
        report_stream, "build_report", lambda *a, **k: fallbacks.append(1) or original(*a, **k)
    )
    assert streamed(path) == whole(path)
    assert fallbacks == [1]


def test_no_run_one_run_and_a_torn_tail(tmp_path: Path) -> None:
    header = SAMPLES[0].read_bytes().splitlines()[0]
    empty = tmp_path / "empty.fptrace.jsonl"
    empty.write_bytes(header + b"\n" + b"garbage\n")
    assert streamed(empty) == whole(empty) and "_The trace holds no run._" in whole(empty)
    one = tmp_path / "one.fptrace.jsonl"
    one.write_bytes(SAMPLES[0].read_bytes() + b'{"kind":"pass","se')
    assert streamed(one) == whole(one) and "torn record" in whole(one)


def test_one_run_is_held_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "runs.fptrace.jsonl"
    generate(path, 300)
    held: list[int] = []
    original = report_stream.run_report

    def counting(model: object, run: object) -> object:
        held.append(len(model.runs))  # type: ignore[attr-defined]
        return original(model, run)  # type: ignore[arg-type]

    monkeypatch.setattr(report_stream, "run_report", counting)
    out = tmp_path / "report.md"
    assert main(["report", str(path), "-o", str(out)]) == 0
    assert held == [1] * 300  # each run reported as it closes, and gone before the next one
    assert out.read_text(encoding="utf-8") == whole(path)


@pytest.mark.slow
def test_tracemalloc_peak_does_not_grow_with_the_number_of_runs(tmp_path: Path) -> None:
    def peak(runs: int) -> int:
        trace = tmp_path / f"runs-{runs}.fptrace.jsonl"
        generate(trace, runs)
        gc.collect()
        tracemalloc.start()
        try:
            with TraceReader(trace, cache_size=64) as reader:
                write_markdown_report(reader, lambda text: None, name=trace.name, redactor=Redactor.off())
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    small, large = peak(200), peak(800)
    # The whole report grew 4.7 KB a one-record run here (its model, every run's report, the
    # Markdown as one string). What grows now, ~370 bytes a run: the envelope pass's run id and last
    # line per run (~130 bytes), the spool's index (24), the reader's line index (8), pydantic's
    # string cache (capped).
    assert large - small < 1200 * 600, (small, large)
