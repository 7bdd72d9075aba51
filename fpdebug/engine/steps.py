"""Step procedures (docs/context-model.md §5.6, ``skillSteps.ts``): the pointer's two moves and every sentence about them.

A stepped skill declares ``(tool, note)`` pairs. The Evaluate pass re-keys the pointer to the pass's
tenant (:func:`~fpdebug.engine.injections.rekey_step_pointer`); the tool-calls stage then moves it
at the result boundary, in call order, exactly two ways (reference ``toolCalls.ts`` ·
``applyStepReturn`` / ``applySkipStep``):

- **advance**: a call that RAN clean (not an error, not refused) whose tool is the CURRENT step's
  tool moves the pointer to ``step + 1``, and the result the model reads gains
  :func:`step_advance_suffix`. Any other tool, or a failed call of the step's tool, moves nothing:
  the step stays current.
- **skip**: only the framework's ``skip_step(reason)`` tool skips. Under ``on_skip="advance"`` (the
  default) the step is recorded in ``skipped`` and the pointer moves on; under ``"hold"`` the skip
  is recorded on the trace and the step stays current. Its result is the authoritative sentence of
  :func:`skip_step_result`, never the tool's own.

While a procedure is in progress the tools slot offers only the current step's tool of the stepped
skill's own step tools (the others are held out), leads that tool's description with
:func:`step_banner_prefix`, and appends ``skip_step`` described by :func:`skip_step_description`.
A finished pointer (``step == total + 1``) and an empty one stay as they are. Nothing here moves the
cursor.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from fpdebug.engine.injections import Injection, Step, StepPointer
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import StepChange, StepPointerRecord, ToolSchema

__all__ = [
    "ON_SKIP_POLICIES",
    "SKIP_STEP",
    "OnSkip",
    "StepBoundary",
    "StepOutcome",
    "StepPlan",
    "current_step",
    "held_out_step_tools",
    "read_skill_step_intro",
    "skip_policies",
    "skip_step_description",
    "skip_step_result",
    "skip_step_schema",
    "step_advance_suffix",
    "step_banner_prefix",
    "step_on_return",
    "step_plans_of",
    "step_pointer_records",
]

OnSkip: TypeAlias = Literal["advance", "hold"]
"""What a ``skip_step`` does: move past the step (``advance``, the default) or keep it current
(``hold``)."""

ON_SKIP_POLICIES: tuple[OnSkip, ...] = ("advance", "hold")
"""The two ``on_skip`` policies a stepped skill may declare."""

SKIP_STEP = "skip_step"
"""The integrity tool's reserved name (the reference's ``SKIP_STEP_TOOL_NAME``)."""

StepOutcome: TypeAlias = Literal["step_advanced", "step_skipped"]
"""What one result did to the pointer (the names of docs/trace-contract.md §8.2's step events)."""


@dataclass(frozen=True, slots=True)
class StepPlan:
    """One stepped skill's procedure, folded once when the agent compiles."""

    skill_id: str
    """The skill."""
    steps: tuple[Step, ...]
    """Its declared steps."""
    on_skip: OnSkip = "advance"
    """What a ``skip_step`` does."""

    @property
    def tool_names(self) -> frozenset[str]:
        """Every tool a step names (the hold-out candidates)."""
        return frozenset(step.tool for step in self.steps)


@dataclass(frozen=True, slots=True)
class StepBoundary:
    """What one tool result did to the step pointer."""

    outcome: StepOutcome
    """``step_advanced`` (the step's tool ran clean) or ``step_skipped`` (``skip_step``)."""
    skill_id: str
    """The skill whose procedure it is."""
    step: int
    """The 1-based step the result concerned."""
    total: int
    """How many steps the skill declares."""
    tool: str
    """The tool that step names."""
    held: bool
    """A skip under ``on_skip="hold"``: the pointer did not move."""
    next: tuple[StepPointer, ...]
    """The pointer after the result (one record)."""
    reason: str | None = None
    """The reason ``skip_step`` gave (skips only)."""

    def record(self) -> StepChange:
        """The ``tool_result.step`` record."""
        return StepChange(
            outcome=self.outcome,
            skill_id=self.skill_id,
            step=self.step,
            total=self.total,
            tool=self.tool,
            held=self.held,
            reason=self.reason,
            step_pointer=step_pointer_records(self.next)[0],
        )


def _in_progress(pointer: Sequence[StepPointer] | None) -> StepPointer | None:
    if not pointer:
        return None
    current = pointer[0]
    return current if current.step <= current.total else None


def current_step(
    pointer: Sequence[StepPointer] | None, plans: Mapping[str, StepPlan]
) -> tuple[StepPointer, StepPlan, Step] | None:
    """The procedure in progress: the pointer, its plan and the current step (reference
    ``toolCalls.ts`` · ``stepStateOf``).

    Args:
        pointer: The step pointer (``()`` or ``None``: no procedure).
        plans: :func:`step_plans_of` of the catalog.

    Returns:
        ``None`` without a pointer, once the procedure is finished, or for a skill without a plan.
    """
    current = _in_progress(pointer)
    if current is None:
        return None
    plan = plans.get(current.skill_id)
    if plan is None or current.step > len(plan.steps):
        return None
    return current, plan, plan.steps[current.step - 1]


def step_on_return(
    pointer: Sequence[StepPointer] | None, plans: Mapping[str, StepPlan], tool_name: str
) -> tuple[StepBoundary, str] | None:
    """Advance-on-return, for a call that ran clean (the caller judges that; reference
    ``toolCalls.ts`` · ``applyStepReturn``: ``if (!state || state.step.tool !== call.toolName)
    return ''``).

    Args:
        pointer: The pointer before the result.
        plans: The step plans.
        tool_name: The tool whose clean result this is.

    Returns:
        What the result did and the suffix the model reads after it, or ``None`` when no procedure
        is in progress or ``tool_name`` is not the current step's tool (nothing moves).
    """
    state = current_step(pointer, plans)
    if state is None or state[2].tool != tool_name:
        return None
    current, plan, step = state
    after = StepPointer(current.skill_id, current.step + 1, current.total, current.skipped)
    boundary = StepBoundary(
        outcome="step_advanced",
        skill_id=current.skill_id,
        step=current.step,
        total=current.total,
        tool=step.tool,
        held=False,
        next=(after,),
    )
    return boundary, step_advance_suffix(after, plan)


def skip_step_result(
    pointer: Sequence[StepPointer] | None, plans: Mapping[str, StepPlan], reason: object
) -> tuple[str, StepBoundary | None]:
    """The ``skip_step`` bookkeeping (reference ``toolCalls.ts`` · ``applySkipStep``).

    Args:
        pointer: The pointer before the call.
        plans: The step plans.
        reason: The ``reason`` argument as the model sent it.

    Returns:
        The authoritative text that replaces the tool's result, and what the skip did (``None`` for
        the two teaching answers: no procedure in progress, or an empty reason; nothing recorded).
    """
    state = current_step(pointer, plans)
    if state is None:
        return _SKIP_NOTHING_ACTIVE, None
    text = reason.strip() if isinstance(reason, str) else ""
    if not text:
        return _SKIP_NEEDS_REASON, None
    current, plan, step = state
    held = plan.on_skip == "hold"
    # Held: recorded, and the step stays the offer (each repeated skip is recorded, each a fact).
    after = (
        current
        if held
        else StepPointer(current.skill_id, current.step + 1, current.total, (*current.skipped, current.step))
    )
    boundary = StepBoundary(
        outcome="step_skipped",
        skill_id=current.skill_id,
        step=current.step,
        total=current.total,
        tool=step.tool,
        held=held,
        next=(after,),
        reason=text,
    )
    if held:
        return (
            f"Skip of step {current.step} recorded: {text}. Step {current.step} of {current.total} stays "
            f"current (declared policy 'hold') — run `{step.tool}`, or finish and say why.",
            boundary,
        )
    if after.step > after.total:
        return (
            f"Step {current.step} skipped: {text}. That was the last step — the '{after.skill_id}' "
            f"procedure is complete ({len(after.skipped)} step(s) skipped).",
            boundary,
        )
    coming = plan.steps[after.step - 1]
    return (
        f"Step {current.step} skipped: {text}. Now on step {after.step} of {after.total}: "
        f"{coming.note} (tool: `{coming.tool}`).",
        boundary,
    )


_SKIP_NEEDS_REASON = (
    "skip_step was not applied: `reason` is required and must be non-empty — it goes on the record. "
    "Say why this step cannot or should not run, then call skip_step again."
)
_SKIP_NOTHING_ACTIVE = (
    "skip_step has nothing to skip: no step procedure is active (or the active one is already "
    "complete). Continue with your other tools, or finish."
)


# ----------------------------------------------------------------------------------------------
# What the model reads (reference skillSteps.ts, sentence for sentence)


def step_banner_prefix(pointer: StepPointer, step: Step) -> str:
    """``[Step 3 of 6 — <note>] ``: prefixed onto the current step's tool description in the offer."""
    return f"[Step {pointer.step} of {pointer.total} — {step.note}] "


def skip_step_description(pointer: StepPointer, plan: StepPlan) -> str:
    """The per-call ``skip_step`` description: the current step, the steps left, the declared policy."""
    step = plan.steps[pointer.step - 1]
    remaining = pointer.total - pointer.step + 1
    policy = (
        "the step stays current until it runs or the turn ends"
        if plan.on_skip == "hold"
        else "the procedure moves to the next step"
    )
    return (
        f"Skip step {pointer.step} of {pointer.total} ('{step.tool}' — {step.note}) with a recorded "
        f"reason. {remaining} step(s) remain in the '{pointer.skill_id}' procedure. On skip, "
        f"{policy} (declared policy: '{plan.on_skip}')."
    )


def skip_step_schema(pointer: StepPointer, plan: StepPlan) -> ToolSchema:
    """The ``skip_step`` schema offered while ``pointer``'s procedure is in progress."""
    return ToolSchema(
        name=SKIP_STEP,
        description=skip_step_description(pointer, plan),
        parameters={
            "type": "object",
            "properties": {
                "reason": {
                    "type": "string",
                    "description": "Why this step cannot or should not run. Goes on the record.",
                }
            },
            "required": ["reason"],
            "additionalProperties": False,
        },
        injection_id=pointer.skill_id,
    )


def read_skill_step_intro(plan: StepPlan) -> str:
    """Appended to an accepted ``read_skill`` result for a stepped skill: where the procedure starts."""
    first = plan.steps[0]
    return f" You are on step 1 of {len(plan.steps)}: {first.note}. Its tool: `{first.tool}`."


def step_advance_suffix(after: StepPointer, plan: StepPlan) -> str:
    """Appended to the result of a step's tool that advanced the pointer to ``after``."""
    done = after.step - 1
    if after.step > after.total:
        return f" Step {done} of {after.total} done. All {after.total} steps complete."
    coming = plan.steps[after.step - 1]
    return (
        f" Step {done} of {after.total} done. Now on step {after.step} of {after.total}: "
        f"{coming.note} (tool: `{coming.tool}`)."
    )


def held_out_step_tools(
    pointer: Sequence[StepPointer] | None, plans: Mapping[str, StepPlan], owned_by_others: Iterable[str]
) -> frozenset[str]:
    """The stepped skill's step tools the offer holds out this call: every step tool but the current
    one, minus any name another active source also carries (somebody else's escape hatch).

    Args:
        pointer: This pass's (re-keyed) pointer.
        plans: The step plans.
        owned_by_others: Tool names the agent itself or another active injection offers.

    Returns:
        The names to leave out of the request; empty when no procedure is in progress.
    """
    state = current_step(pointer, plans)
    if state is None:
        return frozenset()
    _, plan, step = state
    return plan.tool_names - {step.tool} - set(owned_by_others)


# ----------------------------------------------------------------------------------------------
# The build-time fold


def step_plans_of(injections: Iterable[Injection]) -> dict[str, StepPlan]:
    """Skill id → its :class:`StepPlan`, for every skill that declares steps.

    Args:
        injections: The catalog.

    Returns:
        One plan per stepped skill, with its ``on_skip`` policy.

    Raises:
        DefinitionError: An ``on_skip`` that is not ``advance`` or ``hold``, or one on a skill that
            declares no steps.
    """
    policies = skip_policies(injections)
    return {
        injection.id: StepPlan(injection.id, injection.steps, policies[injection.id])
        for injection in injections
        if injection.steps
    }


def skip_policies(injections: Iterable[Injection]) -> dict[str, OnSkip]:
    """Skill id → its ``on_skip`` policy, for every skill that declares steps.

    Args:
        injections: The catalog.

    Returns:
        The policy of each stepped skill (``advance`` unless it declared ``hold``).

    Raises:
        DefinitionError: An ``on_skip`` that is not ``advance`` or ``hold``, or one on a skill that
            declares no steps (it would never be read).
    """
    policies: dict[str, OnSkip] = {}
    for injection in injections:
        declared = injection.metadata.get("on_skip")
        if declared is not None and not injection.steps:
            raise DefinitionError(
                f"skill {injection.id!r}: on_skip applies only beside steps (it says what a skipped "
                "step does); add steps or drop on_skip"
            )
        if not injection.steps:
            continue
        if declared is None:
            policies[injection.id] = "advance"
        elif isinstance(declared, str) and declared in ON_SKIP_POLICIES:
            policies[injection.id] = "hold" if declared == "hold" else "advance"
        else:
            raise DefinitionError(
                f"skill {injection.id!r}: on_skip {declared!r} is not a policy; use 'advance' (record "
                "the skip and move on, the default) or 'hold' (record it and keep the step current)"
            )
    return policies


def step_pointer_records(pointer: Sequence[StepPointer]) -> list[StepPointerRecord]:
    """The pointer as trace records (``[]`` when no procedure holds the tenure)."""
    return [
        StepPointerRecord(skill_id=p.skill_id, step=p.step, total=p.total, skipped=list(p.skipped))
        for p in pointer
    ]
