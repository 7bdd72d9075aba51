"""Where a run's events go: the ``EventSink`` protocol, the file, memory and null sinks, and the recorder.

The agent loop never touches a file. It hands each event to a :class:`Recorder`, which stamps the
envelope (``seq`` dense from the sink's next number, ``ts`` from the injected clock, ``run_id``,
``turn``, ``iteration``) and passes the finished, validated record to an :class:`EventSink`:

- :class:`TraceFileSink` appends to a trace file through :class:`~fpdebug.trace.writer.TraceWriter`;
- :class:`MemorySink` keeps the events in a list (tests, embedding);
- :class:`NullSink` counts and discards them (benchmarks of the loop itself).

A sink may also be a wrapper: the debugger's drive mode wraps the real sink in a gate whose
``emit`` blocks until the user steps, and stops a run by raising
:class:`~fpdebug.errors.RunInterrupted` from ``emit``. A sink that raises must not have stored the
event (the recorder then reuses its ``seq`` for the next record, the ``run_end``), or must say it did
with ``RunInterrupted(stored=True)`` (the recorder then counts the ``seq`` as used): either way the
trace stays dense. :class:`~fpdebug.trace.writer.TraceWriter` keeps the same promise on a failed write.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Protocol, Self, TypeAlias, TypeVar, runtime_checkable

from fpdebug.errors import RunInterrupted
from fpdebug.trace.clock import Clock, SystemClock
from fpdebug.trace.schema import (
    SCHEMA_VERSION,
    AskAnswerEvent,
    CompactEvent,
    CursorMoveEvent,
    EngagementEvent,
    FindingEvent,
    LeaseGrantEvent,
    LeasePruneEvent,
    LlmCallEvent,
    MemoryWriteEvent,
    OutputRetryEvent,
    PassEvent,
    RecallEvent,
    RerouteSupersededEvent,
    RouteConflictEvent,
    RunEndEvent,
    RunStartEvent,
    SkillRejectedEvent,
    StepsUnfinishedEvent,
    ToolResultEvent,
    TraceEvent,
    TurnEndEvent,
    TurnStartEvent,
    WrapUpEvent,
)
from fpdebug.trace.writer import Durability, TraceWriter

__all__ = [
    "EventSink",
    "MemorySink",
    "NullSink",
    "Recorder",
    "RunInterrupted",
    "TraceFileSink",
]

EventRecord: TypeAlias = (
    RunStartEvent
    | TurnStartEvent
    | TurnEndEvent
    | PassEvent
    | CursorMoveEvent
    | LeaseGrantEvent
    | LeasePruneEvent
    | EngagementEvent
    | LlmCallEvent
    | ToolResultEvent
    | FindingEvent
    | SkillRejectedEvent
    | RouteConflictEvent
    | RerouteSupersededEvent
    | StepsUnfinishedEvent
    | WrapUpEvent
    | CompactEvent
    | AskAnswerEvent
    | OutputRetryEvent
    | RecallEvent
    | MemoryWriteEvent
    | RunEndEvent
)
"""The event classes of :data:`~fpdebug.trace.schema.TraceEvent` (the union without its discriminator)."""

E = TypeVar("E", bound=EventRecord)


@runtime_checkable
class EventSink(Protocol):
    """Anything that accepts a run's events in order.

    ``emit`` receives each finished event (a frozen schema model). It may block (a step gate) and may
    raise :class:`~fpdebug.errors.RunInterrupted` to stop the run; it must not keep an event it
    raised on, unless it raises ``RunInterrupted(stored=True)``. ``close`` releases what the sink
    holds; the agent never calls it (whoever made the sink closes it), so several runs can share one
    sink.

    A sink may expose ``next_seq`` (an ``int`` property): the recorder then numbers the run's events
    from there, so a second run appended to the same trace file continues the file's ``seq``.
    """

    def emit(self, event: TraceEvent) -> None:
        """Accept one event."""
        ...

    def close(self) -> None:
        """Release the sink's resources."""
        ...


class TraceFileSink:
    """Appends events to a trace file (the header is written when the file is created).

    Example::

        with TraceFileSink.create("run.fptrace.jsonl", clock=clock) as sink:
            agent.run("Refund A-17", provider=model, sink=sink, clock=clock)
    """

    def __init__(self, writer: TraceWriter) -> None:
        """Wrap an open writer (see :meth:`create`)."""
        self.writer = writer
        """The underlying append-only writer."""

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        *,
        clock: Clock | None = None,
        durability: Durability = "batch",
        overwrite: bool = False,
        producer: str | None = None,
        schema_version: int | None = None,
    ) -> TraceFileSink:
        """Create a new trace file and a sink writing to it.

        Args:
            path: Where to write.
            clock: Stamps the header's ``created`` (use the run's clock for deterministic files).
            durability: ``none``, ``batch`` or ``every`` (see :mod:`fpdebug.trace.writer`).
            overwrite: Replace an existing non-empty file instead of refusing.
            producer: The header's producer string; ``fpdebug <version>`` by default.
            schema_version: The trace's schema version; the newest (2) by default, ``1`` for
                readers that predate it (docs/trace-contract.md §8.7).

        Returns:
            The sink; its :attr:`next_seq` is 1.

        Raises:
            TraceError: The file cannot be created (exists and ``overwrite`` is false, no directory…).
            TraceLockedError: Another writer holds the file.
        """
        writer = TraceWriter.create(
            path,
            producer=producer,
            clock=clock,
            durability=durability,
            overwrite=overwrite,
            schema_version=SCHEMA_VERSION if schema_version is None else schema_version,
        )
        return cls(writer)

    @property
    def path(self) -> Path:
        """The trace file."""
        return self.writer.path

    @property
    def next_seq(self) -> int:
        """The ``seq`` the next event must carry."""
        return self.writer.next_seq

    def emit(self, event: TraceEvent) -> None:
        """Append one event.

        Raises:
            TraceWriteError: The disk refused the record (nothing of it is left in the file).
            TraceFormatError: The event's ``seq`` is not the file's next one.
        """
        self.writer.append(event)

    def close(self) -> None:
        """Flush (per the durability policy) and close the file."""
        self.writer.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"TraceFileSink({str(self.path)!r})"


class MemorySink:
    """Keeps every event in :attr:`events`, in order."""

    def __init__(self) -> None:
        self.events: list[TraceEvent] = []
        """The events received."""
        self.closed = False
        """Whether :meth:`close` was called."""

    @property
    def next_seq(self) -> int:
        """One more than the last event's ``seq`` (1 when empty)."""
        return self.events[-1].seq + 1 if self.events else 1

    def emit(self, event: TraceEvent) -> None:
        """Keep the event."""
        self.events.append(event)

    def close(self) -> None:
        """Mark the sink closed (the events stay readable)."""
        self.closed = True

    def of_kind(self, kind: str) -> list[TraceEvent]:
        """The events of one kind, in order."""
        return [event for event in self.events if event.kind == kind]

    def __iter__(self) -> Iterator[TraceEvent]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    def __repr__(self) -> str:
        return f"MemorySink({len(self.events)} events)"


class NullSink:
    """Discards every event, counting them (for benchmarks of the loop without I/O)."""

    def __init__(self) -> None:
        self.count = 0
        """How many events were emitted."""

    def emit(self, event: TraceEvent) -> None:
        """Count the event and drop it."""
        self.count += 1

    def close(self) -> None:
        """Nothing to release."""

    def __repr__(self) -> str:
        return f"NullSink({self.count} events)"


class Recorder:
    """Stamps the envelope of each event of one run and hands it to the sink.

    Args:
        sink: Where the events go.
        clock: Where ``ts`` comes from.
        run_id: The run every event belongs to.
        first_seq: The first ``seq``; by default the sink's ``next_seq`` when it has one, else 1.
    """

    def __init__(
        self, sink: EventSink, *, clock: Clock | None = None, run_id: str, first_seq: int | None = None
    ) -> None:
        self.sink = sink
        """The sink the events go to."""
        self.clock: Clock = clock or SystemClock()
        """The clock that stamps ``ts`` (and that the loop reads for latencies)."""
        self.run_id = run_id
        """The run id stamped on every event."""
        if first_seq is None:
            first_seq = getattr(sink, "next_seq", 1)
        self.next_seq: int = first_seq
        """The ``seq`` of the next event; advanced only when the sink accepted an event."""

    def now(self) -> datetime:
        """Read the clock."""
        return self.clock.now()

    def emit(
        self,
        event_type: type[E],
        /,
        *,
        turn: int | None = None,
        iteration: int | None = None,
        **fields: object,
    ) -> E:
        """Build one event of ``event_type`` with the envelope stamped, and emit it.

        Args:
            event_type: The event class (``PassEvent``, ``LlmCallEvent``…).
            turn: The 1-based turn, or ``None`` for a run-level event.
            iteration: The 1-based iteration, or ``None`` where it has no meaning.
            **fields: The kind's own fields.

        Returns:
            The event as emitted.

        Raises:
            Whatever the sink raises (``RunInterrupted``, ``TraceWriteError``…); the ``seq`` is then
            not consumed, unless a ``RunInterrupted`` says the sink stored the event.
        """
        # Each kind's own fields are checked by pydantic as the event is built; mypy cannot match
        # **fields against fifteen constructors, so the class is called as a plain factory of E.
        build: Callable[..., E] = event_type
        event = build(
            seq=self.next_seq,
            ts=self.clock.now(),
            run_id=self.run_id,
            turn=turn,
            iteration=iteration,
            **fields,
        )
        try:
            self.sink.emit(event)
        except RunInterrupted as stop:
            if stop.stored:  # the event is in the trace: its seq is used, run_end comes after it
                self.next_seq += 1
            raise
        self.next_seq += 1
        return event
