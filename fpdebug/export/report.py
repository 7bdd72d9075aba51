"""A run report for a ticket: header, iteration timeline, lease lifetimes, parks, routing trouble, verdicts.

:func:`build_report` reads a trace once (through :class:`~fpdebug.trace.model.RunModel`) and returns
plain data (what ``fpdebug report --format json`` prints); :func:`~fpdebug.export.report_markdown.render_markdown` turns it into
Markdown to paste into an issue (:mod:`fpdebug.export.report_markdown`). Per run:

- **header**: run id, agent, provider, model, status (and error), turns, iterations, calls, tokens;
- **timeline**: one row per iteration: the cursor move, how many injections were active, which
  ones a lease served, the tool calls, the route, tokens, and badges for what stood out
  (engagement changes, grants and prunes, conflicts, rejected picks, superseded reroutes, failed
  calls or tools, a turn stopped early, the route recorder's ``ping-pong`` and ``rejected ×3``
  trips of docs/trace-contract.md §8.5b);
- **lease lifetimes**: each lease, who granted it (tool, call, iteration), the passes it served,
  and when and why it was pruned;
- **parks and re-engagements**: every engagement change of every mounted map;
- **route conflicts**, **rejected picks**, **superseded reroutes**;
- **unsupported values**: per assessed answer, the values it stated, how many no source holds, and
  those values themselves (the answer layer's ``finding`` rows); a run that did not complete says
  that a turn it stopped in may have no assessment;
- **backtrack verdicts**, when a backtrack sidecar lies beside the trace.

**The backtrack sidecar** is ``<trace>.backtrack.jsonl`` (the name
:func:`fpdebug.backtrack.sidecar.sidecar_path_for` gives, the file ``fpdebug backtrack`` appends to).
It is read by :func:`fpdebug.backtrack.sidecar.load_sidecar`, the backtracker's own reader, which
rebuilds each saved backtrack from its records; the report shows, per backtrack, its warnings first
(``⚠ target``: the explained call is not the final answer as recorded; ``⚠ trace``: the trace had
lines the backtracker could not read; each honesty flag), then the claim, the explained call, the
mode, the status (finished, cancelled, failed, or unfinished when no end record was written), the
baseline, every verdict and the bisection's culprit sets. Lines that are not
records, and a torn last line, are counted, never fatal. No sidecar, no section.

Every string that came from the trace or the sidecar is passed through
:func:`~fpdebug.trace.inert.inert_line` and Markdown-escaped (``|``, backticks, brackets, emphasis
characters, ``<``/``>``; newlines are folded) before it reaches the Markdown. The JSON keeps the
values as recorded (``json.dumps(..., ensure_ascii=True)`` escapes every control character).
The report carries no prompt, reply or tool output: ids, names, counts and states only, and the
short values an answer stated that no source holds (the answer layer's own excerpts).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeAlias, TypedDict

from fpdebug.backtrack.sidecar import SavedBacktrack, Sidecar, load_sidecar, sidecar_path_for
from fpdebug.trace.cost import RunCosts, costs_of
from fpdebug.trace.schema import (
    AnswerAssessmentRow,
    FindingEvent,
    LlmCallEvent,
    PassEvent,
    RerouteSupersededEvent,
    RouteConflictEvent,
    SkillRejectedEvent,
    ToolResultEvent,
)

if TYPE_CHECKING:
    from fpdebug.trace.model import Iteration, Run, RunModel
    from fpdebug.trace.reader import TraceReader
    from fpdebug.trace.records import Record

__all__ = [
    "REPORT_FORMATS",
    "BacktrackSection",
    "BisectRow",
    "HonestyFlagRow",
    "LeaseRow",
    "MapChangeRow",
    "RunReport",
    "SavedBacktrackRow",
    "TimelineRow",
    "TraceReport",
    "VerdictRow",
    "backtrack_section",
    "build_report",
    "report_trace",
    "run_report",
    "where_of",
]

REPORT_FORMATS = ("md", "json")
"""The formats ``fpdebug report --format`` accepts."""

_FAILED_TOOL = frozenset({"failure", "denied", "invalid"})
_PING_PONG_WINDOW = 4  # docs/trace-contract.md §8.5b routeRecorder defaults
_REJECTED_CAP = 3


class TimelineRow(TypedDict):
    """One iteration of the timeline."""

    turn: int
    iteration: int
    cursor_from: str | None
    cursor_to: str | None
    cursor_by: str | None
    active_count: int | None
    leases_served: list[str]
    tool_calls: list[str]
    failed_tools: list[str]
    route: str | None
    input_tokens: int
    output_tokens: int
    cost: str | None
    badges: list[str]


class InjectionCostRow(TypedDict):
    """What one injection's segments took across a run (fpdebug/trace/cost.py: by characters)."""

    injection_id: str
    tokens: int
    calls: int
    cost: str
    usd: float | None


class LeaseRow(TypedDict):
    """One lease, grant to prune."""

    instruction_id: str
    delivery_lease: str
    tenant: str | None
    granted_by_tool: str
    granted_by_call: str | None
    granted_turn: int | None
    granted_iteration: int
    served: list[str]
    state: str
    pruned_turn: int | None
    pruned_iteration: int | None
    prune_site: str | None
    prune_tenant: str | None


class MapChangeRow(TypedDict):
    """One engagement change of a map."""

    map_id: str
    turn: int | None
    iteration: int | None
    change: str
    standing: str
    by: str
    idle: int
    at: str | None


class MapSummaryRow(TypedDict):
    """A map's totals."""

    map_id: str
    standing: str | None
    parks: int
    reengagements: int


class ConflictRow(TypedDict):
    """A route conflict."""

    turn: int | None
    iteration: int | None
    from_skill: str | None
    winner: str
    losers: list[str]
    source: str | None


class RejectedRow(TypedDict):
    """A read_skill pick the gate refused."""

    turn: int | None
    iteration: int | None
    requested: str
    current: str | None
    allowed: list[str]
    tool_call_id: str | None


class SupersededRow(TypedDict):
    """A pick or proposal the pass did not honour."""

    turn: int | None
    iteration: int | None
    volunteered: str
    won: str | None
    from_skill: str | None
    source: str | None


class UnsupportedRow(TypedDict):
    """The answer layer's count for one assessed answer."""

    turn: int | None
    iteration: int | None
    stated: int
    unsupported: int
    values: list[str]
    """The unsupported values, as the answer states them, in the order it states them."""


class VerdictRow(TypedDict):
    """One probe's verdict in a saved backtrack."""

    source: str
    label: str
    action: str
    verdict: str
    tier: str
    flips: int
    samples: int
    claim: str


class HonestyFlagRow(TypedDict):
    """An honesty flag a saved backtrack carries (docs/backtracking.md §9.1), and why it applies."""

    flag: str
    note: str


class BisectRow(TypedDict):
    """A saved bisection: its outcome and the minimal culprit sets (each removed together)."""

    verdict: str
    tier: str
    culprits: list[list[str]]
    probes: int
    runs_used: int
    reason: str


BacktrackStatus: TypeAlias = Literal["finished", "cancelled", "failed", "unfinished"]
"""How a saved backtrack ended; ``unfinished`` when the sidecar holds no end record for it."""


class SavedBacktrackRow(TypedDict):
    """One backtrack saved in the sidecar."""

    target_note: str | None
    """Why the explained call is not the final answer as recorded (``None`` when it is)."""
    trace_note: str | None
    """What the backtracker could not read of the trace (bad lines, a torn tail), if anything."""
    flags: list[HonestyFlagRow]
    """The honesty flags that apply to the backtrack's claims."""
    claim: str
    run_id: str
    in_trace: bool
    call_seq: int
    call_index: int
    turn: int | None
    iteration: int
    mode: str
    status: BacktrackStatus
    baseline: str | None
    baseline_stable: bool | None
    rerun_provider: str | None
    flip_test: str | None
    runs_used: int
    verdicts: list[VerdictRow]
    bisect: BisectRow | None


class BacktrackSection(TypedDict):
    """What the sidecar held."""

    path: str
    backtracks: list[SavedBacktrackRow]
    unreadable_lines: int
    torn_tail: bool


class RunReport(TypedDict):
    """Everything the report says about one run."""

    run_id: str
    agent: str | None
    provider: str | None
    model: str | None
    status: str
    error: str | None
    turns: int
    iterations: int
    llm_calls: int
    tool_calls: int
    input_tokens: int
    output_tokens: int
    cost: dict[str, object]
    injection_costs: list[InjectionCostRow]
    started: str | None
    ended: str | None
    stopped_early: list[str]
    answer_layer: bool
    timeline: list[TimelineRow]
    leases: list[LeaseRow]
    maps: list[MapSummaryRow]
    map_changes: list[MapChangeRow]
    route_conflicts: list[ConflictRow]
    rejected_picks: list[RejectedRow]
    superseded_reroutes: list[SupersededRow]
    unsupported_values: list[UnsupportedRow]


class TornTailRow(TypedDict):
    """An unfinished last record: the bytes after the trace's last newline."""

    line: int
    bytes: int


class TraceReport(TypedDict):
    """The whole report (what ``--format json`` prints)."""

    trace: str
    producer: str
    schema_version: int
    invalid_lines: int
    opaque_lines: int
    torn_tail: TornTailRow | None
    runs: list[RunReport]
    backtrack: BacktrackSection | None


# ----------------------------------------------------------------------------------------------
# Building


def where_of(turn: int | None, iteration: int | None) -> str:
    if turn is None and iteration is None:
        return "–"
    return f"{turn if turn is not None else '?'}.{iteration if iteration is not None else '–'}"


def _ts(model: RunModel, line: int | None) -> str | None:
    if line is None:
        return None
    record = model.record(line)
    ts = getattr(record, "ts", None)
    return ts.isoformat().replace("+00:00", "Z") if ts is not None else None


def _records(model: RunModel, run: Run, kind: str) -> Iterator[Record]:
    """The run's records of one kind, in file order (iteration records and turn-level ones)."""
    lines: list[int] = []
    for turn in run.turns:
        for iteration in turn.iterations:
            lines.extend(iteration.lines_of(kind))
        lines.extend(line for line in turn.lines if getattr(model.record(line), "kind", None) == kind)
    for line in sorted(lines):
        yield model.record(line)


def _iteration_cost(costs: RunCosts, turn: int, iteration: int) -> str | None:
    total = costs.iterations.get((turn, iteration))
    return total.text() if total is not None else None


def _injection_cost_rows(costs: RunCosts) -> list[InjectionCostRow]:
    """Each injection's share of the run's prompts, the most expensive first."""
    return [
        {
            "injection_id": injection_id,
            "tokens": round(total.tokens),
            "calls": total.calls,
            "cost": total.cost.text(),
            "usd": total.cost.usd(),
        }
        for injection_id, total in costs.injections_by_cost()
    ]


def _run_costs(model: RunModel, run: Run) -> RunCosts:
    """The run's calls priced (fpdebug/trace/cost.py), iteration by iteration."""
    return costs_of(
        (line, model.record(line)) for iteration in run.iterations() for line in iteration.llm_lines
    )


def _fold_badges(iteration: Iteration) -> list[str]:
    """A superseded reroute, then a window's fold (the history compacted before this pass)."""
    return [
        word
        for word, shown in (
            ("reroute superseded", bool(iteration.reroute_superseded_lines)),
            ("compacted", iteration.has("compact")),
        )
        if shown
    ]


def _timeline(model: RunModel, run: Run, costs: RunCosts) -> list[TimelineRow]:
    rows: list[TimelineRow] = []
    several_maps = len(run.maps) > 1
    positions: list[str] = []
    rejected_streak = 0
    for turn in run.turns:
        for number, iteration in enumerate(turn.iterations, start=1):
            badges: list[str] = []
            for note in iteration.engagement_changes:
                badges.append(f"{note.change} ({note.map_id})" if several_maps else note.change)
            active = None
            if iteration.pass_line is not None:
                record = model.record(iteration.pass_line)
                if isinstance(record, PassEvent):
                    active = len(record.active_ids)
            grants = len(iteration.lease_grant_lines)
            if grants:
                badges.append("lease granted" if grants == 1 else f"{grants} leases granted")
            for line in iteration.lease_prune_lines:
                for pruned in getattr(model.record(line), "pruned", []):
                    badges.append(f"{pruned.instruction_id} {pruned.reason}")
            if iteration.route_conflict_lines:
                badges.append("route conflict")
            if iteration.skill_rejected_lines:
                badges.append("pick rejected")
                rejected_streak += len(iteration.skill_rejected_lines)
                if rejected_streak >= _REJECTED_CAP:
                    badges.append(f"rejected ×{rejected_streak}")
            badges.extend(_fold_badges(iteration))
            tools, failed = _tools(model, iteration)
            if any(name == "read_skill" for name in tools) and not iteration.skill_rejected_lines:
                rejected_streak = 0
            if failed:
                badges.append("tool failed")
            for line in iteration.llm_lines:
                record = model.record(line)
                if isinstance(record, LlmCallEvent) and record.error is not None:
                    badges.append("call failed")
            if _ping_pong(positions, iteration):
                badges.append("ping-pong")
            if turn.stopped_early is not None and number == len(turn.iterations):
                badges.append(f"stopped early ({turn.stopped_early})")
            rows.append(
                {
                    "turn": turn.number,
                    "iteration": iteration.number,
                    "cursor_from": iteration.cursor_from,
                    "cursor_to": iteration.cursor_to,
                    "cursor_by": iteration.cursor_by,
                    "active_count": active,
                    "leases_served": list(dict.fromkeys(iteration.lease_served)),
                    "tool_calls": tools,
                    "failed_tools": failed,
                    "route": iteration.route,
                    "input_tokens": iteration.input_tokens,
                    "output_tokens": iteration.output_tokens,
                    "cost": _iteration_cost(costs, turn.number, iteration.number),
                    "badges": badges,
                }
            )
    return rows


def _tools(model: RunModel, iteration: Iteration) -> tuple[list[str], list[str]]:
    names: list[str] = []
    failed: list[str] = []
    for line in iteration.tool_result_lines:
        record = model.record(line)
        if isinstance(record, ToolResultEvent):
            names.append(record.tool_name)
            if record.error is not None or record.status in _FAILED_TOOL:
                failed.append(record.tool_name)
    return names, failed


def _ping_pong(positions: list[str], iteration: Iteration) -> bool:
    """Track where the cursor landed on each hop; True when the last hops went X, Y, X, Y."""
    start, end = iteration.cursor_from, iteration.cursor_to
    if end is None or start == end:
        return False
    if not positions and start is not None:
        positions.append(start)
    positions.append(end)
    window = positions[-_PING_PONG_WINDOW:]
    return (
        len(window) == _PING_PONG_WINDOW
        and window[0] == window[2]
        and window[1] == window[3]
        and window[0] != window[1]
    )


def _leases(run: Run) -> list[LeaseRow]:
    return [
        {
            "instruction_id": lease.instruction_id,
            "delivery_lease": lease.delivery_lease,
            "tenant": lease.tenant,
            "granted_by_tool": lease.tool_name,
            "granted_by_call": lease.tool_call_id,
            "granted_turn": lease.turn,
            "granted_iteration": lease.granted_iteration,
            "served": [where_of(turn, iteration) for turn, iteration in lease.served],
            "state": lease.state,
            "pruned_turn": lease.pruned_turn,
            "pruned_iteration": lease.pruned_iteration,
            "prune_site": lease.prune_site,
            "prune_tenant": lease.prune_tenant,
        }
        for lease in run.leases
    ]


def _run_report(model: RunModel, run: Run) -> RunReport:
    costs = _run_costs(model, run)
    changes: list[MapChangeRow] = []
    for timeline in run.maps.values():
        for point in timeline.changes:
            changes.append(
                {
                    "map_id": timeline.map_id,
                    "turn": point.turn,
                    "iteration": point.iteration,
                    "change": point.change or "",
                    "standing": point.standing,
                    "by": point.by,
                    "idle": point.idle,
                    "at": point.at,
                }
            )
    changes.sort(key=lambda row: (row["turn"] or 0, row["iteration"] or 0))
    conflicts: list[ConflictRow] = [
        {
            "turn": event.turn,
            "iteration": event.iteration,
            "from_skill": event.from_skill_id,
            "winner": f"{event.winner.tool_name} → {event.winner.target}",
            "losers": [f"{loser.tool_name} → {loser.target}" for loser in event.losers],
            "source": event.source,
        }
        for event in _records(model, run, "route_conflict")
        if isinstance(event, RouteConflictEvent)
    ]
    rejected: list[RejectedRow] = [
        {
            "turn": event.turn,
            "iteration": event.iteration,
            "requested": event.requested_id,
            "current": event.current_skill_id,
            "allowed": list(event.allowed),
            "tool_call_id": event.tool_call_id,
        }
        for event in _records(model, run, "skill_rejected")
        if isinstance(event, SkillRejectedEvent)
    ]
    superseded: list[SupersededRow] = [
        {
            "turn": event.turn,
            "iteration": event.iteration,
            "volunteered": event.volunteered_id,
            "won": event.won_id,
            "from_skill": event.from_skill_id,
            "source": event.source,
        }
        for event in _records(model, run, "reroute_superseded")
        if isinstance(event, RerouteSupersededEvent)
    ]
    unsupported: list[UnsupportedRow] = []
    for event in _records(model, run, "finding"):
        if isinstance(event, FindingEvent):
            for row in event.rows:
                if isinstance(row, AnswerAssessmentRow):
                    unsupported.append(
                        {
                            "turn": event.turn,
                            "iteration": event.iteration,
                            "stated": len(row.values),
                            "unsupported": sum(1 for value in row.values if not value.supported),
                            "values": [value.text for value in row.values if not value.supported],
                        }
                    )
    return {
        "run_id": run.run_id,
        "agent": run.agent_name,
        "provider": run.provider,
        "model": run.model,
        "status": run.status,
        "error": run.error,
        "turns": len(run.turns),
        "iterations": run.iteration_count,
        "llm_calls": run.counts.get("llm_call", 0),
        "tool_calls": run.counts.get("tool_result", 0),
        "input_tokens": run.input_tokens,
        "output_tokens": run.output_tokens,
        "cost": costs.run.as_json(),
        "injection_costs": _injection_cost_rows(costs),
        "started": _ts(model, run.start_line if run.start_line is not None else run.first_line),
        "ended": _ts(model, run.end_line),
        "stopped_early": [
            f"turn {turn.number}: {turn.stopped_early}"
            for turn in run.turns
            if turn.stopped_early is not None
        ],
        "answer_layer": _answer_layer(model, run),
        "timeline": _timeline(model, run, costs),
        "leases": _leases(run),
        "maps": [
            {
                "map_id": timeline.map_id,
                "standing": timeline.standing,
                "parks": timeline.parks,
                "reengagements": timeline.reengagements,
            }
            for timeline in run.maps.values()
        ],
        "map_changes": changes,
        "route_conflicts": conflicts,
        "rejected_picks": rejected,
        "superseded_reroutes": superseded,
        "unsupported_values": unsupported,
    }


def run_report(model: RunModel, run: Run) -> RunReport:
    """What the report says about one run of ``model`` (an entry of :class:`TraceReport`'s ``runs``)."""
    return _run_report(model, run)


def _answer_layer(model: RunModel, run: Run) -> bool:
    """Whether the run armed the answer layer (so "no assessment" means none was made, not none could be)."""
    if run.start_line is None:
        return False
    honesty = getattr(model.record(run.start_line), "honesty", None)
    return bool(honesty is not None and honesty.answer)


_STATUS: dict[str, BacktrackStatus] = {
    "complete": "finished",
    "cancelled": "cancelled",
    "failed": "failed",
    "unfinished": "unfinished",
}


def _saved_row(saved: SavedBacktrack, run_ids: set[str]) -> SavedBacktrackRow:
    report = saved.report
    bisect = report.bisect
    return {
        # The warnings come before the claim, as the backtracker shows them: the claim reads differently.
        "target_note": report.target_note,
        "trace_note": report.read_problems.note,
        "flags": [{"flag": flag.flag, "note": flag.note} for flag in report.flags],
        "claim": report.claim,
        "run_id": report.run_id,
        "in_trace": report.run_id in run_ids,
        "call_seq": report.call_seq,
        "call_index": report.call_index,
        "turn": report.turn,
        "iteration": report.iteration,
        "mode": report.mode,
        "status": _STATUS[saved.status],
        "baseline": report.baseline,
        "baseline_stable": report.stable_baseline,
        "rerun_provider": report.rerun_provider,
        "flip_test": report.flip_test,
        "runs_used": report.runs_used,
        "verdicts": [
            {
                "source": probe.source,
                "label": probe.verdict.label,
                "action": probe.verdict.action,
                "verdict": probe.verdict.kind,
                "tier": probe.verdict.tier,
                "flips": probe.verdict.flips,
                "samples": probe.verdict.samples,
                "claim": probe.verdict.claim,
            }
            for probe in report.verdicts
        ],
        "bisect": None
        if bisect is None
        else {
            "verdict": bisect.verdict,
            "tier": bisect.tier,
            "culprits": [list(group) for group in bisect.culprits],
            "probes": bisect.probes,
            "runs_used": bisect.runs_used,
            "reason": bisect.reason,
        },
    }


def backtrack_section(
    sidecar: Sidecar, *, run_ids: set[str] | frozenset[str] = frozenset()
) -> BacktrackSection:
    """The report's view of a sidecar read by :func:`~fpdebug.backtrack.sidecar.load_sidecar`.

    Args:
        sidecar: The sidecar, as the backtracker reads it back.
        run_ids: The runs of the reported trace (a backtrack of another run is marked ``in_trace: false``).

    Returns:
        Each saved backtrack in the order it started, and the lines that could not be read.
    """
    return {
        "path": Path(sidecar.path).name,
        "backtracks": [_saved_row(saved, set(run_ids)) for saved in sidecar.backtracks],
        "unreadable_lines": sidecar.unreadable_lines,
        "torn_tail": sidecar.torn_tail,
    }


def build_report(
    model: RunModel, reader: TraceReader, *, trace_name: str, sidecar: str | os.PathLike[str] | None = None
) -> TraceReport:
    """The report of every run in ``model`` as plain data.

    Args:
        model: A model built over ``reader``.
        reader: The open trace.
        trace_name: How the report names the trace (its file name).
        sidecar: A backtrack sidecar to include, if any.

    Raises:
        BacktrackError: The sidecar cannot be read.
    """
    header = reader.header
    torn = reader.torn_tail()
    return {
        "trace": trace_name,
        "producer": header.producer,
        "schema_version": header.schema_version,
        "invalid_lines": len(model.invalid_lines),
        "opaque_lines": len(model.opaque_lines),
        "torn_tail": None if torn is None else {"line": torn.line, "bytes": torn.length},
        "runs": [_run_report(model, run) for run in model.runs],
        "backtrack": None
        if sidecar is None
        else backtrack_section(load_sidecar(sidecar), run_ids={run.run_id for run in model.runs}),
    }


def report_trace(
    trace: str | os.PathLike[str], *, sidecar: str | os.PathLike[str] | None = None, find_sidecar: bool = True
) -> TraceReport:
    """Open a trace, build its model and report it (with the sidecar beside it, when there is one).

    Args:
        trace: The trace file.
        sidecar: The backtrack sidecar to include; by default ``sidecar_path_for(trace)`` when it exists.
        find_sidecar: Look for the sidecar beside the trace when none is given.

    Raises:
        TraceError: The trace cannot be read (see :class:`~fpdebug.trace.reader.TraceReader`).
        BacktrackError: The sidecar cannot be read.
    """
    from fpdebug.trace.model import RunModel
    from fpdebug.trace.reader import TraceReader

    if sidecar is None and find_sidecar:
        beside = sidecar_path_for(trace)
        sidecar = beside if beside.is_file() else None
    with TraceReader(trace) as reader:
        model = RunModel(reader)
        for line, record in reader.iter_records(0):
            model.feed(line, record)
        return build_report(model, reader, trace_name=Path(trace).name, sidecar=sidecar)
