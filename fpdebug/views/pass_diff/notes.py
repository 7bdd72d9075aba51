"""Beside the slots of a pass diff: the cursor's moves, the leases, and each mounted map's standing."""

from __future__ import annotations

from fpdebug.trace.model import Iteration, Run
from fpdebug.trace.schema import CursorMoveEvent
from fpdebug.views.pass_diff.model import CursorStep, LeaseNote, MapNote, PassDiff
from fpdebug.views.pass_diff.records import Walk, pass_label, prune_words, record
from fpdebug.views.session import TraceSession


def cursor_steps(diff: PassDiff, walk: Walk) -> None:
    """Fill ``diff.cursor_steps``: every pass in (A, B] that moved the cursor (not within a run: none)."""
    if diff.across_runs:
        return
    for step in walk.steps[1:]:
        iteration = step.iteration
        if iteration.cursor_line is None:
            continue
        if iteration.cursor_by == "stay" or (
            iteration.cursor_from == iteration.cursor_to and iteration.cursor_by in (None, "stay")
        ):
            continue
        move = record(walk.session, iteration.cursor_line, CursorMoveEvent)
        diff.cursor_steps.append(
            CursorStep(
                label=step.label,
                line=iteration.first_line,
                from_skill=iteration.cursor_from,
                to_skill=iteration.cursor_to,
                by=iteration.cursor_by,
                strength=move.strength if move is not None else None,
            )
        )


def _key(turn: int | None, iteration: int | None) -> tuple[int, int]:
    return (turn or 0, iteration or 0)


def lease_notes(diff: PassDiff, session: TraceSession, run: Run, a: Iteration, b: Iteration) -> None:
    """Fill ``diff.leases``: leases that served A or B, or were granted or pruned between them."""
    a_key, b_key = (a.turn, a.number), (b.turn, b.number)
    for lease in run.leases:
        grant = _key(lease.turn, lease.granted_iteration)
        at_a = a_key in lease.served
        at_b = b_key in lease.served
        granted_between = a_key <= grant < b_key
        pruned = None
        if lease.prune_line is not None:
            prune = _key(lease.pruned_turn, lease.pruned_iteration)
            if a_key < prune <= b_key:
                pruned = prune_words(session, run, lease)
        if not (at_a or at_b or granted_between or pruned):
            continue
        diff.leases.append(
            LeaseNote(
                instruction_id=lease.instruction_id,
                delivery_lease=lease.delivery_lease,
                granted=(
                    f"{lease.tool_name} {lease.tool_call_id or '?'} at "
                    f"{pass_label(session, run, lease.turn, lease.granted_iteration)}"
                ),
                at_a=at_a,
                at_b=at_b,
                granted_between=granted_between,
                pruned=pruned,
                grant_line=lease.grant_line,
                prune_line=lease.prune_line,
            )
        )


def _standing(point: object) -> str:
    standing = getattr(point, "standing", "?")
    by = getattr(point, "by", None)
    at = getattr(point, "at", None)
    words = f"{standing} by {by}" if by else str(standing)
    return f"{words}, at {at}" if at else words


def map_notes(diff: PassDiff, session: TraceSession, run: Run, a: Iteration, b: Iteration) -> None:
    """Fill ``diff.maps``: each mounted map's standing at A and at B, and its changes in (A, B]."""
    a_key, b_key = (a.turn, a.number), (b.turn, b.number)
    for map_id, timeline in run.maps.items():
        at_a = at_b = None
        changes: list[tuple[str, str, int]] = []
        for point in timeline.points:
            key = _key(point.turn, point.iteration)
            if key == a_key:
                at_a = _standing(point)
            if key == b_key:
                at_b = _standing(point)
            if point.change is not None and a_key < key <= b_key:
                label = pass_label(session, run, point.turn, point.iteration)
                changes.append((label, point.change, point.line))
        if at_a is None and at_b is None and not changes:
            continue
        diff.maps.append(MapNote(map_id, at_a, at_b, tuple(changes)))
