"""The step pointer across passes (docs/context-model.md §5.6): which skills declare steps, and the re-key."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from fpdebug.engine.injections.context import StepPointer
from fpdebug.engine.injections.injection import Injection


def step_plans(injections: Iterable[Injection]) -> dict[str, int]:
    """Skill id → number of steps, for every skill that declares steps."""
    return {inj.id: len(inj.steps) for inj in injections if inj.steps}


def rekey_step_pointer(
    prior: Sequence[StepPointer] | None, tenant: str | None, plans: Mapping[str, int]
) -> tuple[StepPointer, ...]:
    """Re-key the step pointer for a pass's tenant (it can never move the cursor).

    Args:
        prior: The pointer before the pass.
        tenant: Who holds the tenure on this pass.
        plans: :func:`step_plans` of the catalog.

    Returns:
        ``()`` without a tenant; the prior pointer for the same tenant; a fresh pointer at step 1
        for a new tenant with a plan; ``()`` for a new tenant without one.
    """
    if tenant is None:
        return ()
    if prior and prior[0].skill_id == tenant:
        return tuple(prior)
    if tenant in plans:
        return (StepPointer(skill_id=tenant, step=1, total=plans[tenant]),)
    return ()
