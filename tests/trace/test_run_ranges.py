"""Whole runs on every core (:mod:`fpdebug.trace.run_ranges`): the ranges, and the commands built on them.

``summary`` and ``report`` cut a large trace between runs and sweep each range in a forked worker
(issue 22). These tests force the cut on small traces (the minimum size lowered, two workers) and
hold the output to the single-process one byte for byte, with runs one after another, runs
interleaved (one range after all), a record that disagrees with its envelope, and secrets.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.demo_trace import iter_demo_lines
from fpdebug.cli import main
from fpdebug.commands import summary
from fpdebug.trace import run_ranges
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.run_ranges import RunPlan, RunSpool, map_ranges, plan_runs, spooled_texts

SECRET = "sk-ant-api03-" + "Z9y8X7w6" * 4


def _trace(tmp_path: Path, events: int, *, interleave: bool = False, secret: bool = False) -> Path:
    lines = list(iter_demo_lines(events))
    if secret:  # a run's agent name (in the summary and the report's header) holds a key
        at = next(i for i, line in enumerate(lines) if b'"kind":"run_start"' in line and i > 40)
        record = json.loads(lines[at])
        record["agent_name"] = f"agent {SECRET}"
        lines[at] = json.dumps(record, separators=(",", ":")).encode() + b"\n"
    if interleave:  # the first two runs' events alternate
        body = lines[1:]
        first = [line for line in body if b'"run_id":"demo-000000"' in line]
        second = [line for line in body if b'"run_id":"demo-000001"' in line]
        rest = [line for line in body if line not in first and line not in second]
        mixed = [line for pair in zip(first, second, strict=False) for line in pair]
        lines = [lines[0], *mixed, *first[len(second) :], *second[len(first) :], *rest]
    path = tmp_path / "demo.fptrace.jsonl"
    path.write_bytes(b"".join(lines))
    return path


@pytest.fixture
def cut(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any trace is cut for two workers."""
    monkeypatch.setattr(run_ranges, "RUN_RANGES_MIN_LINES", 0)
    monkeypatch.setattr(run_ranges, "default_workers", lambda: 2)


def _outputs(path: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    printed = []
    for argv in (["summary", "--json"], ["summary"], ["report"]):
        assert main([*argv, str(path)]) == 0
        printed.append(capsys.readouterr().out)
    return printed


def test_the_plan_cuts_between_runs_and_covers_every_line(tmp_path: Path, cut: None) -> None:
    path = _trace(tmp_path, 400)
    with TraceReader(path) as reader:
        plan = plan_runs(reader, len(reader))
        assert plan.workers == 2 and len(plan.ranges) == 8
        assert plan.ranges[0][0] == 0 and plan.ranges[-1][1] == len(reader)
        assert all(a[1] == b[0] for a, b in itertools.pairwise(plan.ranges))
        for start, stop in plan.ranges:  # every run the range holds is whole in it
            for run_id, first in plan.first.items():
                if start <= first < stop:
                    assert plan.last[run_id] < stop
                    assert plan.owns(start, run_id, plan.last[run_id])
        starts = [start for start, _stop in plan.ranges[1:]]
        assert set(starts) <= set(plan.first.values())


def test_interleaved_runs_stay_in_one_range(tmp_path: Path, cut: None) -> None:
    with TraceReader(_trace(tmp_path, 400, interleave=True)) as reader:
        plan = plan_runs(reader, len(reader))
        assert not plan.contiguous
        assert plan.ranges == [(0, len(reader))] and plan.workers == 1


def test_a_small_file_or_one_worker_stays_in_one_range(tmp_path: Path) -> None:
    with TraceReader(_trace(tmp_path, 400)) as reader:
        assert plan_runs(reader, len(reader)).ranges == [(0, len(reader))]  # under the minimum
        assert plan_runs(reader, len(reader), workers=1, min_lines=0).ranges == [(0, len(reader))]


def test_results_come_back_in_file_order_from_the_workers() -> None:
    plan = RunPlan(100, {}, {}, [(0, 10), (10, 50), (50, 60), (60, 100)], workers=2)
    assert list(map_ranges(plan, lambda start, stop: (start, stop, stop - start))) == [
        (0, 10, 10),
        (10, 50, 40),
        (50, 60, 10),
        (60, 100, 40),
    ]


def test_a_spool_gives_runs_back_by_first_line(tmp_path: Path) -> None:
    spool = RunSpool(str(tmp_path))
    for first, text in ((5, "b\n"), (1, "a é\n"), (9, "c\ud800\n")):  # interleaved runs close out of order
        spool.add(first, text)
    part = spool.close()
    assert list(spooled_texts([part])) == ["a é\n", "b\n", "c\ud800\n"]
    assert not Path(part.path).exists()


def test_the_parallel_output_is_the_single_process_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _trace(tmp_path, 700)
    single = _outputs(path, capsys)
    monkeypatch.setattr(run_ranges, "RUN_RANGES_MIN_LINES", 0)
    monkeypatch.setattr(run_ranges, "default_workers", lambda: 2)
    with TraceReader(path) as reader:
        assert len(plan_runs(reader, len(reader)).ranges) > 1  # the workers really ran
    assert _outputs(path, capsys) == single
    assert len(json.loads(single[0])["runs"]) > 20


def test_interleaved_runs_give_the_same_output_with_workers_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _trace(tmp_path, 500, interleave=True)
    single = _outputs(path, capsys)
    monkeypatch.setattr(run_ranges, "RUN_RANGES_MIN_LINES", 0)
    monkeypatch.setattr(run_ranges, "default_workers", lambda: 2)
    assert _outputs(path, capsys) == single


def test_a_record_its_envelope_misplaced_falls_back_to_one_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _trace(tmp_path, 500)
    single = _outputs(path, capsys)
    monkeypatch.setattr(run_ranges, "RUN_RANGES_MIN_LINES", 0)
    monkeypatch.setattr(run_ranges, "default_workers", lambda: 2)
    owns = RunPlan.owns

    def doubting(self: RunPlan, start: int, run_id: str, line: int) -> bool:
        return start == 0 and owns(self, start, run_id, line)  # every later range "finds" a stray run

    monkeypatch.setattr(RunPlan, "owns", doubting)
    assert _outputs(path, capsys) == single


@pytest.mark.parametrize("workers", [1, 2])
def test_a_secret_in_a_summary_or_report_field_is_redacted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    path = _trace(tmp_path, 600, secret=True)
    assert SECRET.encode() in path.read_bytes()
    monkeypatch.setattr(run_ranges, "RUN_RANGES_MIN_LINES", 0)
    monkeypatch.setattr(run_ranges, "default_workers", lambda: workers)
    summary_json, summary_text, report = _outputs(path, capsys)
    for printed in (summary_json, summary_text, report):
        assert SECRET not in printed
    assert "agent [redacted]" in summary_text
    assert "| agent \\[redacted\\] |" in report  # Markdown escapes the brackets
    assert any(run["agent_name"] == "agent [redacted]" for run in json.loads(summary_json)["runs"])


_json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(),
        st.text(max_size=8),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=5), _json_values, max_size=4))
def test_a_run_is_indented_as_json_dumps_indents_it(facts: dict[str, object]) -> None:
    assert summary._indented(facts) == json.dumps(facts, indent=2, ensure_ascii=True)  # type: ignore[arg-type]
