"""The Markdown run report written run by run, in memory that does not grow with the number of runs.

:func:`~fpdebug.export.report.report_trace` builds one :class:`~fpdebug.trace.model.RunModel` of the
whole file and the report of every run before the first byte is written; then the Markdown is one
string, and a redacted copy of it. A file of 50,000 one-record runs took ``fpdebug report`` to
262 MB (about 62 MB now). :func:`write_markdown_report` writes the same bytes holding one open run at a time:

- **A first, cheap pass** reads each line's envelope (``run_id`` only, no model) and notes the
  first and last line of every run (:func:`~fpdebug.trace.run_ranges.plan_runs`).
- **The second pass** feeds the model; right after a run's last line, its report is built,
  redacted and rendered, its Markdown goes to a spool file, and the run leaves the model. On a
  large trace whose runs lie one after another, forked workers each take a range of whole runs
  (:func:`~fpdebug.trace.run_ranges.map_ranges`, issue 22), each with its own spool.
- **At the end** the head (the trace's notes need the count of bad lines, known only now) is
  written, then each run's Markdown copied from the spools in order of first appearance (the
  order of :func:`~fpdebug.export.report_markdown.render_markdown`), then the backtrack verdicts.

A file whose envelopes disagree with its records (a run's record after the line the first pass
named as its last; a ``run_id`` the envelope reader did not see) cannot be streamed safely: the
report falls back to the whole model, so the output is the same bytes in every case.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fpdebug.backtrack.sidecar import Sidecar, sidecar_path_for
from fpdebug.export.report import TraceReport, backtrack_section, build_report, run_report
from fpdebug.export.report_markdown import markdown_head, markdown_run, markdown_tail, render_markdown
from fpdebug.trace.records import PEEK_PREFIX, InvalidRecord, OpaqueRecord, peek_line
from fpdebug.trace.schema import TraceHeader

if TYPE_CHECKING:
    from fpdebug.export.report import RunReport
    from fpdebug.trace.model import Run, RunModel
    from fpdebug.trace.reader import TraceReader
    from fpdebug.trace.records import Record
    from fpdebug.trace.redact import Redactor
    from fpdebug.trace.run_ranges import RunPlan, SpoolPart

__all__ = ["default_sidecar", "run_last_lines", "write_markdown_report"]


def run_last_lines(reader: TraceReader, stop: int) -> dict[str, int]:
    """The last line of every run id an envelope names (lines ``1 .. stop - 1``), ordered by that line."""
    last: dict[str, int] = {}
    for line, _offset, raw in reader.iter_raw(1, stop=stop):
        peek = peek_line(raw[:PEEK_PREFIX], lambda raw=raw: raw)  # type: ignore[misc]
        if peek.run_id is not None:
            last.pop(peek.run_id, None)  # re-inserted: the dict stays ordered by last line
            last[peek.run_id] = line
    return last


class _Mismatch(Exception):
    """The records name a run where the envelopes did not: stream no further."""


def default_sidecar(
    trace: str | os.PathLike[str], sidecar: str | os.PathLike[str] | None
) -> str | os.PathLike[str] | None:
    """``sidecar``, or the backtrack sidecar beside ``trace`` when there is one (as report_trace finds it)."""
    if sidecar is not None:
        return sidecar
    beside = sidecar_path_for(trace)
    return beside if beside.is_file() else None


def write_markdown_report(
    reader: TraceReader,
    write: Callable[[str], object],
    *,
    name: str,
    redactor: Redactor,
    sidecar: Sidecar | None = None,
) -> None:
    """Write ``render_markdown(redactor.redact_value(report))`` of the open trace, run by run.

    Args:
        reader: The open trace (read twice: the envelopes, then the records).
        write: Called with each piece of the Markdown, in order.
        name: How the report names the trace (its file name).
        redactor: Redacts every value of the report before it is rendered.
        sidecar: The backtrack sidecar to include, as :func:`~fpdebug.backtrack.sidecar.load_sidecar` read it.
    """
    try:
        _stream(reader, name, sidecar, redactor, write)
        return
    except _Mismatch:
        pass
    # The whole model, as report_trace builds it (a crafted file only).
    from fpdebug.trace.model import RunModel

    model = RunModel(reader)
    for line, record in reader.iter_records(0):
        model.feed(line, record)
    report = build_report(model, reader, trace_name=name)
    if sidecar is not None:
        report["backtrack"] = backtrack_section(sidecar, run_ids={run.run_id for run in model.runs})
    write(render_markdown(redactor.redact_value(report)))


def _stream(
    reader: TraceReader,
    name: str,
    saved: Sidecar | None,
    redactor: Redactor,
    write: Callable[[str], object],
) -> None:
    from fpdebug.trace.run_ranges import RangeMismatch, map_ranges, plan_runs, spooled_texts, warm_up

    stop = len(reader)  # lines indexed later (a growing file) are not this report's
    plan = plan_runs(reader, stop)
    wanted = {backtrack.report.run_id for backtrack in saved.backtracks} if saved is not None else set()
    with tempfile.TemporaryDirectory(prefix="fpdebug-report-") as directory:
        sweep = _RangeSweep(reader, plan, wanted, redactor, directory)
        try:
            parts = list(map_ranges(plan, sweep.range, prepare=lambda: warm_up(reader)))
        except RangeMismatch:  # a record names another run than its envelope: one range after all
            sweep.plan = plan = plan.single()
            parts = list(map_ranges(plan, sweep.range))
        runs = sum(part.runs for part in parts)
        torn = reader.torn_tail()
        whole: TraceReport = {
            "trace": name,
            "producer": reader.header.producer,
            "schema_version": reader.header.schema_version,
            "invalid_lines": sum(part.invalid_lines for part in parts),
            "opaque_lines": sum(part.opaque_lines for part in parts),
            "torn_tail": None if torn is None else {"line": torn.line, "bytes": torn.length},
            "runs": [],
            "backtrack": None
            if saved is None
            else backtrack_section(saved, run_ids={run_id for part in parts for run_id in part.seen}),
        }
        head = redactor.redact_value(whole)
        write("\n".join(markdown_head(head, has_runs=bool(runs))) + "\n")
        only = [part.first for part in parts if part.first is not None]
        texts = spooled_texts([part.spool for part in parts if part.spool is not None])
        if runs == 1 and only:  # the only run is rendered as the whole report (no run heading)
            for _text in texts:  # read (and removed) all the same
                pass
            write("\n".join(markdown_run(only[0], several=False)) + "\n")
        else:
            for text in texts:
                write(text)
        write("\n".join(markdown_tail(head)))


@dataclass(slots=True)
class _Part:
    """What one range of whole runs gave (pickled back from a worker)."""

    runs: int = 0
    invalid_lines: int = 0
    opaque_lines: int = 0
    seen: set[str] = field(default_factory=set)
    """The runs the sidecar's backtracks explain that this range holds."""
    first: RunReport | None = None
    """The report of the range's only run (when it has exactly one)."""
    spool: SpoolPart | None = None
    """Each run's Markdown section, by first line."""


class _RangeSweep:
    """Reads a range of whole runs once; each run's report is built, redacted and rendered right
    after its last line, spooled, and the run leaves the model."""

    def __init__(self, reader: TraceReader, plan: RunPlan, wanted: set[str], redactor: Redactor, spool: str):
        self.reader = reader
        self.plan = plan
        self.wanted = wanted
        self.redactor = redactor
        self.spool = spool

    def range(self, start: int, stop: int) -> _Part:
        """Lines ``start .. stop - 1`` (see the class)."""
        from fpdebug.trace.model import RunModel
        from fpdebug.trace.run_ranges import RangeMismatch, RunSpool

        plan, last = self.plan, self.plan.last
        strict = len(plan.ranges) > 1  # the runs must be whole in this range
        order = iter([(run_id, end) for run_id, end in last.items() if start <= end < stop])
        next_end = next(order, None)
        held = _HeldRecords(self.reader)
        model = RunModel(held)
        spool = RunSpool(self.spool)
        part = _Part()
        for line, record in self.reader.iter_records(start, stop=stop):
            if not isinstance(record, InvalidRecord | OpaqueRecord | TraceHeader):
                run_id = record.run_id
                if last.get(run_id, -1) < line:
                    raise _Mismatch(run_id)
                if strict and not plan.owns(start, run_id, line):
                    raise RangeMismatch(run_id)
                held.hold(run_id, line, record)
            model.feed(line, record)
            while next_end is not None and next_end[1] <= line:
                run_id, _last = next_end
                next_end = next(order, None)
                run = model.run(run_id)
                if run is None:  # an envelope of invalid lines only
                    continue
                report = _finished(model, run_id, run, self.redactor)
                held.drop(run_id)
                if run.run_id in self.wanted:
                    part.seen.add(run.run_id)
                part.first = report if not len(spool) else None
                spool.add(run.first_line, "\n".join(markdown_run(report, several=True)) + "\n")
        if model.runs:  # a run the envelopes never closed (cannot happen: the mismatch check)
            raise _Mismatch(model.runs[0].run_id)
        part.runs, part.spool = len(spool), spool.close()
        part.invalid_lines, part.opaque_lines = len(model.invalid_lines), len(model.opaque_lines)
        return part


HELD_RECORDS = 50_000
"""The most parsed records :class:`_HeldRecords` keeps (a run longer than this is partly read twice)."""


class _HeldRecords:
    """The reader, with the records of the runs still open kept as the sweep parsed them.

    A run's report reads every record of the run again (``model.record``); through the reader
    alone that is a second ``pread`` and validation of each line, random once the reader's cache
    is outrun (issue 22: each line validated about 1.8 times). A run's records are dropped when
    its report is done, and no more than :data:`HELD_RECORDS` are kept at once, so memory stays
    bounded by the longest open runs, not the file. The record given out is the one the reader
    would give: both come from the same line's bytes.
    """

    def __init__(self, reader: TraceReader) -> None:
        self.reader = reader
        self._records: dict[int, Record] = {}
        self._lines: dict[str, list[int]] = {}

    def hold(self, run_id: str, line: int, record: Record) -> None:
        """Keep ``record`` (on ``line``, of ``run_id``) until :meth:`drop` of its run, if there is room."""
        if len(self._records) < HELD_RECORDS:
            self._records[line] = record
            self._lines.setdefault(run_id, []).append(line)

    def drop(self, run_id: str) -> None:
        """Forget the records of a finished run."""
        for line in self._lines.pop(run_id, ()):
            del self._records[line]

    def __getitem__(self, line: int) -> Record:
        record = self._records.get(line)
        return self.reader[line] if record is None else record

    def __len__(self) -> int:
        return len(self.reader)

    def __getattr__(self, name: str) -> object:
        return getattr(self.reader, name)


def _finished(model: RunModel, run_id: str, run: Run, redactor: Redactor) -> RunReport:
    """The run's report, redacted as the whole report's ``runs`` entry is; the run leaves the model
    (nothing of it is read again: every later line belongs to other runs)."""
    report: RunReport = redactor.redact_value({"runs": [run_report(model, run)]})["runs"][0]
    with model.lock:
        model.runs.remove(run)
        del model._runs[run_id]
        if model.all_iterations:
            gone = {id(iteration) for iteration in run.iterations()}
            model.all_iterations[:] = [it for it in model.all_iterations if id(it) not in gone]
    return report
