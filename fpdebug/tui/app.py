"""FpdebugApp: the Textual debugger. One trace, three ways to read it (replay, follow, drive).

``FpdebugApp(TraceSource(path))`` opens a saved trace; ``FpdebugApp(TraceSource(path, "follow"))``
tails a file another process writes; ``FpdebugApp(TraceSource(path, "drive"), controller=…)``
follows the file of a run the app itself drives (part 2 of the debugger supplies the
:class:`RunController`). All three read the file through the same
:class:`~fpdebug.trace.reader.TraceReader` and :class:`~fpdebug.views.session.TraceSession`.

Extension points for part 2: :class:`RunController` (started when the app is ready, stopped when it
exits, its palette commands merged in); :attr:`FpdebugApp.SCREEN_CLASS` and
:attr:`~fpdebug.tui.screens.trace_screen.TraceScreen.VIEWS` for more views; the messages of
:mod:`fpdebug.tui.messages` to react to new records (a breakpoint checks each ``TraceGrew``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol, runtime_checkable

from textual.app import App
from textual.binding import Binding, BindingType
from textual.driver import Driver
from textual.screen import Screen

from fpdebug.trace.reader import TraceReader
from fpdebug.tui import collector
from fpdebug.tui.commands import PaletteCommand, TraceCommands, fixed_commands
from fpdebug.tui.screens.help_screen import HelpScreen, KeyGroup
from fpdebug.tui.screens.trace_screen import Mode, TraceScreen
from fpdebug.tui.widgets.bars import SearchBar
from fpdebug.tui.widgets.document import DocumentView
from fpdebug.tui.widgets.link_document import LinkDocument
from fpdebug.tui.widgets.row_list import RowList
from fpdebug.views.session import TraceSession

__all__ = ["READER_CACHE", "FpdebugApp", "RunController", "TraceSource", "binding_ids", "keymap_ids"]

READER_CACHE = 512
"""Parsed records the app's reader keeps (the rows on screen and the selected iteration's records)."""


@dataclass(frozen=True)
class TraceSource:
    """Which trace to open and how."""

    path: Path
    """The trace file."""
    mode: Mode = "replay"
    """``replay`` a saved file, ``follow`` a file being written, ``drive`` a run the app drives."""
    rerun_module: str | None = None
    """The agent module the user named (``--module``, or the module ``fpdebug run`` ran) that the
    backtrack pane's reruns may import; a module the trace merely records is never imported."""
    force_module: bool = False
    """Let the reruns import :attr:`rerun_module` even when the trace recorded another module."""


@runtime_checkable
class RunController(Protocol):
    """Drives a live run whose trace file the app follows (drive mode; implemented by part 2).

    The run writes its trace as usual, so what is seen live is what a replay shows later.
    """

    def start(self, app: FpdebugApp) -> None:
        """Start the run (in a worker of its own); called once the app's screen is up."""

    def stop(self) -> None:
        """End the run cleanly (``run_end`` interrupted) when the app exits; must not block long."""

    def commands(self) -> Iterable[PaletteCommand]:
        """Palette commands (``run: step``, ``run: break on lease_prune``…)."""


class FpdebugApp(App[None]):
    """The fpdebug trace debugger.

    Args:
        source: The trace (a path opens it for replay).
        follow: Follow the file as it grows (same as ``TraceSource(path, "follow")``).
        reader: An already opened reader of the same file (else one is opened here).
        keymap: Binding id → keys, applied with :meth:`~textual.app.App.set_keymap`.
        controller: The run controller of drive mode.

    Raises:
        TraceError: The file cannot be opened, or is not a trace (raised before the app runs).
    """

    CSS_PATH = "app.tcss"
    TITLE = "fpdebug"
    COMMANDS = App.COMMANDS | {TraceCommands}
    ENABLE_COMMAND_PALETTE = True

    BINDINGS: ClassVar[list[BindingType]] = [
        # ctrl+c too: a terminal user's reflex to leave (Textual's default only says to press q). The
        # screen's and a text field's own ctrl+c still copy a selection first (they skip when none).
        Binding(
            "q,ctrl+c",
            "quit",
            "Quit",
            id="quit",
            tooltip="Leave fpdebug (ctrl+c copies instead while text is selected).",
        ),
        Binding(
            "question_mark", "help", "Keys", id="help", tooltip="Show every key, the palette and remapping."
        ),
        Binding(
            "ctrl+p",
            "command_palette",
            "Palette",
            show=False,
            id="command-palette",
            tooltip="Open the command palette (go:, view:, filter:…).",
        ),
    ]

    SCREEN_CLASS: ClassVar[type[TraceScreen]] = TraceScreen
    """The main screen (part 2 may substitute a subclass with more views)."""

    def __init__(
        self,
        source: TraceSource | str | os.PathLike[str],
        *,
        follow: bool = False,
        reader: TraceReader | None = None,
        keymap: Mapping[str, str] | None = None,
        controller: RunController | None = None,
    ) -> None:
        if not isinstance(source, TraceSource):
            source = TraceSource(Path(source))
        mode: Mode = source.mode
        if controller is not None:
            mode = "drive"
        elif follow and mode == "replay":
            mode = "follow"
        super().__init__()
        self.source = TraceSource(
            source.path, mode, rerun_module=source.rerun_module, force_module=source.force_module
        )
        """What is open."""
        self.keymap: dict[str, str] = dict(keymap or {})
        """The user's key remapping (binding id → keys)."""
        self.controller = controller
        """The run controller (drive mode), if any."""
        self._session: TraceSession | None = None
        if reader is None and mode == "follow" and not os.path.lexists(source.path):
            pass  # --follow before the writer created the file: the waiting screen opens it later
        else:
            if reader is None:
                reader = self._open_reader(source.path)
            self._session = TraceSession(reader)

    @property
    def session(self) -> TraceSession:
        """The trace.

        Raises:
            RuntimeError: The followed file does not exist yet (the app is waiting for its writer).
        """
        if self._session is None:
            raise RuntimeError(f"{self.source.path} is not open yet: waiting for its writer to create it")
        return self._session

    @property
    def waiting(self) -> bool:
        """The followed file does not exist yet: the app waits for its writer to create it."""
        return self._session is None

    def _open_reader(self, path: Path) -> TraceReader:
        return TraceReader(
            path, index=False, cache_size=READER_CACHE, wait_for_header=self.source.mode != "replay"
        )

    def _writer_created(self, reader: TraceReader) -> None:
        """The followed file appeared: open it and replace the waiting screen with the trace screen."""
        self._session = TraceSession(reader)
        # A mode of its own, so the trace screen is the base of the stack (as when the file was
        # there from the start); the default screen cannot be switched away from.
        self.add_mode("trace", self._trace_screen)
        self.switch_mode("trace")

    def _trace_screen(self) -> TraceScreen:
        return self.SCREEN_CLASS(self.session, mode=self.source.mode, source_name=self.source.path.name)

    def get_driver_class(self) -> type[Driver]:
        # Textual's Linux driver hangs the app for good once its terminal is closed (see
        # fpdebug.tui.hangup); this one lets the app shut down, so a closed terminal ends the process.
        from fpdebug.tui.hangup import hang_up_safe

        return hang_up_safe(super().get_driver_class())

    def get_default_screen(self) -> Screen:
        if self._session is None:
            from fpdebug.tui.screens.waiting import WaitingScreen

            return WaitingScreen(self.source.path, self._open_reader, self._writer_created)
        return self._trace_screen()

    def on_load(self) -> None:
        # Start-up makes many long-lived objects and next to no cyclic garbage: the collector would
        # walk them a hundred times before the first screen (0.15 s of CPU of 0.65, issue 22). The
        # trace screen resumes it once its first screen is up, or when it goes (`fpdebug view`
        # pauses it earlier, over its imports; then this changes nothing). A waiting screen never
        # draws a trace: the collector stays on for it.
        if self._session is not None:
            collector.pause()

    def on_mount(self) -> None:
        if self.keymap:
            self.set_keymap(self.keymap)
        if self.controller is not None:
            self.controller.start(self)

    def on_unmount(self) -> None:
        collector.resume()  # in case no first screen came (an exit during start-up)
        if self.controller is not None:
            self.controller.stop()

    @classmethod
    def binding_groups(cls) -> list[KeyGroup]:
        """Every binding of the debugger, grouped for the help."""
        from fpdebug.tui.screens.fork_screen import FORK_SCREEN_KEYS  # the fork: not for the first screen
        from fpdebug.tui.screens.run_diff_screen import RunDiffScreen  # fpdebug view DIR's screens
        from fpdebug.tui.screens.runs_screen import RunsScreen
        from fpdebug.tui.screens.text_screen import TEXT_SCREEN_KEYS
        from fpdebug.tui.widgets.backtrack_pane import (
            BacktrackPane,
        )  # the backtracker: not for the first screen

        screen = cls.SCREEN_CLASS
        return [
            ("Anywhere", [*cls.BINDINGS, *screen.BINDINGS]),
            ("Lists: timeline, leases, events", list(RowList.BINDINGS)),
            ("Documents: inspector, calls, details, skill map, help", list(DocumentView.BINDINGS)),
            ("Links: diff and backtrack pane", list(LinkDocument.BINDINGS)),
            ("Backtrack pane", list(BacktrackPane.BINDINGS)),
            ("Runs table (fpdebug view DIR)", list(RunsScreen.BINDINGS)),
            ("Run diff (d in the runs table; a finished fork)", list(RunDiffScreen.BINDINGS)),
            ("Search prompt", list(SearchBar.BINDINGS)),
            ("Fork screen (F)", list(FORK_SCREEN_KEYS)),
            ("Ledger view (L)", list(TEXT_SCREEN_KEYS)),
            ("Help", list(HelpScreen.BINDINGS)),
        ]

    def action_help(self) -> None:
        """Show every key."""
        if isinstance(self.screen, HelpScreen):
            return
        commands: list[str] = []
        if isinstance(self.screen, TraceScreen):
            commands = [command.text for command in fixed_commands(self.screen)]
        commands += [
            "go: iteration 12",
            "go: turn 2 iteration 3",
            "go: line 120",
            "filter: refund skill:billing",
        ]
        self.push_screen(HelpScreen(self.binding_groups(), self.keymap, commands))


def binding_ids(app_class: type[FpdebugApp] = FpdebugApp) -> set[str]:
    """Every binding id a keymap may name."""
    return {
        binding.id
        for _, bindings in app_class.binding_groups()
        for binding in bindings
        if isinstance(binding, Binding) and binding.id is not None
    }


def keymap_ids() -> set[str]:
    """Every binding id a keymap file may name: the debugger's and drive mode's.

    One keymap file serves ``fpdebug view`` and ``fpdebug demo`` / ``fpdebug run --tui``, so each
    accepts every id (an id the open app has no binding for changes nothing).
    """
    from fpdebug.tui.drive.app import DriveApp  # drive mode builds on this module: import it late

    return binding_ids(FpdebugApp) | binding_ids(DriveApp)
