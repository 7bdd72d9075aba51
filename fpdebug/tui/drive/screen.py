"""DriveScreen: the trace screen of a run the app drives, and the breakpoints menu.

Everything the trace screen shows stays as it is: the run's file is followed like any other. On top:

- ``space`` pauses or continues, ``s`` steps one pass, ``b`` opens :class:`BreakpointsScreen`;
- the status line ends with the gate's state: running, paused at an event, a breakpoint hit, or how
  the run ended;
- when the run pauses, the screen selects the iteration of the event it paused on as soon as the
  followed file shows that event.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.binding import Binding, BindingType
from textual.timer import Timer

from fpdebug.tui.drive.breakpoints_menu import BreakpointsScreen, breakpoint_choices
from fpdebug.tui.drive.declared import Declared
from fpdebug.tui.drive.driver import RunDriver
from fpdebug.tui.drive.gate import GateStatus, PausePoint
from fpdebug.tui.messages import TraceGrew
from fpdebug.tui.screens.trace_screen import TraceScreen
from fpdebug.tui.text import Palette, plain

__all__ = [
    "DRIVE_BINDINGS",
    "BreakpointsScreen",
    "DriveScreen",
    "breakpoint_choices",
    "gate_header_text",
    "gate_text",
]

DRIVE_BINDINGS: list[BindingType] = [
    Binding(
        "space",
        "run_toggle",
        "Pause/Go",
        id="run-toggle",
        tooltip="Pause the run at its next event, or continue a paused run to the next breakpoint.",
    ),
    Binding(
        "s",
        "run_step",
        "Step",
        id="run-step",
        tooltip="Run one pass: until the next pass event is written, then pause.",
    ),
    Binding(
        "b",
        "breakpoints",
        "Breakpoints",
        id="run-breakpoints",
        tooltip="Choose breakpoints: lease_prune, a map parking, the cursor into a skill, a tool, a kind.",
    ),
]
"""The keys of drive mode (listed in the ``?`` help under "Drive a run")."""

PAUSE_RETRY = 0.05
"""Seconds between two tries to select the iteration of a pause the screen does not show yet."""


def gate_text(status: GateStatus, palette: Palette) -> Text:
    """The gate's state for the status line: running, paused at …, breakpoint hit, ended."""
    text = Text(no_wrap=True, end="")
    text.append("  ")
    state = status.state
    if state == "running":
        text.append("▶ running", palette.good)
        if status.target == "pass":
            text.append(" to the next pass", palette.dim)
        elif status.target == "event":
            text.append(" · pausing at the next event", palette.dim)
    elif state == "paused" and status.paused_at is not None:
        point = status.paused_at
        if point.reason == "breakpoint":
            text.append("● breakpoint ", palette.bad)
            text.append_text(plain(", ".join(point.hits), palette.bad, limit=80))
            text.append(" hit at ", palette.bad)
        else:
            text.append("‖ paused at ", palette.warn)
        _point(text, point, palette)
    elif state == "stopping":
        text.append("■ stopping the run…", palette.warn)
    elif state == "ended":
        outcome = status.outcome or "ended"
        if outcome == "completed":
            text.append("■ run ended: completed", palette.good)
        elif outcome == "interrupted":
            text.append("■ run ended: interrupted", palette.warn)
        else:
            text.append("✕ run failed", palette.bad)
            if status.error:
                text.append(": ", palette.bad)
                text.append_text(plain(status.error, palette.bad, limit=100))
    if status.breakpoints and state in ("running", "paused"):
        count = len(status.breakpoints)
        text.append(f" · {count} breakpoint{'s' if count != 1 else ''}", palette.dim)
    return text


def gate_header_text(status: GateStatus, palette: Palette) -> Text:
    """The gate's state for the run header, in a few words: ``‖ paused at T1·I2``, ``▶ running``…

    The header shows it while the trace has no ``run_end`` yet, with the symbols of the status line
    (:func:`gate_text`), which has the details.
    """
    state = status.state
    if state == "paused" and status.paused_at is not None:
        point = status.paused_at
        if point.reason == "breakpoint":
            text = Text("● breakpoint hit at ", palette.bad, end="")
        else:
            text = Text("‖ paused at ", palette.warn, end="")
        text.append(point.where, palette.accent)
        return text
    if state == "stopping":
        return Text("■ stopping", palette.warn, end="")
    if state == "ended":
        outcome = status.outcome or "ended"
        if outcome == "completed":
            return Text("■ completed", palette.good, end="")
        if outcome == "interrupted":
            return Text("■ interrupted", palette.warn, end="")
        return Text("✕ failed", palette.bad, end="")
    return Text("▶ running", palette.good, end="")


def _point(text: Text, point: PausePoint, palette: Palette) -> None:
    # Where first and the detail last: a narrow terminal cuts the detail, never the position.
    text.append(f"{point.where} ", palette.accent)
    text.append(point.kind, palette.key)
    text.append(f" (line {point.seq})", palette.dim)
    if point.detail:
        text.append(" · ", palette.dim)
        text.append_text(plain(point.detail, limit=60))


class DriveScreen(TraceScreen):
    """The trace screen of a driven run."""

    BINDINGS: ClassVar[list[BindingType]] = DRIVE_BINDINGS

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._pending: PausePoint | None = None
        self._retry: Timer | None = None

    @property
    def driver(self) -> RunDriver | None:
        """The app's run driver."""
        controller = getattr(self.app, "controller", None)
        return controller if isinstance(controller, RunDriver) else None

    def run_header_state(self, palette: Palette) -> Text | None:
        driver = self.driver
        if driver is None:
            return super().run_header_state(palette)
        return gate_header_text(driver.status, palette)

    def run_state_text(self, palette: Palette) -> Text:
        driver = self.driver
        if driver is None:
            return super().run_state_text(palette)
        text = gate_text(driver.status, palette)
        reply = driver.reply_so_far
        if reply and driver.status.state == "running":
            # The reply as it streams in (a live provider); the llm_call record is the final reply.
            text.append(" · model: ", palette.dim)
            text.append_text(plain("…" + reply[-80:], palette.dim, limit=82))
        return text

    def on_mount(self) -> None:
        # A run may pause before this screen is up (its notice then found no screen): catch up
        # once the trace screen's own mount handler (which runs after this one) is done.
        self.call_later(self._catch_up)

    def _catch_up(self) -> None:
        if self.driver is not None:
            self.run_state_changed(self.driver.status)

    def run_state_changed(self, status: GateStatus) -> None:
        """The gate changed: repaint the status and, on a pause, go to the event it paused on."""
        if not self.showing:
            return  # the run ended while the app was closing: nothing left to show it on
        if status.state == "paused" and status.paused_at is not None:
            self._pending = status.paused_at
            self._go_to_pause()
        else:
            self._pending = None
        self._refresh_bars()

    @on(TraceGrew)
    def _drive_trace_grew(self, message: TraceGrew) -> None:
        # This handler runs before the trace screen's own (subclass first): try once that one
        # has brought the lists up to date.
        if self._pending is not None:
            self.call_later(self._go_to_pause)

    def _go_to_pause(self) -> None:
        """Select the paused event's iteration once the screen shows it (retried until it does)."""
        point = self._pending
        if point is None or not self.showing:
            self._stop_retry()
            return
        row = self.session.row_of_pass(point.run_id, point.turn, point.iteration)
        ready = (
            self.loaded  # the first load's own cursor moves are over
            and self.session.model.lines_fed > point.seq
            and (row is None or row < self.timeline.total)
        )
        if not ready:
            # The followed file, the model or the timeline is a step behind: look again shortly
            # (the tail posts nothing more while the run waits in its gate).
            if self._retry is None:
                self._retry = self.set_interval(PAUSE_RETRY, self._go_to_pause)
            return
        self._pending = None
        self._stop_retry()
        if row is not None:
            self.select_row(row)
            self.new_rows = 0

    def _stop_retry(self) -> None:
        if self._retry is not None:
            self._retry.stop()
            self._retry = None

    def action_run_toggle(self) -> None:
        """Pause or continue the run."""
        if self.driver is not None:
            self.driver.toggle()

    def action_run_step(self) -> None:
        """Run one pass."""
        if self.driver is not None:
            self.driver.step()

    def action_breakpoints(self) -> None:
        """Open the breakpoints menu."""
        driver = self.driver
        if driver is None:
            return
        runs = self.session.model.runs
        start = self.session.run_start(runs[0].run_id) if runs else None
        self.app.push_screen(BreakpointsScreen(driver, breakpoint_choices(start), Declared.of_start(start)))
