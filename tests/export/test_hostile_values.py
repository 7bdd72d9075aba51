"""What validates, exports (issue 18, item 3).

A time or duration no exporter can carry, NaN, Infinity and numbers beyond a double are refused by
the schema with a named problem code (``out-of-range``, ``non-finite``); ``export`` leaves such a
line out and says so, never with a traceback; an integer beyond int64 is exported as text wherever
it sits; a key twice in one object and a CRLF line end are problems ``validate`` reports.
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from fpdebug.cli import main
from fpdebug.trace.reader import TraceReader

SAMPLE = Path(__file__).resolve().parents[2] / "sample_traces" / "support.fptrace.jsonl"
LLM_CALL, TOOL_RESULT, RUN_END = 5, 6, 28
"""Line numbers of the sample trace's first llm_call, first tool_result and its run_end."""
HUGE = "1234567890123456789012345"


def planted(tmp_path: Path, line: int, field: str, raw_value: str) -> Path:
    """The sample trace with ``field`` of ``line`` set to ``raw_value``, written as it is (not JSON-encoded)."""
    lines = SAMPLE.read_bytes().splitlines()
    record = orjson.loads(lines[line])
    if "." in field:
        outer, inner = field.split(".")
        record[outer][inner] = "@@PLANT@@"
    else:
        record[field] = "@@PLANT@@"
    lines[line] = orjson.dumps(record).replace(b'"@@PLANT@@"', raw_value.encode())
    path = tmp_path / "planted.fptrace.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


HOSTILE = [
    (RUN_END, "ts", '"2600-01-01T00:00:00Z"', "out-of-range"),
    (RUN_END, "ts", '"1900-01-01T00:00:00Z"', "out-of-range"),
    (RUN_END, "ts", '"0001-01-01T00:00:00Z"', "out-of-range"),
    (LLM_CALL, "latency_ms", "1e400", "non-finite"),
    (TOOL_RESULT, "duration_ms", "NaN", "non-finite"),
    (LLM_CALL, "latency_ms", "Infinity", "non-finite"),
    (TOOL_RESULT, "args.order_id", "NaN", "non-finite"),
    (TOOL_RESULT, "args.order_id", "-1e999", "non-finite"),
]
IDS = [
    "ts-2600",
    "ts-1900",
    "ts-0001",
    "latency-1e400",
    "duration-NaN",
    "latency-Infinity",
    "arg-NaN",
    "arg-1e999",
]


@pytest.mark.parametrize(("line", "field", "value", "code"), HOSTILE, ids=IDS)
def test_validate_names_what_no_exporter_can_carry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: int, field: str, value: str, code: str
) -> None:
    trace = planted(tmp_path, line, field, value)
    with TraceReader(trace) as reader:
        problems = reader.problems()
    assert [(problem.line, problem.code) for problem in problems] == [(line, code)]
    assert main(["validate", str(trace)]) == 1
    assert f"planted.fptrace.jsonl:{line}:" in capsys.readouterr().out


@pytest.mark.parametrize(("line", "field", "value", "code"), HOSTILE, ids=IDS)
def test_export_leaves_the_line_out_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: int, field: str, value: str, code: str
) -> None:
    trace = planted(tmp_path, line, field, value)
    output = tmp_path / "spans.json"
    assert main(["export", str(trace), "-o", str(output)]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "1 invalid or unknown line(s)" in err
    json.loads(output.read_text())


def attribute_values(document: dict, key: str) -> list[dict]:  # type: ignore[type-arg]
    return [
        attribute["value"]
        for resource in document["resourceSpans"]
        for scope in resource["scopeSpans"]
        for span in scope["spans"]
        for attribute in span.get("attributes", [])
        if attribute["key"] == key
    ]


def test_an_integer_beyond_int64_is_exported_as_text_wherever_it_sits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = planted(tmp_path, RUN_END, "input_tokens", HUGE)
    assert main(["validate", str(trace)]) == 0  # a big integer is JSON, and read exactly
    output = tmp_path / "spans.json"
    assert main(["export", str(trace), "-o", str(output)]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "Invalid type" not in err
    values = attribute_values(json.loads(output.read_text()), "fpdebug.run.input_tokens")
    assert values == [{"stringValue": HUGE}]


def test_a_key_twice_is_a_problem(tmp_path: Path) -> None:
    lines = SAMPLE.read_bytes().splitlines()
    lines[LLM_CALL] = b'{"kind":"tool_result",' + lines[LLM_CALL][1:]  # "kind" twice; the last one counts
    trace = tmp_path / "twice.fptrace.jsonl"
    trace.write_bytes(b"\n".join(lines) + b"\n")
    with TraceReader(trace) as reader:
        problems = reader.problems()
    assert [(problem.line, problem.code) for problem in problems] == [(LLM_CALL, "duplicate-key")]
    assert "'kind'" in problems[0].message
    assert main(["validate", str(trace)]) == 1


def test_crlf_line_ends_are_a_problem(tmp_path: Path) -> None:
    trace = tmp_path / "crlf.fptrace.jsonl"
    lines = SAMPLE.read_bytes().splitlines()
    trace.write_bytes(b"\r\n".join(lines) + b"\r\n")
    with TraceReader(trace) as reader:
        problems = reader.problems()
    assert {problem.code for problem in problems} == {"crlf"}
    assert [problem.line for problem in problems] == list(range(1, len(lines)))
    assert main(["validate", str(trace)]) == 1


def test_a_span_time_otlp_cannot_carry_is_an_export_error_not_a_traceback() -> None:
    # Records read from a file never get here (the schema refuses their times); records built in
    # memory can, and the encoder's ValueError would surface as a traceback.
    from dataclasses import replace

    from fpdebug.errors import ExportError
    from fpdebug.export.otlp import otlp_json
    from fpdebug.export.spans import build_spans
    from fpdebug.trace.schema import TraceHeader

    with TraceReader(SAMPLE) as reader:
        spans = build_spans(record for record in reader if not isinstance(record, TraceHeader))
    for bad in (-1, 2**64):
        with pytest.raises(ExportError, match="cannot be encoded in OTLP"):
            otlp_json([replace(spans[0], start_ns=bad)])
