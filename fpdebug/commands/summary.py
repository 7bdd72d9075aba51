"""``fpdebug summary TRACE [--json]``: runs, turns, iterations, events by kind, leases, parks, tokens.

With the honesty answer layer armed, each run also counts the values its answers stated that no
source holds (``unsupported_values``, from the answer layer's ``finding`` rows).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
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
    """Read the trace in one sweep (building each run's model and finding problems as it goes) and
    print: each run is summed up once its last line is read, then dropped, so memory holds the
    runs in progress and one compact summary per run, not a model of the whole file."""
    from fpdebug.commands import collector_paused, output_stream
    from fpdebug.trace.reader import TraceReader

    with TraceReader(args.trace) as reader, collector_paused():
        sweep = _Sweep(reader)
        sweep.run()
        facts = _head(args.trace, reader, sweep)
        if args.json:
            with output_stream(None, trace=args.trace, encoding="ascii", redacted=True) as write:
                _write_json(write, facts, sweep.summaries)
        else:
            _write_text(facts, sweep.summaries)
    return 0


class _Sweep:
    """One pass over a trace: problems, counts, and each run summed up after its last line.

    A first pass reads each line's envelope only (``run_id``), to know each run's last line; the
    second feeds every record to its run's own :class:`~fpdebug.trace.model.RunModel` and, after
    the run's last line, keeps its summary as compact JSON and drops the model (issue 22:
    ``summary`` held a model of the whole file, 90 % of its size in RSS).
    """

    def __init__(self, reader: TraceReader) -> None:
        self.reader = reader
        self.problems: dict[str, int] = {}
        self.counts: dict[str, int] = {}
        self.invalid_lines: list[int] = []
        self.opaque_lines: list[int] = []
        self.summaries: list[str] = []
        """Each run's :class:`RunSummary` as compact JSON, in order of the run's first line."""
        self._slots: dict[str, int] = {}

    def run(self) -> None:
        """Read every line once (after the envelope pass)."""
        from fpdebug.trace.cost import RunCosts
        from fpdebug.trace.model import RunModel
        from fpdebug.trace.reader import ProblemScanner
        from fpdebug.trace.records import InvalidRecord, OpaqueRecord
        from fpdebug.trace.schema import AnswerAssessmentRow, FindingEvent, LlmCallEvent, TraceHeader

        reader = self.reader
        stop = len(reader)
        ends = iter(_last_lines(reader, stop).items())
        next_end = next(ends, None)
        scanner = ProblemScanner(reader)
        problems = self.problems
        models: dict[str, RunModel] = {}
        answers: dict[str, AnswerCounts] = {}
        costs: dict[str, RunCosts] = {}
        for line, record in reader.iter_records(0, stop=stop):
            for problem in scanner.check(line, record):
                problems[problem.code] = problems.get(problem.code, 0) + 1
            if isinstance(record, TraceHeader):
                pass
            elif isinstance(record, InvalidRecord):
                self.invalid_lines.append(line)
            elif isinstance(record, OpaqueRecord):
                self.opaque_lines.append(line)
            else:
                run_id = record.run_id
                self.counts[record.kind] = self.counts.get(record.kind, 0) + 1
                model = models.get(run_id)
                if model is None:
                    model = models[run_id] = RunModel()
                    self._slot(run_id)
                model.feed(line, record)
                if isinstance(record, LlmCallEvent):
                    costs.setdefault(run_id, RunCosts()).add(line, record)
                if isinstance(record, FindingEvent) and record.layer == "answer":
                    counted = answers.setdefault(run_id, {"assessed": 0, "unsupported": 0})
                    for row in record.rows:
                        if isinstance(row, AnswerAssessmentRow):
                            counted["assessed"] += 1
                            counted["unsupported"] += sum(1 for value in row.values if not value.supported)
            while next_end is not None and next_end[1] <= line:
                self._close(next_end[0], models, answers, costs)
                next_end = next(ends, None)
        for problem in scanner.finish():
            problems[problem.code] = problems.get(problem.code, 0) + 1
        for run_id in list(models):  # a run the envelope pass placed elsewhere (cannot happen)
            self._close(run_id, models, answers, costs)

    def _slot(self, run_id: str) -> None:
        if run_id not in self._slots:
            self._slots[run_id] = len(self.summaries)
            self.summaries.append("")

    def _close(
        self,
        run_id: str,
        models: dict[str, RunModel],
        answers: dict[str, AnswerCounts],
        costs: dict[str, RunCosts],
    ) -> None:
        from fpdebug.trace.cost import RunCosts

        model = models.pop(run_id, None)
        if model is None or not model.runs:
            return
        facts = _run_facts(
            model.runs[0],
            answers.pop(run_id, {"assessed": 0, "unsupported": 0}),
            costs.pop(run_id, RunCosts()),
        )
        self.summaries[self._slots[run_id]] = json.dumps(facts, ensure_ascii=True)


def _last_lines(reader: TraceReader, stop: int) -> dict[str, int]:
    """Each run's last line among lines ``1 .. stop - 1``, ordered by that line (envelopes only)."""
    from fpdebug.trace.records import PEEK_PREFIX, peek_line

    last: dict[str, int] = {}
    for line, _offset, raw in reader.iter_raw(1, stop=stop):
        peek = peek_line(raw[:PEEK_PREFIX], lambda raw=raw: raw)  # type: ignore[misc]
        if peek.run_id is not None:
            last.pop(peek.run_id, None)  # re-inserted: the dict stays ordered by last line
            last[peek.run_id] = line
    return last


def _head(path: str, reader: TraceReader, sweep: _Sweep) -> TraceSummary:
    header = reader.header
    return {
        "trace": path,
        "format": header.format,
        "schema_version": header.schema_version,
        "producer": header.producer,
        "created": header.created.isoformat(),
        "bytes": reader.size,
        "lines": len(reader),
        "events": sum(sweep.counts.values()),
        "problems": sum(sweep.problems.values()),
        "problems_by_code": dict(sorted(sweep.problems.items())),
        "invalid_lines": sweep.invalid_lines[:100],
        "opaque_lines": sweep.opaque_lines[:100],
        "counts": dict(sorted(sweep.counts.items())),
        "runs": [],
    }


_RUNS_MARK = "@@fpdebug-runs@@"


def _write_json(write: Callable[[str], object], facts: TraceSummary, runs: list[str]) -> None:
    """``json.dumps(facts with its runs, indent=2, ensure_ascii=True)`` and a newline, run by run;
    each piece redacted as the JSON document it is (as ``export`` does)."""
    from fpdebug.trace.redact import default_redactor

    redact = default_redactor().redact_json
    if not runs:
        write(redact(json.dumps(facts, indent=2, ensure_ascii=True)) + "\n")
        return
    frame = redact(json.dumps({**facts, "runs": [_RUNS_MARK]}, indent=2, ensure_ascii=True))
    head, _, tail = frame.partition(json.dumps(_RUNS_MARK))
    indent = head[head.rindex("\n") + 1 :]
    separator = ""
    for text in runs:
        piece = redact(json.dumps(json.loads(text), indent=2, ensure_ascii=True))
        write(head + separator + piece.replace("\n", "\n" + indent))
        head, separator = "", ",\n" + indent
    write(tail + "\n")


def _write_text(facts: TraceSummary, runs: list[str]) -> None:
    """:func:`render` of the facts with their runs, printed run by run."""
    import sys

    write = sys.stdout.write
    write("\n".join(_render_head(facts)))
    for text in runs:
        write("\n" + "\n".join(_render_run(json.loads(text))))
    tail = _render_counts(facts["counts"])
    write("".join("\n" + line for line in tail) + "\n")


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
    lines = _render_head(facts)
    for run in facts["runs"]:
        lines += _render_run(run)
    lines += _render_counts(facts["counts"])
    return "\n".join(lines)


def _render_head(facts: TraceSummary) -> list[str]:
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
    return lines


def _render_run(run: RunSummary) -> list[str]:
    from fpdebug.trace.inert import inert_line as safe

    status = run["status"] + (f" ({safe(run['error'])})" if run["error"] else "")
    lines = [
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
    return lines


def _render_counts(counts: dict[str, int]) -> list[str]:
    if not counts:
        return []
    width = max(map(len, counts))
    return ["", "events by kind:", *(f"  {kind:<{width}}  {n:>8}" for kind, n in counts.items())]
