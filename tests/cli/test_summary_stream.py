"""``fpdebug summary`` sums each run up after its last line and drops its model (issue 22).

The command used to build one model of the whole file (90 % of the file in RSS). These tests hold
its output to what the whole-file model gives, on the demo runs one after another and on runs
interleaved line by line, and count the models alive while it reads.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.demo_trace import iter_demo_lines
from fpdebug.cli import main
from fpdebug.commands import summary
from fpdebug.trace.cost import RunCosts
from fpdebug.trace.model import RunModel
from fpdebug.trace.reader import ProblemScanner, TraceReader
from fpdebug.trace.schema import AnswerAssessmentRow, FindingEvent, LlmCallEvent


def whole_model_summary(path: Path) -> dict[str, object]:
    """What the command printed before: one model of the whole file, then ``summarise``."""
    with TraceReader(path) as reader:
        model = RunModel(reader)
        scanner = ProblemScanner(reader)
        problems: dict[str, int] = {}
        costs: dict[str, RunCosts] = {}
        answers: dict[str, summary.AnswerCounts] = {}
        for line, record in reader.iter_records(0):
            model.feed(line, record)
            if isinstance(record, LlmCallEvent):
                costs.setdefault(record.run_id, RunCosts()).add(line, record)
            if isinstance(record, FindingEvent) and record.layer == "answer":
                counted = answers.setdefault(record.run_id, {"assessed": 0, "unsupported": 0})
                for row in record.rows:
                    if isinstance(row, AnswerAssessmentRow):
                        counted["assessed"] += 1
                        counted["unsupported"] += sum(1 for value in row.values if not value.supported)
            for problem in scanner.check(line, record):
                problems[problem.code] = problems.get(problem.code, 0) + 1
        for problem in scanner.finish():
            problems[problem.code] = problems.get(problem.code, 0) + 1
        return dict(summary.summarise(str(path), reader, model, problems, answers=answers, costs=costs))


def demo_trace(tmp_path: Path, events: int, *, interleave: bool = False) -> Path:
    lines = list(iter_demo_lines(events))
    if interleave:  # the first two runs' events alternate (seq is left as it was: a problem, counted)
        body = lines[1:]
        first = [line for line in body if b'"run_id":"demo-000000"' in line]
        second = [line for line in body if b'"run_id":"demo-000001"' in line]
        rest = [line for line in body if line not in first and line not in second]
        mixed = [line for pair in zip(first, second, strict=False) for line in pair]
        mixed += first[len(second) :] + second[len(first) :]
        lines = [lines[0], *mixed, *rest]
    path = tmp_path / "demo.fptrace.jsonl"
    path.write_bytes(b"".join(lines))
    return path


@pytest.mark.parametrize("interleave", [False, True])
def test_the_streamed_summary_is_the_whole_model_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], interleave: bool
) -> None:
    path = demo_trace(tmp_path, 300, interleave=interleave)
    expected = whole_model_summary(path)
    assert len(expected["runs"]) > 10  # type: ignore[arg-type]
    assert main(["summary", "--json", str(path)]) == 0
    printed = capsys.readouterr().out
    assert printed == json.dumps(expected, indent=2, ensure_ascii=True) + "\n"
    assert main(["summary", str(path)]) == 0
    assert capsys.readouterr().out == summary.render(expected) + "\n"  # type: ignore[arg-type]


def test_a_run_is_dropped_once_its_last_line_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = demo_trace(tmp_path, 600)
    open_models: list[int] = []
    original = summary._Sweep._close

    def counting(self: summary._Sweep, run_id: str, models: dict, *rest: object) -> None:
        open_models.append(len(models))
        original(self, run_id, models, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(summary._Sweep, "_close", counting)
    assert main(["summary", "--json", str(path)]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert len(open_models) == len(runs) > 30
    assert max(open_models) == 1  # runs one after another: only the one being read is held


def test_a_trace_without_runs_prints_an_empty_list(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "empty.fptrace.jsonl"
    path.write_bytes(next(iter_demo_lines(0)))
    assert main(["summary", "--json", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["runs"] == []
