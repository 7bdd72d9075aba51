"""The diff of two runs: align their turns and passes, find the first divergence, show what followed.

:func:`run_diff` compares run A (the reference) with run B, each from its own trace. Turn N is
aligned with turn N, and iteration k of a turn with iteration k of the same turn. At each aligned
pass the checks follow the order things happen (docs/guide/diff.md): the context pass (the cursor,
the leases pruned and serving, the injections and why each is or is not active), the LLM request
(provider and model, parameters, then the pass diff's own comparison of the system prompt segments,
tool schemas and messages), the response, and the tool results with the leases they granted. A
turn's user message comes before its first pass, its final answer after its last; the runs' ends
come last. The first point where anything differs is the first divergence; every later point is a
consequence, listed ("identical" when nothing differs there).

What each ``run_start`` declares (model, injections, tools, options) is compared on its own: a
declared difference is named beside the divergence it explains, and counts as a difference even
when no pass shows it.

The pass diff (:mod:`fpdebug.views.pass_diff`) is the building block: its reasons, slot reading
and request comparison are reused as they are. Nothing here imports Textual; strings come from the
traces and are escaped by whoever shows them.
"""

from __future__ import annotations

from fpdebug.errors import FpdebugError
from fpdebug.trace.model import Iteration, Run, Turn
from fpdebug.views.run_diff.calls import request_differences, response_differences, tool_differences
from fpdebug.views.run_diff.context import context_differences
from fpdebug.views.run_diff.declared import (
    declared_differences,
    run_end_differences,
    turn_end_differences,
    turn_start_differences,
)
from fpdebug.views.run_diff.model import (
    SCHEMA,
    STAGES,
    VERSION,
    Difference,
    Point,
    Present,
    RunDiff,
    RunSide,
    Stage,
)
from fpdebug.views.run_diff.reading import RunReading
from fpdebug.views.session import TraceSession

__all__ = [
    "SCHEMA",
    "STAGES",
    "VERSION",
    "Difference",
    "Point",
    "RunDiff",
    "RunSide",
    "Stage",
    "choose_run",
    "run_diff",
]


def choose_run(session: TraceSession, wanted: str | None, name: str) -> Run:
    """The run of ``session`` the user chose: by id or 1-based number; the first one by default.

    Raises:
        FpdebugError: The trace holds no run, or none by that id or number (the message lists them).
    """
    runs = list(session.iter_runs())
    if not runs:
        raise FpdebugError(f"trace {name} holds no run")
    if wanted is None:
        return runs[0]
    for run in runs:
        if run.run_id == wanted or (wanted.isdigit() and run.number == int(wanted)):
            return run
    listed = ", ".join(f"{run.number} ({run.run_id})" for run in runs[:20])
    more = f" and {len(runs) - 20} more" if len(runs) > 20 else ""
    raise FpdebugError(f"trace {name} has no run {wanted!r}; its runs are: {listed}{more}")


def _side(session: TraceSession, run: Run, path: str) -> RunSide:
    source = session.source
    return RunSide(
        path=path,
        run_id=run.run_id,
        number=run.number,
        runs=len(session.model.runs),
        status=run.status,
        turns=len(run.turns),
        iterations=run.iteration_count,
        source="fpdebug" if source is None else source.format,
    )


def run_diff(
    a: tuple[TraceSession, Run, str],
    b: tuple[TraceSession, Run, str],
) -> RunDiff:
    """Compare run A with run B.

    Args:
        a: Run A's trace (fully loaded), the run, and the path shown for it.
        b: The same for run B.

    Returns:
        The diff: the declared differences, every aligned point in order, and notes.
    """
    sides = RunReading.of(a[0], a[1]), RunReading.of(b[0], b[1])
    diff = RunDiff(a=_side(*a), b=_side(*b))
    diff.declared = declared_differences(*sides)
    _note_sources(diff, sides)
    turns_a = {turn.number: turn for turn in a[1].turns}
    turns_b = {turn.number: turn for turn in b[1].turns}
    for number in sorted(set(turns_a) | set(turns_b)):
        ta, tb = turns_a.get(number), turns_b.get(number)
        if ta is None or tb is None:
            diff.points.append(_lone_turn(sides, ta, tb, number))
            continue
        _compare_turn(diff, sides, ta, tb)
    diff.points.append(Point("run end", None, None, differences=run_end_differences(*sides)))
    return diff


def _note_sources(diff: RunDiff, sides: tuple[RunReading, RunReading]) -> None:
    for side, name in zip(sides, "AB", strict=True):
        why = side.session.not_recorded("pass")
        if why is not None:
            diff.notes.append(f"{name} has no context passes ({why}): only what it recorded is compared")
        if side.start is None:
            diff.notes.append(f"{name}'s run_start is missing or unreadable: its declaration is not compared")


def _lone_turn(sides: tuple[RunReading, RunReading], ta: Turn | None, tb: Turn | None, number: int) -> Point:
    """A turn only one run has: one point that says so."""
    turn = ta if ta is not None else tb
    assert turn is not None
    present: Present = "a" if ta is not None else "b"
    side = sides[0] if ta is not None else sides[1]
    words = f"turn {number}: {len(turn.iterations)} iteration(s)"
    only = Difference(
        "turn",
        "turn",
        f"turn {number}",
        words if present == "a" else None,
        words if present == "b" else None,
        why=f"only {present.upper()} has turn {number} ({len(side.run.turns)} turn(s) in all)",
    )
    return Point(f"T{number}", number, None, present=present, differences=[only])


def _compare_turn(diff: RunDiff, sides: tuple[RunReading, RunReading], ta: Turn, tb: Turn) -> None:
    a, b = sides
    diff.points.append(
        Point(f"T{ta.number} start", ta.number, None, differences=turn_start_differences(a, b, ta, tb))
    )
    iterations_a = {it.number: it for it in ta.iterations}
    iterations_b = {it.number: it for it in tb.iterations}
    for number in sorted(set(iterations_a) | set(iterations_b)):
        ia, ib = iterations_a.get(number), iterations_b.get(number)
        label = f"T{ta.number}·I{number}"
        if ia is None or ib is None:
            diff.points.append(_lone_pass(sides, ia, ib, label, (ta, tb)))
            continue
        diff.points.append(Point(label, ta.number, number, differences=_compare_pass(diff, sides, ia, ib)))
    diff.points.append(
        Point(f"T{ta.number} end", ta.number, None, differences=turn_end_differences(a, b, ta, tb))
    )


def _lone_pass(
    sides: tuple[RunReading, RunReading],
    ia: Iteration | None,
    ib: Iteration | None,
    label: str,
    turns: tuple[Turn, Turn],
) -> Point:
    """A pass only one run has (its turn ran longer): one point that says so."""
    iteration = ia if ia is not None else ib
    assert iteration is not None
    present: Present = "a" if ia is not None else "b"
    side = sides[0] if ia is not None else sides[1]
    call = side.call_of(iteration)
    side.number_calls(call)  # keep the call numbering in step with the run
    counts = f"A's turn {turns[0].number} has {len(turns[0].iterations)} iteration(s), B's {len(turns[1].iterations)}"
    words = "a pass"
    if call is not None and call.response is not None:
        asked = ", ".join(c.name for c in call.response.tool_calls)
        words = f"a pass that asked for {asked}" if asked else "a pass that answered"
    only = Difference(
        "context",
        "pass",
        label,
        words if present == "a" else None,
        words if present == "b" else None,
        why=f"only {present.upper()} has this pass: {counts}",
    )
    return Point(label, iteration.turn, iteration.number, present=present, differences=[only])


def _compare_pass(
    diff: RunDiff, sides: tuple[RunReading, RunReading], ia: Iteration, ib: Iteration
) -> list[Difference]:
    a, b = sides
    pa, pb = a.pass_of(ia), b.pass_of(ib)
    ca, cb = a.call_of(ia), b.call_of(ib)
    label = f"T{ia.turn}·I{ia.number}"
    for side, name, record, call in ((a, "A", pa, ca), (b, "B", pb, cb)):
        iteration = ia if side is a else ib
        if record is None and iteration.pass_line is not None:
            diff.notes.append(f"{label}: {name}'s pass record is unreadable; its context is not compared")
        if call is None and iteration.llm_lines:
            diff.notes.append(f"{label}: {name}'s llm_call is unreadable; its request is not compared")
    found = context_differences(sides, ia, ib, pa, pb)
    found += request_differences(sides, (ia, ib), (ca, cb), pb)
    a.number_calls(ca)
    b.number_calls(cb)
    found += response_differences((ca, cb))
    found += tool_differences(sides, ia, ib)
    return found
