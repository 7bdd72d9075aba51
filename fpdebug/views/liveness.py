"""What a follow view may say of a run without ``run_end``: running, quiet for a while, or maybe gone.

A run without ``run_end`` in a followed file is not necessarily running: its writer may be paused
(a long model call, a debugger) or dead (killed before it could write ``run_end``). The view says
what is known: when the file was last written (its mtime) and whether an fpdebug writer still holds
its lock (:func:`~fpdebug.trace.liveness.writer_holds`).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Literal

from fpdebug.errors import TraceError
from fpdebug.trace.liveness import seconds_since, writer_holds
from fpdebug.trace.reader import TraceReader

__all__ = ["PROBE_EVERY", "QUIET_AFTER", "WriterState", "WriterWatch", "ago"]

QUIET_AFTER = 30.0
"""Seconds without a new record after which a followed run is no longer called "running" on trust."""

PROBE_EVERY = 1.0
"""Seconds a lock lookup is reused (the bars are redrawn many times a second while records flood in)."""


def ago(seconds: float) -> str:
    """``45s``, ``2m``, ``1h 5m``, ``3d 4h``: a quiet spell, to the unit that matters."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m"
    if whole < 86400:
        hours, minutes = divmod(whole // 60, 60)
        return f"{hours}h {minutes}m" if minutes else f"{hours}h"
    days, hours = divmod(whole // 3600, 24)
    return f"{days}d {hours}h" if hours else f"{days}d"


@dataclass(frozen=True)
class WriterState:
    """What is known of the writer of a followed file."""

    quiet: float
    """Seconds since the file was last written."""
    holds: bool | None
    """An fpdebug writer holds the file's lock (``None``: the lock table cannot be read)."""

    @property
    def state(self) -> Literal["running", "quiet", "gone"]:
        """``running`` (records came lately, or a writer holds the file), ``quiet`` or ``gone``."""
        if self.quiet < QUIET_AFTER or self.holds:
            return "running"
        return "gone" if self.holds is False else "quiet"

    def header_words(self) -> str:
        """For the run header: ``● running``, or what is known when that would be a guess."""
        state = self.state
        if state == "running":
            if self.quiet < QUIET_AFTER:
                return "● running"
            return f"● running · no new records for {ago(self.quiet)}; its writer still holds the file"
        if state == "gone":
            return f"‖ no new records for {ago(self.quiet)} and no writer holds the file: paused or gone?"
        return f"‖ no new records for {ago(self.quiet)}: writer paused or gone?"

    def status_words(self) -> str:
        """For the status line: ``run in progress``, or how long the file has been quiet."""
        if self.state == "running":
            return "run in progress"
        return f"no run_end, no new records for {ago(self.quiet)}"


class WriterWatch:
    """Looks at a followed file's writer, at most once per :data:`PROBE_EVERY` seconds.

    Args:
        reader: The followed file's reader.
    """

    def __init__(self, reader: TraceReader) -> None:
        self._reader = reader
        self._lock = threading.Lock()
        self._probed_at = float("-inf")
        self._holds: bool | None = None

    def state(self, *, now: float | None = None) -> WriterState:
        """The writer's state now (``now``: a wall-clock time, for tests)."""
        try:
            stat = self._reader.stat()
        except TraceError:
            return WriterState(quiet=0.0, holds=None)  # a closed reader: nothing is claimed
        with self._lock:
            tick = time.monotonic()
            if tick - self._probed_at >= PROBE_EVERY:
                self._holds = writer_holds(stat.st_ino)
                self._probed_at = tick
            holds = self._holds
        return WriterState(quiet=seconds_since(stat.st_mtime, now), holds=holds)
