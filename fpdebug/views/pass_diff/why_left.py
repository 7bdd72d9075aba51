"""Why a piece of context left a slot: the first explanation the records give, most specific first.

Most specific first: a ``lease_prune`` record naming the id on the pass where it left, then what the
pass itself recorded (skipped, parked, superseded), then what had put it on the pass before (a lease
that ended, the cursor moving off its skill, a one-shot trigger, the park card), and last what did
not happen (its trigger did not fire).
"""

from __future__ import annotations

from fpdebug.trace.model import Iteration, LeaseLifetime, Run
from fpdebug.trace.schema import ActiveReason, EngagementEvent, LeasePruneEvent
from fpdebug.views.pass_diff.records import Step, Walk, prune_words, record, serving_lease
from fpdebug.views.session import TraceSession
from fpdebug.views.source import trigger_not_recorded
from fpdebug.views.tree_words import tree_path_words


def why_left(walk: Walk, index: int, id_: str) -> str:
    """Why ``id_`` is not on the pass of ``walk.steps[index]`` although it was on the one before."""
    step = walk.steps[index]
    previous = walk.steps[index - 1] if index > 0 else None
    return (
        _pruned_on(walk.session, step.iteration, id_)
        or _dropped_by_pass(walk, step, id_)
        or _what_served_it_ended(walk, step, previous, id_)
        or _did_not_fire(walk, step, previous, id_)
    )


def _pruned_on(session: TraceSession, iteration: Iteration, id_: str) -> str | None:
    """A ``lease_prune`` record of this pass that names ``id_``."""
    for line in iteration.lease_prune_lines:
        prune = record(session, line, LeasePruneEvent)
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
    return None


def _dropped_by_pass(walk: Walk, step: Step, id_: str) -> str | None:
    """What the pass (or its engagement record) says it did with ``id_``: skipped, parked, superseded."""
    iteration = step.iteration
    pass_ = step.record
    if pass_ is not None:
        for skipped in pass_.skipped:
            if skipped.id == id_:
                error = f" ({skipped.error})" if skipped.error else ""
                return f"skipped: {skipped.reason}{error}"
        if pass_.parked_ids and id_ in pass_.parked_ids:
            return f"parked: {_parking_map(walk, iteration, id_)}"
        if pass_.superseded_ids and id_ in pass_.superseded_ids:
            return "superseded on this pass"
    engagement = record(walk.session, iteration.engagement_line, EngagementEvent)
    if engagement is not None and id_ in engagement.parked_injection_ids:
        return f"parked: {_parking_map(walk, iteration, id_)}"
    return None


def _what_served_it_ended(walk: Walk, step: Step, previous: Step | None, id_: str) -> str | None:
    """The lease or the reason that put ``id_`` on the previous pass, and why it no longer holds."""
    if previous is None:
        return None
    reason = previous.reasons.get(id_)
    served = serving_lease(walk.run, previous, id_)
    if served is not None and (reason is None or reason.via == "lease"):
        granted = f"granted by {served.tool_name} {served.tool_call_id or '?'}"
        return _lease_ended(walk, served.delivery_lease, granted, served)
    if reason is None:
        return None
    iteration = step.iteration
    match reason.via:
        case "cursor":
            return (
                f"the cursor moved {iteration.cursor_from or '(none)'} → {iteration.cursor_to or '(none)'}"
                f" by {iteration.cursor_by or '?'}"
            )
        case "lease":
            granted = f"granted by {reason.tool_name or '?'} {reason.tool_call_id or '?'}"
            lease = _lease_of(walk.run, id_, reason)
            if lease is not None and lease.prune_line is not None:
                return _lease_ended(walk, lease.delivery_lease, granted, lease)
            lease_kind = f"{reason.delivery_lease} " if reason.delivery_lease else ""
            return f"its {lease_kind}lease ({granted}) no longer serves"
        case "on-tool-return":
            tool = reason.tool_name or "?"
            return f"its on-tool-return trigger ({tool}) fired only on the pass after the return"
        case "park-card":
            return "no map is parked any more"
        case "tree":
            return f"a branch on its path no longer holds ({tree_path_words(reason.path, reason.label)})"
    return None


def _lease_ended(walk: Walk, kind: str, granted: str, lease: LeaseLifetime) -> str:
    """``its next-call lease (granted by …) was spent at …``, or that it no longer serves."""
    if lease.prune_line is not None and walk.run is not None:
        return f"its {kind} lease ({granted}) was {prune_words(walk.session, walk.run, lease)}"
    return f"its {kind} lease ({granted}) no longer serves"


def _did_not_fire(walk: Walk, step: Step, previous: Step | None, id_: str) -> str:
    """Nothing recorded why ``id_`` left: say what did not happen (or that the pass is unreadable)."""
    if step.record is None:
        return "this pass's record is unreadable"
    iteration = step.iteration
    if previous is not None and previous.iteration.turn != iteration.turn:
        return f"a new turn started (turn {iteration.turn}); its trigger did not fire on this pass"
    decl = walk.catalog.get(id_)
    if trigger_not_recorded(decl):
        return "its trigger is not recorded; it did not ride this pass"
    trigger = decl.trigger.kind if decl is not None else "?"
    return f"its trigger ({trigger}) did not fire on this pass"


def _lease_of(run: Run | None, id_: str, reason: ActiveReason) -> LeaseLifetime | None:
    """The lease a ``lease`` reason names (by the call that granted it and its iteration)."""
    if run is None:
        return None
    for lease in run.leases_of(id_):
        if lease.tool_call_id == reason.tool_call_id and lease.granted_iteration == reason.at_iteration:
            return lease
    return None


def _parking_map(walk: Walk, iteration: Iteration, id_: str) -> str:
    """Which map parked ``id_`` on this pass, and its standing there."""
    start = walk.session.run_start(iteration.run_id)
    plan = start.maps if start is not None else None
    owners = [m.id for m in plan.maps if id_ in m.member_ids] if plan is not None else []
    if walk.run is not None:
        for map_id in owners:
            timeline = walk.run.maps.get(map_id)
            if timeline is None:
                continue
            for point in timeline.points:
                if (point.turn, point.iteration) == (iteration.turn, iteration.number):
                    idle = f" after {point.idle} idle pass(es)" if point.idle else ""
                    return f"map {map_id} is {point.standing}{idle}"
    if owners:
        return f"its map {owners[0]} parked"
    return "a map parked"
