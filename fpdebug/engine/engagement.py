"""The mount kernel: evidence strength, renewal evidence, engagement and parking (docs/context-model.md §6).

POSITION (the cursor) belongs to the map; ENGAGEMENT (whether the map's prompt and tools ride the
next call) belongs to this kernel. Parking never moves the cursor. :func:`advance_engagement` is
a pure reducer over one pass's facts (:class:`EngagementPass`); it keeps three facts apart in each
:class:`MapEngagementRecord`: founding provenance (written once), position (observed), and
eligibility (``by``: rises on corroboration, re-derived on a tenant change, never lowered because
time passed).

The records and changes the reducer returns are the trace's own models
(:class:`~fpdebug.trace.schema.MapEngagementRecord`, :class:`~fpdebug.trace.schema.EngagementChange`):
the ``engagement`` event records them as they are, with no second copy to keep in step.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

from fpdebug.engine.types import EvidenceStrength, ToolResult, require_id
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import (
    EngagementChange,
    EngagementPassFacts,
    EvidenceItem,
    MapEngagementRecord,
    MapEvidence,
    MapsPlanDecl,
    MountedMapDecl,
)

if TYPE_CHECKING:
    from fpdebug.engine.skillmap import SkillMap

__all__ = [
    "PARK_CARD_HEADER",
    "STRENGTH_RANK",
    "EngagementAdvance",
    "EngagementChange",
    "EngagementPass",
    "EngagementPlan",
    "EvidenceKind",
    "MapEngagementRecord",
    "MountedMap",
    "RenewalEvidence",
    "advance_engagement",
    "is_tentative",
    "map_evidence",
    "park_card",
    "parked_member_ids",
    "renewal_evidence_of",
    "skill_map_plan",
    "strength_of_evidence",
    "strength_of_move",
    "stronger_of",
    "strongest_of",
]

STRENGTH_RANK: dict[str, int] = {"explicit": 4, "structural": 3, "semantic": 2, "lexical": 1, "assumed": 0}
"""The ladder: explicit > structural > semantic > lexical > assumed."""

_TENTATIVE = frozenset({"lexical", "semantic", "assumed"})
_MOVE_STRENGTH: dict[str, EvidenceStrength] = {
    "model-pick": "explicit",
    "route": "structural",
    "tool-proposal": "structural",
    "continuity": "structural",
    "intent": "semantic",
    "decider": "semantic",
    "entry": "lexical",
    "stay": "assumed",
    "none": "assumed",
}

PARK_CARD_HEADER = "Map status (the framework is telling you this; it is not part of the task):"
"""The park card's first line."""

EvidenceKind: TypeAlias = Literal["owned-tool-called", "cursor-moved", "explicit-pick", "member-activated"]
"""What produced a piece of renewal evidence."""


# ----------------------------------------------------------------------------------------------
# The ladder (docs/context-model.md §6.1)


def strength_of_move(by: str) -> EvidenceStrength:
    """Classify a cursor-move clause: ``stay`` / ``none`` are ``assumed``; unknown is ``structural``."""
    return _MOVE_STRENGTH.get(by, "structural")


def stronger_of(a: EvidenceStrength, b: EvidenceStrength) -> EvidenceStrength:
    """The stronger strength; a tie returns ``a``."""
    return a if STRENGTH_RANK[a] >= STRENGTH_RANK[b] else b


def is_tentative(strength: EvidenceStrength) -> bool:
    """True exactly for ``lexical``, ``semantic`` and ``assumed`` (the strengths that decay)."""
    return strength in _TENTATIVE


# ----------------------------------------------------------------------------------------------
# Data model (docs/context-model.md §6.3)


@dataclass(frozen=True, slots=True)
class MountedMap:
    """A map the kernel manages: the injections it owns and the tools they bring."""

    id: str
    """The map id (``skill-map`` for the agent's graph)."""
    member_ids: tuple[str, ...]
    """The injection ids whose contribution the map owns."""
    tool_names: tuple[str, ...]
    """The tool names the members contribute."""
    non_parkable: bool = False
    """Counts idle passes but never parks."""

    def __post_init__(self) -> None:
        require_id(self.id, "map id")
        object.__setattr__(self, "member_ids", tuple(self.member_ids))
        object.__setattr__(self, "tool_names", tuple(self.tool_names))

    def declaration(self) -> MountedMapDecl:
        """The trace's :class:`~fpdebug.trace.schema.MountedMapDecl`."""
        return MountedMapDecl(
            id=self.id,
            member_ids=list(self.member_ids),
            tool_names=list(self.tool_names),
            non_parkable=self.non_parkable,
        )


@dataclass(frozen=True, slots=True)
class EngagementPlan:
    """The mounted maps, in plan order, and the renewal grace."""

    maps: tuple[MountedMap, ...]
    """Maps in plan order."""
    renewal_grace: int = 3
    """Idle passes a tentative map survives before it parks (an integer >= 1)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "maps", tuple(self.maps))
        grace = self.renewal_grace
        if isinstance(grace, bool) or not isinstance(grace, int) or grace < 1:
            raise DefinitionError(f"renewalGrace must be an integer >= 1, got {grace!r}")
        ids = [m.id for m in self.maps]
        for map_id in ids:
            if ids.count(map_id) > 1:
                raise DefinitionError(f"duplicate map id {map_id!r}")

    def declaration(self) -> MapsPlanDecl:
        """The trace's :class:`~fpdebug.trace.schema.MapsPlanDecl`."""
        return MapsPlanDecl(maps=[m.declaration() for m in self.maps], renewal_grace=self.renewal_grace)


def skill_map_plan(
    graph: SkillMap | None, *, renewal_grace: int = 3, non_parkable: bool = False
) -> EngagementPlan:
    """The plan the agent mounts for its graph: exactly one map, ``skill-map``.

    Args:
        graph: The mounted skill map.
        renewal_grace: Idle passes before a tentative map parks.
        non_parkable: The map counts idle but never parks.

    Returns:
        The plan: members = every node id; tools = the de-duplicated tool names of the members.

    Raises:
        DefinitionError: no graph ("nothing is mounted that the kernel could manage"); a bad
            grace; a graph with no node ids; a graph that cannot explain its cursor moves.
    """
    if graph is None:
        raise DefinitionError(
            "maps(): nothing is mounted that the kernel could manage (mount a skill map first)"
        )
    if isinstance(renewal_grace, bool) or not isinstance(renewal_grace, int) or renewal_grace < 1:
        raise DefinitionError(f"renewalGrace must be an integer >= 1, got {renewal_grace!r}")
    node_ids = tuple(getattr(graph, "node_ids", ()) or ())
    if not node_ids:
        raise DefinitionError("maps(): the mounted skill map has no node ids")
    if not callable(getattr(graph, "explain_next_skill", None)):
        raise DefinitionError("maps(): the mounted graph cannot explain its cursor moves")
    members = set(node_ids)
    tools = dict.fromkeys(
        name for injection in graph.injections if injection.id in members for name in injection.tool_names
    )
    return EngagementPlan(
        (MountedMap("skill-map", node_ids, tuple(tools), non_parkable=non_parkable),), renewal_grace
    )


@dataclass(frozen=True, slots=True)
class EngagementPass:
    """The one slice of a pass the renewal feed reads (all plain data)."""

    iteration: int
    """The pass."""
    current_node: str | None = None
    """The cursor AFTER this pass's advance."""
    move_by: str | None = None
    """The clause that won the advance (``None`` when the map holds no cursor)."""
    witness: str | None = None
    """The winning clause's matched text, already bounded."""
    tool_results: tuple[ToolResult, ...] = ()
    """The PREVIOUS iteration's whole batch, in call order."""
    pending_skill_pick: str | None = None
    """The ``read_skill`` hop the gate accepted last iteration."""
    accepted_skill_picks: tuple[str, ...] = ()
    """Every pick the gate accepted on the previous pass (PER PASS, never turn-cumulative)."""
    served_last_pass: tuple[str, ...] = ()
    """The ids the previous pass served (its active set, park card included)."""

    def facts(self) -> EngagementPassFacts:
        """The trace's :class:`~fpdebug.trace.schema.EngagementPassFacts`."""
        return EngagementPassFacts(
            current_node=self.current_node,
            move_by=self.move_by,
            witness=self.witness,
            tool_names=[r.tool_name for r in self.tool_results],
            pending_skill_pick=self.pending_skill_pick,
            accepted_skill_picks=list(self.accepted_skill_picks),
            served_last_pass=list(self.served_last_pass),
        )


# ----------------------------------------------------------------------------------------------
# Renewal evidence (docs/context-model.md §6.2)


@dataclass(frozen=True, slots=True)
class RenewalEvidence:
    """One piece of renewal evidence, typed by what produced it."""

    kind: EvidenceKind
    """What produced it."""
    tool_name: str | None = None
    """``owned-tool-called``: the tool."""
    by: str | None = None
    """``cursor-moved``: the move's clause."""
    skill_id: str | None = None
    """``explicit-pick`` / ``member-activated``: the skill."""

    def record(self) -> EvidenceItem:
        """The trace's :class:`~fpdebug.trace.schema.EvidenceItem`, strength included."""
        return EvidenceItem(
            kind=self.kind,
            tool_name=self.tool_name,
            by=self.by,
            skill_id=self.skill_id,
            strength=strength_of_evidence(self),
        )


def renewal_evidence_of(map: MountedMap, pass_: EngagementPass) -> tuple[RenewalEvidence, ...]:
    """All renewal evidence one map earned on a pass, from that pass's facts only.

    Order: owned tools called (one per call), a real move into a member, the pending pick, the
    per-pass accepted picks. The turn-cumulative activations are deliberately never read.
    """
    members = set(map.member_ids)
    tools = set(map.tool_names)
    out = [
        RenewalEvidence("owned-tool-called", tool_name=r.tool_name)
        for r in pass_.tool_results
        if r.tool_name in tools
    ]
    if pass_.move_by is not None and pass_.move_by not in ("stay", "none") and pass_.current_node in members:
        out.append(RenewalEvidence("cursor-moved", by=pass_.move_by))
    if pass_.pending_skill_pick is not None and pass_.pending_skill_pick in members:
        out.append(RenewalEvidence("explicit-pick", skill_id=pass_.pending_skill_pick))
    out.extend(
        RenewalEvidence("member-activated", skill_id=sid)
        for sid in pass_.accepted_skill_picks
        if sid in members
    )
    return tuple(out)


def strength_of_evidence(evidence: RenewalEvidence) -> EvidenceStrength:
    """``explicit`` for picks, ``structural`` for an owned tool, the move's strength for a move."""
    if evidence.kind in ("explicit-pick", "member-activated"):
        return "explicit"
    if evidence.kind == "owned-tool-called":
        return "structural"
    return strength_of_move(evidence.by or "")


def strongest_of(evidence_list: Iterable[RenewalEvidence]) -> EvidenceStrength | None:
    """The strongest strength across the evidence, ``None`` when there is none."""
    best: EvidenceStrength | None = None
    for evidence in evidence_list:
        strength = strength_of_evidence(evidence)
        best = strength if best is None else stronger_of(best, strength)
    return best


def map_evidence(plan: EngagementPlan, pass_: EngagementPass) -> tuple[MapEvidence, ...]:
    """Each map's renewal evidence on a pass, in plan order, as trace records."""
    out: list[MapEvidence] = []
    for mounted in plan.maps:
        evidence = renewal_evidence_of(mounted, pass_)
        out.append(
            MapEvidence(
                map_id=mounted.id, items=[e.record() for e in evidence], strongest=strongest_of(evidence)
            )
        )
    return tuple(out)


# ----------------------------------------------------------------------------------------------
# The reducer (docs/context-model.md §6.4)


@dataclass(frozen=True, slots=True)
class EngagementAdvance:
    """What one pass of the kernel produced."""

    next: tuple[MapEngagementRecord, ...]
    """The records after the pass, in plan order (a map that founded nothing has none)."""
    parked_injection_ids: tuple[str, ...]
    """Members of every map that is parked after the pass, in plan order."""
    parked_tool_names: tuple[str, ...]
    """Tools of every map that is parked after the pass, in plan order."""
    changes: tuple[EngagementChange, ...]
    """Engaged / parked changes, in plan order."""


def _position(
    mounted: MountedMap, prior: MapEngagementRecord, pass_: EngagementPass
) -> tuple[str | None, EvidenceStrength | None, int | None]:
    node = pass_.current_node
    if node is None or node not in mounted.member_ids:
        return prior.at, prior.at_by, prior.at_since  # not seeing the position is not a move
    if node == prior.at:
        return prior.at, prior.at_by, prior.at_since
    return node, strength_of_move(pass_.move_by) if pass_.move_by else "assumed", pass_.iteration


def _advance_one(
    mounted: MountedMap, prior: MapEngagementRecord | None, pass_: EngagementPass, grace: int
) -> tuple[MapEngagementRecord | None, EngagementChange | None]:
    """One map's record after ``pass_``: the laws of docs/context-model.md §6, one function each."""
    strongest = strongest_of(renewal_evidence_of(mounted, pass_))
    if prior is None:  # LAW 1: founding
        return _found(mounted, pass_, strongest)
    if prior.standing == "parked":  # LAW 5: only explicit or structural evidence recovers
        return _recover(mounted, prior, pass_, strongest)
    at, at_by, at_since = _position(mounted, prior, pass_)
    if at is not None and at != prior.at:  # a new tenant re-derives eligibility
        return _change_tenant(mounted, prior, pass_, strongest, (at, at_by, at_since))
    # From here on the position is the prior's: a move to another member was a tenant change above,
    # and not seeing the cursor leaves it where it was.
    if strongest is not None:  # LAW 2: renew, maybe upgrade
        return _renew(mounted, prior, pass_, strongest)
    return _idle(mounted, prior, pass_, grace)  # LAWS 3 and 4


def _found(
    mounted: MountedMap, pass_: EngagementPass, strongest: EvidenceStrength | None
) -> tuple[MapEngagementRecord | None, EngagementChange | None]:
    """LAW 1: a map with no record is founded by evidence, or by the cursor standing in it."""
    it = pass_.iteration
    node = pass_.current_node
    in_map = node is not None and node in mounted.member_ids
    if not in_map and strongest is None:
        return None, None
    move_strength: EvidenceStrength = strength_of_move(pass_.move_by) if pass_.move_by else "assumed"
    by = strongest or move_strength
    record = MapEngagementRecord(
        map_id=mounted.id,
        standing="engaged",
        by=by,
        since=it,
        founded_by=by,
        founded_at=it,
        founded_on=node if in_map else None,
        at=node if in_map else None,
        at_by=move_strength if in_map else None,
        at_since=it if in_map else None,
        idle=0,
        witness=pass_.witness,
    )
    return record, EngagementChange(
        kind="engaged", map_id=mounted.id, iteration=it, by=by, witness=pass_.witness
    )


def _recover(
    mounted: MountedMap, prior: MapEngagementRecord, pass_: EngagementPass, strongest: EvidenceStrength | None
) -> tuple[MapEngagementRecord | None, EngagementChange | None]:
    """LAW 5: a parked map re-engages on explicit or structural evidence only."""
    if strongest not in ("explicit", "structural"):
        return prior, None
    it = pass_.iteration
    at, at_by, at_since = _position(mounted, prior, pass_)
    record = prior.model_copy(
        update={
            "standing": "engaged",
            "by": strongest,
            "since": it,
            "idle": 0,
            "witness": pass_.witness,
            "at": at,
            "at_by": at_by,
            "at_since": at_since,
        }
    )
    change = EngagementChange(
        kind="engaged", map_id=mounted.id, iteration=it, by=strongest, reengaged=True, witness=pass_.witness
    )
    return record, change


def _change_tenant(
    mounted: MountedMap,
    prior: MapEngagementRecord,
    pass_: EngagementPass,
    strongest: EvidenceStrength | None,
    position: tuple[str, EvidenceStrength | None, int | None],
) -> tuple[MapEngagementRecord | None, EngagementChange | None]:
    """A move to another member: the new tenant re-derives the map's standing."""
    at, at_by, at_since = position
    by = stronger_of(at_by or "assumed", strongest or "assumed")
    change = EngagementChange(
        kind="engaged",
        map_id=mounted.id,
        iteration=pass_.iteration,
        by=by,
        tenant_changed=True,
        at=at,
        founded_by=prior.founded_by,
        witness=pass_.witness,
    )
    record = prior.model_copy(update={"at": at, "at_by": at_by, "at_since": at_since, "by": by, "idle": 0})
    return record, change


def _renew(
    mounted: MountedMap, prior: MapEngagementRecord, pass_: EngagementPass, strongest: EvidenceStrength
) -> tuple[MapEngagementRecord | None, EngagementChange | None]:
    """LAW 2: evidence renews the map (idle back to 0), and upgrades it when stronger."""
    by = stronger_of(prior.by, strongest)
    if by == prior.by:
        if prior.idle == 0:
            return prior, None
        return prior.model_copy(update={"idle": 0}), None
    change = EngagementChange(
        kind="engaged",
        map_id=mounted.id,
        iteration=pass_.iteration,
        by=by,
        upgraded=True,
        founded_by=prior.founded_by,
        witness=prior.witness,
    )
    return prior.model_copy(update={"by": by, "idle": 0}), change


def _idle(
    mounted: MountedMap, prior: MapEngagementRecord, pass_: EngagementPass, grace: int
) -> tuple[MapEngagementRecord | None, EngagementChange | None]:
    """LAW 3, the idle test, and LAW 4, a tentative map idle for ``grace`` passes parks.

    "None of its tools was called" is implicit: that would be evidence.
    """
    served = any(sid in mounted.member_ids for sid in pass_.served_last_pass)
    if not served or not pass_.tool_results:
        return prior, None  # not served, or a pass on which no tool ran
    idle = prior.idle + 1
    if is_tentative(prior.by) and idle >= grace and not mounted.non_parkable:  # LAW 4
        change = EngagementChange(
            kind="parked",
            map_id=mounted.id,
            iteration=pass_.iteration,
            by=prior.by,
            idle_calls=idle,
            witness=prior.witness,
        )
        return prior.model_copy(update={"standing": "parked", "since": pass_.iteration, "idle": idle}), change
    return prior.model_copy(update={"idle": idle}), None


def advance_engagement(
    plan: EngagementPlan, prior: Sequence[MapEngagementRecord] | None, pass_: EngagementPass
) -> EngagementAdvance:
    """Advance every map of the plan by one pass (pure).

    Args:
        plan: The mounted maps and the grace.
        prior: The records before the pass (``None`` or ``()`` on the first pass of a run); a
            record whose map is not in the plan is dropped.
        pass_: The pass's facts.

    Returns:
        The :class:`EngagementAdvance`.
    """
    by_id = {record.map_id: record for record in prior or ()}
    records: list[MapEngagementRecord] = []
    changes: list[EngagementChange] = []
    parked_ids: list[str] = []
    parked_tools: list[str] = []
    for mounted in plan.maps:
        record, change = _advance_one(mounted, by_id.get(mounted.id), pass_, plan.renewal_grace)
        if record is None:
            continue
        records.append(record)
        if change is not None:
            changes.append(change)
        if record.standing == "parked":
            parked_ids.extend(mounted.member_ids)
            parked_tools.extend(mounted.tool_names)
    return EngagementAdvance(tuple(records), tuple(parked_ids), tuple(parked_tools), tuple(changes))


# ----------------------------------------------------------------------------------------------
# The park card (docs/context-model.md §6.5)


def park_card(plan: EngagementPlan, engagement: Sequence[MapEngagementRecord] | None) -> str | None:
    """The model-visible card: ``None`` unless a map is parked; else a header and two lines per map."""
    by_id = {record.map_id: record for record in engagement or ()}
    lines: list[str] = []
    for mounted in plan.maps:
        record = by_id.get(mounted.id)
        if record is None or record.standing != "parked":
            continue
        reason = (
            "nothing on this turn explains why it is loaded"
            if record.by == "assumed"
            else "no recent evidence that it is the right map for this turn"
        )
        lines.append(
            f"  - {mounted.id} — cursor: {record.at or '(unknown)'} (unchanged) · engagement: PARKED · "
            f"reason: {reason} · re-engage: available"
        )
        lines.append(
            f"    To re-engage it, call read_skill with any of: {', '.join(mounted.member_ids)}. "
            "That changes ENGAGEMENT (its prompt and tools ride the next call again), not POSITION "
            "(the cursor stays where it is)."
        )
    if not lines:
        return None
    return "\n".join([PARK_CARD_HEADER, *lines])


def parked_member_ids(
    plan: EngagementPlan, engagement: Sequence[MapEngagementRecord] | None
) -> frozenset[str]:
    """The member ids of every parked map (the read_skill gate's re-engagement set)."""
    parked = {record.map_id for record in engagement or () if record.standing == "parked"}
    return frozenset(sid for mounted in plan.maps if mounted.id in parked for sid in mounted.member_ids)
