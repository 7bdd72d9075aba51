"""Why an injection rode the explained call: its pass reason, lease, cursor and map standing.

The pass records why each injection is active (``pass.reasons``); this module follows each reason
back to the records that explain it: the tool call that activated it or granted its lease, the move
that put the cursor on it (walking back over ``stay`` passes), the engagement standing of its map.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from fpdebug.backtrack.provenance.context import CallContext
from fpdebug.backtrack.provenance.models import (
    PARK_CARD_ID,
    Admission,
    CallRef,
    CursorOrigin,
    EngagementStanding,
    LeaseOrigin,
)
from fpdebug.trace.schema import (
    ActiveReason,
    CursorMoveEvent,
    EngagementChange,
    MapEngagementRecord,
    ToolResultEvent,
)

_MAX_STAYS = 10_000
"""Passes a cursor walk goes back at most: a corrupt trace cannot loop it forever."""


@dataclass
class Admissions:
    """Each injection's :class:`Admission` at the explained call, worked out once and kept."""

    context: CallContext
    known: dict[str, Admission] = field(default_factory=dict)

    def admission(self, injection_id: str) -> Admission:
        """Why ``injection_id`` rode: the pass's reason and what it points back to."""
        if injection_id in self.known:
            return self.known[injection_id]
        context = self.context
        pass_line = context.pass_[0] if context.pass_ else None
        reasons: dict[str, ActiveReason] = (
            {r.id: r for r in context.pass_[1].reasons} if context.pass_ else {}
        )
        reason = reasons.get(injection_id)
        decl = context.decl(injection_id)
        cursor = self.cursor_origin(injection_id)
        engagement = self.engagement_for(injection_id)
        activation: CallRef | None = None
        lease: LeaseOrigin | None = None
        if reason is None:
            if context.pass_ is None:
                context.flag(
                    "no-read-tracking",
                    "the explained call has no pass record: why each injection rode is not recorded",
                )
            else:
                context.flag("untracked-sources", f"the pass does not say why {injection_id!r} rode")
        elif reason.via in ("on-tool-return", "llm-activated") and reason.tool_name:
            activation = context.index.call_ref(
                reason.tool_name, reason.tool_call_id, iteration=reason.at_iteration
            )
        elif reason.via == "lease":
            lease = self.lease_origin(injection_id, reason)
        admission = Admission(
            via=reason.via if reason is not None else "unknown",
            trigger=decl.trigger.kind if decl else None,
            trigger_description=decl.trigger.description if decl else None,
            activation=activation,
            lease=lease,
            tree_path=list(reason.path or []) if reason is not None and reason.via == "tree" else None,
            tree_label=reason.label if reason is not None and reason.via == "tree" else None,
            cursor=cursor,
            engagement=engagement,
            pass_line=pass_line,
        )
        self.known[injection_id] = admission
        return admission

    def lease_origin(self, injection_id: str, reason: ActiveReason) -> LeaseOrigin:
        """The lease a ``lease`` reason names, with the record that granted it."""
        index = self.context.index
        grant_line = None
        for lease in index.run.leases:
            if (
                lease.instruction_id == injection_id
                and lease.tool_call_id == reason.tool_call_id
                and lease.granted_iteration == reason.at_iteration
            ):
                grant_line = lease.grant_line
        ref = index.call_ref(reason.tool_name or "?", reason.tool_call_id, iteration=reason.at_iteration)
        return LeaseOrigin(
            instruction_id=injection_id,
            delivery_lease=reason.delivery_lease or "?",
            tenant=reason.tenant,
            granted_by=ref,
            grant_line=grant_line,
        )

    # -- cursor ----------------------------------------------------------------------------------

    def cursor_origin(self, skill_id: str) -> CursorOrigin | None:
        """The move that put the cursor on ``skill_id``, walking back over ``stay`` passes."""
        found = self.context.index.move_of(self.context.turn, self.context.iteration)
        if found is None or found[1].to_skill != skill_id:
            return None
        stays, (line, move) = self._first_stand(skill_id, found)
        origin = CursorOrigin(
            skill_id=skill_id,
            by=move.by,
            strength=move.strength,
            move_line=line,
            turn=move.turn,
            iteration=move.iteration,
            stays=stays,
            from_skill=move.from_skill,
            witness=move.witness.text if move.witness else None,
            keyword=move.witness.keyword if move.witness else None,
        )
        previous_batch = self.context.index.batch(move.turn, (move.iteration or 0) - 1)
        match move.by:
            case "route":
                return self._route_origin(origin, move, previous_batch)
            case "model-pick":
                return self._pick_origin(origin, skill_id, previous_batch)
            case "tool-proposal":
                return self._proposal_origin(origin, skill_id, previous_batch)
            case "entry":
                return self._entry_origin(origin, skill_id)
        return origin

    def _first_stand(
        self, skill_id: str, found: tuple[int, CursorMoveEvent]
    ) -> tuple[int, tuple[int, CursorMoveEvent]]:
        """The move that first put the cursor on ``skill_id``, and how many passes it stayed since."""
        stays = 0
        line, move = found
        while move.by in ("stay", "continuity") and move.from_skill == skill_id:
            previous = self._previous_move(move)
            if previous is None or previous[1].to_skill != skill_id:
                break
            stays += 1
            line, move = previous
            if stays > _MAX_STAYS:
                break
        return stays, (line, move)

    def _previous_move(self, move: CursorMoveEvent) -> tuple[int, CursorMoveEvent] | None:
        index = self.context.index
        number = (move.iteration or 0) - 1
        if number >= 1:
            return index.move_of(move.turn, number)
        # The first pass of a turn: under conversation continuity the cursor carried over from the
        # previous turn's last pass.
        turns = [t for t in index.run.turns if move.turn is not None and t.number < move.turn]
        for turn in reversed(turns):
            for iteration in reversed(turn.iterations):
                found = index.move_of(turn.number, iteration.number)
                if found is not None:
                    return found
        return None

    def _route_origin(
        self, origin: CursorOrigin, move: CursorMoveEvent, batch: list[tuple[int, ToolResultEvent]]
    ) -> CursorOrigin:
        index, run_start = self.context.index, self.context.run_start
        edge = f"{move.from_skill}→{move.to_skill}"
        if move.conflict is not None:
            winner = move.conflict.winner
            ref = index.call_ref(winner.tool_name, winner.tool_call_id)
            return origin.model_copy(update={"edge": edge, "fired_by": ref})
        edges = []
        if run_start is not None and run_start.skill_map is not None:
            edges = [
                e
                for e in run_start.skill_map.edges
                if e.from_skill == move.from_skill and e.to_skill == move.to_skill and e.deterministic
            ]
        for _, result in batch:
            for declared in edges:
                if _edge_matches(
                    declared.on_tool_return, declared.tool_is_pattern, declared.on_tool_status, result
                ):
                    ref = index.call_ref(result.tool_name, result.tool_call_id)
                    return origin.model_copy(update={"edge": edge, "fired_by": ref})
        return origin.model_copy(
            update={"edge": edge, "note": "no result of the previous batch matches a declared edge"}
        )

    def _pick_origin(
        self, origin: CursorOrigin, skill_id: str, batch: list[tuple[int, ToolResultEvent]]
    ) -> CursorOrigin:
        """A ``model-pick`` move: the ``read_skill`` call of the previous batch that hopped here."""
        pick = next(
            (
                r
                for _, r in batch
                if r.skill_gate is not None
                and r.skill_gate.skill_id == skill_id
                and r.skill_gate.outcome == "hop"
            ),
            None,
        )
        if pick is None:
            return origin.model_copy(update={"note": "the read_skill pick is not in the previous batch"})
        picked = self.context.index.call_ref(pick.tool_name, pick.tool_call_id)
        return origin.model_copy(update={"picked_by": picked})

    def _proposal_origin(
        self, origin: CursorOrigin, skill_id: str, batch: list[tuple[int, ToolResultEvent]]
    ) -> CursorOrigin:
        """A ``tool-proposal`` move: the tool result whose accepted proposal moved the cursor here."""
        proposer = next(
            (
                r
                for _, r in batch
                for e in r.effects
                if e.kind == "propose-transition"
                and e.outcome == "accepted"
                and e.target_skill_id == skill_id
            ),
            None,
        )
        if proposer is None:
            note = "the accepted proposal is not in the previous batch"
            return origin.model_copy(update={"note": note})
        return origin.model_copy(
            update={"fired_by": self.context.index.call_ref(proposer.tool_name, proposer.tool_call_id)}
        )

    def _entry_origin(self, origin: CursorOrigin, skill_id: str) -> CursorOrigin:
        """An ``entry`` move: the declared entry's kind, when the skill map declares it."""
        run_start = self.context.run_start
        if run_start is None or run_start.skill_map is None:
            return origin
        entry = next((e for e in run_start.skill_map.entries if e.skill_id == skill_id), None)
        if entry is None:
            return origin
        return origin.model_copy(update={"entry_kind": entry.kind})

    # -- engagement --------------------------------------------------------------------------------

    def engagement_for(self, injection_id: str) -> EngagementStanding | None:
        """The standing of the map ``injection_id`` belongs to (the parked map, for the park card)."""
        context = self.context
        found = context.index.engagement_of(context.turn, context.iteration)
        if found is None or context.run_start is None or context.run_start.maps is None:
            return None
        line, event = found
        if injection_id == PARK_CARD_ID:
            record = next((r for r in event.records if r.standing == "parked"), None)
        else:
            maps = [m.id for m in context.run_start.maps.maps if injection_id in m.member_ids]
            record = next((r for r in event.records if r.map_id in maps), None)
        if record is None:
            return None
        change = next((c for c in event.changes if c.map_id == record.map_id), None)
        return EngagementStanding(
            map_id=record.map_id,
            standing=record.standing,
            by=record.by,
            since=record.since,
            founded_by=record.founded_by,
            founded_at=record.founded_at,
            founded_on=record.founded_on,
            idle=record.idle,
            change=_change_name(change) if change is not None else None,
            reengaged_by=self._reengaged_by(record, change) if change is not None else None,
            line=line,
        )

    def _reengaged_by(self, record: MapEngagementRecord, change: EngagementChange) -> CallRef | None:
        """The ``read_skill`` call of the previous batch whose pick re-engaged the map, if it was."""
        context = self.context
        if not change.reengaged or context.run_start is None or context.run_start.maps is None:
            return None
        members = next((m.member_ids for m in context.run_start.maps.maps if m.id == record.map_id), [])
        batch = context.index.batch(context.turn, context.iteration - 1)
        pick = next(
            (
                r
                for _, r in batch
                if r.skill_gate is not None
                and r.skill_gate.skill_id in members
                and r.skill_gate.outcome != "rejected"
            ),
            None,
        )
        if pick is None:
            return None
        return context.index.call_ref(pick.tool_name, pick.tool_call_id)


def _change_name(change: EngagementChange) -> str:
    """The change a map went through this pass, the strongest first (docs/context-model.md §6.3)."""
    if change.kind == "parked":
        return "parked"
    if change.reengaged:
        return "reengaged"
    if change.upgraded:
        return "upgraded"
    if change.tenant_changed:
        return "tenant-changed"
    return "engaged"


def _edge_matches(
    on_tool_return: str | None, is_pattern: bool, statuses: Sequence[str] | None, result: ToolResultEvent
) -> bool:
    if on_tool_return is not None:
        if is_pattern:
            try:
                if re.search(on_tool_return, result.tool_name) is None:
                    return False
            except re.error:
                return False
        elif on_tool_return != result.tool_name:
            return False
    if statuses:
        # A result that declared no status succeeded (docs/context-model.md §1.6: a plain return is a success).
        return (result.status or "success") in statuses
    return on_tool_return is not None
