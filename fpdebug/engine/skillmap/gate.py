"""The read_skill gate (docs/context-model.md §5.5): which picks it admits, and the carriers a pick updates."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal

from fpdebug.trace.schema import SkillGate


@dataclass(frozen=True, slots=True)
class SkillPick:
    """The gate's verdict on one ``read_skill(id)`` call."""

    skill_id: str
    """The requested id."""
    outcome: Literal["hop", "open", "re-engagement", "rejected"]
    """A hop, an open skill, a parked map member's re-engagement, or rejected."""
    is_hop: bool
    """The id is a hop from the cursor: acceptance writes ``pending_skill_pick`` (moves the cursor)."""
    allowed: tuple[str, ...]
    """What the gate admits from the cursor (hops then open skills); named in a refusal."""
    current_skill_id: str | None = None
    """The cursor when the model asked."""
    posture: str | None = None
    """The gate's posture, when one was set."""

    @property
    def accepted(self) -> bool:
        """Anything but ``rejected``."""
        return self.outcome != "rejected"

    def record(self) -> SkillGate:
        """The trace's :class:`~fpdebug.trace.schema.SkillGate`."""
        return SkillGate(skill_id=self.skill_id, outcome=self.outcome)

    def refusal(self) -> str:
        """The text the model reads instead of the skill when the pick is rejected."""
        where = f"from '{self.current_skill_id}'" if self.current_skill_id is not None else "at the start"
        allowed = ", ".join(self.allowed) if self.allowed else "(none)"
        return f"read_skill refused: '{self.skill_id}' is not reachable {where}. Allowed: {allowed}."


def gate_skill_pick(
    requested_id: str,
    *,
    hops: Collection[str],
    open_skill_ids: Collection[str] = (),
    parked_member_ids: Collection[str] = (),
    current_skill_id: str | None = None,
    posture: Literal["rails", "guard"] | None = None,
    menu: Collection[str] | None = None,
) -> SkillPick:
    """Judge one ``read_skill(id)`` (docs/context-model.md §5.5).

    Args:
        requested_id: The id the model asked for.
        hops: ``allowed_skill_ids(cursor)`` of the graph.
        open_skill_ids: Skills reachable from anywhere that never move the cursor.
        parked_member_ids: Members of parked maps (``parked_member_ids(plan, engagement)``).
        current_skill_id: The cursor this iteration's Evaluate advanced.
        posture: ``rails`` refuses every hop; ``guard`` refuses a hop that is not on ``menu``.
        menu: The outstanding menu for the ``guard`` posture.

    Returns:
        The :class:`SkillPick`. A parked member is admitted even when it is the cursor or not a
        hop, skipping the posture check; it writes ``pending_skill_pick`` only when it is a hop.
    """
    allowed = tuple(dict.fromkeys([*hops, *open_skill_ids]))
    is_hop = requested_id in hops

    def verdict(outcome: Literal["hop", "open", "re-engagement", "rejected"]) -> SkillPick:
        return SkillPick(
            requested_id, outcome, is_hop and outcome != "rejected", allowed, current_skill_id, posture
        )

    if requested_id in parked_member_ids:
        return verdict("re-engagement")
    if is_hop:
        if posture == "rails" or (posture == "guard" and (menu is None or requested_id not in menu)):
            return verdict("rejected")
        return verdict("hop")
    if requested_id in open_skill_ids:
        return verdict("open")
    return verdict("rejected")


@dataclass(frozen=True, slots=True)
class PickCarriers:
    """The three carriers an accepted pick writes, threaded through one tool batch."""

    activated_injection_ids: tuple[str, ...] = ()
    """Turn-cumulative activations (no duplicates)."""
    pending_skill_pick: str | None = None
    """The last accepted hop of the batch (graph agents)."""
    accepted_skill_picks: tuple[str, ...] | None = None
    """Every accepted pick of the batch, no duplicates (``None`` unless maps are mounted)."""

    @classmethod
    def start_of_batch(
        cls, activated: Sequence[str], *, pending_skill_pick: str | None = None, graph: bool, maps: bool
    ) -> PickCarriers:
        """The carriers at the top of an iteration that dispatches tools.

        Args:
            activated: The turn's activations so far.
            pending_skill_pick: The previous value (kept only for agents without a graph).
            graph: A skill map is mounted (``pending_skill_pick`` resets to ``None``).
            maps: The kernel is mounted (``accepted_skill_picks`` resets to ``()``).
        """
        return cls(tuple(activated), None if graph else pending_skill_pick, () if maps else None)


def apply_skill_pick(carriers: PickCarriers, pick: SkillPick) -> PickCarriers:
    """Write an accepted pick into the carriers (a rejected one changes nothing).

    Args:
        carriers: The carriers so far in this batch.
        pick: The gate's verdict.

    Returns:
        New carriers: the id appended to the activations; ``pending_skill_pick`` set for a hop;
        the id appended to ``accepted_skill_picks`` when maps are mounted.
    """
    if not pick.accepted:
        return carriers
    activated = carriers.activated_injection_ids
    if pick.skill_id not in activated:
        activated = (*activated, pick.skill_id)
    accepted = carriers.accepted_skill_picks
    if accepted is not None and pick.skill_id not in accepted:
        accepted = (*accepted, pick.skill_id)
    return PickCarriers(activated, pick.skill_id if pick.is_hop else carriers.pending_skill_pick, accepted)
