"""The fork's ``pass`` records, told as the fork ran them (docs/guide/fork.md, "What the trace records").

A fork's edits are applied to the composed request (:func:`~fpdebug.backtrack.fork.edit_request`);
the rebuilt engine's evaluator does not know of them, so its ``pass`` event alone would still show
a dropped injection as active and an added one as absent. :func:`edit_pass` rewrites each ``pass``
event from the fork point on so that it says what the model was sent, and why:

- an injection the fork left out (``drop-injection``, ``revoke-lease``) that the evaluator admitted
  leaves ``active_ids``, ``reasons``, ``by_slot``, ``served_ids`` and ``lease_active_ids``, and is
  listed in ``skipped`` with the reason ``fork-edit`` and the edit named in ``error``;
- an injection the fork put in (``add-injection`` from the pass on, ``grant-lease`` at the pass)
  joins ``active_ids`` in declaration order, with a reason ``via: fork-edit`` and its slots;
- ``delta`` is recomputed against the previous (rewritten) pass of the turn, and
  ``trigger_kind_counts`` counts what rode.

Edits that change no injection (a tool result, the user message, the model or provider) leave the
pass as the evaluator recorded it: they show in the ``llm_call`` (what was sent) and in
``run_start.fork_of``.
"""

from __future__ import annotations

from collections.abc import Sequence

from fpdebug.backtrack.fork import ForkEdit
from fpdebug.engine.evaluate import slot_delta
from fpdebug.trace.schema import (
    ActiveReason,
    InjectionDecl,
    PassEvent,
    Skipped,
    SlotEntry,
    SlotRouting,
)

__all__ = ["edit_pass", "fork_edit_reason"]


def fork_edit_reason(edit: ForkEdit, *, at_pass: int, turn: int) -> str:
    """``fork edit drop-injection at pass 2 of turn 1``: the sentence a ``fork-edit`` skip records."""
    return f"fork edit {edit.kind} at pass {at_pass} of turn {turn}"


def _removals(edits: Sequence[ForkEdit]) -> dict[str, ForkEdit]:
    return {e.target: e for e in edits if e.kind in ("drop-injection", "revoke-lease") and e.target}


def _additions(edits: Sequence[ForkEdit], at_fork_pass: bool) -> dict[str, ForkEdit]:
    kinds = ("add-injection", "grant-lease") if at_fork_pass else ("add-injection",)
    return {e.target: e for e in edits if e.kind in kinds and e.target}


def _entry(decl: InjectionDecl) -> SlotEntry:
    # As the evaluator words a landing (fpdebug.engine.evaluate.slot_routing).
    return SlotEntry(
        id=decl.id, source=decl.flavor, reason=decl.description or f"{decl.flavor} '{decl.id}' active"
    )


def _routing(
    routing: SlotRouting, removed: set[str], added: Sequence[InjectionDecl], order: dict[str, int]
) -> SlotRouting:
    def slot(entries: list[SlotEntry], lands: list[InjectionDecl]) -> list[SlotEntry]:
        kept = [e for e in entries if e.id not in removed]
        kept += [_entry(d) for d in lands if all(e.id != d.id for e in kept)]
        return sorted(kept, key=lambda e: order.get(e.id, len(order)))

    return SlotRouting(
        system_prompt=slot(
            routing.system_prompt, [d for d in added if d.system_prompt and d.surface_mode != "tool-only"]
        ),
        messages=slot(routing.messages, [d for d in added if d.messages]),
        tools=slot(routing.tools, [d for d in added if d.tool_names]),
    )


def _trigger_counts(counts: dict[str, int], gone: Sequence[ActiveReason], added: int) -> dict[str, int]:
    """Active injections by trigger kind, less those the fork left out, plus those it put in."""
    counts = dict(counts)
    for reason in gone:
        if counts.get(reason.via, 0) > 0:
            counts[reason.via] -= 1
            if not counts[reason.via]:
                del counts[reason.via]
    if added:
        counts["fork-edit"] = counts.get("fork-edit", 0) + added
    return counts


def edit_pass(
    event: PassEvent,
    edits: Sequence[ForkEdit],
    *,
    declared: Sequence[InjectionDecl],
    at_pass: int,
    turn: int,
    at_fork_pass: bool,
    prior: SlotRouting | None,
) -> PassEvent:
    """``event`` (a pass from the fork point on) with the fork's injection edits recorded.

    Args:
        event: The evaluator's pass record.
        edits: The fork's edits.
        declared: The run's declared injections (for the order and the slots of an added one).
        at_pass: The fork's pass (named in a skip's reason).
        turn: The fork's turn.
        at_fork_pass: This is the fork's pass itself (a granted lease serves it only).
        prior: The previous pass's (rewritten) slot routing in this turn, ``None`` on its first pass.
    """
    removals = {i: e for i, e in _removals(edits).items() if i in event.active_ids}
    by_id = {d.id: d for d in declared}
    order = {d.id: n for n, d in enumerate(declared)}
    additions = {
        i: e for i, e in _additions(edits, at_fork_pass).items() if i not in event.active_ids and i in by_id
    }
    if not removals and not additions:
        return event.model_copy(update={"delta": slot_delta(event.by_slot, prior)})
    removed = set(removals)
    active = [i for i in event.active_ids if i not in removed] + list(additions)
    active.sort(key=lambda i: order.get(i, len(order)))
    gone = [r for r in event.reasons if r.id in removed]
    reasons = [r for r in event.reasons if r.id not in removed]
    reasons += [ActiveReason(id=i, via="fork-edit") for i in additions]
    # The park card row stays last, as the evaluator orders it.
    reasons.sort(key=lambda r: (r.via == "park-card", order.get(r.id, len(order))))
    skipped = list(event.skipped) + [
        Skipped(id=i, reason="fork-edit", error=fork_edit_reason(e, at_pass=at_pass, turn=turn))
        for i, e in removals.items()
    ]
    counts = _trigger_counts(event.trigger_kind_counts, gone, len(additions))
    by_slot = _routing(event.by_slot, removed, [by_id[i] for i in additions], order)

    def listed(values: list[str] | None, *, add: bool) -> list[str] | None:
        if values is None:
            return None
        kept = [v for v in values if v not in removed]
        return kept + [i for i in additions if i not in kept] if add else kept

    return event.model_copy(
        update={
            "active_ids": active,
            "reasons": reasons,
            "skipped": skipped,
            "trigger_kind_counts": counts,
            "by_slot": by_slot,
            "delta": slot_delta(by_slot, prior),
            "served_ids": listed(event.served_ids, add=True),
            "lease_active_ids": listed(event.lease_active_ids, add=False),
        }
    )
