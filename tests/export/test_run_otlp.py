"""``fpdebug run … --otlp URL`` streams a live run to a collector and still writes the full trace."""

from __future__ import annotations

from pathlib import Path

import pytest

from fpdebug.cli import main
from fpdebug.trace.reader import TraceReader
from tests.export.receiver import OtlpReceiver


def test_a_streamed_run_reaches_the_collector_and_the_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "support.fptrace.jsonl"
    with OtlpReceiver() as receiver:
        code = main(["run", "support", "--trace", str(trace), "--otlp", receiver.endpoint])
    out = capsys.readouterr().out
    assert code == 0
    names = [span.name for span in receiver.spans]
    with TraceReader(trace) as reader:
        kinds = [reader.peek(i).kind for i in range(1, len(reader))]
    # One chat span per llm_call and one tool span per tool_result, under one run root.
    assert sum(name.startswith("chat ") for name in names) == kinds.count("llm_call") == 5
    assert sum(name.startswith("execute_tool ") for name in names) == kinds.count("tool_result")
    assert sum(name.startswith("run ") for name in names) == 1
    assert kinds[-1] == "run_end"
    assert f"otlp: {len(names)} span(s) exported, 0 failed" in out


def test_a_refusing_collector_does_not_lose_the_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "support.fptrace.jsonl"
    with OtlpReceiver(status=400) as receiver:
        code = main(["run", "support", "--trace", str(trace), "--otlp", receiver.endpoint])
    out, err = capsys.readouterr()
    assert code == 0
    with TraceReader(trace) as reader:
        assert reader.peek(len(reader) - 1).kind == "run_end"
    assert "0 span(s) exported" in out and "failed" in out
    # Why, in fpdebug's summary line; the SDK's own log lines never reach the terminal.
    assert "400" in out.split("failed", 1)[1].splitlines()[0]
    assert "opentelemetry" not in err and "Failed to export" not in err


def test_a_bad_collector_url_is_refused_before_any_trace_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "support.fptrace.jsonl"
    assert main(["run", "support", "--trace", str(trace), "--otlp", "notaurl"]) == 2
    assert "not an OTLP/HTTP endpoint: 'notaurl'" in capsys.readouterr().err
    assert not trace.exists()  # so the same command, corrected, can use the same --trace
