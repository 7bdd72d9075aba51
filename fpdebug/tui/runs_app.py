"""RunsApp: ``fpdebug view DIR`` (or several files): the runs table first, traces and diffs above it.

The debugger's app (:class:`~fpdebug.tui.app.FpdebugApp`: its keys, help, palette and keymap) with
no trace of its own: its first screen is the :class:`~fpdebug.tui.screens.runs_screen.RunsScreen`;
``enter`` pushes a trace's debugger screen above it and ``d`` a
:class:`~fpdebug.tui.screens.run_diff_screen.RunDiffScreen`; ``escape`` comes back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from textual.app import App
from textual.screen import Screen

from fpdebug.tui.app import FpdebugApp, TraceSource

__all__ = ["RunsApp"]


class RunsApp(FpdebugApp):
    """The debugger opened on many traces: a table of their runs.

    Args:
        paths: Trace files and folders (as ``fpdebug runs`` takes them).
        keymap: Binding id → keys.
        use_cache: Read and write the runs table's per-trace cache.
    """

    def __init__(
        self, paths: Sequence[str], *, keymap: Mapping[str, str] | None = None, use_cache: bool = True
    ) -> None:
        # Not FpdebugApp.__init__: that opens one trace, and this app opens each one when asked.
        App.__init__(self)
        self.paths = [str(path) for path in paths]
        """What the table lists."""
        self.use_cache = use_cache
        """Whether the table uses its per-trace cache."""
        self.source = TraceSource(Path(self.paths[0]) if self.paths else Path("."))
        self.keymap = dict(keymap or {})
        self.controller = None
        self._session = None

    def get_default_screen(self) -> Screen:
        from fpdebug.tui.screens.runs_screen import RunsScreen

        return RunsScreen(self.paths, use_cache=self.use_cache)
