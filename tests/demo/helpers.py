"""What the demo tests share: the committed samples, running a scenario, reading a trace's events."""

from __future__ import annotations

from pathlib import Path

from fpdebug.demo import run_scenario
from fpdebug.trace.clock import FixedClock
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import TraceEvent
from tests.conftest import T0

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"
"""The committed sample traces (read only)."""


def events_of(path: Path) -> list[TraceEvent]:
    """Every event of a trace, after checking that no line has a problem."""
    with TraceReader(path) as reader:
        assert reader.problems() == []
        return [reader[i] for i in range(1, len(reader))]  # type: ignore[misc]


def run_events(name: str, tmp_path: Path) -> list[TraceEvent]:
    """Run a scenario on its scripted model (fixed clock, run id ``t``) and read its trace back."""
    path = run_scenario(name, trace_path=tmp_path / f"{name}.jsonl", clock=FixedClock(T0), run_id="t")
    return events_of(path)
