"""What the pass diff reads from a trace: the records of one pass, the walk's steps, and their words.

Every read goes through :func:`record`, which turns a missing or unreadable line into ``None``: the
diff says what it could not read instead of failing (a hostile trace is shown without error).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from fpdebug.trace.model import Iteration, LeaseLifetime, Run
from fpdebug.trace.schema import ActiveReason, InjectionDecl, LlmCallEvent, PassEvent
from fpdebug.views.pass_diff.model import ACTIVE, SLOTS
from fpdebug.views.session import TraceSession
from fpdebug.views.source import trigger_not_recorded
from fpdebug.views.tree_words import tree_path_words

_Record = TypeVar("_Record")


def record(session: TraceSession, line: int | None, cls: type[_Record]) -> _Record | None:
    """The record at ``line`` if it is a ``cls`` (``None`` for no line, a line out of range, another kind)."""
    if line is None:
        return None
    try:
        found = session.record(line)
    except IndexError:
        return None
    return found if isinstance(found, cls) else None


def pass_record(session: TraceSession, iteration: Iteration) -> PassEvent | None:
    """The ``pass`` record of ``iteration``, if it can be read."""
    return record(session, iteration.pass_line, PassEvent)


def call_record(session: TraceSession, iteration: Iteration) -> LlmCallEvent | None:
    """The first readable ``llm_call`` record of ``iteration``."""
    for line in iteration.llm_lines:
        found = record(session, line, LlmCallEvent)
        if found is not None:
            return found
    return None


def slot_ids(record: PassEvent | None) -> dict[str, list[str]]:
    """Per slot (and :data:`ACTIVE`), the ids a pass put there (all empty for an unreadable pass)."""
    if record is None:
        return {name: [] for name in (*(name for _, name in SLOTS), ACTIVE)}
    found = {name: [entry.id for entry in getattr(record.by_slot, field)] for field, name in SLOTS}
    found[ACTIVE] = list(record.active_ids)
    return found


def routed(record: PassEvent | None) -> bool:
    """Whether a pass records its slot routing (older traces record only ``active_ids``)."""
    return record is not None and any(getattr(record.by_slot, field) for field, _ in SLOTS)


def describe_reason(reason: ActiveReason | None, decl: InjectionDecl | None) -> str:
    """Why an active injection rode a pass, in words (its recorded reason, else its declared trigger).

    Args:
        reason: The pass's reason for it.
        decl: Its declaration in ``run_start``.
    """
    if reason is None:
        if trigger_not_recorded(decl):
            return "its trigger is not recorded"
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
        case "tree":
            return f"every branch on its path held ({tree_path_words(reason.path, reason.label)})"
        case "park-card":
            return "the park card (a map parked)"
        case "fork-edit":
            return "a fork's edit put it in (add-injection or grant-lease)"
        case "always":
            return "its trigger is always"
        case "rule":
            return "its rule fired"
    return str(reason.via)


@dataclass
class Step:
    """One pass of the walk from A to B: its record and what it put in each slot."""

    iteration: Iteration
    label: str
    record: PassEvent | None
    slots: dict[str, list[str]]
    reasons: dict[str, ActiveReason]


@dataclass(frozen=True)
class Walk:
    """The passes from A to B (``steps[0]`` is A, ``steps[-1]`` is B) and what explains them."""

    session: TraceSession
    run: Run | None
    """B's run (``None`` when its run is unknown)."""
    steps: list[Step]
    catalog: dict[str, InjectionDecl]
    """The injections declared in B's ``run_start``, by id."""

    def flavor(self, id_: str) -> str | None:
        """The declared flavor of injection ``id_``."""
        decl = self.catalog.get(id_)
        return decl.flavor if decl is not None else None


def serving_lease(run: Run | None, step: Step, id_: str) -> LeaseLifetime | None:
    """The lease that served ``id_`` on the pass of ``step``, if one did."""
    if run is None:
        return None
    iteration = step.iteration
    for lease in run.leases_serving(iteration.turn, iteration.number):
        if lease.instruction_id == id_:
            return lease
    return None


def pass_label(session: TraceSession, run: Run, turn: int | None, number: int | None) -> str:
    """The label of pass ``turn``/``number`` of ``run`` (``T?·I?`` for a part not recorded)."""
    iteration = run.iteration(turn or 0, number or 0) if turn is not None and number is not None else None
    if iteration is not None:
        return session.label(iteration)
    return f"T{turn if turn is not None else '?'}·I{number if number is not None else '?'}"


def prune_words(session: TraceSession, run: Run, lease: LeaseLifetime) -> str:
    """``tenure-ended at T1·I4 (evaluate, tenant refund)``: how and where a lease was pruned."""
    where = pass_label(session, run, lease.pruned_turn, lease.pruned_iteration)
    tenant = f", tenant {lease.prune_tenant}" if lease.prune_tenant is not None else ""
    return f"{lease.prune_reason or 'pruned'} at {where} ({lease.prune_site or '?'}{tenant})"
