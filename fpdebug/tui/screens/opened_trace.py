"""A trace opened from the runs table or the run diff: the debugger's screen, pushed above them.

:func:`open_trace` opens the file with its own reader (a file that cannot be opened is a notice,
never a crash) and pushes an :class:`OpenedTraceScreen`: the usual :class:`TraceScreen`, which
selects the pass at a given line once loaded, closes its reader when it leaves, and goes back to
the screen below on ``escape`` when there is no search or filter left to clear.
"""

from __future__ import annotations

from pathlib import Path

from textual import on
from textual.app import App

from fpdebug.tui.messages import LoadFinished
from fpdebug.tui.screens.trace_screen import TraceScreen
from fpdebug.tui.widgets.link_document import Jump
from fpdebug.views.session import TraceSession

__all__ = ["OpenedTraceScreen", "open_trace"]

_READER_CACHE = 512  # as the app's own reader (fpdebug.tui.app.READER_CACHE)


class OpenedTraceScreen(TraceScreen):
    """The debugger on a trace opened from another screen.

    Args:
        session: The trace (its reader is closed when the screen leaves).
        at_line: The line to show once loaded (its iteration is selected), if any.
    """

    def __init__(
        self, session: TraceSession, *, at_line: int | None = None, at_run: str | None = None
    ) -> None:
        super().__init__(session, mode="replay")
        self.at_line = at_line
        """The line shown once the trace is loaded."""
        self.at_run = at_run
        """The run whose first pass is shown once loaded (a file may hold several), when no line is given."""

    @on(LoadFinished)
    def _go_to_line(self) -> None:
        line, self.at_line = self.at_line, None
        if line is None and self.at_run is not None:
            run = next((run for run in self.session.iter_runs() if run.run_id == self.at_run), None)
            first = (
                run.turns[0].iterations[0]
                if run is not None and run.turns and run.turns[0].iterations
                else None
            )
            line = first.lines[0] if first is not None and first.lines else None
        self.at_run = None
        if line is not None:
            # After the base screen's own handling of the load (it fills the timeline).
            self.call_after_refresh(self.jump_to, Jump(line))

    def on_unmount(self) -> None:
        super().on_unmount()
        self.session.reader.close()

    def action_clear_filter(self) -> None:
        """Clear the search or the filter; when there is none, go back to the screen below."""
        document = self.focused_document()
        target = self.current_list()
        if (document is not None and document.finder.active) or (
            target is not None and target.row_filter is not None
        ):
            super().action_clear_filter()
            return
        if len(self.app.screen_stack) > 1:
            self.app.pop_screen()


def open_trace(app: App[object], path: Path, line: int | None = None, *, run: str | None = None) -> bool:
    """Open ``path`` in the debugger above the current screen, at ``line`` (or at run ``run``'s first
    pass); a notice if it cannot be.

    Returns:
        Whether the trace opened.
    """
    from fpdebug.trace.inert import inert_line
    from fpdebug.trace.reader import TraceReader

    try:
        reader = TraceReader(path, index=False, cache_size=_READER_CACHE)
    except Exception as error:  # not a trace, gone, unreadable: say so and stay
        app.notify(
            inert_line(f"cannot open {path.name}: {error}"),
            title="not opened",
            severity="error",
            markup=False,
        )
        return False
    app.push_screen(OpenedTraceScreen(TraceSession(reader), at_line=line, at_run=run))
    return True
