"""The data behind one open trace: reader, model, timeline and lease rows, loading steps, matchers.

A :class:`TraceSession` never imports Textual. The app's workers call its *steps* (index a chunk,
feed the model a slice, poll for growth) from a thread; widgets read its rows from the UI thread.
Rows only ever grow (append-only lists of the model's own objects), so a reader on the UI thread
always sees a consistent prefix; facts that must agree are read under :attr:`RunModel.lock`.

Timeline rows are the model's :class:`~fpdebug.trace.model.Iteration` objects in order of first
appearance in the file, which is also the order of their first line: a row is found from a line by
bisection, without a per-iteration dictionary (a million-event trace has ~100k iterations).
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Iterator

from fpdebug.trace.model import KIND_CODES, Iteration, LeaseLifetime, Run, RunModel
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.records import Record
from fpdebug.trace.schema import RunStartEvent
from fpdebug.tui.facts import RowFacts, badges_of, invalid_near, row_facts
from fpdebug.tui.query import Query

__all__ = ["FIRST_SLICE", "MODEL_SLICE", "TraceSession"]

FIRST_SLICE = 2_000
"""Lines modelled before the first screen is shown (a few milliseconds of work)."""

MODEL_SLICE = 20_000
"""Lines modelled per step after that (each step ends with a "rows grew" notice)."""

FIRST_CHUNK = 1 << 20
"""Bytes indexed before the first slice is modelled."""

INDEX_CHUNK = 16 << 20
"""Bytes indexed per step afterwards."""

_FACTS_CACHE = 4096


class TraceSession:
    """One open trace and everything derived from it.

    Args:
        reader: An open reader (indexed or not: the loading steps index it).
    """

    def __init__(self, reader: TraceReader) -> None:
        self.reader = reader
        """The reader (the one file descriptor of this trace)."""
        self.model = RunModel(reader)
        """The projections (runs, turns, iterations, leases, maps)."""
        self.iterations: list[Iteration] = []
        """Timeline rows: every iteration, in order of its first line."""
        self.leases: list[LeaseLifetime] = []
        """Lease rows: every lease of every run, in grant order per run."""
        self.index_done = False
        """The first full scan of the file has finished."""
        self.scanned = 0
        """Bytes of the file scanned by the first full scan."""
        self.total = reader.size
        """Bytes the first full scan has to cover."""
        self._seen_iterations: dict[tuple[str, int], int] = {}
        self._seen_leases: dict[str, int] = {}
        self._facts: OrderedDict[tuple[int, int], RowFacts] = OrderedDict()
        self._facts_lock = threading.Lock()
        self._run_starts: dict[str, RunStartEvent | None] = {}
        self._run_numbers: dict[str, int] = {}

    # ------------------------------------------------------------------------------------------
    # Loading steps (called from one worker thread at a time)

    def index_step(self, *, chunk_size: int = INDEX_CHUNK) -> int:
        """Index one chunk of the file; return how many lines it added."""
        progress: list[tuple[int, int]] = []
        added = self.reader.refresh(
            chunk_size=chunk_size,
            progress=lambda done, total: progress.append((done, total)),
            cancelled=lambda: True,
        )
        size = self.reader.size
        if progress:
            done, remaining = progress[-1]
            self.scanned, self.total = size - remaining + done, size
            self.index_done = done >= remaining
        else:
            self.index_done = True
        if self.index_done:
            self.scanned = self.total = size
        return added

    def model_step(self, *, limit: int = MODEL_SLICE) -> int:
        """Feed the model up to ``limit`` more indexed lines and collect new rows; return lines fed."""
        fed = self.model.update(limit=limit)
        if fed:
            self._collect()
        return fed

    def poll(self) -> tuple[int, int]:
        """Index what was appended and model all of it (the follow step).

        Returns:
            ``(lines added, rows added)``.
        """
        rows = len(self.iterations)
        added = self.reader.refresh()
        while self.model_step(limit=MODEL_SLICE):
            pass
        return added, len(self.iterations) - rows

    @property
    def lines(self) -> int:
        """Lines indexed (the header included)."""
        return len(self.reader)

    @property
    def model_done(self) -> bool:
        """The model has caught up with the index, and the first scan is finished."""
        return self.index_done and self.model.lines_fed >= len(self.reader)

    def _collect(self) -> None:
        with self.model.lock:
            fresh: list[Iteration] = []
            for run in self.model.runs:
                for turn in run.turns:
                    key = (run.run_id, turn.number)
                    seen = self._seen_iterations.get(key, 0)
                    if len(turn.iterations) > seen:
                        fresh.extend(turn.iterations[seen:])
                        self._seen_iterations[key] = len(turn.iterations)
                seen = self._seen_leases.get(run.run_id, 0)
                if len(run.leases) > seen:
                    self.leases.extend(run.leases[seen:])
                    self._seen_leases[run.run_id] = len(run.leases)
            fresh.sort(key=lambda iteration: iteration.first_line)
            self.iterations.extend(fresh)

    # ------------------------------------------------------------------------------------------
    # Lookups (UI thread)

    def run_of(self, iteration: Iteration) -> Run | None:
        """The run an iteration belongs to."""
        return self.model.run(iteration.run_id)

    def record(self, line: int) -> Record:
        """The full record on ``line`` (validated, from the reader's cache)."""
        return self.reader[line]

    def run_start(self, run_id: str) -> RunStartEvent | None:
        """A run's declared configuration (its ``run_start`` record), once it has arrived."""
        if run_id in self._run_starts:
            return self._run_starts[run_id]
        run = self.model.run(run_id)
        if run is None or run.start_line is None:
            return None
        record = self.reader[run.start_line]
        start = record if isinstance(record, RunStartEvent) else None
        self._run_starts[run_id] = start
        return start

    def run_number(self, run_id: str) -> int:
        """The 1-based position of a run in the file (for ``2:T1·I3`` labels)."""
        number = self._run_numbers.get(run_id)
        if number is None:
            runs = self.model.runs
            for position in range(len(self._run_numbers), len(runs)):
                self._run_numbers.setdefault(runs[position].run_id, position + 1)
            number = self._run_numbers.get(run_id, 0)
        return number

    def row_of(self, iteration: Iteration) -> int | None:
        """The timeline row of an iteration."""
        rows = self.iterations
        position = bisect_right(rows, iteration.first_line, key=lambda row: row.first_line) - 1
        while position >= 0 and rows[position].first_line == iteration.first_line:
            if rows[position] is iteration:
                return position
            position -= 1
        return None

    def row_at_line(self, line: int) -> int | None:
        """The timeline row whose iteration holds ``line`` (``None`` for run- and turn-level lines)."""
        rows = self.iterations
        position = bisect_right(rows, line, key=lambda row: row.first_line) - 1
        # Iterations rarely interleave; look back a few rows for one that really holds the line.
        for candidate in range(position, max(position - 8, -1), -1):
            iteration = rows[candidate]
            if iteration.first_line <= line <= iteration.last_line and line in iteration.lines:
                return candidate
        return None

    def row_of_pass(self, run_id: str, turn: int | None, number: int | None) -> int | None:
        """The timeline row of ``(run, turn, iteration)``."""
        run = self.model.run(run_id)
        if run is None or turn is None or number is None:
            return None
        iteration = run.iteration(turn, number)
        return self.row_of(iteration) if iteration is not None else None

    def find_iteration(self, number: int, *, turn: int | None = None, near: int = 0) -> int | None:
        """The row of iteration ``number`` (of ``turn`` if given), the one closest after ``near`` first."""
        matches = [
            row
            for row, iteration in enumerate(self.iterations)
            if iteration.number == number and (turn is None or iteration.turn == turn)
        ]
        if not matches:
            return None
        after = [row for row in matches if row >= near]
        return (after or matches)[0]

    def facts(self, row: int) -> RowFacts:
        """The peeked facts of a timeline row (cached while the iteration does not grow)."""
        iteration = self.iterations[row]
        key = (row, len(iteration))
        with self._facts_lock:
            cached = self._facts.get(key)
            if cached is not None:
                self._facts.move_to_end(key)
                return cached
        facts = row_facts(self.reader, iteration)
        with self._facts_lock:
            self._facts[key] = facts
            if len(self._facts) > _FACTS_CACHE:
                self._facts.popitem(last=False)
        return facts

    def badges(self, row: int) -> list[str]:
        """The badges of a timeline row."""
        return badges_of(self.model, self.iterations[row], self.facts(row))

    def label(self, iteration: Iteration) -> str:
        """``T1·I3`` (``2:T1·I3`` when the trace holds several runs)."""
        label = f"T{iteration.turn}·I{iteration.number}"
        if len(self.model.runs) > 1:
            label = f"{self.run_number(iteration.run_id)}:{label}"
        return label

    # ------------------------------------------------------------------------------------------
    # Matchers (called from the filter worker; they only read)

    def iteration_matches(self, row: int, query: Query) -> bool:
        """Whether a timeline row passes ``query``."""
        iteration = self.iterations[row]
        for kind in query.kinds:
            if kind in ("invalid", "opaque"):
                if not invalid_near(self.model, iteration):
                    return False
            elif kind not in KIND_CODES or not iteration.has(kind):
                return False
        for skill in query.skills:
            if iteration.cursor_to != skill:
                return False
        if query.badges:
            badges = set(self.badges(row))
            if not all(badge in badges for badge in query.badges):
                return False
        if query.words:
            return self._lines_hold(iteration.lines, query.needles)
        return True

    def line_matches(self, line: int, query: Query) -> bool:
        """Whether an event line passes ``query``."""
        if query.kinds or query.skills or query.badges:
            kind = self.line_kind(line)
            if query.kinds and not all(want == kind for want in query.kinds):
                return False
            if query.skills or query.badges:
                row = self.row_at_line(line)
                if row is None or not self.iteration_matches(
                    row, Query(query.text, (), (), query.skills, query.badges)
                ):
                    return False
        if query.words:
            return self._lines_hold([line], query.needles)
        return True

    def lease_matches(self, index: int, query: Query) -> bool:
        """Whether a lease row passes ``query`` (its words are matched against the lease's facts)."""
        lease = self.leases[index]
        if query.kinds and not all(kind in ("lease_grant", "lease_prune") for kind in query.kinds):
            return False
        if "lease_prune" in query.kinds and lease.prune_line is None:
            return False
        if query.skills and lease.tenant not in query.skills:
            return False
        text = " ".join(
            str(part)
            for part in (
                lease.instruction_id,
                lease.delivery_lease,
                lease.tenant,
                lease.tool_name,
                lease.tool_call_id,
                lease.state,
                lease.prune_site,
                f"I{lease.granted_iteration}",
            )
            if part is not None
        )
        return query.words_in(text)

    def line_kind(self, line: int) -> str | None:
        """A line's kind for filtering: its peeked kind, or ``invalid`` / ``opaque`` per the model."""
        if _contains(self.model.invalid_lines, line):
            return "invalid"
        if _contains(self.model.opaque_lines, line):
            return "opaque"
        try:
            return self.reader.peek(line).kind
        except IndexError:
            return None

    def _lines_hold(self, lines: list[int], needles: tuple[bytes, ...]) -> bool:
        missing = set(needles)
        for line in lines:
            try:
                raw = self.reader.raw(line).lower()
            except IndexError:
                continue
            missing = {needle for needle in missing if needle not in raw}
            if not missing:
                return True
        return not missing

    def iter_runs(self) -> Iterator[Run]:
        """Every run, in order of first appearance."""
        return iter(list(self.model.runs))


def _contains(lines: list[int], line: int) -> bool:
    position = bisect_right(lines, line) - 1
    return position >= 0 and lines[position] == line
