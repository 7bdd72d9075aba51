"""PassInspector: why the context of one iteration was what it was (docs/context-model.md §3–§6).

For the selected iteration it shows, from the full records of that iteration only:

- the cursor move (from → to, by, its strength, witness, reachable set, conflict, guards);
- the active injections in declaration order, each with the reason it rode (its trigger, the
  cursor, a lease and who granted it, the tool return that matched) and the slot(s) it landed in;
  skipped injections with their reason; parked and superseded ids; the per-slot delta;
- the leases served, granted and pruned (with the site, tenant and reason);
- the engagement kernel: renewal evidence per map placed on the strength ladder
  (explicit > structural > semantic > lexical > assumed), the changes and each map's record
  (founded by / at / on, at / at_by / at_since, by, since, idle, standing), the park card;
- the tool batch with effect judgments, read_skill gate outcomes, errors; rejected picks, route
  conflicts and superseded reroutes; findings; invalid or opaque lines nearby.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from rich.style import Style
from rich.text import Text

from fpdebug.trace.model import Iteration
from fpdebug.trace.records import InvalidRecord, OpaqueRecord
from fpdebug.trace.schema import (
    CursorMoveEvent,
    EngagementChange,
    EngagementEvent,
    EngagementPassFacts,
    EvidenceItem,
    FindingEvent,
    LeaseGrantEvent,
    LeasePruneEvent,
    LeaseRecord,
    LlmCallEvent,
    MapEngagementRecord,
    MapEvidence,
    PassEvent,
    RerouteSupersededEvent,
    RouteConflictEvent,
    RunStartEvent,
    SkillRejectedEvent,
    StepPointerRecord,
    ToolResultEvent,
)
from fpdebug.tui.text import Palette, compact_json, number
from fpdebug.tui.widgets.active_injections import active_injections, active_rows, reason_text
from fpdebug.tui.widgets.context_cost import call_cost_text, injection_cost_section
from fpdebug.tui.widgets.document import Block, DocBuilder, Part
from fpdebug.tui.widgets.finding_rows import finding_rows
from fpdebug.tui.widgets.iteration_document import IterationDocument
from fpdebug.tui.widgets.loop_back_rows import loop_back_of, loop_back_rows
from fpdebug.tui.widgets.recalled import recalled_section
from fpdebug.views.session import TraceSession
from fpdebug.views.source import evidence_not_recorded

__all__ = ["LADDER", "PassInspector", "inspect_iteration", "ladder_text", "reason_text", "tool_result_head"]

LADDER: tuple[str, ...] = ("explicit", "structural", "semantic", "lexical", "assumed")
"""The evidence strength ladder, strongest first (docs/context-model.md §6.1)."""

_TENTATIVE = frozenset({"semantic", "lexical", "assumed"})


_Record = TypeVar("_Record")


def _records(session: TraceSession, lines: Iterable[int], cls: type[_Record]) -> list[_Record]:
    """The records of ``cls`` at ``lines`` (a line that reads as something else is left out)."""
    found: list[_Record] = []
    for line in lines:
        record = session.record(line)
        if isinstance(record, cls):
            found.append(record)
    return found


def _one(session: TraceSession, line: int | None, cls: type[_Record]) -> _Record | None:
    """The record of ``cls`` at ``line``, or None when there is no line or it reads otherwise."""
    if line is None:
        return None
    record = session.record(line)
    return record if isinstance(record, cls) else None


def _quoted(label: str, value: str | None, style: Style | str = "") -> list[Part]:
    """`` · witness “…”`` when ``value`` is set, else nothing."""
    return [f" · {label} “", (value, style), "”"] if value else []


def _lease_phrase(lease: LeaseRecord, palette: Palette) -> list[Part]:
    return _grant_phrase(
        lease.instruction_id, lease.delivery_lease, lease.tool_name, lease.tool_call_id,
        f"iteration {lease.iteration}", lease.skill_id, palette,
    )  # fmt: skip


def _grant_phrase(
    instruction_id: str,
    delivery_lease: str,
    tool_name: str,
    tool_call_id: str | None,
    where: str,
    tenant: str | None,
    palette: Palette,
) -> list[Part]:
    """``wire-format next-call granted by fetch_invoice (call call_3, <where>), tenant billing``."""
    return [
        (instruction_id, palette.accent),
        " ",
        (delivery_lease, palette.key),
        " granted by ",
        (tool_name, ""),
        " (call ",
        (tool_call_id or "?", ""),
        f", {where}), tenant ",
        (tenant if tenant is not None else "(no tenant)", ""),
    ]


def ladder_text(strengths: list[str], strongest: str | None, palette: Palette) -> Text:
    """The ladder with the rungs that have evidence counted and the strongest one marked."""
    text = Text(end="")
    for index, rung in enumerate(LADDER):
        if index:
            text.append(" > ", palette.dim)
        count = strengths.count(rung)
        label = f"{rung}×{count}" if count > 1 else rung
        if rung == strongest:
            text.append(f"[{label}]", palette.accent)
        elif count:
            text.append(label, palette.key)
        else:
            text.append(label, palette.dim)
    return text


def _strength(value: str | None, palette: Palette) -> Part:
    if value is None:
        return ("—", palette.dim)
    return (
        f"{value} (tentative)" if value in _TENTATIVE else value,
        palette.warn if value in _TENTATIVE else palette.good,
    )


def _step_phrase(pointer: StepPointerRecord, palette: Palette) -> list[Part]:
    """``refund  step 2 of 3 · skipped 1``, or ``done`` once ``step == total + 1`` (docs/context-model.md §5.6)."""
    where = "done" if pointer.step > pointer.total else f"step {pointer.step} of {pointer.total}"
    parts: list[Part] = [
        (pointer.skill_id, palette.accent),
        "  ",
        (where, palette.good if where == "done" else ""),
    ]
    if pointer.skipped:
        parts += [" · skipped ", (", ".join(str(step) for step in pointer.skipped), palette.warn)]
    return parts


def inspect_iteration(session: TraceSession, iteration: Iteration, palette: Palette) -> list[Block]:
    """The inspector document of one iteration.

    Args:
        session: The trace.
        iteration: The iteration to explain.
        palette: Styles.
    """
    doc = DocBuilder(palette)
    run = session.run_of(iteration)
    doc.line(
        Text(f"Iteration {iteration.number}", style=palette.heading),
        f" · turn {iteration.turn} · run ",
        (iteration.run_id, palette.accent),
        (f"   lines {iteration.first_line}–{iteration.last_line}", palette.dim),
    )
    start = session.run_start(iteration.run_id)
    sections = (
        ("cursor", lambda: _cursor_section(doc, session, iteration)),
        ("the pass", lambda: _pass_section(doc, session, iteration, start)),
        ("the recalled chunks", lambda: recalled_section(doc, session, iteration)),
        ("leases", lambda: _lease_section(doc, session, iteration)),
        ("engagement", lambda: _engagement_section(doc, session, iteration)),
        ("the tool batch", lambda: _tool_section(doc, session, iteration)),
        ("the routing events", lambda: _routing_section(doc, session, iteration)),
        ("the call", lambda: _call_section(doc, session, iteration)),
        ("the context cost", lambda: _context_cost_section(doc, session, iteration)),
        ("the bad lines", lambda: _bad_lines_section(doc, session, iteration)),
    )
    for what, build in sections:
        try:
            build()
        except Exception as error:
            doc.error(what, error)
    if run is not None and run.max_iterations is not None and iteration.number >= run.max_iterations:
        doc.line(("this is the iteration limit of the turn (max_iterations)", palette.warn))
    return doc.blocks


def _cursor_section(doc: DocBuilder, session: TraceSession, iteration: Iteration) -> None:
    palette = doc.palette
    move = _one(session, iteration.cursor_line, CursorMoveEvent)
    doc.heading("Cursor")
    if move is None:
        missing = session.not_recorded("cursor_move")
        words = f"cursor moves {missing}" if missing else "no cursor move recorded (no skill map mounted)"
        doc.line((words, palette.dim), indent=2)
        return
    doc.fact(
        "move",
        (move.from_skill or "(none)", ""),
        " → ",
        (move.to_skill or "(none)", palette.accent),
        "   by ",
        (move.by, palette.key),
        " · strength ",
        _strength(move.strength, palette),
    )
    if move.witness is not None:
        keyword: list[Part] = (
            [" (keyword ", (move.witness.keyword, palette.key), ")"] if move.witness.keyword else []
        )
        doc.fact("witness", "“", (move.witness.text, ""), "”", *keyword)
    if move.score is not None:  # the turn-start classifier's score (docs/context-model.md §5.1)
        doc.fact("score", (f"{move.score:g}", ""))
    tie = move.near_tie  # tier 2's best was within the margin of the runner-up: it did not decide
    lead: list[Part] = [(f"near tie ({tie.best:g} vs {tie.runner_up:g})", palette.warn)] if tie else []
    if move.offered is not None:  # the menu the turn-start decider (or a model pick) resolved
        doc.fact("menu", *lead, ": " if lead else "", (", ".join(move.offered) or "(empty)", ""))
    elif lead:  # continuity held the start after the near tie
        doc.fact("menu", *lead)
    if move.declined_offer:  # the model's pick resolved the menu by picking off it
        doc.fact(
            "declined",
            ("the model picked ", palette.warn),
            (move.to_skill or "(none)", ""),
            (", off the menu", palette.warn),
        )
    if move.by == "tool-proposal":
        _proposal_fact(doc, session, iteration, move.to_skill)
    doc.fact("reachable", (", ".join(move.reachable) or "(nothing)", ""))
    if move.conflict is not None:
        winner = move.conflict.winner
        losers = ", ".join(f"{p.tool_name}→{p.target}" for p in move.conflict.losers)
        doc.fact(
            "conflict",
            ("winner ", palette.warn),
            (f"{winner.tool_name}→{winner.target}", ""),
            " (call ",
            (winner.tool_call_id or "?", ""),
            "); losers ",
            (losers, ""),
        )
    if move.guard is not None:
        doc.fact("guard", (move.guard, ""))
    if move.guards_closed:
        doc.fact("closed", (", ".join(move.guards_closed), palette.dim))


def _proposal_fact(doc: DocBuilder, session: TraceSession, iteration: Iteration, target: str | None) -> None:
    """Beside a move a proposal caused: the proposal's declared reason, from the batch that made it
    (the iteration just before: a proposal is honoured only on the following pass)."""
    run = session.model.run(iteration.run_id)
    turn = run.turn(iteration.turn) if run is not None else None
    before = [i for i in turn.iterations if i.number == iteration.number - 1] if turn is not None else []
    for result in _records(session, before[0].tool_result_lines if before else (), ToolResultEvent):
        for effect in result.effects:
            if (
                effect.kind == "propose-transition"
                and effect.outcome == "accepted"
                and effect.target_skill_id == target
            ):
                where = f" ({result.tool_name}, iteration {iteration.number - 1})"
                doc.fact("proposal", "“", (effect.reason or "", ""), "”", (where, doc.palette.dim))
                return
    doc.fact("proposal", ("its proposal is not in the trace", doc.palette.dim))


def _context_cost_section(doc: DocBuilder, session: TraceSession, iteration: Iteration) -> None:
    # After the call: what each injection cost is read once why it rode and what it did are known.
    record = _one(session, iteration.pass_line, PassEvent)
    if record is not None:
        injection_cost_section(doc, session, iteration, active_rows(record))


def _pass_section(
    doc: DocBuilder, session: TraceSession, iteration: Iteration, start: RunStartEvent | None
) -> None:
    record = _one(session, iteration.pass_line, PassEvent)
    if record is None:
        doc.heading("Active injections")
        missing = session.not_recorded("pass")
        words = (
            f"passes {missing}: why each piece rode is unknown"
            if missing
            else "no pass record in this iteration"
        )
        doc.line((words, doc.palette.dim), indent=2)
        return
    active_injections(doc, record, start)
    _skipped_injections(doc, record)
    _pass_facts(doc, record)
    _slot_delta(doc, record)


def _skipped_injections(doc: DocBuilder, record: PassEvent) -> None:
    """The injections the pass left out, each with its reason."""
    palette = doc.palette
    if not record.skipped:
        return
    doc.heading("Skipped", (f"  {len(record.skipped)}", palette.dim))
    for skipped in record.skipped:
        error: list[Part] = ["  ", (skipped.error, palette.dim)] if skipped.error else []
        doc.line((skipped.id, palette.accent), "  ", (skipped.reason, palette.bad), *error, indent=2, hang=4)


def _pass_facts(doc: DocBuilder, record: PassEvent) -> None:
    """Parked, superseded and served ids, the step pointer and the trigger counts."""
    palette = doc.palette
    facts: list[tuple[str, list[str] | None]] = [
        ("parked", record.parked_ids),
        ("superseded", record.superseded_ids),
        ("served", record.served_ids),
    ]
    shown = [(key, ids) for key, ids in facts if ids]
    if not (shown or record.trigger_kind_counts or record.step_pointer is not None):
        return
    doc.heading("Pass facts")
    for key, ids in shown:
        doc.fact(key, (", ".join(ids or []), palette.bad if key == "parked" else ""))
    if record.step_pointer is not None:  # only when some skill declares steps
        steps = [_step_phrase(pointer, palette) for pointer in record.step_pointer]
        doc.fact("steps", *(steps[0] if steps else [("no procedure holds the tenure", palette.dim)]))
    if record.trigger_kind_counts:
        counts = ", ".join(f"{kind} {count}" for kind, count in record.trigger_kind_counts.items())
        doc.fact("triggers", (counts, palette.dim))


def _slot_delta(doc: DocBuilder, record: PassEvent) -> None:
    """Per slot, the ids added and removed against the previous pass."""
    palette = doc.palette
    slots = record.delta
    by_slot = (("system-prompt", slots.system_prompt), ("messages", slots.messages), ("tools", slots.tools))
    delta_rows = [(name, delta) for name, delta in by_slot if delta.added or delta.removed]
    if not delta_rows:
        return
    doc.heading("Slot delta", ("  against the previous pass", palette.dim))
    for name, delta in delta_rows:
        parts: list[Part] = []
        for id_ in delta.added:
            parts += [(f"+{id_}", palette.good), " "]
        for id_ in delta.removed:
            parts += [(f"−{id_}", palette.bad), " "]
        if delta.kept:
            parts += [(f"kept {len(delta.kept)}", palette.dim)]
        doc.fact(name, *parts, width=14)


def _lease_section(doc: DocBuilder, session: TraceSession, iteration: Iteration) -> None:
    palette = doc.palette
    grants = _records(session, iteration.lease_grant_lines, LeaseGrantEvent)
    prunes = _records(session, iteration.lease_prune_lines, LeasePruneEvent)
    run = session.run_of(iteration)
    serving = run.leases_serving(iteration.turn, iteration.number) if run is not None else []
    if not (grants or prunes or iteration.lease_served or serving):
        _not_recorded(doc, "Leases", "leases", session.not_recorded("lease_grant"))
        return
    doc.heading("Leases")
    unexplained = [
        id_ for id_ in iteration.lease_served if id_ not in {lease.instruction_id for lease in serving}
    ]
    if unexplained:
        doc.fact(
            "served",
            (", ".join(unexplained), palette.good),
            (" (no matching grant in the trace)", palette.dim),
        )
    for lease in serving:
        where = f"T{lease.turn}·I{lease.granted_iteration}"
        phrase = _grant_phrase(
            lease.instruction_id, lease.delivery_lease, lease.tool_name, lease.tool_call_id, where,
            lease.tenant, palette,
        )  # fmt: skip
        doc.line(("served  ", palette.good), *phrase, indent=2, hang=8)
    for prune in prunes:
        site = "the pass's tenure sweep" if prune.site == "evaluate" else "the prune beside a grant"
        doc.line(
            ("pruned  ", palette.bad),
            f"at {prune.site} ({site}), tenant ",
            (prune.tenant if prune.tenant is not None else "(none)", ""),
            indent=2,
        )
        for pruned in prune.pruned:
            doc.line((pruned.reason, palette.bad), "  ", *_lease_phrase(pruned, palette), indent=6, hang=4)
        if prune.survivors:
            doc.line("survivors: ", (", ".join(s.instruction_id for s in prune.survivors), ""), indent=6)
    for grant in grants:
        doc.line(("granted ", palette.good), *_lease_phrase(grant.lease, palette), indent=2, hang=8)


def _engagement_section(doc: DocBuilder, session: TraceSession, iteration: Iteration) -> None:
    palette = doc.palette
    record = _one(session, iteration.engagement_line, EngagementEvent)
    if record is None:
        _not_recorded(doc, "Engagement", "engagement", session.not_recorded("engagement"))
        return
    doc.heading("Engagement", ("  the mount kernel's pass (docs §6)", palette.dim))
    _engagement_pass_facts(doc, record.pass_facts)
    evidence = {item.map_id: item for item in record.evidence}
    changes = {change.map_id: change for change in record.changes}
    map_ids = list(dict.fromkeys([*evidence, *(r.map_id for r in record.records), *changes]))
    for map_id in map_ids:
        doc.line(("map ", palette.key), (map_id, palette.accent), indent=2)
        _map_evidence(doc, evidence.get(map_id), unrecorded=evidence_not_recorded(session.source))
        change = changes.get(map_id)
        if change is not None:
            _map_change(doc, change)
        standing = next((r for r in record.records if r.map_id == map_id), None)
        if standing is not None:
            _map_standing(doc, standing)
    _engagement_suppressed(doc, record)


def _engagement_pass_facts(doc: DocBuilder, facts: EngagementPassFacts) -> None:
    """What the renewal feed read: the cursor, the batch, the picks, what the last pass served."""
    palette = doc.palette
    doc.fact(
        "cursor",
        (facts.current_node or "(none)", palette.accent),
        " · moved by ",
        (facts.move_by or "(nothing)", palette.key),
        *_quoted("witness", facts.witness),
    )
    if facts.tool_names:
        doc.fact("batch", (", ".join(facts.tool_names), ""))
    if facts.pending_skill_pick or facts.accepted_skill_picks:
        doc.fact(
            "picks",
            ("pending " + (facts.pending_skill_pick or "—"), ""),
            " · accepted ",
            (", ".join(facts.accepted_skill_picks) or "—", ""),
        )
    if facts.served_last_pass:
        doc.fact("served last", (", ".join(facts.served_last_pass), palette.dim))


def _not_recorded(doc: DocBuilder, heading: str, what: str, missing: str | None) -> None:
    """``Leases / leases not recorded by otlp`` when the source cannot hold them (else nothing)."""
    if missing is not None:
        doc.heading(heading)
        doc.line((f"{what} {missing}", doc.palette.dim), indent=2)


def _map_evidence(doc: DocBuilder, found: MapEvidence | None, *, unrecorded: bool = False) -> None:
    """A map's renewal evidence on the ladder, then one row per item.

    ``unrecorded``: the source keeps no renewal evidence (agentfootprint), so an empty list says
    nothing about this pass."""
    palette = doc.palette
    items: list[EvidenceItem] = found.items if found is not None else []
    strongest = found.strongest if found is not None else None
    doc.fact("evidence", ladder_text([item.strength for item in items], strongest, palette), indent=4)
    if not items:
        words = "renewal evidence not recorded" if unrecorded else "no renewal evidence on this pass"
        doc.line((words, palette.dim), indent=17)
    for item in items:
        what = item.tool_name or item.by or item.skill_id or ""
        doc.line(
            (item.kind, ""),
            " ",
            (what, palette.accent),
            "  → ",
            _strength(item.strength, palette),
            indent=17,
        )


def _map_change(doc: DocBuilder, change: EngagementChange) -> None:
    """``ENGAGED by explicit · re-engaged · after 3 idle passes · at refund · witness “…”``."""
    palette = doc.palette
    flags = [
        name
        for name, on in (
            ("re-engaged", change.reengaged),
            ("upgraded", change.upgraded),
            ("tenant changed", change.tenant_changed),
        )
        if on
    ]
    parts: list[Part] = [
        (change.kind.upper(), palette.bad if change.kind == "parked" else palette.good),
        " by ",
        _strength(change.by, palette),
    ]
    if flags:
        parts += [" · ", (", ".join(flags), palette.key)]
    if change.idle_calls is not None:
        parts += [f" · after {change.idle_calls} idle passes"]
    if change.at is not None:
        parts += [" · at ", (change.at, "")]
    parts += _quoted("witness", change.witness)
    doc.fact("change", *parts, indent=4)


def _map_standing(doc: DocBuilder, standing: MapEngagementRecord) -> None:
    """A map's record after the pass: standing, founding and position, kept apart."""
    palette = doc.palette
    doc.fact(
        "standing",
        (standing.standing.upper(), palette.bad if standing.standing == "parked" else palette.good),
        f" since I{standing.since} · by ",
        _strength(standing.by, palette),
        f" · idle {standing.idle}",
        indent=4,
    )
    founded_on: list[Part] = [" on ", (standing.founded_on, palette.accent)] if standing.founded_on else []
    doc.fact(
        "founded",
        "by ",
        _strength(standing.founded_by, palette),
        f" at I{standing.founded_at}",
        *founded_on,
        *_quoted("witness", standing.witness),
        indent=4,
    )
    if standing.at is not None:
        doc.fact(
            "position",
            "at ",
            (standing.at, palette.accent),
            " · by ",
            _strength(standing.at_by, palette),
            f" · since I{standing.at_since}" if standing.at_since is not None else "",
            indent=4,
        )


def _engagement_suppressed(doc: DocBuilder, record: EngagementEvent) -> None:
    """What parked maps took off the wire, and the park card the model read."""
    palette = doc.palette
    if record.parked_injection_ids or record.parked_tool_names:
        doc.fact(
            "suppressed",
            (", ".join(record.parked_injection_ids) or "—", palette.bad),
            " · tools off the wire: ",
            (", ".join(record.parked_tool_names) or "—", palette.bad),
        )
    if record.park_card:
        doc.line(("park card (what the model read):", palette.key), indent=2)
        doc.content(record.park_card, indent=4, rows=4)


def tool_result_head(result: ToolResultEvent, palette: Palette) -> list[Part]:
    """``lookup_order · call_1 → returned · 12 ms``: a tool result's first line in every view.

    A status the record does not carry is derived (``failure`` with an error, else ``returned``)
    and shown dim.
    """
    status = result.status or ("failure" if result.error else "returned")
    if status in ("failure", "denied", "invalid"):
        style: Style | str = palette.bad
    else:
        style = palette.dim if result.status is None else ""
    return [
        (result.tool_name, palette.accent),
        " · ",
        (result.tool_call_id, palette.dim),
        " → ",
        (status, style),
        f" · {number(result.duration_ms)} ms",
    ]


def _tool_section(doc: DocBuilder, session: TraceSession, iteration: Iteration) -> None:
    palette = doc.palette
    results = _records(session, iteration.tool_result_lines, ToolResultEvent)
    if not results:
        return
    doc.heading("Tool batch", (f"  {len(results)} call(s)", palette.dim))
    for result in results:
        doc.line(*tool_result_head(result, palette), indent=2)
        if result.args:
            doc.line(("args ", palette.dim), (compact_json(result.args), ""), indent=4)
        if result.skill_gate is not None:
            gate = result.skill_gate
            doc.line(
                ("read_skill gate: ", palette.key),
                (gate.skill_id, palette.accent),
                " → ",
                (gate.outcome, palette.bad if gate.outcome == "rejected" else palette.good),
                indent=4,
            )
        if result.step is not None:
            change = result.step
            verb = "skipped, held" if change.held else change.outcome.removeprefix("step_")
            named: list[Part] = [" (", (change.tool, palette.accent), ")"] if change.tool else []
            why: list[Part] = [" — ", (change.reason, palette.dim)] if change.reason else []
            doc.line(
                ("step ", palette.key),
                f"{change.step} of {change.total}",
                *named,
                " ",
                (verb, palette.good if verb == "advanced" else palette.warn),
                " → ",
                *_step_phrase(change.step_pointer, palette),
                *why,
                indent=4,
                hang=2,
            )
        for effect in result.effects:
            target = effect.instruction_id or effect.target_skill_id or "?"
            extra: list[Part] = []
            if effect.delivery_lease:
                extra += [" ", (effect.delivery_lease, palette.key)]
            if effect.reason:  # a proposal's declared reason
                extra += [" — “", (effect.reason, ""), "”"]
            if effect.refusal_reason:
                extra += [" — ", (effect.refusal_reason, palette.dim)]
            if effect.superseded_by:
                extra += [" — superseded by ", (effect.superseded_by, "")]
            doc.line(
                ("effect ", palette.key),
                (effect.kind, ""),
                " ",
                (target, palette.accent),
                " → ",
                (effect.outcome, palette.good if effect.outcome == "accepted" else palette.bad),
                *extra,
                indent=4,
            )
        for malformed in result.malformed:
            doc.line(
                ("malformed ", palette.bad),
                (malformed.kind, ""),
                " — ",
                (malformed.refusal_reason, ""),
                indent=4,
            )
        if result.error is not None:
            doc.line(("error ", palette.bad), (f"{result.error.type}: {result.error.message}", ""), indent=4)
        doc.content(result.result, indent=4, rows=3, style=palette.dim)


def _routing_section(doc: DocBuilder, session: TraceSession, iteration: Iteration) -> None:
    palette = doc.palette
    rejected = _records(session, iteration.skill_rejected_lines, SkillRejectedEvent)
    conflicts = _records(session, iteration.route_conflict_lines, RouteConflictEvent)
    superseded = _records(session, iteration.reroute_superseded_lines, RerouteSupersededEvent)
    findings = _records(session, iteration.finding_lines, FindingEvent)
    loop_back = loop_back_of(session, iteration)
    if not (rejected or conflicts or superseded or findings or loop_back):
        return
    doc.heading("Routing and findings")
    loop_back_rows(doc, loop_back)
    for rejection in rejected:
        doc.line(
            ("rejected pick ", palette.warn),
            (rejection.requested_id, palette.accent),
            " from ",
            (rejection.current_skill_id or "(no cursor)", ""),
            " · allowed ",
            (", ".join(rejection.allowed) or "(nothing)", ""),
            indent=2,
        )
    for conflict in conflicts:
        losers = ", ".join(f"{p.tool_name}→{p.target}" for p in conflict.losers)
        source = " (tool proposals)" if conflict.source else ""
        doc.line(
            ("route conflict ", palette.warn),
            f"from {conflict.from_skill_id or '(none)'}{source}: winner ",
            (f"{conflict.winner.tool_name}→{conflict.winner.target}", palette.accent),
            " · losers ",
            (losers, ""),
            indent=2,
        )
    for reroute in superseded:
        source = " (tool proposal)" if reroute.source else ""
        doc.line(
            ("superseded ", palette.warn),
            (reroute.volunteered_id, palette.accent),
            f"{source} — the cursor went to ",
            (reroute.won_id or "(none)", ""),
            indent=2,
        )
    for finding in findings:
        finding_rows(doc, finding)


def _call_section(doc: DocBuilder, session: TraceSession, iteration: Iteration) -> None:
    palette = doc.palette
    calls = _records(session, iteration.llm_lines, LlmCallEvent)
    if not calls:
        return
    doc.heading("LLM call", ("  the exact prompt is in the Calls view", palette.dim))
    for call in calls:
        usage = call.response.usage if call.response is not None else None
        tokens = (
            f"{number(usage.total_input_tokens(call.provider))} in / {number(usage.output_tokens)} out"
            if usage
            else "no reply"
        )
        doc.line(
            f"call {call.call_index} · ",
            (f"{call.provider}/{call.model}", palette.accent),
            f" · {tokens} · {call_cost_text(call)} · {number(call.latency_ms)} ms · route ",
            (call.route or "—", palette.key),
            indent=2,
        )
        if call.response is not None and call.response.tool_calls:
            names = ", ".join(f"{tc.name}({tc.id})" for tc in call.response.tool_calls)
            doc.line(("asked for ", palette.dim), (names, ""), indent=4)
        if call.error is not None:
            doc.line(("error ", palette.bad), (f"{call.error.type}: {call.error.message}", ""), indent=4)


def _bad_lines_section(doc: DocBuilder, session: TraceSession, iteration: Iteration) -> None:
    palette = doc.palette
    low, high = iteration.first_line - 1, iteration.last_line + 1
    bad = {
        line for line in (*session.model.invalid_lines, *session.model.opaque_lines) if low <= line <= high
    }
    # The model reads only a line's facts; a line whose other fields break the schema shows
    # up only when it is read in full, as it is here.
    bad.update(line for line in iteration.lines if isinstance(session.record(line), InvalidRecord))
    if not bad:
        return
    doc.heading("Bad lines nearby", ("  kept, never fatal", palette.dim))
    for line in sorted(bad):
        record = session.record(line)
        if isinstance(record, InvalidRecord):
            doc.line(
                (f"line {line} ", palette.key),
                ("invalid record: ", palette.bad),
                (record.error, ""),
                indent=2,
            )
        elif isinstance(record, OpaqueRecord):
            doc.line(
                (f"line {line} ", palette.key),
                ("opaque record ", palette.warn),
                (record.kind, ""),
                (" (a kind this fpdebug does not know)", palette.dim),
                indent=2,
            )


class PassInspector(IterationDocument):
    """The pass inspector of the selected iteration."""

    def document(self, iteration: Iteration) -> list[Block]:
        return inspect_iteration(self.session, iteration, self.palette)
