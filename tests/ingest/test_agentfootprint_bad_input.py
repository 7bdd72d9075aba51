"""The agentfootprint importer on damaged, foreign and partial input: a clear error and no file, or an
import that names what is missing (issue 16, "Scale and bad input")."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from fpdebug.cli import main
from fpdebug.errors import FpdebugError, ImportFormatError, TraceError
from fpdebug.ingest import agentfootprint
from fpdebug.ingest.agentfootprint import import_agentfootprint, import_agentfootprint_file
from fpdebug.trace.model import RunModel
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import (
    LlmCallEvent,
    PassEvent,
    RunEndEvent,
    RunStartEvent,
    TraceHeader,
    TurnEndEvent,
)

FIXTURES = Path(__file__).parent / "fixtures" / "agentfootprint"
REFUND = FIXTURES / "support-refund.recording.json"


@pytest.fixture(scope="module")
def envelope() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(REFUND.read_text(encoding="utf-8"))
    return data


def only(path: Path) -> list[str]:
    """The names in a directory (temporary files included)."""
    return sorted(p.name for p in path.iterdir())


def records(path: Path) -> list[Any]:
    with TraceReader(path) as reader:
        assert reader.problems() == []
        return [reader[line] for line in range(len(reader))]


def test_another_format_version_is_refused_and_nothing_is_written(
    envelope: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "out.fptrace.jsonl"
    with pytest.raises(ImportFormatError) as caught:
        import_agentfootprint({**envelope, "format": "agentfootprint.recording.v2"}, out)
    assert str(caught.value) == "agentfootprint.recording.v2: this fpdebug reads agentfootprint.recording.v1"
    assert only(tmp_path) == []


@pytest.mark.parametrize(
    ("obj", "words"),
    [
        ([1, 2], "a JSON list"),
        ({"format": "otlp"}, "format 'otlp'"),
        ({"format": "agentfootprint.recording.v1", "recording": []}, 'without a "recording" object'),
        ({"events": "x", "snapshot": {}, "structure": {}}, '"events" list'),
        ({"events": [1], "snapshot": {}, "structure": {}}, "events[0] is not a typed event"),
    ],
)
def test_not_a_recording_is_refused(obj: object, words: str, tmp_path: Path) -> None:
    with pytest.raises(ImportFormatError, match="not an agentfootprint recording|recording") as caught:
        import_agentfootprint(obj, tmp_path / "out.jsonl")  # type: ignore[arg-type]
    assert words in str(caught.value)
    assert only(tmp_path) == []


def test_a_json_file_that_is_not_a_recording_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "spans.json"
    src.write_text('{"resourceSpans": []}', encoding="utf-8")
    with pytest.raises(ImportFormatError, match="not an agentfootprint recording"):
        import_agentfootprint_file(src, tmp_path / "out.jsonl")
    assert only(tmp_path) == ["spans.json"]


def test_truncated_json_is_a_clear_error_and_no_file(tmp_path: Path) -> None:
    src = tmp_path / "cut.recording.json"
    src.write_bytes(REFUND.read_bytes()[:50_000])
    with pytest.raises(ImportFormatError, match=r"cut\.recording\.json: not valid JSON .*truncated"):
        import_agentfootprint_file(src, tmp_path / "out.jsonl")
    assert only(tmp_path) == ["cut.recording.json"]


def test_a_missing_file_is_an_fpdebug_error(tmp_path: Path) -> None:
    with pytest.raises(FpdebugError, match="cannot read"):
        import_agentfootprint_file(tmp_path / "nope.json", tmp_path / "out.jsonl")


def test_a_failure_while_writing_leaves_no_file(
    envelope: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("the old trace\n", encoding="utf-8")

    def broken(self: object, events: object) -> int:
        raise TraceError("disk full (simulated)")

    monkeypatch.setattr(agentfootprint.TraceWriter, "append_many", broken)
    with pytest.raises(TraceError, match="simulated"):
        import_agentfootprint(envelope, out)
    assert only(tmp_path) == ["out.jsonl"]  # the temporary file is gone
    assert out.read_text(encoding="utf-8") == "the old trace\n"  # and the old file untouched


def test_an_output_directory_that_does_not_exist_is_a_trace_error(
    envelope: dict[str, Any], tmp_path: Path
) -> None:
    with pytest.raises(TraceError, match="directory does not exist"):
        import_agentfootprint(envelope, tmp_path / "missing" / "out.jsonl")


def test_a_value_of_an_impossible_shape_is_an_import_error(
    envelope: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fpdebug.ingest import agentfootprint_convert
    from fpdebug.trace.schema import Witness

    def bad(*args: object) -> object:
        return Witness.model_validate({"text": 3})

    monkeypatch.setattr(agentfootprint_convert, "cursor_fields", bad)
    with pytest.raises(ImportFormatError, match=r"cannot read \(Witness\.text"):
        import_agentfootprint(envelope, tmp_path / "out.jsonl")
    assert only(tmp_path) == []


def test_an_output_that_is_a_directory_is_a_trace_error(envelope: dict[str, Any], tmp_path: Path) -> None:
    (tmp_path / "out.jsonl").mkdir()
    with pytest.raises(TraceError, match="cannot write the imported trace"):
        import_agentfootprint(envelope, tmp_path / "out.jsonl")
    assert only(tmp_path) == ["out.jsonl"]


def test_capped_events_import_with_the_gap_named(envelope: dict[str, Any], tmp_path: Path) -> None:
    # The recorder's cap drops the oldest events first: here the whole first iteration, including
    # run_configured and turn_start, is gone.
    capped = copy.deepcopy(envelope)
    events = capped["recording"]["events"]
    first_kept = next(i for i, e in enumerate(events) if e["type"].endswith("context.evaluated") and i > 3)
    capped["recording"]["events"] = events[first_kept:]
    capped["run"]["droppedEvents"] = first_kept
    capped["run"]["firstRetainedEventIndex"] = first_kept
    out = tmp_path / "capped.jsonl"
    summary = import_agentfootprint(capped, out, source_name="capped.recording.json")
    assert len(summary.gaps) == 1 and summary.gaps[0].startswith(f"droppedEvents: {first_kept} ")
    assert main(["validate", str(out)]) == 0

    found = records(out)
    header = found[0]
    assert isinstance(header, TraceHeader) and header.source is not None
    assert header.source.gaps == summary.gaps
    start = found[1]
    assert isinstance(start, RunStartEvent)
    assert (start.provider, start.model) == ("mock", "mock-support")  # from the envelope's configuration
    assert [p.iteration for p in found if isinstance(p, PassEvent)] == [2, 3, 4, 5]
    assert [c.iteration for c in found if isinstance(c, LlmCallEvent)] == [2, 3, 4, 5]
    assert isinstance(found[-2], TurnEndEvent) and found[-2].final_content.startswith("I found a duplicate")
    with TraceReader(out) as reader:
        model = RunModel.build(reader)
    assert [lease.state for lease in model.runs[0].leases] == ["tenure-ended", "spent"]
    assert [i for i in only(tmp_path)] == ["capped.jsonl"]


def test_a_bare_recording_imports_without_run_facts(envelope: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "bare.jsonl"
    summary = import_agentfootprint(envelope["recording"], out, source_name="bare.recording.json")
    assert summary.format == "agentfootprint.recording" and summary.llm_calls == 5
    found = records(out)
    assert isinstance(found[0], TraceHeader) and found[0].source is not None
    assert (found[0].source.format, found[0].source.producer) == ("agentfootprint.recording", None)
    assert found[1].run_id == "run-1796148354440-1"  # from the events' meta
    end = found[-1]
    assert isinstance(end, RunEndEvent) and (end.status, end.input_tokens, end.output_tokens) == (
        "completed",
        680,
        27,
    )


def test_an_incomplete_run_has_no_run_end(envelope: dict[str, Any], tmp_path: Path) -> None:
    unfinished = copy.deepcopy(envelope)
    unfinished["run"]["complete"] = False
    out = tmp_path / "unfinished.jsonl"
    summary = import_agentfootprint(unfinished, out)
    assert any("run.complete" in warning for warning in summary.warnings)
    assert not any(isinstance(r, RunEndEvent) for r in records(out))
