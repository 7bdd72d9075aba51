"""The difference between two passes of a trace, and why each piece of context entered or left (no Textual).

:func:`pass_diff` compares two iterations A and B (any two: of one turn, of two turns, of two runs;
the earlier one is always read first) slot by slot (docs/context-model.md §3.5: the injections routed to the
system prompt, the messages and the tools), and says WHY each id entered or left: the reason the
pass recorded for it (its trigger, the cursor, a lease and who granted it), a lease that was pruned
(``spent`` / ``tenure-ended``), a map that parked, a skip reason, the cursor moving off a skill.
Within one run it walks every pass between A and B, so a piece that came and went in between (a
lease granted, served and pruned) is listed too, with where it entered and where it left. Beside the
slots: the conversation messages and tool schemas of the two LLM requests, the system prompt segment
by segment (with a line diff of a segment whose text changed), the cursor and its moves, the leases
(serving, granted, pruned) and each mounted map's standing.

Everything is read from the records of the passes involved (never the whole trace), and a walk longer
than :data:`MAX_WALK` iterations is cut (and says so). Strings here come from the trace: the view
that shows them passes them through ``inert``.

The package splits by concept: :mod:`.model` (what a diff is), :mod:`.records` (what it reads),
:mod:`.slots` (the slot changes) with :mod:`.why_left` (why a piece left), :mod:`.requests` (the two
LLM requests) and :mod:`.notes` (cursor, leases, maps). This module walks from A to B and calls each.
"""

from __future__ import annotations

from fpdebug.trace.model import Iteration, Run
from fpdebug.trace.schema import LlmCallEvent, PassEvent
from fpdebug.views.pass_diff.model import (
    ACTIVE,
    SLOTS,
    Change,
    CursorStep,
    LeaseNote,
    MapNote,
    MessageChange,
    PassDiff,
    SegmentChange,
    Side,
    ToolChange,
    iter_changes,
)
from fpdebug.views.pass_diff.notes import cursor_steps, lease_notes, map_notes
from fpdebug.views.pass_diff.records import (
    Step,
    Walk,
    call_record,
    describe_reason,
    pass_record,
    slot_ids,
)
from fpdebug.views.pass_diff.requests import request_changes
from fpdebug.views.pass_diff.slots import slot_changes
from fpdebug.views.session import TraceSession

__all__ = [
    "ACTIVE",
    "MAX_WALK",
    "SLOTS",
    "Change",
    "CursorStep",
    "LeaseNote",
    "MapNote",
    "MessageChange",
    "PassDiff",
    "SegmentChange",
    "Side",
    "ToolChange",
    "describe_reason",
    "iter_changes",
    "pass_diff",
]

MAX_WALK = 500
"""Iterations read at most between A and B (a longer walk is cut and the diff says so)."""


def pass_diff(session: TraceSession, a_row: int, b_row: int) -> PassDiff:
    """Compare timeline rows ``a_row`` and ``b_row`` (the earlier one is read as A).

    Args:
        session: The trace.
        a_row: The first pass chosen.
        b_row: The second pass chosen.

    Returns:
        The diff; ``same`` when both rows are one pass.

    Raises:
        IndexError: A row is not in the timeline.
    """
    rows = session.iterations
    first, second = rows[a_row], rows[b_row]
    swapped = first.first_line > second.first_line
    if swapped:
        a_row, b_row = b_row, a_row
        first, second = second, first
    run = session.run_of(second)
    a_pass, b_pass = pass_record(session, first), pass_record(session, second)
    a_call, b_call = call_record(session, first), call_record(session, second)
    diff = PassDiff(
        a=_side(session, a_row, a_pass, a_call),
        b=_side(session, b_row, b_pass, b_call),
        swapped=swapped,
        same=a_row == b_row,
        across_turns=first.run_id == second.run_id and first.turn != second.turn,
        across_runs=first.run_id != second.run_id,
    )
    if diff.same:
        return diff
    _note_unreadable(diff, a_pass, a_call, b_pass, b_call)
    walk = _read_walk(diff, session, run, (first, a_pass), (second, b_pass))
    if a_pass is not None and b_pass is not None:
        slot_changes(diff, walk)
    if a_call is not None and b_call is not None:
        request_changes(diff, walk, a_call.request, b_call.request, b_pass)
    cursor_steps(diff, walk)
    if run is not None and not diff.across_runs:
        lease_notes(diff, session, run, first, second)
        map_notes(diff, session, run, first, second)
    return diff


def _side(session: TraceSession, row: int, record: PassEvent | None, call: LlmCallEvent | None) -> Side:
    iteration = session.iterations[row]
    return Side(
        row=row,
        label=session.label(iteration),
        run_id=iteration.run_id,
        turn=iteration.turn,
        number=iteration.number,
        first_line=iteration.first_line,
        has_pass=record is not None,
        has_call=call is not None,
        cursor=iteration.cursor_to,
        active=len(record.active_ids) if record is not None else 0,
    )


def _note_unreadable(
    diff: PassDiff,
    a_pass: PassEvent | None,
    a_call: LlmCallEvent | None,
    b_pass: PassEvent | None,
    b_call: LlmCallEvent | None,
) -> None:
    """Say which of the two passes' records could not be read (what depends on them is left out)."""
    for side, record, call in ((diff.a, a_pass, a_call), (diff.b, b_pass, b_call)):
        if record is None:
            diff.notes.append(f"{side.label} has no readable pass record: its slots are unknown")
        if call is None:
            diff.notes.append(f"{side.label} has no readable llm_call: its request is unknown")


def _read_walk(
    diff: PassDiff,
    session: TraceSession,
    run: Run | None,
    a: tuple[Iteration, PassEvent | None],
    b: tuple[Iteration, PassEvent | None],
) -> Walk:
    """Read every pass from A to B (A's and B's records already read); sets ``walked`` and ``walk_cut``."""
    (first, a_pass), (second, b_pass) = a, b
    iterations, diff.walk_cut = _walk(run, first, second)
    steps = []
    for iteration in iterations:
        if iteration is first:
            record = a_pass
        elif iteration is second:
            record = b_pass
        else:
            record = pass_record(session, iteration)
        steps.append(
            Step(
                iteration=iteration,
                label=session.label(iteration),
                record=record,
                slots=slot_ids(record),
                reasons={reason.id: reason for reason in record.reasons} if record is not None else {},
            )
        )
    diff.walked = len(steps) - 1
    start = session.run_start(second.run_id)
    catalog = {decl.id: decl for decl in (start.injections if start is not None else [])}
    return Walk(session=session, run=run, steps=steps, catalog=catalog)


def _walk(run: Run | None, a: Iteration, b: Iteration) -> tuple[list[Iteration], bool]:
    """The iterations from A to B inclusive, in run order (capped), and whether the cap cut it."""
    if run is None or a.run_id != b.run_id:
        return [a, b], False
    found: list[Iteration] = []
    inside = False
    for iteration in run.iterations():
        if iteration is a:
            inside = True
        if inside:
            found.append(iteration)
            if iteration is b:
                return found, False
            if len(found) > MAX_WALK:
                return [*found[:MAX_WALK], b], True
    return [a, b], False
