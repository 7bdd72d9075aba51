"""The slot changes of a pass diff: which ids entered, left, came and went, or were kept with a gap.

A slot is the system prompt, the messages or the tools (docs/context-model.md §3.5); a trace that
records only ``active_ids`` is compared on the :data:`~fpdebug.views.pass_diff.model.ACTIVE` set. Within
one run every pass between A and B is read, so an id that was off the wire in between is said too.
"""

from __future__ import annotations

from fpdebug.views.pass_diff.model import ACTIVE, SLOTS, Change, PassDiff
from fpdebug.views.pass_diff.records import Step, Walk, describe_reason, routed, serving_lease
from fpdebug.views.pass_diff.why_left import why_left


def slot_changes(diff: PassDiff, walk: Walk) -> None:
    """Fill ``diff.slots`` and ``diff.kept`` from the walk's first (A) and last (B) steps."""
    contiguous = not diff.across_runs
    # A trace that records only ``active_ids`` (no slot routing) is compared on the active set.
    is_routed = any(routed(step.record) for step in walk.steps)
    for slot in [name for _, name in SLOTS] if is_routed else [ACTIVE]:
        before, after = walk.steps[0].slots[slot], walk.steps[-1].slots[slot]
        changes: list[Change] = []
        for id_ in after:
            if id_ in before:
                change = _still_there(walk, slot, id_, contiguous)
            else:
                change = _entered(walk, slot, id_, contiguous)
            if change is not None:
                changes.append(change)
        changes.extend(_left(walk, slot, id_, contiguous) for id_ in before if id_ not in after)
        if contiguous:
            changes.extend(_came_and_went(walk, slot, set(before) | set(after)))
        diff.slots[slot] = changes
        diff.kept[slot] = [id_ for id_ in after if id_ in before]


def _still_there(walk: Walk, slot: str, id_: str, contiguous: bool) -> Change | None:
    """An id in A and B: a change only when it was off the wire in between (``kept-with-gap``)."""
    gap = _gap(walk.steps, slot, id_) if contiguous else None
    if gap is None:
        return None
    left, back = gap
    return Change(
        slot,
        id_,
        "kept-with-gap",
        walk.flavor(id_),
        why=f"back at {back.label}: {why_entered(walk, back, id_)}",
        line=back.iteration.first_line,
        label=back.label,
        why_left=why_left(walk, left, id_),
        left_line=walk.steps[left].iteration.first_line,
        left_label=walk.steps[left].label,
    )


def _entered(walk: Walk, slot: str, id_: str, contiguous: bool) -> Change:
    """An id in B only: it entered where its last unbroken run of passes up to B began."""
    b = walk.steps[-1]
    entered = _entered_at(walk.steps, slot, id_) if contiguous else b
    return Change(
        slot,
        id_,
        "entered",
        walk.flavor(id_),
        why=why_entered(walk, b, id_),
        line=entered.iteration.first_line,
        label=entered.label,
    )


def _left(walk: Walk, slot: str, id_: str, contiguous: bool) -> Change:
    """An id in A only: where it left and why (across runs nothing between says why)."""
    if not contiguous:
        b = walk.steps[-1]
        why = f"not active in {b.label} (another run: nothing between to say why)"
        return Change(slot, id_, "left", walk.flavor(id_), why=why)
    left = _left_at(walk.steps, slot, id_, 1)
    return Change(
        slot,
        id_,
        "left",
        walk.flavor(id_),
        why=why_left(walk, left, id_),
        line=walk.steps[left].iteration.first_line,
        label=walk.steps[left].label,
    )


def _came_and_went(walk: Walk, slot: str, seen: set[str]) -> list[Change]:
    """Ids in neither A nor B but on a pass between: where each entered and where it left."""
    steps = walk.steps
    transient: list[str] = []
    for step in steps[1:-1]:
        for id_ in step.slots[slot]:
            if id_ not in seen and id_ not in transient:
                transient.append(id_)
    changes: list[Change] = []
    for id_ in transient:
        first = next(i for i, step in enumerate(steps) if id_ in step.slots[slot])
        left = _left_at(steps, slot, id_, first)
        changes.append(
            Change(
                slot,
                id_,
                "came-and-went",
                walk.flavor(id_),
                why=why_entered(walk, steps[first], id_),
                line=steps[first].iteration.first_line,
                label=steps[first].label,
                why_left=why_left(walk, left, id_),
                left_line=steps[left].iteration.first_line,
                left_label=steps[left].label,
            )
        )
    return changes


def _gap(steps: list[Step], slot: str, id_: str) -> tuple[int, Step] | None:
    """Where an id in both A and B was off the wire between them: (index it left at, step it came back)."""
    for index in range(1, len(steps) - 1):
        if steps[index].record is not None and id_ not in steps[index].slots[slot]:
            back = next(
                (s for s in steps[index + 1 :] if s.record is not None and id_ in s.slots[slot]), steps[-1]
            )
            return index, back
    return None


def _entered_at(steps: list[Step], slot: str, id_: str) -> Step:
    """The first step of the run of passes, ending at B, in which ``id_`` is in ``slot``."""
    entered = steps[-1]
    for step in reversed(steps[1:]):
        if step.record is None or id_ not in step.slots[slot]:
            break
        entered = step
    return entered


def _left_at(steps: list[Step], slot: str, id_: str, start: int) -> int:
    """The index of the first step from ``start`` on whose pass does not have ``id_`` in ``slot``."""
    for index in range(max(start, 1), len(steps)):
        step = steps[index]
        if step.record is not None and id_ not in step.slots[slot]:
            return index
    return len(steps) - 1


def why_entered(walk: Walk, step: Step, id_: str) -> str:
    """Why ``id_`` rode the pass of ``step``: its recorded reason, else its serving lease, else its trigger."""
    reason = step.reasons.get(id_)
    if reason is None:
        lease = serving_lease(walk.run, step, id_)
        if lease is not None:
            tenant = lease.tenant if lease.tenant is not None else "(no tenant)"
            return (
                f"lease {lease.delivery_lease} granted by {lease.tool_name} (call {lease.tool_call_id or '?'}, "
                f"iteration {lease.granted_iteration}), tenant {tenant}"
            )
    return describe_reason(reason, walk.catalog.get(id_))
