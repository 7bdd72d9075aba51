"""A saved trace's spans, run by run, in bounded memory: what ``fpdebug export`` streams.

:func:`~fpdebug.export.spans.build_spans` returns every span of a file at once, and the OTLP
document built from them held every span again as SDK spans, as a protobuf request, as a dict and
as one JSON string: 533 MB of RSS for a file of 20,000 one-record runs. :class:`TraceSpans` hands
the spans out a run at a time instead, as soon as the run can have no more records, so what is
alive at any moment is one run's spans and one batch of output.

**When a run is over.** A run that ends (``run_end``) closes itself. One that never does (a crash,
a file cut short, a one-record run) used to stay open to the end of the file, and a file of 100,000
such runs kept 100,000 open runs. A first, cheap pass over the file reads only each line's envelope
(``kind``, ``run_id``: :meth:`~fpdebug.trace.reader.TraceReader.peek`-style, no model built) and
notes the last line of every run that has no ``run_end`` after it; the second pass closes such a
run right after that line, with exactly the spans :meth:`~fpdebug.export.spans.SpanBuilder.finish`
gives it at the end of the file. The first pass keeps one run id and line number per run
without a ``run_end`` (about 110 bytes each), nothing per record.

**Order.** Each run's spans come out in the order the builder opened them (parents before
children), and runs in the order they close: for a file whose runs follow one another (every file
fpdebug writes), exactly the order of :func:`~fpdebug.export.spans.build_spans`. Interleaved runs
(a crafted file) come out whole, one after another, rather than interleaved.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from fpdebug.export.spans import SpanBuilder, SpanRecord
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.records import PEEK_PREFIX, InvalidRecord, OpaqueRecord, peek_line
from fpdebug.trace.schema import TraceHeader

__all__ = ["DEFAULT_BATCH", "TraceSpans", "batched", "unended_run_ends"]

DEFAULT_BATCH = 512
"""Spans per output batch (one OTLP request, one piece of the JSON document)."""


def unended_run_ends(reader: TraceReader, stop: int) -> dict[str, int]:
    """The last line of every run with no ``run_end`` after it, ordered by that line.

    Reads each line's envelope only (``kind``, ``run_id``), never a model. A run whose ``run_end``
    is its last record is left out: the builder closes it there anyway.

    Args:
        reader: An open trace.
        stop: Scan lines ``1 .. stop - 1`` (the lines the second pass will read).

    Returns:
        ``{run_id: line}``, in ascending order of line.
    """
    last: dict[str, int] = {}
    for line, _offset, raw in reader.iter_raw(1, stop=stop):
        peek = peek_line(raw[:PEEK_PREFIX], lambda raw=raw: raw)  # type: ignore[misc]
        if peek.run_id is None:
            continue
        last.pop(peek.run_id, None)  # re-inserted below: the dict stays ordered by last line
        if peek.kind != "run_end":
            last[peek.run_id] = line
    return last


class TraceSpans:
    """Iterate a saved trace's spans, one list per run, each as soon as its run is over.

    Invalid and unknown lines are left out and counted in :attr:`skipped`. Memory: one run's spans,
    the builder's state of the runs still open, and :func:`unended_run_ends`' line numbers.

    Args:
        reader: An open trace; read twice (the envelope pass, then the records).
        include_content: Export prompts, replies, tool arguments and results.
        id_salt: Mixed into every id (:func:`~fpdebug.export.spans.trace_salt`).
    """

    def __init__(self, reader: TraceReader, *, include_content: bool = False, id_salt: str = "") -> None:
        self.reader = reader
        self.include_content = include_content
        self.id_salt = id_salt
        self.skipped = 0
        """Invalid or unknown lines met so far."""
        self.held_peak = 0
        """The most spans held at once, waiting for their run to be over (for tests and benchmarks)."""
        self._held = 0

    def __iter__(self) -> Iterator[list[SpanRecord]]:
        stop = len(self.reader)  # lines indexed later (a growing file) are not this export's
        ends = iter(unended_run_ends(self.reader, stop).items())
        next_end = next(ends, None)
        builder = SpanBuilder(include_content=self.include_content, id_salt=self.id_salt)
        held: dict[str, list[SpanRecord]] = {}
        for line, record in self.reader.iter_records(1, stop=stop):
            if isinstance(record, InvalidRecord | OpaqueRecord | TraceHeader):
                self.skipped += not isinstance(record, TraceHeader)
            else:
                yield from self._done(held, builder.feed(record))
            while next_end is not None and next_end[1] <= line:
                yield from self._done(held, builder.finish_run(next_end[0]))
                next_end = next(ends, None)
        yield from self._done(held, builder.finish())
        for spans in held.values():  # a span whose run was never seen to close (cannot happen)
            yield sorted(spans, key=_order)
        held.clear()
        self._held = 0

    def _done(self, held: dict[str, list[SpanRecord]], spans: list[SpanRecord]) -> Iterator[list[SpanRecord]]:
        """Hold the spans; give out every run whose run span is among them, whole and in order."""
        for span in spans:
            held.setdefault(span.run_id, []).append(span)
        self._held += len(spans)
        self.held_peak = max(self.held_peak, self._held)
        for span in spans:
            if span.role == "run":
                run = held.pop(span.run_id, [span])
                self._held -= len(run)
                yield sorted(run, key=_order)


def _order(span: SpanRecord) -> int:
    return span.order


def batched(runs: Iterable[list[SpanRecord]], size: int = DEFAULT_BATCH) -> Iterator[list[SpanRecord]]:
    """Regroup per-run span lists into batches of ``size`` spans (the last one shorter), in order."""
    batch: list[SpanRecord] = []
    for spans in runs:
        for span in spans:
            batch.append(span)
            if len(batch) >= size:
                yield batch
                batch = []
    if batch:
        yield batch
