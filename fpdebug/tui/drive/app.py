"""DriveApp: the debugger driving an embedded run (``fpdebug demo``, ``fpdebug run … --tui``).

``DriveApp(TraceSource(path, "drive"), controller=RunDriver(…))`` follows the driver's trace file
with the drive screen (keys ``space`` / ``s`` / ``b``, the gate's state in the status line); the
driver is started once the screen is up and stopped when the app exits, which ends a run still in
progress with ``run_end {interrupted}``. :meth:`DriveApp.quit_from_signal` quits the same way from a
signal handler (SIGTERM, SIGHUP).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

from textual import events, on
from textual.message import Message
from textual.screen import Screen

from fpdebug.tui.app import FpdebugApp
from fpdebug.tui.drive.driver import RunStateChanged
from fpdebug.tui.drive.gate import GateStatus
from fpdebug.tui.drive.screen import DRIVE_BINDINGS, BreakpointsScreen, DriveScreen
from fpdebug.tui.screens.help_screen import KeyGroup
from fpdebug.tui.screens.trace_screen import TraceScreen

__all__ = ["DriveApp"]


class _QuitFromSignal(Message):
    """SIGTERM or SIGHUP asked the app to quit (posted from the loop, never from the handler itself)."""


class DriveApp(FpdebugApp):
    """The debugger with a run of its own (see :class:`~fpdebug.tui.drive.driver.RunDriver`)."""

    CSS_PATH = str(Path(__file__).resolve().parents[1] / "app.tcss")  # relative paths resolve from here
    SCREEN_CLASS: ClassVar[type[TraceScreen]] = DriveScreen

    def get_default_screen(self) -> Screen:
        screen = super().get_default_screen()
        self.drive_screen = screen if isinstance(screen, DriveScreen) else None
        """The main screen (it shows the gate's state)."""
        return screen

    _quit_asked = False
    _leave_when_ended = False

    def quit_from_signal(self) -> None:
        """Stop the run and leave as ``q`` does; for a signal handler (SIGTERM, SIGHUP).

        A Python signal handler runs in the main thread between two steps of whatever it was doing
        (here: the app's event loop), so this only schedules the quit: the loop posts it to the app
        at its next turn, the app stops the run and leaves once the run has written its ``run_end``.
        Asked before the app runs, the quit waits for its mount; asked after the loop has ended,
        there is nothing left to quit (the caller stops the run).
        """
        if self._quit_asked:
            return
        self._quit_asked = True
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        loop.call_soon_threadsafe(lambda: self.post_message(_QuitFromSignal()))

    @on(events.Mount)
    def _quit_if_asked_early(self) -> None:
        if self._quit_asked and not self._leave_when_ended:
            self.post_message(_QuitFromSignal())

    @on(_QuitFromSignal)
    def _quit_now(self) -> None:
        # As `q` does, but the app leaves once the stopped run has ended: an app that exited before
        # its run worker started would leave the run never started and its caller waiting for it.
        if self._leave_when_ended:
            return
        screen = getattr(self, "drive_screen", None)
        if screen is None or not screen.is_mounted:
            # The screen is not up yet (it is made after the app's mount): leaving now would break it.
            self.set_timer(0.05, lambda: self.post_message(_QuitFromSignal()))
            return
        self._leave_when_ended = True
        if self.controller is not None:
            self.controller.stop()
        status = getattr(self.controller, "status", None)
        if not isinstance(status, GateStatus) or status.state == "ended":
            self.exit()

    @on(RunStateChanged)
    def _run_state_changed(self, message: RunStateChanged) -> None:
        if self._leave_when_ended and message.status.state == "ended":
            self.exit()  # the signal's quit, now that the run has written its run_end
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
