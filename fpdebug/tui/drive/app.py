"""DriveApp: the debugger driving an embedded run (``fpdebug demo``, ``fpdebug run … --tui``).

``DriveApp(TraceSource(path, "drive"), controller=RunDriver(…))`` follows the driver's trace file
with the drive screen (keys ``space`` / ``s`` / ``b``, the gate's state in the status line); the
driver is started once the screen is up and stopped when the app exits, which ends a run still in
progress with ``run_end {interrupted}``.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual import on
from textual.screen import Screen

from fpdebug.tui.app import FpdebugApp
from fpdebug.tui.drive.driver import RunStateChanged
from fpdebug.tui.drive.screen import DRIVE_BINDINGS, BreakpointsScreen, DriveScreen
from fpdebug.tui.screens.help_screen import KeyGroup
from fpdebug.tui.screens.trace_screen import TraceScreen

__all__ = ["DriveApp"]


class DriveApp(FpdebugApp):
    """The debugger with a run of its own (see :class:`~fpdebug.tui.drive.driver.RunDriver`)."""

    CSS_PATH = Path(__file__).resolve().parents[1] / "app.tcss"  # relative paths resolve from here
    SCREEN_CLASS: ClassVar[type[TraceScreen]] = DriveScreen

    def get_default_screen(self) -> Screen:
        screen = super().get_default_screen()
        self.drive_screen = screen if isinstance(screen, DriveScreen) else None
        """The main screen (it shows the gate's state)."""
        return screen

    @on(RunStateChanged)
    def _run_state_changed(self, message: RunStateChanged) -> None:
        screen = getattr(self, "drive_screen", None)
        if screen is not None and screen.is_mounted:
            screen.run_state_changed(message.status)

    @classmethod
    def binding_groups(cls) -> list[KeyGroup]:
        """The debugger's keys with drive mode's own group after "Anywhere"."""
        groups = FpdebugApp.binding_groups()
        return [
            groups[0],
            ("Drive a run", list(DRIVE_BINDINGS)),
            *groups[1:],
            ("Breakpoints menu", list(BreakpointsScreen.BINDINGS)),
        ]
