"""The step pointer's tool-calls half (DOMAIN §5.6): each result boundary advances or skips it.

The Evaluate pass re-keys the pointer to the pass's tenant
(:func:`~fpdebug.engine.injections.rekey_step_pointer`); the tool-calls stage then moves it once per
result, in call order. A result that came back ``success`` (or declared no status) completes the
current step: the pointer **advances**. Any other status of DOMAIN §1.6 (the tool failed, was
denied, got invalid arguments, returned partial, pending or absent data) means the step was not
done: the pointer **skips** it, recording its number in ``skipped`` and moving past it, unless the
skill declared ``on_skip="hold"``, in which case the skip is recorded on the trace only and the step
stays current for a retry. ``read_skill`` results are not boundaries: a pick changes who holds the
tenure, which is the next pass's re-key, never a step of the procedure in hand. A finished pointer
(``step == total + 1``) and an empty one stay as they are. Nothing here moves the cursor.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from fpdebug.engine.injections import Injection, StepPointer
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import StepChange, StepPointerRecord, ToolResultStatus

__all__ = [
    "ON_SKIP_POLICIES",
    "OnSkip",
    "StepBoundary",
    "StepOutcome",
    "advance_step_pointer",
    "skip_policies",
    "skip_step_pointer",
    "step_boundary",
    "step_pointer_records",
]

OnSkip: TypeAlias = Literal["advance", "hold"]
"""What a skipped step does: move past it (``advance``, the default) or stay current (``hold``)."""

ON_SKIP_POLICIES: tuple[OnSkip, ...] = ("advance", "hold")
"""The two ``on_skip`` policies a stepped skill may declare."""

StepOutcome: TypeAlias = Literal["step_advanced", "step_skipped"]
"""What one result boundary did to the pointer (the names of DOMAIN §8.2's step events)."""


@dataclass(frozen=True, slots=True)
class StepBoundary:
    """What one tool result did to the step pointer."""

    outcome: StepOutcome
    """``step_advanced`` (the step was done) or ``step_skipped`` (it was not)."""
    skill_id: str
    """The skill whose procedure it is."""
    step: int
    """The 1-based step the result concerned."""
    total: int
    """How many steps the skill declares."""
    held: bool
    """A skip under ``on_skip="hold"``: the pointer did not move."""
    next: tuple[StepPointer, ...]
    """The pointer after the boundary (one record)."""

    def record(self) -> StepChange:
        """The ``tool_result.step`` record."""
        return StepChange(
            outcome=self.outcome,
            skill_id=self.skill_id,
            step=self.step,
            total=self.total,
            held=self.held,
            step_pointer=step_pointer_records(self.next)[0],
        )


def _in_progress(pointer: Sequence[StepPointer] | None) -> StepPointer | None:
    if not pointer:
        return None
    current = pointer[0]
    return current if current.step <= current.total else None


def advance_step_pointer(pointer: Sequence[StepPointer] | None) -> tuple[StepPointer, ...]:
    """The pointer after its current step was done: ``step + 1``.

    Args:
        pointer: The pointer before the result (``()`` or ``None``: no procedure).

    Returns:
        The advanced pointer; an empty or finished pointer unchanged (``()`` for ``None``).
    """
    current = _in_progress(pointer)
    if current is None:
        return tuple(pointer or ())
    return (StepPointer(current.skill_id, current.step + 1, current.total, current.skipped),)


def skip_step_pointer(
    pointer: Sequence[StepPointer] | None, *, on_skip: OnSkip = "advance"
) -> tuple[StepPointer, ...]:
    """The pointer after its current step was not done.

    Args:
        pointer: The pointer before the result (``()`` or ``None``: no procedure).
        on_skip: ``advance``: record the step in ``skipped`` and move past it; ``hold``: unchanged.

    Returns:
        The pointer after the skip; an empty or finished pointer unchanged (``()`` for ``None``).
    """
    current = _in_progress(pointer)
    if current is None or on_skip == "hold":
        return tuple(pointer or ())
    return (
        StepPointer(current.skill_id, current.step + 1, current.total, (*current.skipped, current.step)),
    )


def step_boundary(
    pointer: Sequence[StepPointer] | None, status: ToolResultStatus | None, *, on_skip: OnSkip = "advance"
) -> StepBoundary | None:
    """Advance or skip the pointer at one result boundary.

    Args:
        pointer: The pointer before the result.
        status: The result's status (``None``: the tool declared none, a plain return).
        on_skip: The tenant skill's declared policy.

    Returns:
        What the boundary did, or ``None`` when no procedure is in progress (nothing to move).
    """
    current = _in_progress(pointer)
    if current is None:
        return None
    done = status is None or status == "success"
    next_pointer = advance_step_pointer(pointer) if done else skip_step_pointer(pointer, on_skip=on_skip)
    return StepBoundary(
        outcome="step_advanced" if done else "step_skipped",
        skill_id=current.skill_id,
        step=current.step,
        total=current.total,
        held=not done and on_skip == "hold",
        next=next_pointer,
    )


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
                f"skill {injection.id!r}: on_skip {declared!r} is not a policy; use 'advance' (move "
                "past a skipped step, the default) or 'hold' (keep it current)"
            )
    return policies


def step_pointer_records(pointer: Sequence[StepPointer]) -> list[StepPointerRecord]:
    """The pointer as trace records (``[]`` when no procedure holds the tenure)."""
    return [
        StepPointerRecord(skill_id=p.skill_id, step=p.step, total=p.total, skipped=list(p.skipped))
        for p in pointer
    ]

