"""The evaluator (docs/context-model.md §2.1): one pass's active set; pure, never raises."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from fpdebug.engine.injections.context import InjectionContext, tool_results_of
from fpdebug.engine.injections.injection import Injection
from fpdebug.engine.injections.templates import missing_facts
from fpdebug.engine.injections.triggers import Always, LlmActivated, OnToolReturn, Rule, tool_name_matches
from fpdebug.trace.schema import LedgerDecision, Skipped

PARKED_SENTENCE = (
    "its map is parked: the kernel suppresses its contribution until explicit or structural "
    "evidence re-engages the map"
)
"""The fixed error text of a ``parked`` skip."""


@dataclass(frozen=True, slots=True)
class Evaluation:
    """One pass's verdict: the active injections and the skipped ones."""

    active: tuple[Injection, ...]
    """Active injections, in declaration order, each once."""
    skipped: tuple[Skipped, ...]
    """Skipped injections, each with its reason (closed set) and error text."""
    leased: frozenset[str] = frozenset()
    """Active ids that a lease admitted (their trigger was not evaluated)."""
    ledger: tuple[LedgerDecision, ...] = ()
    """The context ledger gate's verdicts, in declaration order (docs/backtracking.md §9.10)."""

    @property
    def active_ids(self) -> tuple[str, ...]:
        """The active ids in declaration order."""
        return tuple(injection.id for injection in self.active)


def _admit_by_trigger(
    injection: Injection, ctx: InjectionContext, decisions: list[LedgerDecision]
) -> tuple[bool, Skipped | None]:
    trigger: object = injection.trigger
    match trigger:
        case Always():
            return True, None
        case Rule(active_when=predicate, ledger=check):
            try:
                admit = bool(predicate(ctx))
            except Exception as exc:  # a user predicate may raise anything; the pass must not
                return False, Skipped(
                    id=injection.id, reason="predicate-threw", error=str(exc) or type(exc).__name__
                )
            if not admit or check is None:
                return admit, None
            # original AND verdict: the gate is asked only when the rule admitted it.
            decision = check.gate.decide(check.kind, injection.id)
            decisions.append(decision)
            if decision.verdict == "demoted":
                return False, check.gate.skip_for(decision)
            return True, None
        case OnToolReturn(tool_name=spec):
            return any(tool_name_matches(spec, r.tool_name) for r in tool_results_of(ctx)), None
        case LlmActivated():
            return injection.id in ctx.activated_injection_ids, None
    return False, Skipped(
        id=injection.id,
        reason="unknown-trigger-kind",
        error=f"trigger {type(trigger).__name__} is not one of always, rule, on-tool-return, llm-activated",
    )


def evaluate_injections(injections: Iterable[Injection], ctx: InjectionContext) -> Evaluation:
    """Decide one pass's active set: park → lease → trigger → template gate, in declaration order.

    Never raises: a raising rule predicate is skipped as ``predicate-threw``. Pure but for a
    ledger gate's parole counters (docs/backtracking.md §9.10), which count each demotion once.

    Args:
        injections: The catalog in declaration order.
        ctx: The pass context (``parked_ids`` and ``lease_active_ids`` already set by the pass).

    Returns:
        The :class:`Evaluation`.
    """
    admitted: list[Injection] = []
    skipped: list[Skipped] = []
    leased: set[str] = set()
    decisions: list[LedgerDecision] = []
    parked = ctx.parked_ids
    lease_ids = ctx.lease_active_ids
    for injection in injections:
        if parked and injection.id in parked:  # park beats everything, lease included
            skipped.append(Skipped(id=injection.id, reason="parked", error=PARKED_SENTENCE))
            continue
        if lease_ids and injection.id in lease_ids:  # the trigger is NOT evaluated
            admitted.append(injection)
            leased.add(injection.id)
            continue
        admit, skip = _admit_by_trigger(injection, ctx, decisions)
        if skip is not None:
            skipped.append(skip)
        elif admit:
            admitted.append(injection)
    active: list[Injection] = []
    for injection in admitted:
        missing = missing_facts(injection.system_prompt or "", ctx) if injection.templated else ()
        if missing:
            skipped.append(
                Skipped(
                    id=injection.id,
                    reason="unknown-fact",
                    error="the template needs "
                    + ", ".join("{{" + name + "}}" for name in missing)
                    + ", which this pass does not know",
                )
            )
            leased.discard(injection.id)
        else:
            active.append(injection)
    return Evaluation(
        active=tuple(active), skipped=tuple(skipped), leased=frozenset(leased), ledger=tuple(decisions)
    )
