"""The equality law on interrupted runs: a run stopped at ANY event wrote exactly the findings that
:func:`~fpdebug.engine.honesty.replay.recompute_findings` recomputes from its saved trace.

The stop is the debugger's: a sink that raises :class:`~fpdebug.errors.RunInterrupted` from one
``emit`` (as :class:`~fpdebug.tui.drive.gate.StepGate` does after ``--break finding`` and quit), after
which the loop writes ``run_end`` ``interrupted``. Every honesty demo, and every other demo armed with
all layers, is stopped at every event it writes; a trace cut short (no ``run_end``) at every line too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fpdebug.demo import SCENARIOS, load_scenario
from fpdebug.engine.agent import Agent, RunResult
from fpdebug.engine.honesty import Finding
from fpdebug.engine.honesty.replay import recompute_findings, recorded_findings
from fpdebug.engine.sink import TraceFileSink
from fpdebug.errors import RunInterrupted
from fpdebug.trace.clock import FixedClock
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import AnswerAssessmentRow, RunEndEvent, TraceEvent
from tests.conftest import T0


class StopAt:
    """A sink wrapper that refuses the ``at``-th event with ``RunInterrupted`` (run_start and run_end
    always pass, as the step gate lets them), like the gate's next ``emit`` after a stop."""

    def __init__(
        self, inner: TraceFileSink, *, at: int | None = None, kind: str | None = None, nth: int = 1
    ) -> None:
        self.inner, self.at, self.kind, self.nth = inner, at, kind, nth
        self.emitted = 0
        self.seen = 0
        self.refused: str | None = None

    @property
    def next_seq(self) -> int:
        return self.inner.next_seq

    def emit(self, event: TraceEvent) -> None:
        if event.kind not in ("run_start", "run_end") and self.refused is None:
            self.emitted += 1
            if event.kind == self.kind:
                self.seen += 1
            if self.emitted == self.at or (self.kind == event.kind and self.seen == self.nth):
                self.refused = event.kind
                raise RunInterrupted("the debugger stopped the run")
        self.inner.emit(event)

    def close(self) -> None:
        self.inner.close()


def armed(name: str) -> Agent:
    agent = load_scenario(name).build_agent()
    if agent.spec.honesty is not None:
        return agent
    return agent.findings(argument_sources=True, standing_line=True)


def read(path: Path) -> list[TraceEvent]:
    with TraceReader(path) as reader:
        assert reader.problems() == []
        return [reader[i] for i in range(1, len(reader))]  # type: ignore[misc]


def run_stopped(name: str, path: Path, **stop: object) -> tuple[RunResult, StopAt, list[TraceEvent]]:
    scenario = load_scenario(name)
    clock = FixedClock(T0)
    with TraceFileSink.create(path, clock=clock) as sink:
        gate = StopAt(sink, **stop)  # type: ignore[arg-type]
        result = armed(name).run(
            list(scenario.user_messages),
            provider=scenario.scripted_provider(),
            sink=gate,
            clock=clock,
            run_id="t",
            answer=scenario.answer_ask,
        )
    return result, gate, read(path)


def layers(findings: list[Finding]) -> list[tuple[str, int | None]]:
    return [(f.layer, f.iteration) for f in findings]


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_a_run_stopped_at_any_event_recomputes_to_exactly_what_it_wrote(name: str, tmp_path: Path) -> None:
    _, _, complete = run_stopped(name, tmp_path / "complete.jsonl")
    everything = recorded_findings(complete)
    assert everything and recompute_findings(complete) == everything
    # Every event between run_start and run_end is a possible stop.
    for at in range(1, len(complete) - 1):
        result, gate, events = run_stopped(name, tmp_path / f"stop-{at}.jsonl", at=at)
        assert gate.refused is not None and result.status == "interrupted", at
        end = events[-1]
        assert isinstance(end, RunEndEvent) and end.status == "interrupted", at
        written = recorded_findings(events)
        assert recompute_findings(events) == written, f"{name} stopped at its event {at} ({gate.refused})"
        # A stopped run wrote a prefix of what the whole run writes: nothing else, nothing out of order.
        assert written == everything[: len(written)], at


@pytest.mark.parametrize("name", ["unsupported-amount", "traced-argument", "revised-amount", "argument-ask"])
def test_a_trace_cut_short_at_any_line_recomputes_to_exactly_what_it_holds(name: str, tmp_path: Path) -> None:
    _, _, complete = run_stopped(name, tmp_path / "complete.jsonl")
    for cut in range(1, len(complete) + 1):
        head = complete[:cut]  # a crash: no run_end, the file simply ends
        assert recompute_findings(head) == recorded_findings(head), f"{name} cut after {cut} events"


def test_stopped_at_the_third_finding_the_unwritten_inputs_visit_is_not_recomputed(tmp_path: Path) -> None:
    # The audit's first case: the second llm_call was written, its inputs finding was not.
    _, gate, events = run_stopped("traced-argument", tmp_path / "t.jsonl", kind="finding", nth=3)
    assert gate.refused == "finding" and [e.kind for e in events][-2:] == ["llm_call", "run_end"]
    assert (
        layers(recompute_findings(events))
        == layers(recorded_findings(events))
        == [("inputs", 1), ("results", 2)]
    )


def test_stopped_at_turn_end_the_answer_assessed_before_it_is_recomputed(tmp_path: Path) -> None:
    # The audit's second case: no turn_end, yet the answer layer had assessed the final reply.
    _, gate, events = run_stopped("unsupported-amount", tmp_path / "t.jsonl", kind="turn_end")
    assert gate.refused == "turn_end" and "turn_end" not in [e.kind for e in events]
    recomputed = recompute_findings(events)
    assert recomputed == recorded_findings(events)
    assert layers(recomputed) == [("inputs", 1), ("results", 2), ("answer", 2)]
    (row,) = recomputed[-1].rows
    assert isinstance(row, AnswerAssessmentRow)
    assert [v.text for v in row.values if not v.supported] == ["$75.00"]


def test_stopped_at_the_answer_finding_no_answer_is_recomputed(tmp_path: Path) -> None:
    _, _, complete = run_stopped("unsupported-amount", tmp_path / "complete.jsonl")
    answers = sum(1 for f in recorded_findings(complete) if f.layer == "answer")
    _, gate, events = run_stopped(
        "unsupported-amount", tmp_path / "t.jsonl", kind="finding", nth=len(recorded_findings(complete))
    )
    assert answers == 1 and gate.refused == "finding"
    assert [f.layer for f in recompute_findings(events)] == ["inputs", "results"]
    assert recompute_findings(events) == recorded_findings(events)
