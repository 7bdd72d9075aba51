"""The trace: fpdebug's contract on disk. Imports nothing of fpdebug's but itself (and the error tree).

Standard library, pydantic and orjson only: the engine writes it, every view and the backtracker
read it.

- :mod:`~fpdebug.trace.schema`: the records (frozen pydantic models, one union on ``kind``).
- :mod:`~fpdebug.trace.writer`: :class:`TraceWriter`, append-only, locked, with a durability policy.
- :mod:`~fpdebug.trace.reader`: :class:`TraceReader`, random access by line, lazy validation,
  ``refresh()`` for following, ``problems()`` for validation.
- :mod:`~fpdebug.trace.records`: what a line can be besides an event (:class:`OpaqueRecord`,
  :class:`InvalidRecord`), :class:`Peek`, :class:`Problem`, :class:`TornTail`.
- :mod:`~fpdebug.trace.index`: :class:`LineIndex`, the byte-offset index of complete lines.
- :mod:`~fpdebug.trace.model`: :class:`RunModel`, the projections views and the backtracker read.
- :mod:`~fpdebug.trace.clock`: :class:`Clock`, :class:`SystemClock`, :class:`FixedClock`.
- :mod:`~fpdebug.trace.inert`: :func:`inert` / :func:`inert_line` for printing trace text.
- :mod:`~fpdebug.trace.redact`: :class:`Redactor`, :func:`default_redactor`: secrets out of every
  line the writer, sidecars and exports write.
"""

from __future__ import annotations

from fpdebug.trace.clock import Clock, FixedClock, SystemClock
from fpdebug.trace.index import LineIndex, scan_line_ends
from fpdebug.trace.inert import inert, inert_line
from fpdebug.trace.model import (
    Iteration,
    LeaseLifetime,
    MapPoint,
    MapTimeline,
    RecordSource,
    Run,
    RunModel,
    Turn,
)
from fpdebug.trace.reader import ProblemScanner, TraceReader
from fpdebug.trace.records import InvalidRecord, OpaqueRecord, Peek, Problem, Record, TornTail
from fpdebug.trace.redact import Redactor, default_redactor
from fpdebug.trace.schema import (
    EVENT_ADAPTER,
    EVENT_KINDS,
    FORMAT,
    SCHEMA_VERSION,
    CursorMoveEvent,
    EngagementEvent,
    FindingEvent,
    LeaseGrantEvent,
    LeasePruneEvent,
    LlmCallEvent,
    PassEvent,
    RerouteSupersededEvent,
    RouteConflictEvent,
    RunEndEvent,
    RunStartEvent,
    SkillRejectedEvent,
    ToolResultEvent,
    TraceEvent,
    TraceHeader,
    TurnEndEvent,
    TurnStartEvent,
)
from fpdebug.trace.writer import Durability, TraceWriter

__all__ = [
    "EVENT_ADAPTER",
    "EVENT_KINDS",
    "FORMAT",
    "SCHEMA_VERSION",
    "Clock",
    "CursorMoveEvent",
    "Durability",
    "EngagementEvent",
    "FindingEvent",
    "FixedClock",
    "InvalidRecord",
    "Iteration",
    "LeaseGrantEvent",
    "LeaseLifetime",
    "LeasePruneEvent",
    "LineIndex",
    "LlmCallEvent",
    "MapPoint",
    "MapTimeline",
    "OpaqueRecord",
    "PassEvent",
    "Peek",
    "Problem",
    "ProblemScanner",
    "Record",
    "RecordSource",
    "Redactor",
    "RerouteSupersededEvent",
    "RouteConflictEvent",
    "Run",
    "RunEndEvent",
    "RunModel",
    "RunStartEvent",
    "SkillRejectedEvent",
    "SystemClock",
    "ToolResultEvent",
    "TornTail",
    "TraceEvent",
    "TraceHeader",
    "TraceReader",
    "TraceWriter",
    "Turn",
    "TurnEndEvent",
    "TurnStartEvent",
    "default_redactor",
    "inert",
    "inert_line",
    "scan_line_ends",
]
