"""Drive mode: the debugger runs an agent itself, behind a step gate (pause, step, breakpoints).

- :class:`StepGate` (``gate``): the event sink that pauses the run between events; no Textual.
- :class:`RunDriver` (``driver``): the app's run controller; the run in a thread worker.
- :class:`DriveApp`, :class:`DriveScreen`, :class:`BreakpointsScreen`: keys, status, menu.
"""

from __future__ import annotations

from fpdebug.tui.drive.app import DriveApp
from fpdebug.tui.drive.driver import RunDriver, RunStateChanged, declared_nodes, declared_tools
from fpdebug.tui.drive.gate import Breakpoint, GateStatus, PausePoint, StepGate
from fpdebug.tui.drive.screen import DRIVE_BINDINGS, BreakpointsScreen, DriveScreen

__all__ = [
    "DRIVE_BINDINGS",
    "Breakpoint",
    "BreakpointsScreen",
    "DriveApp",
    "DriveScreen",
    "GateStatus",
    "PausePoint",
    "RunDriver",
    "RunStateChanged",
    "StepGate",
    "declared_nodes",
    "declared_tools",
]
