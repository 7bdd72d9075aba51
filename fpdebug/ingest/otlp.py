"""``fpdebug import`` for OTLP: trace (and log) files → one fpdebug trace, written atomically.

Decoding is :mod:`fpdebug.ingest.otlp_decode`, the GenAI readings :mod:`fpdebug.ingest.otlp_genai`,
the span → event mapping :mod:`fpdebug.ingest.otlp_build`. This module orders the spans of each
OTel trace, drops duplicate LLM spans, merges legacy log records into their spans, and writes.

**Bounded memory.** Spans are decoded one request (one JSON Lines line) at a time and kept per
trace only until that trace's root span arrives: the trace is then converted, written to a
scratch file and forgotten. Memory is bounded by the traces still open, not by the file.

**No half-written output.** Everything goes to a temporary file next to ``out`` (header last
known, so it is assembled at the end) and is renamed over ``out`` only when the whole import
succeeded; any error removes it.

**Not recorded.** An OTLP run has no passes, cursor moves, leases, engagement or honesty findings;
the header's :class:`~fpdebug.trace.schema.ImportSource` lists them in ``not_recorded`` so views say
so. ``run_start.max_iterations`` is 0 (not recorded).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from fpdebug.ingest import otlp_stream
from fpdebug.ingest.otlp_build import RunBuilder, SeqCounter, run_id_of
from fpdebug.ingest.otlp_decode import (
    OtlpDecodeError,
    OtlpEncoding,
    OtlpLog,
    OtlpSpan,
    detect_encoding,
    iter_file,
)
from fpdebug.ingest.otlp_genai import agent_name, agent_user_message, classify
from fpdebug.trace.redact import Redactor, default_redactor
from fpdebug.trace.schema import ImportSource, TraceEvent, TraceHeader
from fpdebug.trace.writer import dump_record

__all__ = [
    "NOT_RECORDED",
    "ImportSummary",
    "OtlpDecodeError",
    "TraceConverter",
    "import_otlp",
    "looks_like_otlp",
    "looks_like_otlp_json",
    "order_trace",
    "service_name",
]

NOT_RECORDED: tuple[str, ...] = ("pass", "cursor_move", "lease_grant", "lease_prune", "engagement", "finding")
"""Record kinds an OTLP source cannot hold."""


@dataclass(slots=True)
class ImportSummary:
    """What an import wrote."""

    out: Path
    """The trace written."""
    format: str
    """The source format (``otlp``)."""
    runs: int = 0
    """Runs (OTel traces that held an agent run)."""
    records: int = 0
    """Events written (the header not counted)."""
    counts: dict[str, int] = field(default_factory=dict)
    """Events by kind."""
    spans: int = 0
    """Spans read."""
    unmapped_spans: int = 0
    """Spans of no kind fpdebug maps (iteration spans, chains…)."""
    duplicate_llm_spans: int = 0
    """LLM spans dropped as a second instrumentation of a call already kept."""
    producers: list[str] = field(default_factory=list)
    """Instrumentation scopes seen, in order of first appearance."""
    dropped: int = 0
    """Attributes, events and links the producers say they dropped (span limits)."""
    spans_with_drops: int = 0
    """Spans that dropped any."""

    def gaps(self) -> tuple[str, ...]:
        """What the source says it lost, in words (the header's ``source.gaps``)."""
        if not self.dropped:
            return ()
        return (
            f"the producer dropped {self.dropped} attributes, events or links from {self.spans_with_drops} "
            "span(s) (its span limits)",
        )

    def describe(self) -> str:
        """One line for the terminal."""
        kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(self.counts.items()))
        extra = (
            f"; {self.duplicate_llm_spans} duplicate LLM spans dropped" if self.duplicate_llm_spans else ""
        )
        return f"{self.runs} run(s), {self.records} records ({kinds}) from {self.spans} spans{extra}"


def looks_like_otlp_json(head: bytes) -> bool:
    """Whether a file's first bytes are an OTLP/JSON request (or JSON Lines of them)."""
    text = head.lstrip()[:4096]
    return text.startswith(b"{") and any(
        key in text
        for key in (b'"resourceSpans"', b'"resourceLogs"', b'"resource_spans"', b'"resource_logs"')
    )


def looks_like_otlp(head: bytes) -> bool:
    """Whether a file's first bytes are OTLP: a JSON request (traces or logs), or a protobuf body.

    JSON is recognised by its first key; protobuf cannot be recognised without parsing, so any
    non-JSON head counts (the import then fails cleanly if it does not parse).
    """
    if head.lstrip().startswith(b"{"):
        return looks_like_otlp_json(head)
    return bool(head)


def order_trace(spans: list[OtlpSpan]) -> tuple[list[OtlpSpan], set[str]]:
    """The spans of one trace in the order their records happen, and the duplicate LLM spans to skip.

    Ordered by end time: a call ends before the tools it asked for run, a tool before the next
    call, an agent span after everything it holds. Of LLM spans sharing a ``gen_ai.response.id``
    the one with the most attributes is kept.
    """
    ordered = sorted(spans, key=lambda span: (span.end_ns, span.start_ns))
    best: dict[str, OtlpSpan] = {}
    skip: set[str] = set()
    for span in ordered:
        if classify(span) != "llm":
            continue
        response_id = span.attributes.get("gen_ai.response.id")
        if not isinstance(response_id, str) or not response_id:
            continue
        kept = best.get(response_id)
        if kept is None:
            best[response_id] = span
        elif len(span.attributes) > len(kept.attributes):
            skip.add(kept.span_id)
            best[response_id] = span
        else:
            skip.add(span.span_id)
    return ordered, skip


def _turn_closers(spans: list[OtlpSpan]) -> set[str]:
    """Span ids that end a turn: outermost agent spans, and roots that are not LLM or tool spans."""
    by_id = {span.span_id: span for span in spans}
    roles = {span.span_id: classify(span) for span in spans}
    closers: set[str] = set()
    for span in spans:
        role = roles[span.span_id]
        if not span.parent_span_id and role in ("agent", "other"):
            closers.add(span.span_id)
            continue
        if role != "agent":
            continue
        parent, nested, hops = by_id.get(span.parent_span_id), False, 0
        while parent is not None and hops < 10_000:
            if roles[parent.span_id] == "agent":
                nested = True
                break
            parent, hops = by_id.get(parent.parent_span_id), hops + 1
        if not nested:
            closers.add(span.span_id)
    return closers


class TraceConverter:
    """Collects decoded spans per trace and converts each trace once it is complete."""

    def __init__(self, emit: Callable[[TraceEvent], None], summary: ImportSummary) -> None:
        self.emit = emit
        """Receives every event, in file order."""
        self.summary = summary
        """Counts as it goes."""
        self.seq = SeqCounter()
        """The output file's seq."""
        self._open: dict[str, list[OtlpSpan]] = {}
        self._logs: dict[str, list[OtlpLog]] = {}
        self._run_ids: set[str] = set()
        self._rooted: set[str] = set()

    def add(self, spans: Iterable[OtlpSpan], logs: Iterable[OtlpLog]) -> None:
        """Take a request's spans and logs; convert the traces whose root has arrived."""
        for log in logs:
            if log.span_id:
                self._logs.setdefault(log.span_id, []).append(log)
        finished = [span.trace_id for span in spans if self.add_span(span)]
        for trace_id in dict.fromkeys(finished):
            self._rooted.discard(trace_id)
            self._convert(self._open.pop(trace_id, []))

    def add_span(self, span: OtlpSpan) -> bool:
        """Take one span (kept until its trace is converted); whether it is a root that closes its trace."""
        self.summary.spans += 1
        if span.dropped:
            self.summary.dropped += span.dropped
            self.summary.spans_with_drops += 1
        if span.scope and span.scope not in self.summary.producers:
            self.summary.producers.append(span.scope)
        self._open.setdefault(span.trace_id, []).append(span)
        if not span.parent_span_id and classify(span) in ("agent", "other"):
            self._rooted.add(span.trace_id)
            return True
        return False

    def close(self, trace_id: str) -> None:
        """The last span of ``trace_id`` in a request has been taken: convert it if its root came.

        A trace without its root stays open (its root may be in another file), as :meth:`add` does.
        """
        if trace_id in self._rooted:
            self._rooted.discard(trace_id)
            self._convert(self._open.pop(trace_id, []))

    def finish(self) -> None:
        """Convert every trace still open (no root span closed it)."""
        for trace_id in list(self._open):
            self._convert(self._open.pop(trace_id))

    def _convert(self, spans: list[OtlpSpan]) -> None:
        if not spans:
            return
        ordered, skip = order_trace(spans)
        self.summary.duplicate_llm_spans += len(skip)
        closers = _turn_closers(ordered)
        run_spans = [span for span in ordered if span.span_id not in skip]
        self.summary.unmapped_spans += sum(
            1 for span in run_spans if classify(span) == "other" and span.span_id not in closers
        )
        builder = self._builder(run_spans, closers, skip)
        events: list[TraceEvent] = []
        for span in run_spans:
            events += builder.feed(span)
        events += builder.finish()
        if builder.started:
            self.summary.runs += 1
        for event in events:
            self.emit(event)

    def _builder(self, run_spans: list[OtlpSpan], closers: set[str], skip: set[str]) -> RunBuilder:
        """A builder for one trace's run, primed with what its agent spans recorded."""
        agents = [span for span in run_spans if classify(span) == "agent"]
        return RunBuilder(
            run_id=self._unique_run_id(
                run_id_of(next((s for s in run_spans if not s.parent_span_id), run_spans[0]))
            ),
            seq=self.seq,
            closes_turn=lambda span: span.span_id in closers,
            logs_for=lambda span_id: self._logs.pop(span_id, []),
            skip=skip,
            agent_hint=next((name for span in agents if (name := agent_name(span))), None)
            or service_name(run_spans),
            user_hints={span.span_id: text for span in agents if (text := agent_user_message(span))},
        )

    def _unique_run_id(self, run_id: str) -> str:
        """``run_id``, suffixed when a trace comes again after its root (two files, a repeated line)."""
        if run_id in self._run_ids:
            run_id = f"{run_id}-{sum(1 for known in self._run_ids if known.startswith(run_id)) + 1}"
        self._run_ids.add(run_id)
        return run_id


def service_name(spans: list[OtlpSpan]) -> str | None:
    """The ``service.name`` the producer's resource gave, the agent's name when no agent span names it.

    The SDK's default (``unknown_service…``) names nothing.
    """
    for span in spans:
        name = span.resource.get("service.name")
        if isinstance(name, str) and name and not name.startswith("unknown_service"):
            return name
    return None


def _read_sources(
    sources: list[Path], converter: TraceConverter, progress: Callable[[int, int], None] | None
) -> None:
    """Read every source into ``converter``: the log records first, then the spans.

    A trace is converted as soon as it is complete, so the log records that hold its content (the
    legacy layout) must all be known by then, whatever the order of the files or of a mixed JSON
    Lines file. Pass one keeps the log records (JSON Lines: only the logs lines are parsed) and
    plans each single request (:func:`fpdebug.ingest.otlp_stream.plan`: where each trace ends);
    pass two feeds the spans. JSON Lines convert a trace when its root's line is read; a single
    request converts a trace after its last span (its root has come by then, wherever it was).
    """
    sizes = [path.stat().st_size for path in sources]
    total = sum(sizes)
    encodings = [_encoding(path) for path in sources]
    plans: dict[Path, otlp_stream.Plan] = {}
    # the plan pass reads a single request once more: the bar counts it, scaled to the bytes
    work = total + sum(
        size for size, encoding in zip(sizes, encodings, strict=True) if encoding != "otlp-jsonl"
    )
    done_work = 0

    def report(done: int) -> None:
        if progress is not None:
            progress(min(total, total * (done_work + done) // max(work, 1)), total)

    for path, encoding, size in zip(sources, encodings, sizes, strict=True):
        with path.open("rb") as handle:
            if encoding == "otlp-jsonl":
                for _spans, logs in iter_file(handle, encoding, name=path.name, only="logs"):
                    converter.add([], logs)
                continue
            plan = otlp_stream.plan(handle, encoding, name=path.name, progress=report)
            done_work += size
            plans[path] = plan
            if plan.signal == "logs":
                converter.add(
                    [], (log for log in otlp_stream.records(handle, plan) if isinstance(log, OtlpLog))
                )
    for path, encoding, size in zip(sources, encodings, sizes, strict=True):
        with path.open("rb") as handle:
            if encoding == "otlp-jsonl":
                for spans, _logs in iter_file(
                    handle, encoding, name=path.name, progress=report, only="traces"
                ):
                    converter.add(spans, [])
            elif plans[path].signal == "traces":
                _feed_spans(handle, plans[path], converter, report)
        done_work += size
        if encoding != "otlp-jsonl":
            report(0)
    converter.finish()


def _encoding(path: Path) -> OtlpEncoding:
    """How ``path`` is encoded (told by content)."""
    with path.open("rb") as handle:
        encoding = detect_encoding(handle)
    if encoding is None:
        raise OtlpDecodeError(f"{path.name}: empty file")
    return encoding


def _feed_spans(
    handle: IO[bytes], plan: otlp_stream.Plan, converter: TraceConverter, report: Callable[[int], None]
) -> None:
    """Pass two of one request: each span to ``converter``, each trace closed after its last span."""
    for ordinal, span in enumerate(otlp_stream.records(handle, plan, progress=report)):
        assert isinstance(span, OtlpSpan)  # a traces plan yields spans
        converter.add_span(span)
        if ordinal in plan.ends:
            converter.close(span.trace_id)


def import_otlp(
    sources: list[Path],
    out: Path,
    *,
    source_name: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    redactor: Redactor | None = None,
    created: datetime | None = None,
) -> ImportSummary:
    """Import OTLP trace and log files into one fpdebug trace at ``out`` (replaced atomically).

    Args:
        sources: Trace files and log files, any encoding; logs are merged by span id.
        out: The trace to write (``0600``).
        source_name: The name the header records (default: the first source's file name).
        progress: Called with ``(bytes read, bytes in all sources)``.
        redactor: Removes secrets from each line (default: the writer's).
        created: The header's time (default: now).

    Raises:
        OtlpDecodeError: A source is not OTLP; nothing is written.
        OSError: A source cannot be read or ``out`` cannot be written; nothing is written.
    """
    redactor = redactor if redactor is not None else default_redactor()
    summary = ImportSummary(out=out, format="otlp")
    out_dir = out.parent if str(out.parent) else Path(".")
    with tempfile.TemporaryFile(dir=out_dir) as body:

        def emit(event: TraceEvent) -> None:
            body.write(redactor.redact_line(dump_record(event)))
            summary.records += 1
            summary.counts[event.kind] = summary.counts.get(event.kind, 0) + 1

        _read_sources(sources, TraceConverter(emit, summary), progress)
        if summary.records == 0:
            raise OtlpDecodeError(
                f"{sources[0].name}: OTLP, but no span of an agent run (no LLM, tool or agent span) in it"
            )
        header = TraceHeader(
            producer=_producer(),
            created=created or datetime.now(UTC),
            source=ImportSource(
                format="otlp",
                path=source_name or sources[0].name,
                producer="; ".join(summary.producers) or None,
                not_recorded=NOT_RECORDED,
                gaps=summary.gaps(),
            ),
        )
        body.seek(0)
        write_atomically(out, redactor.redact_line(dump_record(header)), body)
    return summary


def _producer() -> str:
    from fpdebug import __version__

    return f"fpdebug {__version__} import"


def write_atomically(out: Path, first: bytes, rest: IO[bytes] | None = None) -> None:
    """Write ``first`` then the rest of ``rest`` to a temporary file beside ``out``, fsync, rename.

    A reader of ``out`` sees the old file or the whole new one, never a part.
    """
    fd, temp = tempfile.mkstemp(
        prefix=f".{out.name}.", suffix=".tmp", dir=out.parent if str(out.parent) else "."
    )
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), 0o600)
            handle.write(first)
            if rest is not None:
                while chunk := rest.read(1 << 20):
                    handle.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, out)
    except BaseException:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass
        raise
