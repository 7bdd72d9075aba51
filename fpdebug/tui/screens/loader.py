"""TraceLoader: the trace screen's background reading, the first load and the tail of a followed file.

Both run in worker threads of the screen (so the screen's worker errors and cancellation cover
them). They only step the :class:`~fpdebug.views.session.TraceSession` and post
:mod:`~fpdebug.tui.messages`; the screen's handlers, on the UI thread, bring the widgets up to date.
"""

from __future__ import annotations

import sys
import threading
import time

from textual.message import Message
from textual.screen import Screen
from textual.worker import get_current_worker

from fpdebug.errors import TraceReplacedError
from fpdebug.tui import collector
from fpdebug.tui.messages import LoadFinished, TraceChecked, TraceGrew, TraceReplaced
from fpdebug.views.session import FIRST_CHUNK, FIRST_SLICE, TraceSession

__all__ = [
    "FIRST_CHUNK",
    "FIRST_PAINT_WAIT",
    "FIRST_SLICE",
    "FIRST_STEP",
    "FOLLOW_INTERVAL",
    "LOAD_PAUSE",
    "LOAD_SLICE",
    "LOAD_SWITCH_INTERVAL",
    "TraceLoader",
]

FOLLOW_INTERVAL = 0.05
"""Seconds between two polls of a followed file (new events show within about this long)."""

FIRST_PAINT_WAIT = 1.0
"""Seconds the loader waits for the first screen to be painted before it reads on."""

FIRST_STEP = 200
"""Lines modelled at a time for the first screen, until it has a screenful of rows."""

LOAD_SLICE = 5_000
"""Lines modelled per step of the background load."""

LOAD_PAUSE = 0.002
"""Seconds the loader sleeps between two slices, so the UI thread gets the interpreter."""

LOAD_SWITCH_INTERVAL = 0.0005
"""The interpreter's thread switch interval while the loader runs (the default is 5 ms)."""


class TraceLoader:
    """Reads a trace for a screen: the first load (index, model, full check) and then the tail.

    Args:
        screen: The screen whose workers run the reading and which receives the notices.
        session: The trace.
    """

    def __init__(self, screen: Screen[None], session: TraceSession) -> None:
        self._screen = screen
        self._session = session
        self._stop = threading.Event()
        # Set once the load worker has validated every line it found (then the tail checks new ones).
        self._backlog_checked = threading.Event()
        self._first_error: Exception | None = None  # reading the first slice failed: the worker says so
        self.first_paint = threading.Event()
        """Set once the first rows are on screen (the first-screen probe of the benchmarks waits on it)."""

    def _post(self, message: Message) -> None:
        self._screen.post_message(message)

    def start_load(self) -> bool:
        """Read the first screen's slice now, then the rest in a worker (a running one is replaced).

        The first slice (the first MB indexed, its first lines modelled) is read on the UI thread,
        before the screen's first frame: read by the worker, it came after that frame, and the
        screen was laid out and drawn once empty and again with its rows (issue 22). It is bounded
        (:data:`FIRST_CHUNK`, :data:`FIRST_SLICE`), so keys wait for it at most once, briefly.

        Its notice is posted as the worker's was (a subclass's handler sees every slice), and the
        caller may bring its rows up to date at once, for the first frame.

        Returns:
            Whether the first slice was read (else the worker reports the error as its own).
        """
        try:
            added = self._first_slice()
        except Exception as error:
            self._first_error = error
        else:
            self._first_error = None
            self._post(TraceGrew(added))
        self._screen.run_worker(self._load, thread=True, exclusive=True, group="load", exit_on_error=False)
        return self._first_error is None

    def _first_slice(self) -> int:
        session = self._session
        added = session.index_step(chunk_size=FIRST_CHUNK)
        # Only as many lines as it takes to fill the screen with rows (a few hundred on most
        # traces): each modelled line is UI-thread time before the first frame.
        rows = self._screen.app.size.height
        fed = 0
        while fed < FIRST_SLICE and len(session.iterations) <= rows:
            step = session.model_step(limit=min(FIRST_STEP, FIRST_SLICE - fed))
            if not step:
                break
            fed += step
        return added

    def start_tail(self) -> None:
        """Start following the file in a worker (a running one is replaced)."""
        self._screen.run_worker(self._tail, thread=True, exclusive=True, group="tail", exit_on_error=False)

    def stop(self) -> None:
        """Stop the tail and release a load that waits for the first paint (the screen is going)."""
        self._stop.set()
        self.first_paint.set()
        collector.resume()

    def _load(self) -> None:
        """Index and model the trace in slices; rows appear as they are modelled."""
        worker = get_current_worker()
        session = self._session
        if self._first_error is not None:
            raise self._first_error
        # The first screen comes first: let the UI thread paint it before the long haul.
        self.first_paint.wait(FIRST_PAINT_WAIT)
        collector.resume()  # paused by `fpdebug view` over its start-up
        # This thread holds the GIL for long stretches; the UI thread, which gives it up at every
        # poll of the terminal, would otherwise wait a whole switch interval to get it back each
        # time and keys would lag by seconds. A short interval and a pause per slice keep it lively.
        interval = sys.getswitchinterval()
        sys.setswitchinterval(LOAD_SWITCH_INTERVAL)
        try:
            # A persisted index (a trace opened before) spares the scan; after the first screen,
            # since loading it takes about 0.25 CPU-s at 10M lines.
            restored = session.restore_index()
            if restored:
                self._post(TraceGrew(restored))
            while not session.index_done and not worker.is_cancelled:
                self._post(TraceGrew(session.index_step()))
            if not worker.is_cancelled:
                session.save_index()
            while not worker.is_cancelled and session.model_step(limit=LOAD_SLICE):
                self._post(TraceGrew())
                time.sleep(LOAD_PAUSE)
            if not worker.is_cancelled:
                self._post(LoadFinished())
            # The model read each line's facts only: validate every line in full now, so counts,
            # badges and filters of invalid lines agree with what opening a line shows.
            while not worker.is_cancelled and session.check_step():
                self._post(TraceChecked())
                time.sleep(LOAD_PAUSE)
        finally:
            sys.setswitchinterval(interval)
        if not worker.is_cancelled:
            self._backlog_checked.set()
            self._post(TraceChecked())

    def _tail(self) -> None:
        """Poll the followed file; announce growth (the notices coalesce); check new lines in full."""
        worker = get_current_worker()
        session = self._session
        while not worker.is_cancelled and not self._stop.is_set():
            torn = session.torn
            try:
                lines, _rows = session.poll()
            except TraceReplacedError as error:
                # Another file now has the name: show what was read, never splice the new content.
                self._post(TraceReplaced(str(error)))
                return
            if lines or session.torn != torn:  # a torn tail that grew or went is a row that changed
                # Before any checking: the whole-file check of a big trace takes seconds, and new
                # events must show within a tick of being written.
                self._post(TraceGrew(lines))
            # The load worker checks every line it finds, appended ones too, until it catches up;
            # then new lines are checked here, one slice a tick so polling never waits long.
            if self._backlog_checked.is_set() and session.check_step():
                self._post(TraceChecked())
            self._stop.wait(FOLLOW_INTERVAL)
