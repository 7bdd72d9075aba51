"""Bounded network (issue 18, item 5): one wall-clock deadline on an OTLP send, a capped answer body.

The hostile endpoints are local (127.0.0.1) servers of :mod:`tests.export.receiver`.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from fpdebug.cli import main
from fpdebug.errors import ExportError
from fpdebug.export.otlp import send_spans
from fpdebug.export.spans import build_spans
from fpdebug.trace.reader import TraceReader
from tests.export.receiver import StallingCollector

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_traces" / "support.fptrace.jsonl"
SLACK = 3.0
"""Seconds allowed past the timeout on two loaded cores."""


def sample_spans():  # type: ignore[no-untyped-def]
    from fpdebug.trace.schema import TraceHeader

    with TraceReader(SAMPLE) as reader:
        return build_spans(record for record in reader if not isinstance(record, TraceHeader))


def test_a_trickling_collector_cannot_hold_a_send_past_its_timeout() -> None:
    spans = sample_spans()
    with StallingCollector("trickle") as collector:
        started = time.monotonic()
        with pytest.raises(ExportError) as raised:
            send_spans(spans, collector.endpoint, timeout=2.0)
        elapsed = time.monotonic() - started
    assert elapsed < 2.0 + SLACK, f"the send took {elapsed:.1f} s with --timeout 2"
    assert f"0 delivered, {len(spans)} not" in str(raised.value)
    assert "timeout" in str(raised.value)


def test_export_endpoint_timeout_is_a_total_limit(capsys: pytest.CaptureFixture[str]) -> None:
    with StallingCollector("trickle") as collector:
        started = time.monotonic()
        code = main(["export", str(SAMPLE), "--endpoint", collector.endpoint, "--timeout", "2"])
        elapsed = time.monotonic() - started
    err = capsys.readouterr().err
    assert code != 0
    assert elapsed < 2.0 + SLACK
    assert "no complete answer within the 2 s timeout" in err and "Traceback" not in err


def test_a_huge_error_body_is_not_downloaded() -> None:
    with StallingCollector("huge-error") as collector:
        with pytest.raises(ExportError) as raised:
            send_spans(sample_spans(), collector.endpoint, timeout=5.0)
        time.sleep(0.5)  # let the server notice the hang-up
        sent = collector.body_bytes_sent
    assert "500" in str(raised.value)
    assert sent < 32 * 1024 * 1024, f"{sent} bytes of a 200 MB error body were taken"


def test_run_otlp_counts_spans_a_stalled_collector_never_took_as_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from fpdebug.export.stream import OtlpStreamSink

    monkeypatch.setitem(OtlpStreamSink.__init__.__kwdefaults__, "timeout", 2.0)
    trace = tmp_path / "support.fptrace.jsonl"
    with StallingCollector("trickle") as collector:
        started = time.monotonic()
        code = main(["run", "support", "--trace", str(trace), "--otlp", collector.endpoint])
        elapsed = time.monotonic() - started
    out = capsys.readouterr().out
    assert code == 0
    summary = next(line for line in out.splitlines() if line.startswith("otlp:"))
    assert "0 span(s) exported" in summary
    assert ", 0 failed" not in summary
    assert elapsed < 30
