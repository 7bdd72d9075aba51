"""WaitingScreen: ``fpdebug view --follow FILE`` before FILE exists; it opens the trace once it appears.

A follow view is often started before the run that writes the file (two terminals, a script that
starts both). Exiting with "no such file" would make the user race the writer; this screen says what
it waits for, polls for the file, and hands over to the trace screen as soon as it can be opened.
``q`` and ``ctrl+c`` quit while it waits.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Static

from fpdebug.errors import TraceError
from fpdebug.trace.inert import inert_line
from fpdebug.trace.reader import TraceReader
from fpdebug.tui.widgets.bars import RunHeader, StatusBar

__all__ = ["WAIT_POLL", "WaitingScreen", "waiting_words"]

WAIT_POLL = 0.05
"""Seconds between two looks for the file (it opens within about this long of being created)."""


def waiting_words(path: Path, why: str) -> str:
    """``waiting for the writer: FILE (why)``: the line a follow view shows before there is a trace."""
    return f"waiting for the writer: {inert_line(str(path))} ({why})"


class WaitingScreen(Screen[None]):
    """Waits for a followed trace to be created, then calls ``opened`` with its reader.

    Args:
        path: The file to wait for.
        open_reader: Opens the file once it exists (raises :class:`TraceError` when it cannot).
        opened: Called on the UI thread with the open reader (it replaces this screen).
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "app.quit", "Quit", id="waiting-quit"),
        Binding("ctrl+c", "app.quit", "Quit", show=False, priority=True, id="waiting-interrupt"),
    ]

    DEFAULT_CSS = """
    WaitingScreen #waiting-body {
        padding: 1 2;
        height: 1fr;
    }
    """

    def __init__(
        self,
        path: Path,
        open_reader: Callable[[Path], TraceReader],
        opened: Callable[[TraceReader], None],
    ) -> None:
        super().__init__()
        self.path = path
        """The file waited for."""
        self._open_reader = open_reader
        self._opened = opened
        self.error: str | None = None
        """Why the file, once there, could not be opened (it is tried again at each poll)."""
        self._handed_over = False

    def compose(self) -> ComposeResult:
        yield RunHeader(id="header")
        yield Static(id="waiting-body")
        yield StatusBar(id="status")

    def on_mount(self) -> None:
        self._show()
        self.set_interval(WAIT_POLL, self._look)

    def _show(self) -> None:
        header = Text(no_wrap=True, end="")
        header.append("fpdebug ", "bold")
        header.append(inert_line(self.path.name), "bold yellow")
        header.append("\n")
        header.append(waiting_words(self.path, "the file does not exist yet"), "yellow")
        self.query_one(RunHeader).show(header)
        body = Text()
        body.append("The trace opens as soon as its writer creates it, and is followed from there.\n\n")
        body.append("Start the run that writes it, e.g. ", "dim")
        body.append(f"fpdebug run AGENT --trace {inert_line(str(self.path))}", "bold")
        body.append("\nq or ctrl+c quits.", "dim")
        if self.error is not None:
            body.append("\n\n")
            body.append(inert_line(f"The file is there but cannot be opened yet: {self.error}"), "red")
        self.query_one("#waiting-body", Static).update(body)
        self.query_one(StatusBar).show(Text("follow ● waiting for the file to be created", "yellow"))

    def _look(self) -> None:
        if self._handed_over or not os.path.lexists(self.path):
            return
        try:
            reader = self._open_reader(self.path)
        except TraceError as error:
            if str(error) != self.error:
                self.error = str(error)
                self._show()
            return
        self._handed_over = True
        self._opened(reader)
