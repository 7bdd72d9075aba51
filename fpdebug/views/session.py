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
from bisect import bisect_right, insort
from collections import OrderedDict
from collections.abc import Iterator

from fpdebug.errors import TraceError
from fpdebug.trace.index_cache import load_index, save_index
from fpdebug.trace.model import KIND_CODES, Iteration, LeaseLifetime, Run, RunModel
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.records import InvalidRecord, Record, TornTail, classify_line
from fpdebug.trace.schema import ImportSource, RunStartEvent
from fpdebug.views.facts import RowFacts, badges_of, invalid_near, row_facts
from fpdebug.views.liveness import WriterWatch
from fpdebug.views.query import Query
from fpdebug.views.source import import_source, not_recorded_by

__all__ = ["CHECK_SLICE", "FIRST_SLICE", "MODEL_SLICE", "RUN_START_CACHE", "TraceSession"]

FIRST_SLICE = 2_000
"""Lines modelled before the first screen is shown (a few milliseconds of work)."""

MODEL_SLICE = 20_000
"""Lines modelled per step after that (each step ends with a "rows grew" notice)."""

FIRST_CHUNK = 1 << 20
"""Bytes indexed before the first slice is modelled."""

INDEX_CHUNK = 16 << 20
"""Bytes indexed per step afterwards."""

CHECK_SLICE = 5_000
"""Lines validated in full per check step (after the load, see :meth:`TraceSession.check_step`)."""

RUN_START_CACHE = 8
"""``run_start`` records a session keeps parsed (the runs on screen; each is tens of KB as a model)."""

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
        self.writer = WriterWatch(reader)
        """What is known of the file's writer (a followed run without ``run_end`` asks it)."""
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
        self.torn: TornTail | None = None
        """Bytes after the last newline (a record being written, or cut by a crash), as of the last step."""
        self.found_invalid: list[int] = []
        """Lines the model took as events from their facts, found invalid when read in full (sorted)."""
        self.restored = 0
        """Bytes of the index taken from the persisted index (:meth:`restore_index`), 0 if none."""
        self.checked = 1
        """Lines ``[1, checked)`` have been validated in full (by :meth:`check_step` or when read)."""
        self._saved = False
        self._found_lock = threading.Lock()
        self._check_lock = threading.Lock()
        self._seen_leases: dict[str, int] = {}
        # The longest timeline label, without and with the run number (see label_width).
        self._label_one_run = 0
        self._label_runs = 0
        self._leases_logged = 0  # how much of the model's lease_log has been collected
        self._facts: OrderedDict[tuple[int, int], RowFacts] = OrderedDict()
        self._facts_lock = threading.Lock()
        # A run_start carries the whole declared configuration (tens of KB as a model): keep the
        # few the views are showing, not one per run of the file.
        self._run_starts: OrderedDict[str, RunStartEvent | None] = OrderedDict()
        self._run_starts_lock = threading.Lock()

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
            self.torn = self.reader.torn_tail()
        return added

    def restore_index(self) -> int:
        """Take the rest of the line index from the cache directory if a valid one is saved there.

        Loading and checking it costs about 0.25 CPU-s at 10M lines, against 9 to 27 CPU-s of
        scanning; what the cache cannot vouch for is scanned as usual by :meth:`index_step`.

        Returns:
            How many lines it added (0: nothing saved, or not valid for this file any more).
        """
        try:
            starts = load_index(self.reader.path, self.reader.stat())
            added = self.reader.adopt_index(starts) if starts is not None else 0
        except TraceError:
            return 0  # closed under us: the load is being abandoned
        if added:
            self.restored = self.reader.index.indexed_size
            self.scanned, self.total = self.restored, max(self.reader.size, self.restored)
        return added

    def save_index(self) -> bool:
        """Persist the line index once the first scan has finished (once per session).

        Skipped when the cache already held all but a little of it. Returns whether it was written.
        """
        if not self.index_done or self._saved:
            return False
        self._saved = True
        index = self.reader.index
        if self.restored and index.indexed_size - self.restored < INDEX_CHUNK:
            return False
        try:
            starts = index.offsets(0, len(index))  # a copy: the tail worker may extend the index meanwhile
            return save_index(self.reader.path, self.reader.stat(), starts) is not None
        except TraceError:
            return False

    def model_step(self, *, limit: int = MODEL_SLICE) -> int:
        """Feed the model up to ``limit`` more indexed lines and collect new rows; return lines fed."""
        fed = self.model.update(limit=limit)
        if fed:
            self._collect()
        return fed

    def check_step(self, *, limit: int = CHECK_SLICE) -> int:
        """Validate up to ``limit`` more modelled lines in full; return how many were checked.

        The model reads each line's facts only (:class:`~fpdebug.trace.model.RunModel`), so a
        line that is valid JSON of a known kind but breaks the schema in a field the model does
        not read counts there as an event. This step finds such lines and lists them in
        :attr:`found_invalid`, so every count and badge of invalid lines agrees with what reading
        the line shows.
        """
        with self._check_lock:
            start = self.checked
            end = min(self.model.lines_fed, start + limit)
            if end <= start:
                return 0
            known = self.model.invalid_lines, self.model.opaque_lines
            for line, offset, raw in self.reader.iter_raw(start, stop=end):
                if _contains(known[0], line) or _contains(known[1], line):
                    continue
                # The reader's own verdict (lenient where it is lenient, e.g. a lone surrogate
                # escape), so a line checked here is invalid exactly when opening it says so.
                if isinstance(classify_line(line, offset, raw), InvalidRecord):
                    self._found(line)
            self.checked = end
            return end - start

    @property
    def check_done(self) -> bool:
        """Every line read so far has been validated in full."""
        return self.model_done and self.checked >= self.model.lines_fed

    @property
    def invalid_count(self) -> int:
        """Invalid lines known: those the model saw plus those found when checked in full."""
        return len(self.model.invalid_lines) + len(self.found_invalid)

    def is_invalid(self, line: int) -> bool:
        """Whether ``line`` is known to be an invalid record."""
        return _contains(self.model.invalid_lines, line) or _contains(self.found_invalid, line)

    def _found(self, line: int) -> None:
        with self._found_lock:
            if not _contains(self.found_invalid, line):
                insort(self.found_invalid, line)

    def poll(self) -> tuple[int, int]:
        """Index what was appended and model all of it (the follow step).

        Returns:
            ``(lines added, rows added)``.
        """
        rows = len(self.iterations)
        added = self.reader.refresh()
        self.torn = self.reader.torn_tail()
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
        # The model lists iterations in first-line order and only appends: the new rows are its
        # tail, whatever the number of runs and turns (walking them all each step made a load
        # quadratic). Leases are per run: the model logs which runs got new ones.
        with self.model.lock:
            new = self.model.all_iterations[len(self.iterations) :]
            self.iterations.extend(new)
            for iteration in new:
                width = len(f"T{iteration.turn}·I{iteration.number}")
                run = self.model.run(iteration.run_id)
                prefixed = width + len(f"{run.number if run is not None else 0}:")
                self._label_one_run = max(self._label_one_run, width)
                self._label_runs = max(self._label_runs, prefixed)
            # The runs with new leases, in the model's order of runs (as walking every run found them).
            log = self.model.lease_log
            touched = {id(run): run for run in log[self._leases_logged :]}
            self._leases_logged = len(log)
            for run in sorted(touched.values(), key=lambda run: run.number):
                seen = self._seen_leases.get(run.run_id, 0)
                if len(run.leases) > seen:
                    self.leases.extend(run.leases[seen:])
                    self._seen_leases[run.run_id] = len(run.leases)

    # ------------------------------------------------------------------------------------------
    # Lookups (UI thread)

    @property
    def source(self) -> ImportSource | None:
        """Where an imported trace came from (its header's ``source``); ``None`` for fpdebug's own."""
        return import_source(self.reader)

    def not_recorded(self, kind: str) -> str | None:
        """``"not recorded by otlp"`` when this trace's source cannot hold ``kind`` records, else ``None``."""
        return not_recorded_by(self.source, kind)

    def run_of(self, iteration: Iteration) -> Run | None:
        """The run an iteration belongs to."""
        return self.model.run(iteration.run_id)

    def record(self, line: int) -> Record:
        """The full record on ``line`` (validated, from the reader's cache).

        A line the model took as an event but which turns out invalid is noted in
        :attr:`found_invalid` (before the check step reaches it).
        """
        record = self.reader[line]
        if isinstance(record, InvalidRecord) and not _contains(self.model.invalid_lines, line):
            self._found(line)
        return record

    def run_start(self, run_id: str) -> RunStartEvent | None:
        """A run's declared configuration (its ``run_start`` record), once it has arrived.

        The last :data:`RUN_START_CACHE` are kept; an older one is read again (a ``pread`` and a
        validation, well under a millisecond). It is parsed past the reader's cache, which would
        otherwise keep hundreds of them on a trace of many runs.
        """
        with self._run_starts_lock:
            if run_id in self._run_starts:
                self._run_starts.move_to_end(run_id)
                return self._run_starts[run_id]
        run = self.model.run(run_id)
        if run is None or run.start_line is None:
            return None
        line = run.start_line
        record = classify_line(line, self.reader.offset(line), self.reader.raw(line))
        start = record if isinstance(record, RunStartEvent) else None
        with self._run_starts_lock:
            self._run_starts[run_id] = start
            if len(self._run_starts) > RUN_START_CACHE:
                self._run_starts.popitem(last=False)
        return start

    def run_number(self, run_id: str) -> int:
        """The 1-based position of a run in the file (for ``2:T1·I3`` labels); 0 for an unknown run."""
        run = self.model.run(run_id)
        return run.number if run is not None else 0

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
        """The row of iteration ``number`` (of ``turn`` if given), the one closest after ``near`` first.

        Each run answers in constant time (:meth:`Run.iteration`; :meth:`Turn.iteration` for each
        turn when ``turn`` is ``None``) and the row is found by bisection, so the search grows with
        the runs it looks at, never with the rows. With no match at or after row ``near``, the
        first match of the trace.
        """
        rows = self.iterations
        if not rows:
            return None
        with self.model.lock:
            runs = list(self.model.runs)
        last = rows[-1].first_line  # the model may be a step ahead of the rows
        threshold = rows[near].first_line if 0 <= near < len(rows) else 0
        best = _first_from(runs, turn, number, threshold, last)
        if best is None:
            best = _first_from(runs, turn, number, 0, last)
        return self.row_of(best) if best is not None else None

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
        return badges_of(self.model, self.iterations[row], self.facts(row), found=self.found_invalid)

    @property
    def label_width(self) -> int:
        """The characters of the longest :meth:`label` of the rows so far (the timeline's label column)."""
        return self._label_runs if len(self.model.runs) > 1 else self._label_one_run

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
                if not invalid_near(self.model, iteration, found=self.found_invalid):
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
        if self.is_invalid(line):
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


def _first_from(runs: list[Run], turn: int | None, number: int, start: int, end: int) -> Iteration | None:
    """Of the iterations ``number`` (of ``turn``, else of any turn), the first one in ``[start, end]``."""
    best: Iteration | None = None
    for run in runs:
        # Runs are in order of their first line and hold no iteration before it: once a run starts
        # after the best candidate, no later run can beat it.
        if best is not None and run.first_line > best.first_line:
            break
        if run.last_line < start:
            continue
        if turn is None:
            found = [each.iteration(number) for each in run.turns]
        else:
            found = [run.iteration(turn, number)]
        for iteration in found:
            if iteration is None or not start <= iteration.first_line <= end:
                continue
            if best is None or iteration.first_line < best.first_line:
                best = iteration
    return best


def _contains(lines: list[int], line: int) -> bool:
    position = bisect_right(lines, line) - 1
    return position >= 0 and lines[position] == line
