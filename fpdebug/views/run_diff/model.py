"""The run diff's model: the two runs, the points compared in the order they happened, and the JSON form.

Built by :func:`~fpdebug.views.run_diff.run_diff`. Strings here come from the traces: the text view
passes them through ``inert_line``; the JSON form escapes every non-ASCII character.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

SCHEMA = "fpdebug.run-diff"
"""The ``schema`` key of the JSON form."""

VERSION = 1
"""The ``version`` key of the JSON form (bumped when a key changes meaning or goes away)."""

Stage = Literal["declared", "turn", "context", "request", "response", "tools", "end"]
"""Where a difference sits, in the order things happen: the run's declaration, the turn's user
message, the context pass (cursor, leases, injections), the LLM request, its response, the tool
results (and the leases they grant), then a turn's or the run's end."""

STAGES: tuple[Stage, ...] = ("declared", "turn", "context", "request", "response", "tools", "end")
"""Every stage, in order."""

Present = Literal["both", "a", "b"]
"""A point recorded in both runs, or in one only."""


@dataclass(frozen=True)
class Difference:
    """One thing that differs between the two runs at one point."""

    stage: Stage
    """Where it sits (see :data:`Stage`)."""
    kind: str
    """``injection``, ``lease``, ``cursor``, ``segment``, ``message``, ``tool``, ``model``,
    ``provider``, ``response``, ``tool-call``, ``tool-result``, ``user-message``, ``final-answer``…"""
    subject: str
    """What differs: an injection id, a tool's name, ``cursor``…"""
    a: str | None
    """What run A has there, in words (``None``: nothing)."""
    b: str | None
    """What run B has there."""
    why: str = ""
    """Why, from the records (why an injection is active in one run and not the other…)."""
    detail: tuple[str, ...] = ()
    """A unified line diff of A's text → B's, when a text changed."""

    def as_json(self) -> dict[str, object]:
        """The JSON form (every key always present)."""
        return {
            "stage": self.stage,
            "kind": self.kind,
            "subject": self.subject,
            "a": self.a,
            "b": self.b,
            "why": self.why,
            "detail": list(self.detail),
        }


@dataclass
class Point:
    """One aligned point of the two runs: a turn's start, a pass, a turn's end, or the run's end."""

    label: str
    """``T1·I2``, ``T1 start``, ``T1 end``, ``run end``."""
    turn: int | None
    """The turn (``None`` for the run's end)."""
    iteration: int | None
    """The iteration (``None`` for a turn's start or end and the run's end)."""
    present: Present = "both"
    """Whether both runs have this point."""
    differences: list[Difference] = field(default_factory=list)
    """What differs there, in stage order."""

    @property
    def identical(self) -> bool:
        """Nothing differs at this point."""
        return not self.differences

    @property
    def first_stage(self) -> Stage | None:
        """The earliest stage that differs."""
        return self.differences[0].stage if self.differences else None

    def as_json(self) -> dict[str, object]:
        """The JSON form."""
        return {
            "point": self.label,
            "turn": self.turn,
            "iteration": self.iteration,
            "present": self.present,
            "identical": self.identical,
            "differences": [difference.as_json() for difference in self.differences],
        }


@dataclass(frozen=True)
class RunSide:
    """One of the two runs compared."""

    path: str
    """The trace file (shown, never put in the JSON: it changes between two runs of one scenario)."""
    run_id: str
    """The run's id (shown, never put in the JSON: it is random per run)."""
    number: int
    """Its 1-based position in the file."""
    runs: int
    """How many runs the file holds."""
    status: str
    """``completed``, ``failed``, ``interrupted`` or ``running`` (no ``run_end``)."""
    turns: int
    """Turns recorded."""
    iterations: int
    """Iterations recorded."""
    source: str
    """``fpdebug`` for a native trace, else the format it was imported from (``otlp``…)."""

    def as_json(self) -> dict[str, object]:
        """The JSON form: only what two runs of one scenario share when they behave alike."""
        return {
            "run": self.number,
            "runs_in_file": self.runs,
            "status": self.status,
            "turns": self.turns,
            "iterations": self.iterations,
            "source": self.source,
        }


@dataclass
class RunDiff:
    """Two runs compared point by point."""

    a: RunSide
    """Run A (the reference: yesterday's good run)."""
    b: RunSide
    """Run B."""
    declared: list[Difference] = field(default_factory=list)
    """How the two ``run_start`` records declare the runs differently (model, injections, tools…)."""
    points: list[Point] = field(default_factory=list)
    """Every aligned point, in the order things happen."""
    notes: list[str] = field(default_factory=list)
    """What the diff could not read or compare (a missing pass record, a source that does not record it)."""

    @property
    def identical(self) -> bool:
        """Nothing differs: neither the declarations nor any point."""
        return not self.declared and all(point.identical for point in self.points)

    @property
    def first(self) -> Point | None:
        """The first point that differs (``None`` when every point is identical)."""
        return next((point for point in self.points if not point.identical), None)

    def consequences(self) -> list[Point]:
        """Every point after the first divergence (identical ones included)."""
        first = self.first
        if first is None:
            return []
        return self.points[self.points.index(first) + 1 :]

    def as_json(self) -> dict[str, object]:
        """The documented JSON form (docs/guide/diff.md): stable for one pair of traces.

        No timestamps, durations, run ids or paths: two runs of one scenario that behave alike give
        the same document. Dump it with ``sort_keys=True``.
        """
        first = self.first
        divergence: dict[str, object] | None = None
        if first is not None:
            stage = first.first_stage
            divergence = {
                "point": first.label,
                "turn": first.turn,
                "iteration": first.iteration,
                "stage": stage,
                "differences": [d.as_json() for d in first.differences if d.stage == stage],
            }
        return {
            "schema": SCHEMA,
            "version": VERSION,
            "identical": self.identical,
            "a": self.a.as_json(),
            "b": self.b.as_json(),
            "declared": [difference.as_json() for difference in self.declared],
            "first_divergence": divergence,
            "points": [point.as_json() for point in self.points],
            "notes": list(self.notes),
        }
