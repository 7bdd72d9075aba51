"""Whole runs on every core: a trace cut into line ranges between runs, one forked worker per range.

A command that sums each run up (``summary``, ``report``) can do each run's work anywhere, as long
as it sees all of the run's lines. When every run's lines are contiguous (the usual case: one
writer, one run after another), the file can be cut between runs into ranges of about equal bytes,
and each range handed to a forked worker; the results come back in file order, so the command
writes exactly what one process would (issue 22: the whole-file commands at most 3x an orjson
parse of every line, measured in wall time on 2 cores).

How to use it::

    plan = plan_runs(reader, len(reader))            # one envelope pass: each run's first and last line
    for part in map_ranges(plan, work):              # work(start, stop) on each range, in file order
        ...                                          # merge: sum counts, concatenate per-run output

- :func:`plan_runs` reads each line's envelope (``run_id`` only, nothing validated) and cuts the
  lines into ranges that start with a run's first line (the first range starts at line 0, the
  header). It gives a single range ``(0, stop)`` when the runs interleave, the file is smaller
  than ``min_lines``, one worker is asked for, or the platform cannot ``fork``.
- :func:`map_ranges` calls ``work(start, stop)`` on each range: in this process for a single
  range, else in forked workers (``work`` need not be picklable: it is inherited; its result is
  pickled back). Results are yielded in range order.
- ``work`` should check, for each record, that its ``run_id`` is one the plan placed in its range
  (:meth:`RunPlan.owns`): a line whose record names another run than its envelope (a crafted or
  damaged file) would otherwise split a run between two workers. It raises :class:`RangeMismatch`,
  and the caller falls back to one range.
- Per-run text too large to send back (a report's Markdown) goes to a :class:`RunSpool` in a
  directory the caller owns; only the spool's name and its index travel back, and
  :func:`spooled_texts` reads the runs again in order of their first lines.

Workers inherit the reader (they read with ``pread``) and the plan. Memory is the plan (each run's
id and two line numbers) plus each worker's own range work.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import tempfile
from array import array
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from fpdebug.trace.records import PEEK_PREFIX, peek_line

if TYPE_CHECKING:
    from fpdebug.trace.reader import TraceReader

__all__ = [
    "RUN_RANGES_MIN_LINES",
    "RangeMismatch",
    "RunPlan",
    "RunSpool",
    "SpoolPart",
    "can_fork",
    "map_ranges",
    "plan_runs",
    "spooled_texts",
    "warm_up",
]

RUN_RANGES_MIN_LINES = 5_000
"""Below this many lines one process is faster than starting workers (a run costs 100-250 µs a line
to sum up, forking two workers about 20 ms)."""

_RANGES_PER_WORKER = 4  # more ranges than workers: a slow range does not hold the others up
_MAX_WORKERS = 8

R = TypeVar("R")


class RangeMismatch(Exception):
    """A record names a run its envelope did not place in this range: cut no more, use one range."""


@dataclass(slots=True)
class RunPlan:
    """Each run's first and last line (by envelope), and the ranges the lines are cut into."""

    stop: int
    """The lines planned are ``0 .. stop - 1``."""
    first: dict[str, int]
    """Each run id's first line, ordered by it."""
    last: dict[str, int]
    """Each run id's last line, ordered by it."""
    ranges: list[tuple[int, int]] = field(default_factory=list)
    """``(start, stop)`` of each range, in file order; one range ``(0, stop)`` when not cut."""
    workers: int = 1
    """How many processes :func:`map_ranges` uses for these ranges."""

    @property
    def contiguous(self) -> bool:
        """Whether every run's lines lie together (no run begins before the previous one ends)."""
        previous = 0
        for run_id, first in self.first.items():  # ordered by first line
            if first <= previous:
                return False
            previous = self.last[run_id]
        return True

    def owns(self, start: int, run_id: str, line: int) -> bool:
        """Whether ``run_id`` on ``line`` is a run the range starting at ``start`` holds whole."""
        return self.first.get(run_id, -1) >= start and self.last.get(run_id, -1) >= line

    def single(self) -> RunPlan:
        """The same runs as one range in this process (the fallback after a :class:`RangeMismatch`)."""
        return RunPlan(self.stop, self.first, self.last, [(0, self.stop)], 1)


def can_fork() -> bool:
    """Whether worker processes can be forked here (they inherit the open reader)."""
    return "fork" in multiprocessing.get_all_start_methods()


def default_workers() -> int:
    """The cores this process may run on (at most 8)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, _MAX_WORKERS))


def plan_runs(
    reader: TraceReader,
    stop: int,
    *,
    workers: int | None = None,
    min_lines: int | None = None,
) -> RunPlan:
    """Read every envelope of lines ``1 .. stop - 1`` and cut the lines into ranges between runs.

    Args:
        reader: The open trace.
        stop: The first line not planned (``len(reader)`` when the sweep starts).
        workers: Processes to plan for (default: the cores this process may use, at most 8).
        min_lines: Files with fewer lines stay in one range (default :data:`RUN_RANGES_MIN_LINES`).

    Returns:
        The plan: a single range ``(0, stop)`` unless the file is large enough, more than one
        worker may run, ``fork`` is available and the runs' lines are contiguous.
    """
    first, last = _envelopes(reader, stop)
    workers = default_workers() if workers is None else max(1, workers)
    plan = RunPlan(stop, first, last, [(0, stop)], 1)
    min_lines = RUN_RANGES_MIN_LINES if min_lines is None else min_lines
    if workers == 1 or stop < min_lines or len(first) < 2 or not can_fork() or not plan.contiguous:
        return plan
    plan.ranges = _cut(reader, stop, list(first.values())[1:], workers * _RANGES_PER_WORKER)
    plan.workers = min(workers, len(plan.ranges))
    return plan


_RUN_ID = b'"run_id":"'


def _envelopes(reader: TraceReader, stop: int) -> tuple[dict[str, int], dict[str, int]]:
    """Each run id's first and last line among lines ``1 .. stop - 1``, by envelope.

    The writer puts ``run_id`` in a line's first bytes; it is found with one ``bytes.find``
    (a line whose id holds an escape, or that is not laid out so, goes through
    :func:`~fpdebug.trace.records.peek_line`). Only the plan relies on it: a record that names
    another run than this says is caught by :meth:`RunPlan.owns`.
    """
    first: dict[bytes, int] = {}
    last: dict[bytes, int] = {}
    for line, _offset, raw in reader.iter_raw(1, stop=stop, stored=True):  # the envelope as stored
        at = raw.find(_RUN_ID, 0, PEEK_PREFIX)
        end = raw.find(b'"', at + 10) if at > 0 and raw.startswith(b'{"kind":') else -1
        if end != -1 and b"\\" not in raw[at + 10 : end]:
            key = raw[at + 10 : end]
        else:
            run_id = peek_line(raw[:PEEK_PREFIX], lambda raw=raw: raw).run_id  # type: ignore[misc]
            if run_id is None:
                continue
            key = run_id.encode("utf-8", "surrogatepass")
        if key not in first:
            first[key] = line
        else:
            del last[key]  # re-inserted: the dict stays ordered by last line
        last[key] = line
    return _decoded(first), _decoded(last)


def _decoded(lines: dict[bytes, int]) -> dict[str, int]:
    return {key.decode("utf-8", "surrogateescape"): line for key, line in lines.items()}


def _cut(reader: TraceReader, stop: int, starts: list[int], count: int) -> list[tuple[int, int]]:
    """``count`` ranges of lines ``0 .. stop - 1`` of about equal bytes, each after the first
    beginning at one of ``starts`` (the runs' first lines but the first run's, ascending)."""
    index = reader.index
    begin, end = index.offset(1), index.offset(stop)
    bounds = [0]
    position = 0  # into starts
    for k in range(1, count):
        target = begin + (end - begin) * k // count
        while position < len(starts) and (
            starts[position] <= bounds[-1] or index.offset(starts[position]) < target
        ):
            position += 1
        if position == len(starts):
            break
        bounds.append(starts[position])
    bounds.append(stop)
    return list(itertools.pairwise(bounds))


_job: Callable[[int, int], object] | None = None  # the work a forked worker inherits


def _call(bounds: tuple[int, int]) -> object:
    assert _job is not None  # set by map_ranges before the workers are forked
    return _job(*bounds)


def map_ranges(
    plan: RunPlan, work: Callable[[int, int], R], *, prepare: Callable[[], object] | None = None
) -> Iterator[R]:
    """``work(start, stop)`` of each of the plan's ranges, in file order (see the module).

    One range, or one worker, runs here in this process; more run in forked workers, each result
    pickled back. An exception in ``work`` (:class:`RangeMismatch` among them) is raised here.

    Args:
        plan: From :func:`plan_runs`.
        work: Called with each range's bounds.
        prepare: Called here once before the workers are forked, so that what it builds is
            inherited rather than built again in each worker (:func:`warm_up`).
    """
    global _job
    if len(plan.ranges) == 1 or plan.workers <= 1 or not can_fork():
        for start, stop in plan.ranges:
            yield work(start, stop)
        return
    if prepare is not None:
        prepare()
    previous, _job = _job, work
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(plan.workers, mp_context=context) as pool:
            yield from pool.map(_call, plan.ranges)  # type: ignore[misc]
    finally:
        _job = previous


WARM_UP_LINES = 256
"""Lines :func:`warm_up` validates."""


def warm_up(reader: TraceReader) -> None:
    """Validate the first :data:`WARM_UP_LINES` lines, discarding them: the schema's validators are
    built on first use (``defer_build``), about 0.1 s, which each forked worker would otherwise pay."""
    for _record in reader.iter_records(1, stop=min(len(reader), WARM_UP_LINES + 1)):
        pass


@dataclass(frozen=True, slots=True)
class SpoolPart:
    """A closed :class:`RunSpool`: where its file is, and each run's first line, offset and length."""

    path: str
    chunks: array[int]


class RunSpool:
    """Per-run text written as each run is done, read back later in order of the runs' first lines.

    A command whose head needs totals known only at the end (``summary --json``, ``report``) keeps
    its runs' output here rather than in memory. Text is stored UTF-8 (``surrogatepass``: lone
    surrogates a trace string may hold come back as they were).

    Args:
        directory: Where the spool file is created (a temporary directory the caller removes).
    """

    def __init__(self, directory: str) -> None:
        handle, self.path = tempfile.mkstemp(prefix="runs-", dir=directory)
        self._file = os.fdopen(handle, "wb")
        self._chunks = array("q")
        self._at = 0

    def add(self, first_line: int, text: str) -> None:
        """Keep ``text``, the output of the run whose first line is ``first_line``."""
        data = text.encode("utf-8", "surrogatepass")
        self._chunks.extend((first_line, self._at, len(data)))
        self._file.write(data)
        self._at += len(data)

    def __len__(self) -> int:
        return len(self._chunks) // 3

    def close(self) -> SpoolPart:
        """Flush and close the file; what :func:`spooled_texts` reads (small: picklable)."""
        self._file.close()
        return SpoolPart(self.path, self._chunks)


def spooled_texts(parts: list[SpoolPart]) -> Iterator[str]:
    """Every run's text of ``parts`` (in range order), by the runs' first lines; each file removed after."""
    for part in parts:
        chunks = part.chunks
        firsts = chunks[0::3]
        ordered = all(a < b for a, b in itertools.pairwise(firsts))
        order = range(len(firsts)) if ordered else sorted(range(len(firsts)), key=firsts.__getitem__)
        try:
            with open(part.path, "rb") as handle:
                for index in order:
                    if not ordered:
                        handle.seek(chunks[3 * index + 1])
                    yield handle.read(chunks[3 * index + 2]).decode("utf-8", "surrogatepass")
        finally:
            os.unlink(part.path)
