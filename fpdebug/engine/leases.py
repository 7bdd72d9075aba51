"""Instruction leases and the pending tool transition: the carriers and the three pure lease laws.

Validity is COMPUTED, never mutated (docs/context-model.md §4.3, invariants 2 and 3):

- a ``next-call`` lease serves exactly the pass of iteration ``grant + 1``, and the tenure sweep of
  that same pass removes it (the code's semantics: a lease granted in the previous iteration or
  earlier is gone after the sweep);
- an ``until-skill-exit`` lease serves every pass whose tenant equals the lease's ``skill_id``
  (``None == None`` counts), and the sweep removes it the pass its tenure ends, so a cyclic graph
  that re-enters the granting skill later finds nothing to revive.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from fpdebug.engine.types import DELIVERY_LEASES, DeliveryLease, require_id
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import LeaseRecord, PrunedLease

__all__ = [
    "InstructionLease",
    "LeasePrune",
    "PendingToolTransition",
    "PruneReason",
    "PrunedInstructionLease",
    "active_lease_ids",
    "proposal_for",
    "prune_leases",
    "pruned_leases",
    "tenant_of",
]

PruneReason: TypeAlias = Literal["spent", "tenure-ended"]
"""Why a lease left the record: a ``next-call`` lease was ``spent``, a tenure ended."""


@dataclass(frozen=True, slots=True)
class InstructionLease:
    """One granted ``require-instruction`` lease (docs/context-model.md §4.2)."""

    instruction_id: str
    """The injection the lease serves."""
    delivery_lease: DeliveryLease
    """``next-call`` or ``until-skill-exit``."""
    tool_name: str
    """The granting tool (provenance)."""
    iteration: int
    """The iteration whose batch granted it."""
    skill_id: str | None = None
    """The tenant at grant (advanced cursor, else the activation tail); ``None`` when there was none."""
    tool_call_id: str | None = None
    """The granting call."""

    def __post_init__(self) -> None:
        require_id(self.instruction_id, "lease instruction id")
        if not isinstance(self.delivery_lease, str) or self.delivery_lease not in DELIVERY_LEASES:
            raise DefinitionError(
                f"delivery lease {self.delivery_lease!r} is not one of 'next-call', 'until-skill-exit'"
            )

    def record(self) -> LeaseRecord:
        """The trace's :class:`~fpdebug.trace.schema.LeaseRecord` of this lease."""
        return LeaseRecord(
            instruction_id=self.instruction_id,
            delivery_lease=self.delivery_lease,
            skill_id=self.skill_id,
            tool_name=self.tool_name,
            tool_call_id=self.tool_call_id,
            iteration=self.iteration,
        )


@dataclass(frozen=True, slots=True)
class PrunedInstructionLease:
    """A lease a prune removed, and why."""

    lease: InstructionLease
    """The lease as it was in the record."""
    reason: PruneReason
    """``spent`` (a ``next-call`` lease) or ``tenure-ended`` (an ``until-skill-exit`` lease)."""

    def record(self) -> PrunedLease:
        """The trace's :class:`~fpdebug.trace.schema.PrunedLease`."""
        return PrunedLease(**self.lease.record().model_dump(), reason=self.reason)


@dataclass(frozen=True, slots=True)
class LeasePrune:
    """One prune that removed something: where, against which tenant, what left, what stayed."""

    site: Literal["evaluate", "tool-calls"]
    """The tenure sweep of a pass, or the prune that accompanies a grant."""
    tenant: str | None
    """The tenant the prune compared against."""
    pruned: tuple[PrunedInstructionLease, ...]
    """The removed leases, with their reasons."""
    survivors: tuple[InstructionLease, ...]
    """The record afterwards (at the tool-calls site, the new grant included)."""

    def fields(self) -> dict[str, object]:
        """The fields of a ``lease_prune`` event (:class:`~fpdebug.trace.schema.LeasePruneEvent`)."""
        return {
            "site": self.site,
            "tenant": self.tenant,
            "pruned": [p.record() for p in self.pruned],
            "survivors": [lease.record() for lease in self.survivors],
        }


@dataclass(frozen=True, slots=True)
class PendingToolTransition:
    """The transition proposal the tool-calls stage accepted, stamped with its iteration.

    One-shot by data: the Evaluate pass of ``iteration + 1`` honours it; nothing ever clears it.
    """

    target_skill_id: str
    """The proposed skill."""
    tool_name: str
    """The proposing tool (provenance)."""
    reason: str
    """The effect's declared reason."""
    iteration: int
    """The iteration whose batch granted it (valid for ``iteration + 1``)."""
    tool_call_id: str | None = None
    """The proposing call."""


def tenant_of(cursor: str | None, activated: Sequence[str] | None) -> str | None:
    """Who holds the tenure: the cursor, else the last activated id, else nobody.

    Args:
        cursor: The advanced skill-map cursor (``None`` without a graph or cursor).
        activated: The turn-cumulative ``activated_injection_ids``.

    Returns:
        The tenant id, or ``None``.
    """
    if cursor is not None:
        return cursor
    return activated[-1] if activated else None


def _live(lease: InstructionLease, iteration: int, tenant: str | None) -> bool:
    if lease.delivery_lease == "next-call":
        return lease.iteration + 1 == iteration
    return lease.skill_id == tenant  # None == None is a match (docs/context-model.md §4.3)


def active_lease_ids(
    leases: Iterable[InstructionLease] | None, iteration: int, tenant: str | None
) -> tuple[str, ...]:
    """The instruction ids leases serve on ONE pass, in lease order, de-duplicated.

    Args:
        leases: The lease record before the pass (``None`` is treated as empty).
        iteration: The pass being composed.
        tenant: Who holds the tenure on it (the ADVANCED cursor, else the activation tail).

    Returns:
        The served ids.
    """
    out: list[str] = []
    for lease in leases or ():
        if _live(lease, iteration, tenant) and lease.instruction_id not in out:
            out.append(lease.instruction_id)
    return tuple(out)


def _survives(lease: InstructionLease, iteration: int, tenant: str | None) -> bool:
    if lease.delivery_lease == "next-call":
        return lease.iteration + 1 > iteration
    return lease.skill_id == tenant


def prune_leases(
    leases: Iterable[InstructionLease] | None, iteration: int, current_tenant: str | None
) -> tuple[InstructionLease, ...]:
    """The leases that can still serve a FUTURE pass (the tenure sweep / grant-time prune).

    Args:
        leases: The lease record (``None`` is treated as empty).
        iteration: The current pass (Evaluate) or the granting iteration (tool-calls site).
        current_tenant: The tenant on that pass.

    Returns:
        The survivors, in their original order.
    """
    return tuple(lease for lease in leases or () if _survives(lease, iteration, current_tenant))


def pruned_leases(
    leases: Iterable[InstructionLease] | None, iteration: int, current_tenant: str | None
) -> tuple[PrunedInstructionLease, ...]:
    """What :func:`prune_leases` removes, each with its reason (``before − survivors``).

    Args:
        leases: The lease record before the prune.
        iteration: As for :func:`prune_leases`.
        current_tenant: As for :func:`prune_leases`.

    Returns:
        The removed leases in record order: ``spent`` for ``next-call``, ``tenure-ended`` for
        ``until-skill-exit``.
    """
    return tuple(
        PrunedInstructionLease(lease, "spent" if lease.delivery_lease == "next-call" else "tenure-ended")
        for lease in leases or ()
        if not _survives(lease, iteration, current_tenant)
    )


def proposal_for(pending: PendingToolTransition | None, iteration: int) -> PendingToolTransition | None:
    """The proposal a pass honours: the pending one when it was granted on the previous iteration.

    Args:
        pending: The ``pending_tool_transition`` carrier (never cleared by anyone).
        iteration: The pass being composed.

    Returns:
        ``pending`` when ``pending.iteration + 1 == iteration``, else ``None``.
    """
    if pending is not None and pending.iteration + 1 == iteration:
        return pending
    return None
