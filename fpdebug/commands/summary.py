"""``fpdebug summary TRACE [--json]``: runs, turns, iterations, events by kind, leases, parks, tokens.

With the honesty answer layer armed, each run also counts the values its answers stated that no
source holds (``unsupported_values``, from the answer layer's ``finding`` rows).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from fpdebug.trace.cost import RunCosts
    from fpdebug.trace.model import Run, RunModel
    from fpdebug.trace.reader import TraceReader
    from fpdebug.trace.run_ranges import RunPlan, SpoolPart


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


class FileFacts(TypedDict):
    """The trace file's own facts, which open what ``--json`` prints."""

    trace: str
    format: str
    schema_version: int
    producer: str
    created: str
    bytes: int
    lines: int


class TraceSummary(FileFacts):
    """What ``--json`` prints."""

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
    print: each run is summed up once its last line is read, then dropped, and its output spooled
    to a temporary file, so memory holds the runs in progress, not a model or a summary of every
    run. A large trace whose runs lie one after another is swept by forked workers over ranges of
    whole runs (:mod:`fpdebug.trace.run_ranges`); the output is the same bytes."""
    import tempfile

    from fpdebug.commands import collector_paused, output_stream
    from fpdebug.trace.reader import TraceReader
    from fpdebug.trace.run_ranges import spooled_texts

    with (
        TraceReader(args.trace) as reader,
        collector_paused(),
        tempfile.TemporaryDirectory(prefix="fpdebug-summary-") as spool,
    ):
        totals = sweep(reader, spool, as_json=args.json)
        facts = _head(args.trace, reader, totals)
        runs = spooled_texts([part.spool for part in totals.parts if part.spool is not None])
        if args.json:
            with output_stream(None, trace=args.trace, encoding="ascii", redacted=True) as write:
                _write_json(write, facts, runs)
        else:
            _write_text(facts, runs)
    return 0


_RUN_INDENT = " " * 4
"""Where each run's JSON sits in the document (``json.dumps(..., indent=2)``: an item of a top-level list)."""


@dataclass(slots=True)
class _Part:
    """What one range of lines gave (pickled back from a worker)."""

    counts: dict[str, int] = field(default_factory=dict)
    problems: dict[str, int] = field(default_factory=dict)
    """The records' own problems by code (``seq`` is judged across ranges by the merge)."""
    seqs: list[tuple[int, int | None]] = field(default_factory=list)
    """Each line whose ``seq`` is not its line number (``None``: unreadable)."""
    invalid_lines: list[int] = field(default_factory=list)
    opaque_lines: list[int] = field(default_factory=list)
    spool: SpoolPart | None = None
    """Each run's output, by first line."""


@dataclass(slots=True)
class _Totals:
    """The whole trace's counts, and each range's part (for its spooled runs)."""

    parts: list[_Part]
    counts: dict[str, int]
    problems: dict[str, int]
    invalid_lines: list[int]
    opaque_lines: list[int]


def sweep(reader: TraceReader, spool: str, *, as_json: bool, workers: int | None = None) -> _Totals:
    """Every line read once, by ranges of whole runs (one range in this process for a small file,
    interleaved runs, or no ``fork``); the parts merged as one sweep of the file would count them.

    Args:
        reader: The open trace.
        spool: A directory for the runs' spooled output.
        as_json: Spool each run as the ``--json`` document's piece (else as its text lines).
        workers: Processes to use (default: the cores this process may use).
    """
    from fpdebug.trace.run_ranges import RangeMismatch, map_ranges, plan_runs, warm_up

    plan = plan_runs(reader, len(reader), workers=workers)
    try:
        parts = list(
            map_ranges(
                plan,
                lambda start, stop: _Sweep(reader, plan, spool, as_json).range(start, stop),
                prepare=lambda: warm_up(reader),
            )
        )
    except RangeMismatch:  # a record names another run than its envelope: one range after all
        plan = plan.single()
        parts = list(
            map_ranges(plan, lambda start, stop: _Sweep(reader, plan, spool, as_json).range(start, stop))
        )
    return _merge(reader, plan.stop, parts)


def _merge(reader: TraceReader, stop: int, parts: list[_Part]) -> _Totals:
    """The parts' counts summed, and ``seq`` judged across them (as :class:`ProblemScanner` would)."""
    from fpdebug.trace.reader import ProblemScanner

    counts: dict[str, int] = {}
    problems: dict[str, int] = {}
    scanner = ProblemScanner(reader)
    done = 0  # the last line judged

    def count(code: str) -> None:
        problems[code] = problems.get(code, 0) + 1

    for part in parts:
        for kind, n in part.counts.items():
            counts[kind] = counts.get(kind, 0) + n
        for code, n in part.problems.items():
            problems[code] = problems.get(code, 0) + n
        for line, seq in part.seqs:
            if line > done + 1 and scanner.check_healthy(done + 1, line - 1) is not None:
                count("seq")
            if scanner.check_seq(line, seq) is not None:
                count("seq")
            done = line
    if stop - 1 > done and scanner.check_healthy(done + 1, stop - 1) is not None:
        count("seq")
    for problem in scanner.finish():
        count(problem.code)
    return _Totals(
        parts,
        counts,
        problems,
        [line for part in parts for line in part.invalid_lines][:_LISTED],
        [line for part in parts for line in part.opaque_lines][:_LISTED],
    )


_LISTED = 100
"""How many invalid and opaque lines the summary lists."""


class _Sweep:
    """One pass over a range of whole runs: counts, each record's own problems, and each run summed
    up after its last line.

    The plan's envelope pass knows each run's last line; every record is fed to its run's own
    :class:`~fpdebug.trace.model.RunModel` and, after the run's last line, the run's output is
    spooled and the model dropped (issue 22: ``summary`` held a model of the whole file, 90 % of
    its size in RSS).
    """

    def __init__(self, reader: TraceReader, plan: RunPlan, spool: str, as_json: bool) -> None:
        from fpdebug.trace.run_ranges import RunSpool

        self.reader = reader
        self.plan = plan
        self.as_json = as_json
        self.spool = RunSpool(spool)
        self.part: _Part | None = None
        self._firsts: dict[str, int] = {}

    def range(self, start: int, stop: int) -> _Part:
        """Read lines ``start .. stop - 1`` once; what they gave, the runs' output spooled."""
        from fpdebug.trace.cost import RunCosts
        from fpdebug.trace.model import RunModel
        from fpdebug.trace.reader import record_problems
        from fpdebug.trace.records import InvalidRecord, OpaqueRecord
        from fpdebug.trace.run_ranges import RangeMismatch
        from fpdebug.trace.schema import AnswerAssessmentRow, FindingEvent, LlmCallEvent, TraceHeader

        plan = self.plan
        strict = len(plan.ranges) > 1  # the runs must be whole in this range
        ends = iter([(run_id, last) for run_id, last in plan.last.items() if start <= last < stop])
        next_end = next(ends, None)
        part = _Part()
        problems, counts, seqs = part.problems, part.counts, part.seqs
        models: dict[str, RunModel] = {}
        answers: dict[str, AnswerCounts] = {}
        costs: dict[str, RunCosts] = {}
        for line, record in self.reader.iter_records(start, stop=stop):
            if isinstance(record, TraceHeader):
                continue
            for problem in record_problems(line, record):
                problems[problem.code] = problems.get(problem.code, 0) + 1
            if record.seq != line:
                seqs.append((line, record.seq))
            if isinstance(record, InvalidRecord):
                if len(part.invalid_lines) < _LISTED:
                    part.invalid_lines.append(line)
            elif isinstance(record, OpaqueRecord):
                if len(part.opaque_lines) < _LISTED:
                    part.opaque_lines.append(line)
            else:
                run_id = record.run_id
                if strict and not plan.owns(start, run_id, line):
                    raise RangeMismatch(run_id)
                counts[record.kind] = counts.get(record.kind, 0) + 1
                model = models.get(run_id)
                if model is None:
                    model = models[run_id] = RunModel()
                    self._firsts.setdefault(run_id, line)
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
        for run_id in list(models):  # a run the envelope pass placed elsewhere (a crafted file)
            self._close(run_id, models, answers, costs)
        part.spool = self.spool.close()
        return part

    def _close(
        self,
        run_id: str,
        models: dict[str, RunModel],
        answers: dict[str, AnswerCounts],
        costs: dict[str, RunCosts],
    ) -> None:
        from fpdebug.trace.cost import RunCosts
        from fpdebug.trace.redact import default_redactor

        model = models.pop(run_id, None)
        if model is None or not model.runs:
            return
        facts = _run_facts(
            model.runs[0],
            answers.pop(run_id, {"assessed": 0, "unsupported": 0}),
            costs.pop(run_id, RunCosts()),
        )
        if self.as_json:  # redacted as the JSON document it is (as export does), indented in place
            text = default_redactor().redact_json(_indented(facts))
            text = text.replace("\n", "\n" + _RUN_INDENT)
        else:
            text = "\n" + "\n".join(_render_run(facts))
        self.spool.add(self._firsts[run_id], text)


def _indented(facts: RunSummary) -> str:
    """``json.dumps(facts, indent=2, ensure_ascii=True)``, printed by orjson when it gives the same text.

    With ``indent`` set, :mod:`json` encodes in pure Python (16 % of ``summary`` in a profile).
    orjson lays out ``OPT_INDENT_2`` the same way; where it spells a token differently (a
    non-ASCII character, DEL, a float such as ``1e+16``, NaN), its compact text differs from
    :mod:`json`'s compact one (C-encoded, fast), and :mod:`json` prints the run.
    """
    import orjson

    try:
        same = orjson.dumps(facts) == json.dumps(facts, separators=(",", ":")).encode()
    except TypeError:  # a lone surrogate orjson will not encode
        same = False
    if same:
        return orjson.dumps(facts, option=orjson.OPT_INDENT_2).decode()
    return json.dumps(facts, indent=2, ensure_ascii=True)


def _file_facts(path: str, reader: TraceReader) -> FileFacts:
    header = reader.header
    return {
        "trace": path,
        "format": header.format,
        "schema_version": header.schema_version,
        "producer": header.producer,
        "created": header.created.isoformat(),
        "bytes": reader.size,
        "lines": len(reader),
    }


def _head(path: str, reader: TraceReader, totals: _Totals) -> TraceSummary:
    return {
        **_file_facts(path, reader),
        "events": sum(totals.counts.values()),
        "problems": sum(totals.problems.values()),
        "problems_by_code": dict(sorted(totals.problems.items())),
        "invalid_lines": totals.invalid_lines,
        "opaque_lines": totals.opaque_lines,
        "counts": dict(sorted(totals.counts.items())),
        "runs": [],
    }


_RUNS_MARK = "@@fpdebug-runs@@"


def _write_json(write: Callable[[str], object], facts: TraceSummary, runs: Iterable[str]) -> None:
    """``json.dumps(facts with its runs, indent=2, ensure_ascii=True)`` and a newline, run by run;
    each piece redacted as the JSON document it is (as ``export`` does). ``runs``: each run's
    piece, redacted and indented to :data:`_RUN_INDENT` by :meth:`_Sweep._close`."""
    from fpdebug.trace.redact import default_redactor

    redact = default_redactor().redact_json
    frame = redact(json.dumps({**facts, "runs": [_RUNS_MARK]}, indent=2, ensure_ascii=True))
    head, _, tail = frame.partition(json.dumps(_RUNS_MARK))
    indent = head[head.rindex("\n") + 1 :]
    assert indent == _RUN_INDENT  # json.dumps' layout: an item of a top-level list
    separator = ""
    for piece in runs:
        write(head + separator + piece)
        head, separator = "", ",\n" + indent
    if separator:
        write(tail + "\n")
    else:  # no run: the empty list, as json.dumps writes it
        write(redact(json.dumps(facts, indent=2, ensure_ascii=True)) + "\n")


def _write_text(facts: TraceSummary, runs: Iterable[str]) -> None:
    """:func:`render` of the facts with their runs, printed run by run (``runs``: each run's text)."""
    import sys

    write = sys.stdout.write
    write("\n".join(_render_head(facts)))
    for text in runs:
        write(text)
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
    return {
        **_file_facts(path, reader),
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
