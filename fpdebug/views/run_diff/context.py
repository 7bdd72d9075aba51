"""The context stage of one aligned pass: the cursor, the leases pruned and serving, the injections.

Checked in the order the engine does them (cursor move, lease sweep, then the pass itself). An
injection active in one run and not the other is named with why it is active where it is (its
recorded reason) and why it is not where it is not: skipped, parked, superseded, not declared (and
left out on purpose), or its trigger did not fire.
"""

from __future__ import annotations

from fpdebug.trace.model import Iteration, LeaseLifetime
from fpdebug.trace.schema import ActiveReason, PassEvent
from fpdebug.views.pass_diff import describe_reason
from fpdebug.views.pass_diff.records import routed, slot_ids
from fpdebug.views.run_diff.model import Difference
from fpdebug.views.run_diff.reading import RunReading
from fpdebug.views.source import trigger_not_recorded

Pair = tuple[RunReading, RunReading]


def context_differences(
    sides: Pair, ia: Iteration, ib: Iteration, pa: PassEvent | None, pb: PassEvent | None
) -> list[Difference]:
    """What differs in the context pass of two aligned iterations (A's ``ia``, B's ``ib``)."""
    a, b = sides
    found = _cursor(ia, ib)
    found += _leases(_pruned(a, ia), _pruned(b, ib), "pruned")
    found += _leases(_serving(a, ia), _serving(b, ib), "serving")
    found += _maps(a.maps_at.get((ia.turn, ia.number), {}), b.maps_at.get((ib.turn, ib.number), {}))
    if pa is not None and pb is not None:
        found += _injections(sides, pa, pb)
        found += _skips(pa, pb)
    return found


def _move(iteration: Iteration) -> str | None:
    if iteration.cursor_to is None and iteration.cursor_by is None:
        return None
    return f"{iteration.cursor_from or '(none)'} → {iteration.cursor_to or '(none)'} by {iteration.cursor_by or '?'}"


def _cursor(ia: Iteration, ib: Iteration) -> list[Difference]:
    if (ia.cursor_to, ia.cursor_by) == (ib.cursor_to, ib.cursor_by):
        return []
    if ia.cursor_to == ib.cursor_to:
        why = f"the cursor is on {ia.cursor_to or '(none)'} in both, moved there differently"
    else:
        why = f"the cursor is on {ia.cursor_to or '(none)'} in A and on {ib.cursor_to or '(none)'} in B"
    return [Difference("context", "cursor", "cursor", _move(ia), _move(ib), why=why)]


def _pruned(side: RunReading, iteration: Iteration) -> dict[str, str]:
    """Instruction id → how its lease was pruned on this pass."""
    found: dict[str, str] = {}
    for lease in side.pruned_at.get((iteration.turn, iteration.number), []):
        tenant = f", tenant {lease.prune_tenant}" if lease.prune_tenant is not None else ""
        found[lease.instruction_id] = (
            f"{lease.delivery_lease} lease {lease.prune_reason or 'pruned'} at {lease.prune_site or '?'}{tenant}"
        )
    return found


def _serving(side: RunReading, iteration: Iteration) -> dict[str, str]:
    """Instruction id → the lease that served it on this pass."""
    return {
        lease.instruction_id: _lease_words(lease)
        for lease in side.run.leases_serving(iteration.turn, iteration.number)
    }


def _lease_words(lease: LeaseLifetime) -> str:
    tenant = f", tenant {lease.tenant}" if lease.tenant is not None else ""
    return (
        f"{lease.delivery_lease} lease granted by {lease.tool_name} at T{lease.turn or '?'}·"
        f"I{lease.granted_iteration}{tenant}"
    )


def _leases(in_a: dict[str, str], in_b: dict[str, str], what: str) -> list[Difference]:
    found = []
    for id_ in [*in_a, *(id_ for id_ in in_b if id_ not in in_a)]:
        a, b = in_a.get(id_), in_b.get(id_)
        if a == b:
            continue
        if a is None or b is None:
            why = f"a lease {what} {'in A only' if b is None else 'in B only'}"
        else:
            why = f"{what} in both, differently"
        found.append(Difference("context", f"lease-{what}", id_, a, b, why=why))
    return found


def _placement(record: PassEvent) -> dict[str, tuple[str, ...]]:
    """Injection id → the slots the pass put it in (``active`` when it records no slot routing)."""
    slots = slot_ids(record)
    found: dict[str, tuple[str, ...]] = {}
    if routed(record):
        for slot in ("system-prompt", "messages", "tools"):
            for id_ in slots[slot]:
                found[id_] = (*found.get(id_, ()), slot)
    for id_ in record.active_ids:
        found.setdefault(id_, ("active",))
    return found


def _reason_key(reason: ActiveReason | None) -> tuple[object, ...]:
    # Tool call ids are left out: two runs name their calls differently.
    if reason is None:
        return ()
    return (reason.via, reason.tool_name, reason.at_iteration, reason.delivery_lease, reason.tenant)


def _active_words(side: RunReading, reason: ActiveReason | None, id_: str) -> str:
    decl = side.catalog.get(id_)
    flavor = f"{decl.flavor}; " if decl is not None else ""
    return f"active ({flavor}{describe_reason(reason, decl)})"


def _maps(in_a: dict[str, str], in_b: dict[str, str]) -> list[Difference]:
    """Each mounted map whose standing recorded on this pass differs (engaged, parked)."""
    found = []
    for map_id in [*in_a, *(map_id for map_id in in_b if map_id not in in_a)]:
        a, b = in_a.get(map_id), in_b.get(map_id)
        if a != b:
            found.append(Difference("context", "map", map_id, a, b, why="the map stands differently"))
    return found


def _injections(sides: Pair, pa: PassEvent, pb: PassEvent) -> list[Difference]:
    a, b = sides
    place_a, place_b = _placement(pa), _placement(pb)
    reasons_a = {reason.id: reason for reason in pa.reasons}
    reasons_b = {reason.id: reason for reason in pb.reasons}
    found = []
    for id_ in [*place_a, *(id_ for id_ in place_b if id_ not in place_a)]:
        ra, rb = reasons_a.get(id_), reasons_b.get(id_)
        if id_ in place_a and id_ in place_b:
            if place_a[id_] != place_b[id_]:
                found.append(
                    Difference(
                        "context",
                        "slot",
                        id_,
                        ", ".join(place_a[id_]),
                        ", ".join(place_b[id_]),
                        why="active in both, routed to other slots",
                    )
                )
            elif _reason_key(ra) != _reason_key(rb):
                found.append(
                    Difference(
                        "context",
                        "injection",
                        id_,
                        _active_words(a, ra, id_),
                        _active_words(b, rb, id_),
                        why="active in both, for different reasons",
                    )
                )
        elif id_ in place_a:
            why = f"{_why_active(a, ra, id_, 'A')}; {_why_absent(b, pb, id_, 'B')}"
            found.append(
                Difference("context", "injection", id_, _active_words(a, ra, id_), "not active", why)
            )
        else:
            why = f"{_why_active(b, rb, id_, 'B')}; {_why_absent(a, pa, id_, 'A')}"
            found.append(
                Difference("context", "injection", id_, "not active", _active_words(b, rb, id_), why)
            )
    return found


def _why_active(side: RunReading, reason: ActiveReason | None, id_: str, name: str) -> str:
    return f"in {name} {describe_reason(reason, side.catalog.get(id_))}"


def _why_absent(side: RunReading, record: PassEvent, id_: str, name: str) -> str:
    """Why ``id_`` is not on the pass ``record`` of run ``name``, most specific first."""
    for skipped in record.skipped:
        if skipped.id == id_:
            error = f" ({skipped.error})" if skipped.error else ""
            return f"in {name} it was skipped: {skipped.reason}{error}"
    if record.parked_ids and id_ in record.parked_ids:
        return f"in {name} a map parked it"
    if record.superseded_ids and id_ in record.superseded_ids:
        return f"in {name} it was superseded"
    decl = side.catalog.get(id_)
    if decl is None:
        if id_ in side.left_out:
            return f"{name} does not declare it: its run left it out (run_start.options.without)"
        return f"{name} does not declare it (not in its run_start)"
    if trigger_not_recorded(decl):
        return f"in {name} it did not ride this pass (its trigger is not recorded)"
    return f"in {name} its trigger ({decl.trigger.kind}) did not fire"


def _skips(pa: PassEvent, pb: PassEvent) -> list[Difference]:
    """Injections skipped differently, where neither pass has them active (else they are said above)."""
    active = set(pa.active_ids) | set(pb.active_ids)
    skipped_a = {s.id: f"skipped: {s.reason}" + (f" ({s.error})" if s.error else "") for s in pa.skipped}
    skipped_b = {s.id: f"skipped: {s.reason}" + (f" ({s.error})" if s.error else "") for s in pb.skipped}
    found = []
    for id_ in [*skipped_a, *(id_ for id_ in skipped_b if id_ not in skipped_a)]:
        if id_ in active or skipped_a.get(id_) == skipped_b.get(id_):
            continue
        found.append(
            Difference(
                "context", "skip", id_, skipped_a.get(id_), skipped_b.get(id_), why="skipped differently"
            )
        )
    return found
