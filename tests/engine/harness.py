"""A minimal ReAct driver over the pure core, for tests: passes, the read_skill gate, effect judging.

It threads the carriers exactly as docs/context-model.md §3.2 / §5.5 / §7 say (outputs REPLACE the parent's
value; the tool-calls stage resets the per-batch carriers only when it dispatches tools), using
only the engine's public API, so timelines can be driven pass by pass without a model.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from fpdebug.engine.effects import (
    CallJudgment,
    EffectScope,
    EffectState,
    judge_effects,
    parse_envelope,
    proposal_conflict,
)
from fpdebug.engine.engagement import MapEngagementRecord, parked_member_ids
from fpdebug.engine.evaluate import PassInputs, PassResult, PassSetup, evaluate_pass
from fpdebug.engine.injections import StepPointer
from fpdebug.engine.leases import InstructionLease, PendingToolTransition
from fpdebug.engine.skillmap import (
    PickCarriers,
    RouteConflictReport,
    SkillPick,
    apply_skill_pick,
    gate_skill_pick,
)
from fpdebug.engine.types import Activation, ToolResult
from fpdebug.trace.schema import SlotRouting


@dataclass(frozen=True)
class Call:
    """One scripted tool call: ``read_skill`` takes the skill id as ``value``."""

    name: str
    value: object = None
    id: str | None = None
    status: str | None = None


@dataclass
class Loop:
    """Drives passes; ``step(calls)`` runs pass N, then dispatches the calls as iteration N's batch."""

    setup: PassSetup
    max_iterations: int | None = 10
    user_message: str = ""
    current_skill_id: str | None = None
    activated: tuple[str, ...] = ()
    provenance: dict[str, Activation] = field(default_factory=dict)
    pending_pick: str | None = None
    pending_transition: PendingToolTransition | None = None
    leases: tuple[InstructionLease, ...] | None = None
    accepted: tuple[str, ...] | None = None
    served: tuple[str, ...] | None = None
    engagement: tuple[MapEngagementRecord, ...] | None = None
    prior_by_slot: SlotRouting | None = None
    step_pointer: tuple[StepPointer, ...] | None = None
    tool_results: tuple[ToolResult, ...] | None = None
    batch_iteration: int | None = None
    results: list[PassResult] = field(default_factory=list)
    judgments: list[list[CallJudgment]] = field(default_factory=list)
    picks: list[list[SkillPick]] = field(default_factory=list)
    conflicts: list[RouteConflictReport | None] = field(default_factory=list)
    _calls: int = 0

    @property
    def iteration(self) -> int:
        return len(self.results) + 1

    def step(self, calls: list[Call] | None = None) -> PassResult:
        iteration = self.iteration
        result = evaluate_pass(
            self.setup,
            PassInputs(
                iteration=iteration,
                max_iterations=self.max_iterations,
                user_message=self.user_message,
                tool_results=self.tool_results,
                batch_iteration=self.batch_iteration,
                activated_injection_ids=self.activated,
                activation_provenance=dict(self.provenance),
                prior_by_slot=self.prior_by_slot,
                current_skill_id=self.current_skill_id,
                pending_skill_pick=self.pending_pick,
                step_pointer=self.step_pointer,
                pending_tool_transition=self.pending_transition,
                instruction_leases=self.leases,
                accepted_skill_picks=self.accepted,
                served_injection_ids=self.served,
                map_engagement=self.engagement,
            ),
        )
        self.results.append(result)
        # Outputs replace the parent's value (never concatenate).
        if result.routes:
            self.current_skill_id = result.next_skill_cursor
        if result.next_step_pointer is not None:
            self.step_pointer = result.next_step_pointer
        if result.next_instruction_leases is not None:
            self.leases = result.next_instruction_leases
        if result.engagement is not None:
            self.engagement = result.engagement.advance.next
            self.served = result.next_served_injection_ids
        self.prior_by_slot = result.by_slot
        if calls:
            self._dispatch(iteration, calls)
        return result

    def _dispatch(self, iteration: int, calls: list[Call]) -> None:
        skill_map = self.setup.skill_map
        maps = self.setup.engagement
        carriers = PickCarriers.start_of_batch(
            self.activated,
            pending_skill_pick=self.pending_pick,
            graph=skill_map is not None,
            maps=maps is not None,
        )
        state = EffectState(self.activated, self.leases, self.pending_transition).start_of_batch()
        scope = EffectScope(
            iteration, self.current_skill_id, skill_map, {i.id: i for i in self.setup.injections}
        )
        parked = parked_member_ids(maps, self.engagement) if maps is not None else frozenset()
        batch: list[ToolResult] = []
        judged: list[CallJudgment] = []
        picks: list[SkillPick] = []
        for call in calls:
            self._calls += 1
            call_id = call.id or f"call-{self._calls}"
            if call.name == "read_skill":
                sid = str(call.value)
                if skill_map is not None:
                    pick = skill_map.gate(
                        sid, current_skill_id=self.current_skill_id, parked_member_ids=parked
                    )
                else:  # no graph: every registered skill is admitted like an open skill
                    pick = gate_skill_pick(sid, hops=(), open_skill_ids=[i.id for i in self.setup.injections])
                picks.append(pick)
                carriers = apply_skill_pick(
                    replace(carriers, activated_injection_ids=state.activated_injection_ids), pick
                )
                if pick.accepted and sid not in self.provenance:
                    self.provenance[sid] = Activation("read_skill", iteration, call_id)
                state = replace(state, activated_injection_ids=carriers.activated_injection_ids)
                batch.append(ToolResult("read_skill", "body" if pick.accepted else pick.refusal(), call_id))
                continue
            env = parse_envelope(call.value)
            if env is None:
                batch.append(ToolResult(call.name, call.value, call_id, call.status))  # type: ignore[arg-type]
                continue
            out = judge_effects(env, tool_name=call.name, tool_call_id=call_id, scope=scope, state=state)
            judged.append(out)
            state = out.state
            for sid, activation in out.activations:
                self.provenance.setdefault(sid, activation)
            batch.append(ToolResult(call.name, env.content, call_id, env.status))
        self.activated = state.activated_injection_ids
        if skill_map is not None:
            self.pending_pick = carriers.pending_skill_pick
        if maps is not None:
            self.accepted = carriers.accepted_skill_picks
        self.leases = state.instruction_leases
        self.pending_transition = state.pending_tool_transition
        self.tool_results = tuple(batch)
        self.batch_iteration = iteration
        self.judgments.append(judged)
        self.picks.append(picks)
        self.conflicts.append(proposal_conflict(state, from_skill_id=self.current_skill_id))
