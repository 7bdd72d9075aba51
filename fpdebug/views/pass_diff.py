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
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from fpdebug.trace.model import Iteration, LeaseLifetime, Run
from fpdebug.trace.schema import (
    ActiveReason,
    CursorMoveEvent,
    EngagementEvent,
    InjectionDecl,
    LeasePruneEvent,
    LlmCallEvent,
    LlmRequest,
    Message,
    PassEvent,
    ToolResultEvent,
)
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

SLOTS: tuple[tuple[str, str], ...] = (
    ("system_prompt", "system-prompt"),
    ("messages", "messages"),
    ("tools", "tools"),
)
"""The three slots: the pass record's field and the slot's name (docs/context-model.md §3.5)."""

ACTIVE = "active"
"""The pseudo-slot compared instead when neither pass records its slot routing (only ``active_ids``)."""

_DIFF_LINES = 40  # lines of a changed segment's text diff kept


@dataclass(frozen=True)
class Side:
    """One of the two passes compared."""

    row: int
    """Its timeline row."""
    label: str
    """``T1·I2`` (``2:T1·I2`` when the trace holds several runs)."""
    run_id: str
    """Its run."""
    turn: int
    """Its turn."""
    number: int
    """Its iteration number."""
    first_line: int
    """Its first record."""
    has_pass: bool
    """Whether its ``pass`` record could be read (the slots are unknown otherwise)."""
    has_call: bool
    """Whether its ``llm_call`` record could be read (the request parts are unknown otherwise)."""
    cursor: str | None
    """The cursor after the pass."""
    active: int
    """How many injections were active."""


@dataclass(frozen=True)
class Change:
    """One id that entered or left a slot (or came and went between A and B)."""

    slot: str
    """``system-prompt``, ``messages`` or ``tools``."""
    id: str
    """The injection id."""
    change: Literal["entered", "left", "came-and-went", "kept-with-gap"]
    """What happened between A and B."""
    flavor: str | None
    """The injection's flavor (from ``run_start``)."""
    why: str
    """Why, in words (for ``came-and-went``: why it entered)."""
    line: int | None = None
    """The pass where it happened (a jump target)."""
    label: str | None = None
    """That pass's label."""
    why_left: str | None = None
    """For ``came-and-went`` and ``kept-with-gap``: why it left."""
    left_line: int | None = None
    """Where it left."""
    left_label: str | None = None
    """That pass's label."""


@dataclass(frozen=True)
class MessageChange:
    """A conversation message in one request and not in the other."""

    change: Literal["entered", "left"]
    """In B only, or in A only."""
    role: str
    """Its role."""
    what: str
    """``tool result of check_policy call_2``, ``assistant reply``…"""
    text: str
    """The content (clipped by the view)."""
    line: int | None = None
    """The record that wrote it, when it is in the walk (a jump target)."""


@dataclass(frozen=True)
class ToolChange:
    """A tool schema offered on one call and not on the other."""

    change: Literal["entered", "left"]
    """Offered on B only, or on A only."""
    name: str
    """The tool."""
    why: str
    """Why it is (no longer) offered."""


@dataclass(frozen=True)
class SegmentChange:
    """A system-prompt segment added, removed or rewritten between the two requests."""

    change: Literal["added", "removed", "changed"]
    """What happened to it."""
    source: str
    """The segment's source (``base``, ``skill``…)."""
    injection_id: str | None
    """The injection it came from."""
    position: int
    """Its 1-based position in the request that has it (B's for ``changed``)."""
    text: str
    """Its text (B's for ``changed``)."""
    diff: tuple[str, ...] = ()
    """For ``changed``: the unified line diff of A's text → B's (without the file headers)."""


@dataclass(frozen=True)
class CursorStep:
    """One cursor move between A and B."""

    label: str
    """The pass that moved it."""
    line: int | None
    """Its first record (a jump target)."""
    from_skill: str | None
    """Where it was."""
    to_skill: str | None
    """Where it went."""
    by: str | None
    """The clause that moved it."""
    strength: str | None = None
    """The move's evidence strength."""


@dataclass(frozen=True)
class LeaseNote:
    """A lease that served A or B, or was granted or pruned between them."""

    instruction_id: str
    """The injection it serves."""
    delivery_lease: str
    """``next-call`` or ``until-skill-exit``."""
    granted: str
    """``check_policy call_2 at T1·I2``."""
    at_a: bool
    """It served A."""
    at_b: bool
    """It served B."""
    granted_between: bool
    """It was granted by A's batch or a later one before B."""
    pruned: str | None
    """``tenure-ended at T1·I4 (evaluate, tenant refund)`` when pruned between A and B."""
    grant_line: int | None = None
    """The ``lease_grant`` record."""
    prune_line: int | None = None
    """The ``lease_prune`` record."""


@dataclass(frozen=True)
class MapNote:
    """A mounted map's standing at A and at B, and its changes between."""

    map_id: str
    """The map."""
    at_a: str | None
    """``engaged by explicit`` / ``parked``… at A (``None``: not recorded)."""
    at_b: str | None
    """The same at B."""
    changes: tuple[tuple[str, str, int], ...] = ()
    """``(pass label, change, engagement line)`` for every change in (A, B]."""


@dataclass
class PassDiff:
    """Two passes compared (earlier → later)."""

    a: Side
    """The earlier pass."""
    b: Side
    """The later pass."""
    swapped: bool = False
    """The user's A was the later one: the two were swapped to read forwards."""
    same: bool = False
    """A and B are the same pass."""
    across_turns: bool = False
    """A and B are in different turns of one run."""
    across_runs: bool = False
    """A and B are in different runs (nothing is walked between them)."""
    walked: int = 0
    """Passes read between A and B (B included)."""
    walk_cut: bool = False
    """The walk stopped at :data:`MAX_WALK`."""
    slots: dict[str, list[Change]] = field(default_factory=dict)
    """Per slot, the ids that entered, left, or came and went (:data:`ACTIVE` when no routing is recorded)."""
    kept: dict[str, list[str]] = field(default_factory=dict)
    """Per slot, the ids in both."""
    messages: list[MessageChange] = field(default_factory=list)
    """Conversation messages in one request only."""
    messages_counts: tuple[int, int] = (0, 0)
    """How many messages each request had."""
    tools: list[ToolChange] = field(default_factory=list)
    """Tool schemas offered on one call only."""
    segments: list[SegmentChange] = field(default_factory=list)
    """System-prompt segments added, removed or rewritten."""
    segments_same: int = 0
    """Segments identical in both."""
    cursor_steps: list[CursorStep] = field(default_factory=list)
    """Cursor moves in (A, B]."""
    leases: list[LeaseNote] = field(default_factory=list)
    """Leases that served A or B or were granted or pruned between."""
    maps: list[MapNote] = field(default_factory=list)
    """Mounted maps whose standing is recorded at A or B or changed between."""
    notes: list[str] = field(default_factory=list)
    """Things the diff could not read (a missing pass record…)."""

    @property
    def identical(self) -> bool:
        """Nothing differs (or A and B are the same pass)."""
        if self.same:
            return True
        return not (
            any(self.slots.values())
            or self.messages
            or self.tools
            or self.segments
            or self.cursor_steps
            or any(note.granted_between or note.pruned or note.at_a != note.at_b for note in self.leases)
            or any(note.changes or note.at_a != note.at_b for note in self.maps)
            or self.a.cursor != self.b.cursor
        )


# ----------------------------------------------------------------------------------------------
# Reading records


def _record(session: TraceSession, line: int | None, cls: type):
    if line is None:
        return None
    try:
        record = session.record(line)
    except IndexError:
        return None
    return record if isinstance(record, cls) else None


def _pass(session: TraceSession, iteration: Iteration) -> PassEvent | None:
    found: PassEvent | None = _record(session, iteration.pass_line, PassEvent)
    return found


def _call(session: TraceSession, iteration: Iteration) -> LlmCallEvent | None:
    for line in iteration.llm_lines:
        found = _record(session, line, LlmCallEvent)
        if found is not None:
            return found  # type: ignore[no-any-return]
    return None


def _slot_ids(record: PassEvent | None) -> dict[str, list[str]]:
    if record is None:
        return {name: [] for name in (*(name for _, name in SLOTS), ACTIVE)}
    found = {name: [entry.id for entry in getattr(record.by_slot, field)] for field, name in SLOTS}
    found[ACTIVE] = list(record.active_ids)
    return found


def _routed(record: PassEvent | None) -> bool:
    return record is not None and any(getattr(record.by_slot, field) for field, _ in SLOTS)


def describe_reason(reason: ActiveReason | None, decl: InjectionDecl | None) -> str:
    """Why an active injection rode a pass, in words (its recorded reason, else its declared trigger).

    Args:
        reason: The pass's reason for it.
        decl: Its declaration in ``run_start``.
    """
    if reason is None:
        if decl is not None:
            return f"its trigger is {decl.trigger.kind}"
        return "the pass records no reason"
    call = ""
    if reason.tool_call_id is not None or reason.at_iteration is not None:
        call = f" (call {reason.tool_call_id or '?'}, iteration {reason.at_iteration or '?'})"
    match reason.via:
        case "lease":
            tenant = reason.tenant if reason.tenant is not None else "(no tenant)"
            return (
                f"lease {reason.delivery_lease or '?'} granted by {reason.tool_name or '?'}{call}, "
                f"tenant {tenant}"
            )
        case "on-tool-return":
            return f"on tool return of {reason.tool_name or '?'}{call}"
        case "llm-activated":
            return f"activated by {reason.tool_name or 'read_skill'}{call}"
        case "cursor":
            return "the cursor is on this skill"
        case "park-card":
            return "the park card (a map parked)"
        case "always":
            return "its trigger is always"
        case "rule":
            return "its rule fired"
    return str(reason.via)


# ----------------------------------------------------------------------------------------------
# The diff


@dataclass
class _Step:
    iteration: Iteration
    label: str
    record: PassEvent | None
    slots: dict[str, list[str]]
    reasons: dict[str, ActiveReason]


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
    start = session.run_start(second.run_id)
    catalog = {decl.id: decl for decl in (start.injections if start is not None else [])}
    a_pass, b_pass = _pass(session, first), _pass(session, second)
    a_call, b_call = _call(session, first), _call(session, second)
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
    for side, record, call in ((diff.a, a_pass, a_call), (diff.b, b_pass, b_call)):
        if record is None:
            diff.notes.append(f"{side.label} has no readable pass record: its slots are unknown")
        if call is None:
            diff.notes.append(f"{side.label} has no readable llm_call: its request is unknown")
    walk, diff.walk_cut = _walk(run, first, second)
    steps = []
    for iteration in walk:
        if iteration is first:
            record = a_pass
        elif iteration is second:
            record = b_pass
        else:
            record = _pass(session, iteration)
        steps.append(
            _Step(
                iteration=iteration,
                label=session.label(iteration),
                record=record,
                slots=_slot_ids(record),
                reasons={reason.id: reason for reason in record.reasons} if record is not None else {},
            )
        )
    diff.walked = len(steps) - 1
    if a_pass is not None and b_pass is not None:
        _slot_changes(diff, session, run, steps, catalog)
    if a_call is not None and b_call is not None:
        _request_changes(diff, session, steps, a_call.request, b_call.request, b_pass)
    _cursor_steps(diff, session, steps)
    if run is not None and not diff.across_runs:
        _lease_notes(diff, session, run, first, second)
        _map_notes(diff, session, run, first, second)
    return diff


def _slot_changes(
    diff: PassDiff,
    session: TraceSession,
    run: Run | None,
    steps: list[_Step],
    catalog: dict[str, InjectionDecl],
) -> None:
    a, b = steps[0], steps[-1]
    contiguous = not diff.across_runs
    # A trace that records only ``active_ids`` (no slot routing) is compared on the active set.
    routed = any(_routed(step.record) for step in steps)
    for slot in [name for _, name in SLOTS] if routed else [ACTIVE]:
        before, after = a.slots[slot], b.slots[slot]
        changes: list[Change] = []
        kept = [id_ for id_ in after if id_ in before]
        for id_ in after:
            if id_ in before:
                gap = _gap(steps, slot, id_) if contiguous else None
                if gap is not None:
                    left, back = gap
                    changes.append(
                        Change(
                            slot,
                            id_,
                            "kept-with-gap",
                            _flavor(catalog, id_),
                            why=f"back at {back.label}: {_why_entered(run, back, id_, catalog)}",
                            line=back.iteration.first_line,
                            label=back.label,
                            why_left=_why_left(session, run, steps, left, id_, catalog),
                            left_line=steps[left].iteration.first_line,
                            left_label=steps[left].label,
                        )
                    )
                continue
            entered = _entered_at(steps, slot, id_) if contiguous else b
            changes.append(
                Change(
                    slot,
                    id_,
                    "entered",
                    _flavor(catalog, id_),
                    why=_why_entered(run, b, id_, catalog),
                    line=entered.iteration.first_line,
                    label=entered.label,
                )
            )
        for id_ in before:
            if id_ in after:
                continue
            if not contiguous:
                changes.append(
                    Change(
                        slot,
                        id_,
                        "left",
                        _flavor(catalog, id_),
                        why=f"not active in {b.label} (another run: nothing between to say why)",
                    )
                )
                continue
            left = _left_at(steps, slot, id_, 1)
            changes.append(
                Change(
                    slot,
                    id_,
                    "left",
                    _flavor(catalog, id_),
                    why=_why_left(session, run, steps, left, id_, catalog),
                    line=steps[left].iteration.first_line,
                    label=steps[left].label,
                )
            )
        if contiguous:
            seen = set(before) | set(after)
            transient: list[str] = []
            for step in steps[1:-1]:
                for id_ in step.slots[slot]:
                    if id_ not in seen and id_ not in transient:
                        transient.append(id_)
            for id_ in transient:
                first = next(i for i, step in enumerate(steps) if id_ in step.slots[slot])
                left = _left_at(steps, slot, id_, first)
                changes.append(
                    Change(
                        slot,
                        id_,
                        "came-and-went",
                        _flavor(catalog, id_),
                        why=_why_entered(run, steps[first], id_, catalog),
                        line=steps[first].iteration.first_line,
                        label=steps[first].label,
                        why_left=_why_left(session, run, steps, left, id_, catalog),
                        left_line=steps[left].iteration.first_line,
                        left_label=steps[left].label,
                    )
                )
        diff.slots[slot] = changes
        diff.kept[slot] = kept


def _flavor(catalog: dict[str, InjectionDecl], id_: str) -> str | None:
    decl = catalog.get(id_)
    return decl.flavor if decl is not None else None


def _gap(steps: list[_Step], slot: str, id_: str) -> tuple[int, _Step] | None:
    """Where an id in both A and B was off the wire between them: (index it left at, step it came back)."""
    for index in range(1, len(steps) - 1):
        if steps[index].record is not None and id_ not in steps[index].slots[slot]:
            back = next(
                (s for s in steps[index + 1 :] if s.record is not None and id_ in s.slots[slot]), steps[-1]
            )
            return index, back
    return None


def _entered_at(steps: list[_Step], slot: str, id_: str) -> _Step:
    """The first step of the run of passes, ending at B, in which ``id_`` is in ``slot``."""
    entered = steps[-1]
    for step in reversed(steps[1:]):
        if step.record is None or id_ not in step.slots[slot]:
            break
        entered = step
    return entered


def _left_at(steps: list[_Step], slot: str, id_: str, start: int) -> int:
    """The index of the first step from ``start`` on whose pass does not have ``id_`` in ``slot``."""
    for index in range(max(start, 1), len(steps)):
        step = steps[index]
        if step.record is not None and id_ not in step.slots[slot]:
            return index
    return len(steps) - 1


def _why_entered(run: Run | None, step: _Step, id_: str, catalog: dict[str, InjectionDecl]) -> str:
    reason = step.reasons.get(id_)
    if reason is None:
        lease = _serving_lease(run, step, id_)
        if lease is not None:
            tenant = lease.tenant if lease.tenant is not None else "(no tenant)"
            return (
                f"lease {lease.delivery_lease} granted by {lease.tool_name} (call {lease.tool_call_id or '?'}, "
                f"iteration {lease.granted_iteration}), tenant {tenant}"
            )
    return describe_reason(reason, catalog.get(id_))


def _serving_lease(run: Run | None, step: _Step, id_: str) -> LeaseLifetime | None:
    """The lease that served ``id_`` on the pass of ``step``, if one did."""
    if run is None:
        return None
    iteration = step.iteration
    for lease in run.leases_serving(iteration.turn, iteration.number):
        if lease.instruction_id == id_:
            return lease
    return None


def _why_left(
    session: TraceSession,
    run: Run | None,
    steps: list[_Step],
    index: int,
    id_: str,
    catalog: dict[str, InjectionDecl],
) -> str:
    """Why ``id_`` is not on the pass of ``steps[index]`` although it was on the one before."""
    step = steps[index]
    iteration = step.iteration
    previous = steps[index - 1] if index > 0 else None
    for line in iteration.lease_prune_lines:
        prune = _record(session, line, LeasePruneEvent)
        if prune is None:
            continue
        for pruned in prune.pruned:
            if pruned.instruction_id == id_:
                tenant = prune.tenant if prune.tenant is not None else "(none)"
                return (
                    f"its {pruned.delivery_lease} lease (granted by {pruned.tool_name} "
                    f"{pruned.tool_call_id or '?'} at iteration {pruned.iteration}) was pruned: "
                    f"{pruned.reason} at {prune.site}, tenant {tenant}"
                )
    record = step.record
    if record is not None:
        for skipped in record.skipped:
            if skipped.id == id_:
                error = f" ({skipped.error})" if skipped.error else ""
                return f"skipped: {skipped.reason}{error}"
        if record.parked_ids and id_ in record.parked_ids:
            return f"parked: {_parking_map(session, run, iteration, id_)}"
        if record.superseded_ids and id_ in record.superseded_ids:
            return "superseded on this pass"
    engagement = _record(session, iteration.engagement_line, EngagementEvent)
    if engagement is not None and id_ in engagement.parked_injection_ids:
        return f"parked: {_parking_map(session, run, iteration, id_)}"
    reason = previous.reasons.get(id_) if previous is not None else None
    served = _serving_lease(run, previous, id_) if previous is not None else None
    if served is not None and (reason is None or reason.via == "lease"):
        granted = f"granted by {served.tool_name} {served.tool_call_id or '?'}"
        if served.prune_line is not None and run is not None:
            return f"its {served.delivery_lease} lease ({granted}) was {_prune_words(session, run, served)}"
        return f"its {served.delivery_lease} lease ({granted}) no longer serves"
    if reason is not None:
        if reason.via == "cursor":
            return (
                f"the cursor moved {iteration.cursor_from or '(none)'} → {iteration.cursor_to or '(none)'}"
                f" by {iteration.cursor_by or '?'}"
            )
        if reason.via == "lease":
            lease = _lease_of(run, id_, reason)
            granted = f"granted by {reason.tool_name or '?'} {reason.tool_call_id or '?'}"
            if lease is not None and lease.prune_line is not None and run is not None:
                return f"its {lease.delivery_lease} lease ({granted}) was {_prune_words(session, run, lease)}"
            lease_kind = f"{reason.delivery_lease} " if reason.delivery_lease else ""
            return f"its {lease_kind}lease ({granted}) no longer serves"
        if reason.via == "on-tool-return":
            tool = reason.tool_name or "?"
            return f"its on-tool-return trigger ({tool}) fired only on the pass after the return"
        if reason.via == "park-card":
            return "no map is parked any more"
    if step.record is None:
        return "this pass's record is unreadable"
    if previous is not None and previous.iteration.turn != iteration.turn:
        return f"a new turn started (turn {iteration.turn}); its trigger did not fire on this pass"
    decl = catalog.get(id_)
    trigger = decl.trigger.kind if decl is not None else "?"
    return f"its trigger ({trigger}) did not fire on this pass"


def _lease_of(run: Run | None, id_: str, reason: ActiveReason) -> LeaseLifetime | None:
    if run is None:
        return None
    for lease in run.leases_of(id_):
        if lease.tool_call_id == reason.tool_call_id and lease.granted_iteration == reason.at_iteration:
            return lease
    return None


def _parking_map(session: TraceSession, run: Run | None, iteration: Iteration, id_: str) -> str:
    start = session.run_start(iteration.run_id)
    plan = start.maps if start is not None else None
    owners = [m.id for m in plan.maps if id_ in m.member_ids] if plan is not None else []
    if run is not None:
        for map_id in owners:
            timeline = run.maps.get(map_id)
            if timeline is None:
                continue
            for point in timeline.points:
                if (point.turn, point.iteration) == (iteration.turn, iteration.number):
                    idle = f" after {point.idle} idle pass(es)" if point.idle else ""
                    return f"map {map_id} is {point.standing}{idle}"
    if owners:
        return f"its map {owners[0]} parked"
    return "a map parked"


# ----------------------------------------------------------------------------------------------
# The requests: conversation, tools, system prompt


def _message_key(message: Message) -> tuple[object, ...]:
    calls = tuple((call.id, call.name) for call in message.tool_calls or [])
    return (
        message.role,
        message.tool_call_id,
        message.tool_name,
        message.injection_id,
        message.content,
        calls,
    )


def _message_what(message: Message) -> str:
    if message.role == "tool":
        return f"tool result of {message.tool_name or '?'} {message.tool_call_id or ''}".rstrip()
    if message.injection_id is not None:
        return f"{message.role} message delivered by {message.injection_id}"
    if message.role == "assistant":
        if message.tool_calls:
            asked = ", ".join(f"{call.name} {call.id}" for call in message.tool_calls)
            return f"assistant reply asking for {asked}"
        return "assistant reply"
    if message.role == "user":
        return "user message"
    return f"{message.role} message"


def _request_changes(
    diff: PassDiff,
    session: TraceSession,
    steps: list[_Step],
    a: LlmRequest,
    b: LlmRequest,
    b_pass: PassEvent | None,
) -> None:
    # Messages: a multiset difference (a conversation grows; a window strategy may also drop some).
    diff.messages_counts = (len(a.messages), len(b.messages))
    remaining: dict[tuple[object, ...], int] = {}
    for message in a.messages:
        key = _message_key(message)
        remaining[key] = remaining.get(key, 0) + 1
    entered: list[Message] = []
    for message in b.messages:
        key = _message_key(message)
        if remaining.get(key, 0):
            remaining[key] -= 1
            continue
        entered.append(message)
    wanted = {m.tool_call_id for m in entered if m.role == "tool" and m.tool_call_id}
    wanted |= {f"ask:{m.tool_calls[0].id}" for m in entered if m.role == "assistant" and m.tool_calls}
    results = _result_lines(session, steps, wanted) if wanted and not diff.across_runs else {}
    remaining = {}
    for message in a.messages:
        key = _message_key(message)
        remaining[key] = remaining.get(key, 0) + 1
    for message in b.messages:
        key = _message_key(message)
        if remaining.get(key, 0):
            remaining[key] -= 1
            continue
        line = results.get(message.tool_call_id) if message.tool_call_id else None
        if message.role == "assistant" and message.tool_calls:
            line = results.get(f"ask:{message.tool_calls[0].id}")
        diff.messages.append(
            MessageChange("entered", message.role, _message_what(message), message.content, line)
        )
    for message in a.messages:
        key = _message_key(message)
        if remaining.get(key, 0):
            remaining[key] -= 1
            diff.messages.append(MessageChange("left", message.role, _message_what(message), message.content))

    # Tool schemas by name.
    a_tools = {schema.name: schema for schema in a.tools}
    b_tools = {schema.name: schema for schema in b.tools}
    parked_tools: set[str] = set()
    engagement = _record(session, steps[-1].iteration.engagement_line, EngagementEvent)
    if engagement is not None:
        parked_tools = set(engagement.parked_tool_names)
    for name, schema in b_tools.items():
        if name not in a_tools:
            why = f"offered by {schema.injection_id}" if schema.injection_id else "an agent tool"
            if schema.injection_id and b_pass is not None:
                reason = next((r for r in b_pass.reasons if r.id == schema.injection_id), None)
                if reason is not None:
                    why += f" ({describe_reason(reason, None)})"
            diff.tools.append(ToolChange("entered", name, why))
    for name, schema in a_tools.items():
        if name not in b_tools:
            if name in parked_tools:
                why = "a parked map took it off the wire"
            elif schema.injection_id:
                why = f"{schema.injection_id}, which offered it, left the tools slot"
            else:
                why = "no longer offered"
            diff.tools.append(ToolChange("left", name, why))

    # System prompt, segment by segment (keyed by source and injection).
    def keyed(request: LlmRequest) -> dict[tuple[str, str | None, int], tuple[int, str]]:
        found: dict[tuple[str, str | None, int], tuple[int, str]] = {}
        counts: dict[tuple[str, str | None], int] = {}
        for position, segment in enumerate(request.system_prompt, 1):
            base = (segment.source, segment.injection_id)
            counts[base] = counts.get(base, 0) + 1
            found[(*base, counts[base])] = (position, segment.text)
        return found

    a_segments, b_segments = keyed(a), keyed(b)
    for key, (position, text) in b_segments.items():
        before = a_segments.get(key)
        if before is None:
            diff.segments.append(SegmentChange("added", key[0], key[1], position, text))
        elif before[1] != text:
            lines = difflib.unified_diff(before[1].splitlines(), text.splitlines(), lineterm="", n=1)
            body = tuple(line for line in lines if not line.startswith(("---", "+++")))
            diff.segments.append(SegmentChange("changed", key[0], key[1], position, text, body[:_DIFF_LINES]))
        else:
            diff.segments_same += 1
    for key, (position, text) in a_segments.items():
        if key not in b_segments:
            diff.segments.append(SegmentChange("removed", key[0], key[1], position, text))


def _result_lines(session: TraceSession, steps: list[_Step], wanted: set[str]) -> dict[str, int]:
    """For the ``wanted`` keys, ``tool call id → line`` of its tool result in the walk and
    ``ask:<id> → line`` of the call that asked for it. Reads backwards from B and stops once every
    key is found (an ``llm_call`` record is the biggest of a pass)."""
    found: dict[str, int] = {}
    results = {key for key in wanted if not key.startswith("ask:")}
    asks = wanted - results
    for step in reversed(steps):
        if results - found.keys():
            for line in step.iteration.tool_result_lines:
                result = _record(session, line, ToolResultEvent)
                if result is not None and result.tool_call_id in results:
                    found.setdefault(result.tool_call_id, line)
        if asks - found.keys():
            for line in step.iteration.llm_lines:
                call = _record(session, line, LlmCallEvent)
                if call is not None and call.response is not None:
                    for asked in call.response.tool_calls:
                        if f"ask:{asked.id}" in asks:
                            found.setdefault(f"ask:{asked.id}", line)
        if not wanted - found.keys():
            break
    return found


# ----------------------------------------------------------------------------------------------
# Cursor, leases, maps


def _cursor_steps(diff: PassDiff, session: TraceSession, steps: list[_Step]) -> None:
    if diff.across_runs:
        return
    for step in steps[1:]:
        iteration = step.iteration
        if iteration.cursor_line is None:
            continue
        if iteration.cursor_by == "stay" or (
            iteration.cursor_from == iteration.cursor_to and iteration.cursor_by in (None, "stay")
        ):
            continue
        move = _record(session, iteration.cursor_line, CursorMoveEvent)
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


def _lease_notes(diff: PassDiff, session: TraceSession, run: Run, a: Iteration, b: Iteration) -> None:
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
                pruned = _prune_words(session, run, lease)
        if not (at_a or at_b or granted_between or pruned):
            continue
        diff.leases.append(
            LeaseNote(
                instruction_id=lease.instruction_id,
                delivery_lease=lease.delivery_lease,
                granted=(
                    f"{lease.tool_name} {lease.tool_call_id or '?'} at "
                    f"{_pass_label(session, run, lease.turn, lease.granted_iteration)}"
                ),
                at_a=at_a,
                at_b=at_b,
                granted_between=granted_between,
                pruned=pruned,
                grant_line=lease.grant_line,
                prune_line=lease.prune_line,
            )
        )


def _pass_label(session: TraceSession, run: Run, turn: int | None, number: int | None) -> str:
    iteration = run.iteration(turn or 0, number or 0) if turn is not None and number is not None else None
    if iteration is not None:
        return session.label(iteration)
    return f"T{turn if turn is not None else '?'}·I{number if number is not None else '?'}"


def _prune_words(session: TraceSession, run: Run, lease: LeaseLifetime) -> str:
    where = _pass_label(session, run, lease.pruned_turn, lease.pruned_iteration)
    tenant = f", tenant {lease.prune_tenant}" if lease.prune_tenant is not None else ""
    return f"{lease.prune_reason or 'pruned'} at {where} ({lease.prune_site or '?'}{tenant})"


def _standing(point: object) -> str:
    standing = getattr(point, "standing", "?")
    by = getattr(point, "by", None)
    at = getattr(point, "at", None)
    words = f"{standing} by {by}" if by else str(standing)
    return f"{words}, at {at}" if at else words


def _map_notes(diff: PassDiff, session: TraceSession, run: Run, a: Iteration, b: Iteration) -> None:
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
                label = _pass_label(session, run, point.turn, point.iteration)
                changes.append((label, point.change, point.line))
        if at_a is None and at_b is None and not changes:
            continue
        diff.maps.append(MapNote(map_id, at_a, at_b, tuple(changes)))


def iter_changes(diff: PassDiff) -> Iterable[Change]:
    """Every slot change of a diff, slot by slot."""
    for changes in diff.slots.values():
        yield from changes
