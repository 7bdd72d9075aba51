"""``fpdebug summary TRACE [--json]``: runs, turns, iterations, events by kind, leases, parks, tokens.

With the honesty answer layer armed, each run also counts the values its answers stated that no
source holds (``unsupported_values``, from the answer layer's ``finding`` rows).
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from fpdebug.trace.cost import RunCosts
    from fpdebug.trace.model import Run, RunModel
    from fpdebug.trace.reader import TraceReader


class LeaseCounts(TypedDict):
    """Lease lifetimes of a run, counted."""

    granted: int
    pruned: int
    spent: int
    tenure_ended: int
    alive: int


class MapSummary(TypedDict):
    """One map's engagement, summed up."""

    standing: str | None
    parks: int
    reengagements: int


class RunSummary(TypedDict):
    """One run, summed up."""

    run_id: str
    status: str
    error: str | None
    agent_name: str | None
    provider: str | None
    model: str | None
    turns: int
    iterations: int
    llm_calls: int
    tool_results: int
    input_tokens: int
    output_tokens: int
    cost: dict[str, object]
    stopped_early: list[str]
    refusals: list[str]
    leases: LeaseCounts
    parks: int
    reengagements: int
    maps: dict[str, MapSummary]
    route_conflicts: int
    skills_rejected: int
    reroutes_superseded: int
    answers_assessed: int
    unsupported_values: int
    counts: dict[str, int]


class AnswerCounts(TypedDict):
    """The answer layer's assessments of one run, counted."""

    assessed: int
    unsupported: int


class TraceSummary(TypedDict):
    """What ``--json`` prints."""

    trace: str
    format: str
    schema_version: int
    producer: str
    created: str
    bytes: int
    lines: int
    events: int
    problems: int
    problems_by_code: dict[str, int]
    invalid_lines: list[int]
    opaque_lines: list[int]
    counts: dict[str, int]
    runs: list[RunSummary]


HELP = "Summarise a trace: runs, turns, iterations, events by kind, leases, parks, tokens, problems."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``TRACE`` and ``--json``."""
    parser.add_argument("trace", metavar="TRACE", help="the trace file (.jsonl) to summarise")
    parser.add_argument("--json", action="store_true", help="print one JSON object (for scripts)")


def run(args: argparse.Namespace) -> int:
    """Read the trace once (building the model and finding problems in the same sweep) and print."""
    from fpdebug.commands import collector_paused
    from fpdebug.trace.cost import RunCosts
    from fpdebug.trace.model import RunModel
    from fpdebug.trace.reader import ProblemScanner, TraceReader
    from fpdebug.trace.schema import AnswerAssessmentRow, FindingEvent, LlmCallEvent

    with TraceReader(args.trace) as reader, collector_paused():
        model = RunModel(reader)
        scanner = ProblemScanner(reader)
        problems: dict[str, int] = {}
        answers: dict[str, AnswerCounts] = {}
        costs: dict[str, RunCosts] = {}
        for line, record in reader.iter_records(0):
            model.feed(line, record)
            if isinstance(record, LlmCallEvent):
                costs.setdefault(record.run_id, RunCosts()).add(line, record)
            for problem in scanner.check(line, record):
                problems[problem.code] = problems.get(problem.code, 0) + 1
            if isinstance(record, FindingEvent) and record.layer == "answer":
                counted = answers.setdefault(record.run_id, {"assessed": 0, "unsupported": 0})
                for row in record.rows:
                    if isinstance(row, AnswerAssessmentRow):
                        counted["assessed"] += 1
                        counted["unsupported"] += sum(1 for value in row.values if not value.supported)
        for problem in scanner.finish():
            problems[problem.code] = problems.get(problem.code, 0) + 1
        facts = summarise(args.trace, reader, model, problems, answers=answers, costs=costs)
    if args.json:
        # ensure_ascii: every control or bidi character from the trace comes out escaped.
        print(json.dumps(facts, indent=2, ensure_ascii=True))
    else:
        print(render(facts))
    return 0


def summarise(
    path: str,
    reader: TraceReader,
    model: RunModel,
    problems: dict[str, int],
    *,
    answers: dict[str, AnswerCounts] | None = None,
    costs: dict[str, RunCosts] | None = None,
) -> TraceSummary:
    """The summary as plain data (what ``--json`` prints); lists of lines are capped at 100.

    ``answers`` holds each run's answer assessments counted (run id → counts); a run without any
    counts zero. ``costs`` holds each run's calls priced (run id → costs, :mod:`fpdebug.trace.cost`).
    """
    from fpdebug.trace.cost import RunCosts

    answers = answers or {}
    costs = costs or {}
    header = reader.header
    return {
        "trace": path,
        "format": header.format,
        "schema_version": header.schema_version,
        "producer": header.producer,
        "created": header.created.isoformat(),
        "bytes": reader.size,
        "lines": len(reader),
        "events": model.events,
        "problems": sum(problems.values()),
        "problems_by_code": dict(sorted(problems.items())),
        "invalid_lines": model.invalid_lines[:100],
        "opaque_lines": model.opaque_lines[:100],
        "counts": dict(sorted(model.counts.items())),
        "runs": [
            _run_facts(
                run,
                answers.get(run.run_id, {"assessed": 0, "unsupported": 0}),
                costs.get(run.run_id, RunCosts()),
            )
            for run in model.runs
        ],
    }


def _run_facts(run: Run, answers: AnswerCounts, costs: RunCosts) -> RunSummary:
    leases = run.leases
    return {
        "run_id": run.run_id,
        "status": run.status,
        "error": run.error,
        "agent_name": run.agent_name,
        "provider": run.provider,
        "model": run.model,
        "turns": len(run.turns),
        "iterations": run.iteration_count,
        "llm_calls": run.counts.get("llm_call", 0),
        "tool_results": run.counts.get("tool_result", 0),
        "input_tokens": run.input_tokens,
        "output_tokens": run.output_tokens,
        "cost": costs.run.as_json(),
        "stopped_early": [turn.stopped_early for turn in run.turns if turn.stopped_early is not None],
        # A refused answer is flagged, never passed off as a plain completed one (issue 17).
        "refusals": [
            f"turn {turn.number} ({turn.refusal})" for turn in run.turns if turn.refusal is not None
        ],
        "leases": {
            "granted": sum(1 for lease in leases if lease.grant_line is not None),
            "pruned": sum(1 for lease in leases if not lease.alive),
            "spent": sum(1 for lease in leases if lease.state == "spent"),
            "tenure_ended": sum(1 for lease in leases if lease.state == "tenure-ended"),
            "alive": sum(1 for lease in leases if lease.alive),
        },
        "parks": run.parks,
        "reengagements": run.reengagements,
        "maps": {
            map_id: {
                "standing": timeline.standing,
                "parks": timeline.parks,
                "reengagements": timeline.reengagements,
            }
            for map_id, timeline in run.maps.items()
        },
        "route_conflicts": run.counts.get("route_conflict", 0),
        "skills_rejected": run.counts.get("skill_rejected", 0),
        "reroutes_superseded": run.counts.get("reroute_superseded", 0),
        "answers_assessed": answers["assessed"],
        "unsupported_values": answers["unsupported"],
        "counts": dict(sorted(run.counts.items())),
    }


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def render(facts: TraceSummary) -> str:
    """The human summary. Every string that came from the trace goes through ``inert_line``."""
    from fpdebug.trace.inert import inert_line as safe

    lines = [
        f"{safe(facts['trace'])}: {facts['format']} schema_version {facts['schema_version']}, "
        f"producer {safe(facts['producer'])}, created {facts['created']}",
    ]
    detail = ", ".join(f"{n} {code}" for code, n in facts["problems_by_code"].items())
    problems = _plural(facts["problems"], "problem")
    if detail:
        problems += f" ({detail}; `fpdebug validate` lists them)"
    lines.append(
        f"{_plural(facts['lines'], 'line')} ({_plural(facts['events'], 'event')}), "
        f"{_plural(facts['bytes'], 'byte')}, {problems}"
    )
    for run in facts["runs"]:
        status = run["status"] + (f" ({safe(run['error'])})" if run["error"] else "")
        lines += [
            "",
            f"run {safe(run['run_id'])}: {status}; provider {safe(str(run['provider']))}, "
            f"model {safe(str(run['model']))}, agent {safe(str(run['agent_name']))}",
            f"  {_plural(run['turns'], 'turn')}, {_plural(run['iterations'], 'iteration')}, "
            f"{_plural(run['llm_calls'], 'LLM call')}, {_plural(run['tool_results'], 'tool result')}, "
            f"tokens {run['input_tokens']} in / {run['output_tokens']} out, cost {safe(str(run['cost']['text']))}",
        ]
        if run["stopped_early"]:
            lines.append(f"  stopped early: {', '.join(run['stopped_early'])}")
        if run["refusals"]:
            lines.append(f"  refused: {safe(', '.join(run['refusals']))}")
        leases = run["leases"]
        lines.append(
            f"  leases: {leases['granted']} granted, {leases['pruned']} pruned ({leases['spent']} spent, "
            f"{leases['tenure_ended']} tenure-ended), {leases['alive']} alive"
        )
        for map_id, timeline in run["maps"].items():
            lines.append(
                f"  map {safe(map_id)}: {timeline['standing']}, {_plural(timeline['parks'], 'park')}, "
                f"{_plural(timeline['reengagements'], 're-engagement')}"
            )
        lines.append(
            f"  routing: {_plural(run['route_conflicts'], 'route conflict')}, "
            f"{_plural(run['skills_rejected'], 'skill')} rejected, "
            f"{_plural(run['reroutes_superseded'], 'reroute')} superseded"
        )
        if run["answers_assessed"]:
            lines.append(
                f"  honesty: {_plural(run['unsupported_values'], 'unsupported value')} in "
                f"{_plural(run['answers_assessed'], 'assessed answer')}"
            )
    counts = facts["counts"]
    if counts:
        width = max(map(len, counts))
        lines += ["", "events by kind:", *(f"  {kind:<{width}}  {n:>8}" for kind, n in counts.items())]
    return "\n".join(lines)
