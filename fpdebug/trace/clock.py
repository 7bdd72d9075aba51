"""Clocks: where a trace's timestamps come from (the engine injects one; tests use a fixed one)."""

from __future__ import annotations

import itertools
import threading
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "FixedClock", "SystemClock"]


@runtime_checkable
class Clock(Protocol):
    """Anything with a ``now()`` that returns an aware UTC datetime."""

    def now(self) -> datetime:
        """Return the current instant, timezone-aware, in UTC."""
        ...


class SystemClock:
    """The wall clock, in UTC."""

    def now(self) -> datetime:
        """Return ``datetime.now(UTC)``."""
        return datetime.now(UTC)

    def __repr__(self) -> str:
        return "SystemClock()"


class FixedClock:
    """A deterministic clock: the k-th call to :meth:`now` returns ``start + k * step``.

    Every timestamp and every latency measured with it (``now()`` after minus ``now()`` before) is
    a pure function of how many times it was read, so two runs of the same scenario write
    byte-identical traces.

    Args:
        start: The first instant returned. Must be timezone-aware; it is converted to UTC.
        step: How far the clock advances on each read (1 ms by default). Zero freezes it.

    Raises:
        ValueError: ``start`` is naive or ``step`` is negative.
    """

    def __init__(self, start: datetime, *, step: timedelta = timedelta(milliseconds=1)) -> None:
        if start.tzinfo is None or start.utcoffset() is None:
            raise ValueError("FixedClock needs a timezone-aware start (e.g. datetime(..., tzinfo=UTC))")
        if step < timedelta(0):
            raise ValueError(f"FixedClock step must not be negative, got {step}")
        self.start = start.astimezone(UTC)
        """The instant of the first read."""
        self.step = step
        """The advance per read."""
        self._reads = itertools.count()
        # The engine may read the clock from a worker thread while a test reads it too.
        self._lock = threading.Lock()

    def now(self) -> datetime:
        """Return ``start + k * step`` for the k-th call (k from 0)."""
        with self._lock:
            k = next(self._reads)
        return self.start + k * self.step

    def __repr__(self) -> str:
        return f"FixedClock({self.start.isoformat()}, step={self.step!r})"
