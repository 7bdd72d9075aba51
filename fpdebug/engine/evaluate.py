"""One Evaluate pass, in the order of docs/context-model.md §3.4, plus the Route and Delta stages of §3.5.

:func:`evaluate_pass` is pure: it reads a :class:`PassSetup` (the agent's fixed catalog, skill map
and engagement plan) and the pass's :class:`PassInputs`, and returns a :class:`PassResult` that
carries the next values of every carrier (cursor, step pointer, leases, engagement, served ids)
and every fact the trace records (``pass``, ``cursor_move``, ``lease_prune``, ``engagement``,
``route_conflict``, ``reroute_superseded``), with the provenance of every active id.

A feature that is not used adds nothing (invariant 10): an input left at ``None`` means "feature
unused" (different from an empty value), and the matching result fields stay ``None``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from fpdebug.engine.engagement import (
    EngagementAdvance,
    EngagementPass,
    EngagementPlan,
    MapEngagementRecord,
    advance_engagement,
    map_evidence,
    park_card,
    strength_of_move,
)
from fpdebug.engine.injections import (
    ActiveInjection,
    Always,
    Evaluation,
    Injection,
    InjectionContext,
    LlmActivated,
    OnToolReturn,
    ProposedTransition,
    Rule,
    StepPointer,
    TurnRoute,
    check_unique_ids,
    evaluate_injections,
    project,
    rekey_step_pointer,
    step_plans,
    tool_name_matches,
    tool_results_of,
)
from fpdebug.engine.leases import (
    InstructionLease,
    LeasePrune,
    PendingToolTransition,
    active_lease_ids,
    proposal_for,
    prune_leases,
    pruned_leases,
    tenant_of,
)
from fpdebug.engine.skillmap import CursorMove, RouteConflictReport, SkillMap
from fpdebug.engine.steps import step_pointer_records
from fpdebug.engine.types import Activation, Message, ToolResult
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import (
    ActiveReason,
    MapEvidence,
    PassDelta,
    SlotDelta,
    SlotEntry,
    SlotRouting,
)

__all__ = [
    "PARK_CARD_DESCRIPTION",
    "PARK_CARD_ID",
    "EngagementOutcome",
    "PassInputs",
    "PassResult",
    "PassSetup",
    "RerouteSuperseded",
    "evaluate_pass",
    "slot_delta",
    "slot_routing",
]

PARK_CARD_ID = "agentfootprint:map-status"
"""The id of the park card's active row."""

PARK_CARD_DESCRIPTION = "Map status: a mounted map is parked"
"""The park card row's description (its slot reason)."""


@dataclass(frozen=True, slots=True)
class PassSetup:
    """What every pass of an agent shares: the catalog, the skill map, the engagement plan."""

    injections: tuple[Injection, ...]
    """The whole catalog in declaration order (the skill map's compiled nodes and open skills included)."""
    skill_map: SkillMap | None = None
    """The mounted graph, when there is one."""
    engagement: EngagementPlan | None = None
    """The mount kernel's plan, when ``.maps()`` is mounted."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "injections", tuple(self.injections))
        check_unique_ids(self.injections)
        if self.skill_map is not None:
            by_id = {injection.id: injection for injection in self.injections}
            for compiled in self.skill_map.injections:
                if by_id.get(compiled.id) is not compiled:
                    raise DefinitionError(
                        f"skill map node {compiled.id!r} is not in the catalog as the map compiled it; "
                        "put skill_map.injections into the catalog"
                    )

    @property
    def step_plans(self) -> dict[str, int]:
        """Skill id → step count, for skills that declare steps."""
        return step_plans(self.injections)


@dataclass(frozen=True, slots=True, kw_only=True)
class PassInputs:
    """One pass's boundary inputs (docs/context-model.md §3.1). ``None`` means the key is absent (feature unused)."""

    iteration: int | None = None
    """The pass; 1 when absent (only ``None`` counts as absent)."""
    max_iterations: int | None = None
    """The turn's budget."""
    user_message: str = ""
    """The turn's user message."""
    history: tuple[Message, ...] = ()
    """The conversation so far."""
    last_tool_result: ToolResult | None = None
    """The last call of the previous batch."""
    tool_results: tuple[ToolResult, ...] | None = None
    """The previous batch, in call order."""
    batch_iteration: int | None = None
    """The iteration that dispatched ``tool_results`` (provenance of ``on-tool-return`` admissions)."""
    activated_injection_ids: tuple[str, ...] = ()
    """Turn-cumulative activations."""
    activation_provenance: Mapping[str, Activation] | None = None
    """Who activated each id (a ``read_skill`` call or an accepted proposal), for provenance."""
    prior_by_slot: SlotRouting | None = None
    """The previous pass's per-slot routing (``None`` on the first pass: everything is added)."""
    current_skill_id: str | None = None
    """The cursor after the previous pass."""
    pending_skill_pick: str | None = None
    """The hop the read_skill gate accepted last iteration."""
    turn_route: TurnRoute | None = None
    """The turn-start cascade verdict."""
    entry_scores: Mapping[str, float] | None = None
    """The turn's entry scores (the scorer's, or the precomputed ones), carried into the context."""
    entry_scorer: Callable[[InjectionContext], Mapping[str, float]] | None = None
    """The turn-start entry scorer, carried into the context."""
    step_pointer: tuple[StepPointer, ...] | None = None
    """The step pointer before the pass."""
    pending_tool_transition: PendingToolTransition | None = None
    """The accepted proposal, whatever iteration granted it (validity is decided here)."""
    instruction_leases: tuple[InstructionLease, ...] | None = None
    """The lease record (``None``: no lease was ever granted; ``()``: the key exists, empty)."""
    accepted_skill_picks: tuple[str, ...] | None = None
    """Picks the gate accepted on the previous pass (maps only)."""
    served_injection_ids: tuple[str, ...] | None = None
    """What the previous pass served (maps only)."""
    map_engagement: tuple[MapEngagementRecord, ...] | None = None
    """The engagement records before the pass (maps only)."""


@dataclass(frozen=True, slots=True)
class RerouteSuperseded:
    """A pick or a proposal the pass did not honour (docs/context-model.md §3.4 step 10)."""

    volunteered_id: str
    """What the model or the tool volunteered."""
    won_id: str | None
    """Where the cursor went instead."""
    from_skill_id: str | None
    """The cursor before the pass."""
    source: Literal["tool-proposal"] | None = None
    """``tool-proposal`` for a superseded proposal."""

    def fields(self) -> dict[str, object]:
        """The fields of a ``reroute_superseded`` event."""
        return {
            "volunteered_id": self.volunteered_id,
            "won_id": self.won_id,
            "from_skill_id": self.from_skill_id,
            "source": self.source,
        }


@dataclass(frozen=True, slots=True)
class EngagementOutcome:
    """The kernel's part of a pass."""

    pass_: EngagementPass
    """The facts the renewal feed read."""
    evidence: tuple[MapEvidence, ...]
    """Each map's renewal evidence, in plan order."""
    advance: EngagementAdvance
    """Records, changes, parked ids and tools."""
    park_card: str | None
    """The card the model sees, when a map is parked."""

    def fields(self) -> dict[str, object]:
        """The fields of an ``engagement`` event."""
        return {
            "pass_facts": self.pass_.facts(),
            "evidence": list(self.evidence),
            "changes": list(self.advance.changes),
            "records": list(self.advance.next),
            "parked_injection_ids": list(self.advance.parked_injection_ids),
            "parked_tool_names": list(self.advance.parked_tool_names),
            "park_card": self.park_card,
        }


@dataclass(frozen=True, slots=True)
class PassResult:
    """Everything one pass decided: the next carriers and the facts the trace records."""

    iteration: int
    """The pass."""
    context: InjectionContext
    """The context the triggers saw (cursor move, lease ids, parked ids and fresh pointer set)."""
    evaluation: Evaluation
    """The evaluator's verdict (active ids exclude the park card)."""
    active_injections: tuple[ActiveInjection, ...]
    """The projected active set, templates rendered; the park card row last when a map is parked."""
    reasons: tuple[ActiveReason, ...]
    """Why each projected row rode, in the same order."""
    by_slot: SlotRouting
    """Per-slot routing of the projected rows."""
    delta: PassDelta
    """Per-slot change against ``prior_by_slot``."""
    trigger_kind_counts: Mapping[str, int]
    """Active injections counted by trigger kind."""
    evaluated_total: int
    """How many injections the evaluator looked at (the catalog size)."""
    superseded_ids: tuple[str, ...] = ()
    """Conditional entries whose ``when`` matched while the cursor was elsewhere."""
    reroutes: tuple[RerouteSuperseded, ...] = ()
    """Picks and proposals not honoured."""
    proposal: PendingToolTransition | None = None
    """The proposal this pass honoured as input (valid only when granted on the previous iteration)."""
    cursor_move: CursorMove | None = None
    """The one resolver call's move (graph agents only)."""
    next_skill_cursor: str | None = None
    """The cursor to store: exactly ``cursor_move.to_skill`` (graph agents only)."""
    reachable: tuple[str, ...] | None = None
    """What the read_skill gate admits from the landed cursor (graph agents only)."""
    route_conflict: RouteConflictReport | None = None
    """Edges to different targets fired in the batch."""
    next_step_pointer: tuple[StepPointer, ...] | None = None
    """The re-keyed step pointer (only when some skill declares steps)."""
    lease_tenant: str | None = None
    """The tenant the leases were judged against."""
    lease_active_ids: tuple[str, ...] | None = None
    """Ids leases served (``None`` when no lease record exists)."""
    next_instruction_leases: tuple[InstructionLease, ...] | None = None
    """The lease record after the tenure sweep (``None`` when no lease record exists)."""
    lease_prune: LeasePrune | None = None
    """What the sweep removed, when it removed something."""
    engagement: EngagementOutcome | None = None
    """The kernel's part (maps only)."""
    parked_ids: tuple[str, ...] | None = None
    """Ids the kernel suppressed this pass (``None`` when no map is parked)."""
    parked_tool_names: tuple[str, ...] | None = None
    """Tools to take off the wire (maps only)."""
    next_served_injection_ids: tuple[str, ...] | None = None
    """Every projected id, park card included (maps only)."""

    @property
    def routes(self) -> bool:
        """Whether a graph is mounted (the cursor is written back)."""
        return self.cursor_move is not None

    def pass_fields(self) -> dict[str, object]:
        """The fields of the ``pass`` event (:class:`~fpdebug.trace.schema.PassEvent`)."""
        return {
            "active_ids": list(self.evaluation.active_ids),
            "reasons": list(self.reasons),
            "skipped": list(self.evaluation.skipped),
            "ledger": list(self.evaluation.ledger) or None,
            "evaluated_total": self.evaluated_total,
            "trigger_kind_counts": dict(self.trigger_kind_counts),
            "lease_active_ids": _listed(self.lease_active_ids),
            # The sweep's survivors, also when it pruned nothing: a pass that keeps its leases says so.
            "lease_survivors": (
                [lease.record() for lease in self.next_instruction_leases]
                if self.next_instruction_leases is not None
                else None
            ),
            "parked_ids": _listed(self.parked_ids),
            "served_ids": _listed(self.next_served_injection_ids),
            "superseded_ids": list(self.superseded_ids) or None,
            "step_pointer": (
                step_pointer_records(self.next_step_pointer) if self.next_step_pointer is not None else None
            ),
            "by_slot": self.by_slot,
            "delta": self.delta,
        }

    def cursor_move_fields(self) -> dict[str, object] | None:
        """The fields of the ``cursor_move`` event, or ``None`` without a graph."""
        move = self.cursor_move
        if move is None:
            return None
        return {
            "from_skill": move.from_skill,
            "to_skill": move.to_skill,
            "by": move.by,
            "strength": strength_of_move(move.by),
            "witness": move.witness,
            "reachable": list(self.reachable or ()),
            "conflict": move.conflict,
            "guard": move.guard,
            "guards_closed": list(move.guards_closed) if move.guards_closed is not None else None,
            "score": move.score,
            "offered": list(move.offered) if move.offered is not None else None,
            "declined_offer": move.declined_offer,
            "near_tie": move.near_tie,
        }

    def lease_prune_fields(self) -> dict[str, object] | None:
        """The fields of the ``lease_prune`` event (site ``evaluate``); ``None`` when nothing was pruned."""
        return self.lease_prune.fields() if self.lease_prune is not None else None

    def engagement_fields(self) -> dict[str, object] | None:
        """The fields of the ``engagement`` event, or ``None`` when the kernel is not mounted."""
        return self.engagement.fields() if self.engagement is not None else None

    def route_conflict_fields(self) -> dict[str, object] | None:
        """The fields of the ``route_conflict`` event, or ``None`` without a conflict."""
        return self.route_conflict.fields() if self.route_conflict is not None else None

    def reroute_fields(self) -> list[dict[str, object]]:
        """The fields of each ``reroute_superseded`` event."""
        return [reroute.fields() for reroute in self.reroutes]


def _listed(values: Sequence[str] | None) -> list[str] | None:
    return list(values) if values is not None else None


# ----------------------------------------------------------------------------------------------
# Route and Delta (docs/context-model.md §3.5)


def slot_routing(active: Sequence[ActiveInjection]) -> SlotRouting:
    """Which projected rows land in which slot (one row may land in several)."""
    system_prompt: list[SlotEntry] = []
    messages: list[SlotEntry] = []
    tools: list[SlotEntry] = []
    for row in active:
        entry = SlotEntry(
            id=row.id, source=row.flavor, reason=row.description or f"{row.flavor} '{row.id}' active"
        )
        if row.lands_in_system_prompt:
            system_prompt.append(entry)
        if row.messages:
            messages.append(entry)
        if row.tools:
            tools.append(entry)
    return SlotRouting(system_prompt=system_prompt, messages=messages, tools=tools)


def _delta(now: Sequence[SlotEntry], before: Sequence[SlotEntry]) -> SlotDelta:
    now_ids = [entry.id for entry in now]
    before_ids = [entry.id for entry in before]
    return SlotDelta(
        added=[i for i in now_ids if i not in before_ids],
        removed=[i for i in before_ids if i not in now_ids],
        kept=[i for i in now_ids if i in before_ids],
    )


def slot_delta(now: SlotRouting, prior: SlotRouting | None) -> PassDelta:
    """Per-slot ``added`` / ``removed`` / ``kept`` against the previous pass (all added on pass 1)."""
    before = prior or SlotRouting()
    return PassDelta(
        system_prompt=_delta(now.system_prompt, before.system_prompt),
        messages=_delta(now.messages, before.messages),
        tools=_delta(now.tools, before.tools),
    )


# ----------------------------------------------------------------------------------------------
# Provenance of every active row


def _reason(
    injection: Injection,
    evaluation: Evaluation,
    ctx: InjectionContext,
    inputs: PassInputs,
    iteration: int,
    lease_tenant: str | None,
) -> ActiveReason:
    if injection.id in evaluation.leased:
        for lease in inputs.instruction_leases or ():
            if lease.instruction_id == injection.id and lease.instruction_id in active_lease_ids(
                (lease,), iteration, lease_tenant
            ):
                return ActiveReason(
                    id=injection.id,
                    via="lease",
                    tool_name=lease.tool_name,
                    tool_call_id=lease.tool_call_id,
                    at_iteration=lease.iteration,
                    delivery_lease=lease.delivery_lease,
                    tenant=lease.skill_id,
                )
    trigger: object = injection.trigger
    match trigger:
        case Always():
            return ActiveReason(id=injection.id, via="always")
        case Rule(tree_path=tuple() as path, tree_label=label):
            return ActiveReason(id=injection.id, via="tree", path=list(path), label=label)
        case Rule(graph_node=True):
            return ActiveReason(id=injection.id, via="cursor")
        case Rule():
            return ActiveReason(id=injection.id, via="rule")
        case OnToolReturn(tool_name=spec):
            for result in tool_results_of(ctx):
                if tool_name_matches(spec, result.tool_name):
                    return ActiveReason(
                        id=injection.id,
                        via="on-tool-return",
                        tool_name=result.tool_name,
                        tool_call_id=result.tool_call_id,
                        at_iteration=inputs.batch_iteration,
                    )
        case LlmActivated(via_tool_name=via):
            activation = (inputs.activation_provenance or {}).get(injection.id)
            if activation is not None:
                return ActiveReason(
                    id=injection.id,
                    via="llm-activated",
                    tool_name=activation.tool_name,
                    tool_call_id=activation.tool_call_id,
                    at_iteration=activation.iteration,
                )
            return ActiveReason(id=injection.id, via="llm-activated", tool_name=via)
    # Unreachable for an admitted injection; kept total so provenance never raises.
    return ActiveReason(id=injection.id, via="rule")


# ----------------------------------------------------------------------------------------------
# The pass (docs/context-model.md §3.4)


def evaluate_pass(setup: PassSetup, inputs: PassInputs) -> PassResult:
    """Run one Evaluate pass, steps 1–13 of docs/context-model.md §3.4, then Route and Delta (§3.5).

    Each numbered step is one call below; a step that narrows the context returns the new one.

    Args:
        setup: The agent's catalog, skill map and engagement plan.
        inputs: The pass's boundary inputs.

    Returns:
        The :class:`PassResult`. Pure; makes exactly one resolver call when a graph is mounted.
    """
    # 1. The iteration (absent only when None) and the one-shot proposal, valid by data.
    iteration = inputs.iteration if inputs.iteration is not None else 1
    proposal = proposal_for(inputs.pending_tool_transition, iteration)
    # 2. The base context; the proposal appears only as its target, and only when valid.
    ctx = _base_context(inputs, iteration, proposal)
    # 3. The keystone: exactly one resolver call; every graph trigger reads this move.
    move, ctx = _resolve_cursor(setup.skill_map, ctx)
    cursor = move.to_skill if move is not None else None
    # 4. Step pointer re-key (only when some skill declares steps).
    next_step_pointer, ctx = _rekey_steps(setup, inputs, move, ctx)
    # 5. Leases: serve, THEN sweep (the sweep still lets this pass serve what it removes).
    leases, ctx = _serve_then_sweep_leases(inputs, iteration, move, ctx)
    # 6. A route conflict in the batch.
    conflict = _route_conflict(move)
    # 7. Engagement (only when the kernel is mounted).
    engagement, parked_ids, ctx = _engage(setup.engagement, inputs, iteration, move, ctx)
    # 8. The evaluator.
    evaluation = evaluate_injections(setup.injections, ctx)
    # 9. Superseded conditional entries.
    superseded = setup.skill_map.superseded_entries(ctx) if setup.skill_map is not None else ()
    # 10. Told-the-truth checks.
    reroutes = _told_the_truth(inputs, ctx, evaluation, proposal, cursor)
    # 11. Project the active set; the park card row goes last.
    rows, reasons = _project_active(inputs, ctx, evaluation, iteration, leases.tenant, engagement)
    # 12. Served ids (kernel only, park card included, written even when empty).
    served = tuple(row.id for row in rows) if setup.engagement is not None else None
    # 13. + Route / Delta.
    by_slot = slot_routing(rows)
    return PassResult(
        iteration=iteration,
        context=ctx,
        evaluation=evaluation,
        active_injections=rows,
        reasons=reasons,
        by_slot=by_slot,
        delta=slot_delta(by_slot, inputs.prior_by_slot),
        trigger_kind_counts=_trigger_kind_counts(evaluation),
        evaluated_total=len(setup.injections),
        superseded_ids=superseded,
        reroutes=reroutes,
        proposal=proposal,
        cursor_move=move,
        next_skill_cursor=cursor,
        reachable=setup.skill_map.admissible_skill_ids(cursor) if setup.skill_map is not None else None,
        route_conflict=conflict,
        next_step_pointer=next_step_pointer,
        lease_tenant=leases.tenant,
        lease_active_ids=leases.served,
        next_instruction_leases=leases.next,
        lease_prune=leases.sweep,
        engagement=engagement,
        parked_ids=parked_ids,
        parked_tool_names=engagement.advance.parked_tool_names if engagement is not None else None,
        next_served_injection_ids=served,
    )


# -- the steps of one pass, in order --------------------------------------------------------------


def _base_context(
    inputs: PassInputs, iteration: int, proposal: PendingToolTransition | None
) -> InjectionContext:
    """Step 2: the context every trigger reads, before the cursor moves."""
    return InjectionContext(
        iteration,
        max_iterations=inputs.max_iterations,
        user_message=inputs.user_message,
        history=inputs.history,
        last_tool_result=inputs.last_tool_result,
        tool_results=inputs.tool_results,
        activated_injection_ids=inputs.activated_injection_ids,
        current_skill_id=inputs.current_skill_id,
        pending_skill_pick=inputs.pending_skill_pick,
        pending_tool_transition=ProposedTransition(proposal.target_skill_id) if proposal else None,
        turn_route=inputs.turn_route,
        entry_scores=inputs.entry_scores,
        entry_scorer=inputs.entry_scorer,
        step_pointer=inputs.step_pointer,
    )


def _resolve_cursor(
    skill_map: SkillMap | None, ctx: InjectionContext
) -> tuple[CursorMove | None, InjectionContext]:
    """Step 3: the one resolver call of the pass (``None`` without a graph: nothing routes)."""
    if skill_map is None:
        return None, ctx
    move = skill_map.explain_next_skill(ctx)
    return move, replace(ctx, cursor_move=move)


def _rekey_steps(
    setup: PassSetup, inputs: PassInputs, move: CursorMove | None, ctx: InjectionContext
) -> tuple[tuple[StepPointer, ...] | None, InjectionContext]:
    """Step 4: the step pointer re-keyed to the tenant (the cursor, else the latest activation)."""
    plans = setup.step_plans
    if not plans:
        return None, ctx
    if move is not None:
        step_tenant = move.to_skill
    else:
        step_tenant = inputs.activated_injection_ids[-1] if inputs.activated_injection_ids else None
    next_step_pointer = rekey_step_pointer(inputs.step_pointer, step_tenant, plans)
    return next_step_pointer, replace(ctx, step_pointer=next_step_pointer)


@dataclass(frozen=True, slots=True)
class _LeaseStep:
    """Step 5's outcome (every field ``None`` when no lease was ever granted)."""

    tenant: str | None = None
    served: tuple[str, ...] | None = None
    next: tuple[InstructionLease, ...] | None = None
    sweep: LeasePrune | None = None


def _serve_then_sweep_leases(
    inputs: PassInputs, iteration: int, move: CursorMove | None, ctx: InjectionContext
) -> tuple[_LeaseStep, InjectionContext]:
    """Step 5: the leases this pass serves, then the record swept of the ones it no longer holds."""
    leases = inputs.instruction_leases
    if leases is None:
        return _LeaseStep(), ctx
    tenant = tenant_of(move.to_skill if move is not None else None, inputs.activated_injection_ids)
    served = active_lease_ids(leases, iteration, tenant) if leases else ()
    if served:
        ctx = replace(ctx, lease_active_ids=served)
    next_leases = prune_leases(leases, iteration, tenant)
    removed = pruned_leases(leases, iteration, tenant)
    sweep = LeasePrune("evaluate", tenant, removed, next_leases) if removed else None
    return _LeaseStep(tenant, served, next_leases, sweep), ctx


def _route_conflict(move: CursorMove | None) -> RouteConflictReport | None:
    """Step 6: the batch's conflicting route proposals, as the resolver saw them."""
    if move is None or move.conflict is None:
        return None
    return RouteConflictReport(from_skill_id=move.from_skill, conflict=move.conflict)


def _engage(
    plan: EngagementPlan | None,
    inputs: PassInputs,
    iteration: int,
    move: CursorMove | None,
    ctx: InjectionContext,
) -> tuple[EngagementOutcome | None, tuple[str, ...] | None, InjectionContext]:
    """Step 7: the engagement kernel's advance (docs/context-model.md §6), and the ids it parks."""
    if plan is None:
        return None, None, ctx
    pass_ = EngagementPass(
        iteration,
        current_node=move.to_skill if move is not None else None,
        move_by=move.by if move is not None else None,
        witness=move.witness.text if move is not None and move.witness is not None else None,
        tool_results=tool_results_of(ctx),
        pending_skill_pick=ctx.pending_skill_pick,
        accepted_skill_picks=inputs.accepted_skill_picks or (),
        served_last_pass=inputs.served_injection_ids or (),
    )
    advance = advance_engagement(plan, inputs.map_engagement, pass_)
    engagement = EngagementOutcome(pass_, map_evidence(plan, pass_), advance, park_card(plan, advance.next))
    if not advance.parked_injection_ids:
        return engagement, None, ctx
    parked_ids = advance.parked_injection_ids
    return engagement, parked_ids, replace(ctx, parked_ids=frozenset(parked_ids))


def _told_the_truth(
    inputs: PassInputs,
    ctx: InjectionContext,
    evaluation: Evaluation,
    proposal: PendingToolTransition | None,
    cursor: str | None,
) -> tuple[RerouteSuperseded, ...]:
    """Step 10: an accepted pick or a proposal the pass did not honour, each said out loud."""
    reroutes: list[RerouteSuperseded] = []
    pick = ctx.pending_skill_pick
    if pick is not None and pick not in evaluation.active_ids:
        reroutes.append(RerouteSuperseded(pick, cursor, inputs.current_skill_id))
    if proposal is not None and proposal.target_skill_id != cursor:
        reroutes.append(
            RerouteSuperseded(proposal.target_skill_id, cursor, inputs.current_skill_id, "tool-proposal")
        )
    return tuple(reroutes)


def _project_active(
    inputs: PassInputs,
    ctx: InjectionContext,
    evaluation: Evaluation,
    iteration: int,
    lease_tenant: str | None,
    engagement: EngagementOutcome | None,
) -> tuple[tuple[ActiveInjection, ...], tuple[ActiveReason, ...]]:
    """Step 11: each active injection projected, with why it is active; the park card row last."""
    rows = [project(injection, ctx) for injection in evaluation.active]
    reasons = [_reason(inj, evaluation, ctx, inputs, iteration, lease_tenant) for inj in evaluation.active]
    if engagement is not None and engagement.park_card is not None:
        rows.append(
            ActiveInjection(
                id=PARK_CARD_ID,
                flavor="steering",
                description=PARK_CARD_DESCRIPTION,
                system_prompt=engagement.park_card,
            )
        )
        reasons.append(ActiveReason(id=PARK_CARD_ID, via="park-card"))
    return tuple(rows), tuple(reasons)


def _trigger_kind_counts(evaluation: Evaluation) -> dict[str, int]:
    """Step 13: how many active injections each trigger kind admitted."""
    counts: dict[str, int] = {}
    for injection in evaluation.active:
        kind = getattr(injection.trigger, "kind", "unknown")
        counts[kind] = counts.get(kind, 0) + 1
    return counts
