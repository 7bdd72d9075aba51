"""fpdebug's own facts as span-event attributes: one ``fpdebug.<kind>`` event per fact record.

A ``pass``, ``cursor_move``, ``lease_grant``, ``lease_prune``, ``engagement``, ``skill_rejected``,
``route_conflict``, ``reroute_superseded`` or ``finding`` record becomes the attributes of one span
event on its turn's span (see :mod:`fpdebug.export.spans`), under ``fpdebug.<fact>.*``. Text a user
or a model wrote (a witness, a park card, an answer's unsupported values) is added only with
``include_content``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from fpdebug.trace.schema import (
    AnswerAssessmentRow,
    ArgumentRow,
    CursorMoveEvent,
    EngagementChange,
    EngagementEvent,
    FindingEvent,
    LeaseGrantEvent,
    LeasePruneEvent,
    MapEngagementRecord,
    PassEvent,
    RerouteSupersededEvent,
    ResultRow,
    RouteConflictEvent,
    SkillRejectedEvent,
    TraceEvent,
)

if TYPE_CHECKING:
    from fpdebug.export.spans import AttributeValue

__all__ = ["fact_attributes", "put_position"]

Attributes = dict[str, "AttributeValue"]


def put_position(attrs: Attributes, event: TraceEvent) -> None:
    """``fpdebug.turn`` and ``fpdebug.iteration``, for a record that has them (OTel has no null)."""
    if event.turn is not None:
        attrs["fpdebug.turn"] = event.turn
    if event.iteration is not None:
        attrs["fpdebug.iteration"] = event.iteration


def fact_attributes(event: TraceEvent, *, include_content: bool) -> Attributes:
    """The attributes of the span event a fact record becomes (only ``fpdebug.seq`` and the position
    for a record that is not a fact)."""
    attrs: Attributes = {"fpdebug.seq": event.seq}
    put_position(attrs, event)
    match event:
        case PassEvent():
            _pass(attrs, event)
        case CursorMoveEvent():
            _cursor(attrs, event, include_content=include_content)
        case LeaseGrantEvent():
            _lease_grant(attrs, event)
        case LeasePruneEvent():
            _lease_prune(attrs, event)
        case EngagementEvent():
            _engagement(attrs, event, include_content=include_content)
        case SkillRejectedEvent():
            _skill_rejected(attrs, event)
        case RouteConflictEvent():
            _route_conflict(attrs, event)
        case RerouteSupersededEvent():
            _reroute_superseded(attrs, event)
        case FindingEvent():
            _finding(attrs, event, include_content=include_content)
        case _:
            pass
    return attrs


def _put_present(attrs: Attributes, values: dict[str, object]) -> None:
    """Each value that is not None, under its key (OTel has no null)."""
    for key, value in values.items():
        if value is not None:
            attrs[key] = value  # type: ignore[assignment]  # ids and names: str or int


def _lease_grant(attrs: Attributes, event: LeaseGrantEvent) -> None:
    lease = event.lease
    attrs["fpdebug.lease.instruction_id"] = lease.instruction_id
    attrs["fpdebug.lease.delivery_lease"] = lease.delivery_lease
    _put_present(attrs, {"fpdebug.lease.tenant": lease.skill_id})
    attrs["fpdebug.lease.tool_name"] = lease.tool_name
    _put_present(attrs, {"fpdebug.lease.tool_call_id": lease.tool_call_id})
    attrs["fpdebug.lease.granted_iteration"] = lease.iteration


def _lease_prune(attrs: Attributes, event: LeasePruneEvent) -> None:
    attrs["fpdebug.lease_prune.site"] = event.site
    _put_present(attrs, {"fpdebug.lease_prune.tenant": event.tenant})
    attrs["fpdebug.lease_prune.instruction_ids"] = [lease.instruction_id for lease in event.pruned]
    attrs["fpdebug.lease_prune.reasons"] = [lease.reason for lease in event.pruned]
    attrs["fpdebug.lease_prune.delivery_leases"] = [lease.delivery_lease for lease in event.pruned]
    attrs["fpdebug.lease_prune.granted_iterations"] = [lease.iteration for lease in event.pruned]
    attrs["fpdebug.lease_prune.survivor_ids"] = [lease.instruction_id for lease in event.survivors]


def _skill_rejected(attrs: Attributes, event: SkillRejectedEvent) -> None:
    attrs["fpdebug.skill.requested_id"] = event.requested_id
    _put_present(attrs, {"fpdebug.skill.current_id": event.current_skill_id})
    attrs["fpdebug.skill.allowed"] = list(event.allowed)
    _put_present(
        attrs, {"fpdebug.skill.tool_call_id": event.tool_call_id, "fpdebug.skill.posture": event.posture}
    )


def _route_conflict(attrs: Attributes, event: RouteConflictEvent) -> None:
    _put_present(attrs, {"fpdebug.route_conflict.from": event.from_skill_id})
    attrs["fpdebug.route_conflict.winner_target"] = event.winner.target
    attrs["fpdebug.route_conflict.winner_tool"] = event.winner.tool_name
    _put_present(attrs, {"fpdebug.route_conflict.winner_tool_call_id": event.winner.tool_call_id})
    attrs["fpdebug.route_conflict.loser_targets"] = [loser.target for loser in event.losers]
    attrs["fpdebug.route_conflict.loser_tools"] = [loser.tool_name for loser in event.losers]
    _put_present(attrs, {"fpdebug.route_conflict.source": event.source})


def _reroute_superseded(attrs: Attributes, event: RerouteSupersededEvent) -> None:
    attrs["fpdebug.reroute.volunteered_id"] = event.volunteered_id
    _put_present(
        attrs,
        {
            "fpdebug.reroute.won_id": event.won_id,
            "fpdebug.reroute.from": event.from_skill_id,
            "fpdebug.reroute.source": event.source,
        },
    )


def _pass(attrs: Attributes, event: PassEvent) -> None:
    attrs["fpdebug.pass.active_ids"] = list(event.active_ids)
    attrs["fpdebug.pass.active_count"] = len(event.active_ids)
    attrs["fpdebug.pass.evaluated_total"] = event.evaluated_total
    if event.reasons:
        attrs["fpdebug.pass.reason_ids"] = [reason.id for reason in event.reasons]
        attrs["fpdebug.pass.reason_vias"] = [reason.via for reason in event.reasons]
    if event.skipped:
        attrs["fpdebug.pass.skipped_ids"] = [skipped.id for skipped in event.skipped]
        attrs["fpdebug.pass.skipped_reasons"] = [skipped.reason for skipped in event.skipped]
    for kind, count in sorted(event.trigger_kind_counts.items()):
        attrs[f"fpdebug.pass.trigger_kind_counts.{kind.replace('-', '_')}"] = count
    for name in ("lease_active_ids", "parked_ids", "served_ids", "superseded_ids"):
        ids = getattr(event, name)
        if ids is not None:
            attrs[f"fpdebug.pass.{name}"] = list(ids)
    for slot in ("system_prompt", "messages", "tools"):
        delta = getattr(event.delta, slot)
        if delta.added:
            attrs[f"fpdebug.pass.delta.{slot}.added"] = list(delta.added)
        if delta.removed:
            attrs[f"fpdebug.pass.delta.{slot}.removed"] = list(delta.removed)


def _cursor(attrs: Attributes, event: CursorMoveEvent, *, include_content: bool) -> None:
    if event.from_skill is not None:
        attrs["fpdebug.cursor.from"] = event.from_skill
    if event.to_skill is not None:
        attrs["fpdebug.cursor.to"] = event.to_skill
    attrs["fpdebug.cursor.by"] = event.by
    attrs["fpdebug.cursor.strength"] = event.strength
    attrs["fpdebug.cursor.reachable"] = list(event.reachable)
    attrs["fpdebug.cursor.conflict"] = event.conflict is not None
    if event.witness is not None:
        if event.witness.keyword is not None:
            attrs["fpdebug.cursor.witness.keyword"] = event.witness.keyword
        if include_content:
            attrs["fpdebug.cursor.witness.text"] = event.witness.text
    if event.guard is not None:
        attrs["fpdebug.cursor.guard"] = event.guard
    if event.guards_closed:
        attrs["fpdebug.cursor.guards_closed"] = list(event.guards_closed)
    if event.score is not None:  # the turn-start cascade's evidence (docs/context-model.md §5.1)
        attrs["fpdebug.cursor.score"] = event.score
    if event.offered is not None:
        attrs["fpdebug.cursor.offered"] = list(event.offered)
    if event.declined_offer:
        attrs["fpdebug.cursor.declined_offer"] = True
    if event.near_tie is not None:  # tier 2 did not decide: its best was within the margin
        attrs["fpdebug.cursor.near_tie.best"] = event.near_tie.best
        attrs["fpdebug.cursor.near_tie.runner_up"] = event.near_tie.runner_up


def _engagement(attrs: Attributes, event: EngagementEvent, *, include_content: bool) -> None:
    records = event.records
    attrs["fpdebug.engagement.map_ids"] = [record.map_id for record in records]
    attrs["fpdebug.engagement.standings"] = [record.standing for record in records]
    attrs["fpdebug.engagement.by"] = [record.by for record in records]
    attrs["fpdebug.engagement.idle"] = [record.idle for record in records]
    attrs["fpdebug.engagement.at"] = [record.at or "" for record in records]
    if event.changes:
        attrs["fpdebug.engagement.changed_map_ids"] = [change.map_id for change in event.changes]
        attrs["fpdebug.engagement.changes"] = [_change_name(change, records) for change in event.changes]
    if event.parked_injection_ids:
        attrs["fpdebug.engagement.parked_injection_ids"] = list(event.parked_injection_ids)
    if event.parked_tool_names:
        attrs["fpdebug.engagement.parked_tool_names"] = list(event.parked_tool_names)
    attrs["fpdebug.engagement.park_card_shown"] = event.park_card is not None
    if include_content and event.park_card is not None:
        attrs["fpdebug.engagement.park_card"] = event.park_card


def _finding(attrs: Attributes, event: FindingEvent, *, include_content: bool) -> None:
    attrs["fpdebug.finding.layer"] = event.layer
    attrs["fpdebug.finding.rows"] = len(event.rows)
    arguments = [row for row in event.rows if isinstance(row, ArgumentRow)]
    if arguments:
        attrs["fpdebug.finding.argument_sources"] = [row.source for row in arguments]
    results = [row for row in event.rows if isinstance(row, ResultRow)]
    if results:
        attrs["fpdebug.finding.result_tool_call_ids"] = [row.tool_call_id for row in results]
    for row in event.rows:
        if isinstance(row, AnswerAssessmentRow):
            unsupported = [value for value in row.values if not value.supported]
            attrs["fpdebug.finding.values_stated"] = len(row.values)
            attrs["fpdebug.finding.values_unsupported"] = len(unsupported)
            if include_content and unsupported:
                attrs["fpdebug.finding.unsupported_values"] = [value.text for value in unsupported]
            if row.stopped_early is not None:
                attrs["fpdebug.finding.stopped_early"] = row.stopped_early.reason


def _change_name(change: EngagementChange, records: Iterable[MapEngagementRecord]) -> str:
    """The change in the RunModel's words: founded, engaged, reengaged, upgraded, tenant-changed or parked."""
    if change.kind == "parked":
        return "parked"
    if change.reengaged:
        return "reengaged"
    if change.upgraded:
        return "upgraded"
    if change.tenant_changed:
        return "tenant-changed"
    founded = any(
        record.map_id == change.map_id and record.founded_at == change.iteration for record in records
    )
    return "founded" if founded else "engaged"
