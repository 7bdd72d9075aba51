"""Validate a trace's lines on every core: worker processes over line ranges, problems in file order.

``fpdebug validate`` spends most of its time in pydantic validating each line, one core busy
(issue 22: 4.7 times an orjson parse of every line). Here the lines are cut into ranges of about
equal bytes; forked workers classify their ranges (the same :func:`~fpdebug.trace.records.classify_line`
and line-form checks as :meth:`~fpdebug.trace.reader.TraceReader.iter_problems`) and send back only
the lines that are not healthy: a line is healthy when it reads as a record, has nothing wrong with
how it is written, and holds ``seq`` equal to its line number. The parent then judges ``seq`` across
the whole file with the same :class:`~fpdebug.trace.reader.ProblemScanner`, so the problems and
their order are those of ``iter_problems``. A healthy trace sends back nothing; memory is the
parent's line index plus one range's verdicts per worker.

The workers are forked (they inherit the open reader and its index, and read with ``pread``), so
this is used only where ``fork`` is the platform's way and on a file large enough to pay for it.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor

from fpdebug.trace.reader import ProblemScanner, TraceReader, record_problems
from fpdebug.trace.records import Problem, Record
from fpdebug.trace.schema import EVENT_MODELS

__all__ = ["PARALLEL_MIN_LINES", "Verdict", "default_workers", "iter_problems", "line_verdicts"]

PARALLEL_MIN_LINES = 5_000
"""Below this many lines one process is faster than starting workers. (With the validators built
before the fork, two workers on 10,000 lines cost the same CPU as one process: 0.72-0.76 s.)"""

_RANGES_PER_WORKER = 4  # more ranges than workers: a slow range does not hold the others up

Verdict = tuple[int, int | None, list[Problem], list[Problem]]
"""An unhealthy line: its number, its ``seq`` (``None``: unreadable), what the record says is
wrong, and what is wrong with how the line is written."""

_forked: TraceReader | None = None  # the reader a forked worker inherits


def default_workers() -> int:
    """The cores this process may run on (at most 8)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 8))


def line_verdicts(reader: TraceReader, start: int, stop: int) -> list[Verdict]:
    """The unhealthy lines among ``start .. stop - 1`` (see the module), in line order."""
    verdicts: list[Verdict] = []
    for line, offset, raw in reader._iter_lines(start, stop):
        record: Record
        if raw is None:  # over the maximum line size: skipped, never read
            record = reader._too_long(line, offset, reader.index.offset(line + 1))
            form: list[Problem] = []
        else:
            record, form = reader.check_line(line, offset, raw)  # schema_version 2: the request rebuilt
        own = record_problems(line, record)
        seq = record.seq
        if own or form or seq != line:
            verdicts.append((line, seq, own, form))
    return verdicts


def _range(bounds: tuple[int, int]) -> list[Verdict]:
    assert _forked is not None  # set by iter_problems before the fork
    return line_verdicts(_forked, *bounds)


def _ranges(reader: TraceReader, total: int, count: int) -> list[tuple[int, int]]:
    """``count`` ranges of lines ``1 .. total - 1`` of about equal bytes."""
    first, end = reader.index.offset(1), reader.index.offset(total)
    bounds = [1]
    for k in range(1, count):
        target = first + (end - first) * k // count
        line = _line_at(reader, target, bounds[-1], total)
        if line > bounds[-1]:
            bounds.append(line)
    bounds.append(total)
    return list(itertools.pairwise(bounds))


def _line_at(reader: TraceReader, offset: int, low: int, high: int) -> int:
    """The first line in ``low .. high`` that starts at or after ``offset`` (bisection on the index)."""
    while low < high:
        middle = (low + high) // 2
        if reader.index.offset(middle) < offset:
            low = middle + 1
        else:
            high = middle
    return low


def iter_problems(reader: TraceReader, *, workers: int | None = None) -> Iterator[Problem]:
    """Refresh, then every problem of :meth:`TraceReader.iter_problems`, in its order, on ``workers`` cores.

    Falls back to one process for a small file, one worker, or a platform without ``fork``.

    Args:
        reader: The open trace.
        workers: How many processes (default: :func:`default_workers`).
    """
    global _forked
    workers = default_workers() if workers is None else workers
    reader.refresh()
    total = len(reader)
    if workers <= 1 or total < PARALLEL_MIN_LINES or "fork" not in multiprocessing.get_all_start_methods():
        yield from reader.iter_problems()
        return
    ranges = _ranges(reader, total, workers * _RANGES_PER_WORKER)
    for model in EVENT_MODELS.values():
        # Built once here (about 0.1-0.3 s of CPU) and inherited by every worker, not built in each.
        model.model_rebuild()
    scanner = ProblemScanner(reader)
    done = 0  # the last line judged
    _forked = reader
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            for verdicts in pool.map(_range, ranges):
                for line, seq, own, form in verdicts:
                    if line > done + 1:
                        yield from _healthy(scanner, done + 1, line - 1)
                    yield from own
                    gap = scanner.check_seq(line, seq)
                    if gap is not None:
                        yield gap
                    yield from form
                    done = line
    finally:
        _forked = None
    if total - 1 > done:
        yield from _healthy(scanner, done + 1, total - 1)
    yield from scanner.finish()


def _healthy(scanner: ProblemScanner, first: int, last: int) -> Iterator[Problem]:
    gap = scanner.check_healthy(first, last)
    if gap is not None:
        yield gap
