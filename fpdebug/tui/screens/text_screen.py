"""TextScreen: a titled, scrollable document built off the UI thread (the Ledger view).

The text is made by a function that may read many files (every trace of a folder),
so it runs in a worker thread; the screen says what it is doing until the lines arrive, and says
what went wrong, in one line, if the function raised. Escape goes back to the trace screen.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Static

from fpdebug.errors import FpdebugError
from fpdebug.trace.inert import inert_line
from fpdebug.tui.widgets.document import Block, DocBuilder, DocumentView

__all__ = ["TEXT_SCREEN_KEYS", "Line", "TextDocument", "TextScreen"]

TEXT_SCREEN_KEYS: list[BindingType] = [
    Binding(
        "escape",
        "close",
        "Back",
        id="document-close",
        tooltip="Close the Ledger view: back to the trace.",
    ),
]
"""The keys of a text screen (its document's own keys scroll it)."""


Line = str | tuple[str, str]
"""One line of a text screen: a string, or a table row's fixed columns and its prose (which goes
under the columns on a narrow screen, :class:`~fpdebug.tui.widgets.document.ColumnsBlock`)."""


class TextDocument(DocumentView):
    """The lines of a :class:`TextScreen`: the first is a heading, indented rows hang under themselves."""

    def __init__(self) -> None:
        super().__init__(id="text-document")
        self.lines: list[Line] = []

    def build(self) -> list[Block]:
        doc = DocBuilder(self.palette)
        for number, line in enumerate(self.lines):
            if isinstance(line, tuple):
                head, tail = line
                indent = len(head) - len(head.lstrip(" "))
                doc.columns([(head.lstrip(" "), "")], [(tail, "")], indent=indent)
                continue
            stripped = line.lstrip(" ")
            indent = len(line) - len(stripped)
            if number == 0 or (line.endswith(":") and not indent):
                doc.line(Text(stripped, style=self.palette.heading))
            else:
                # Trace text arrives inert (made so by the renderer); shown as plain text, never markup.
                doc.line((stripped, ""), indent=indent, hang=4)
        return doc.blocks

    def show_lines(self, lines: Sequence[Line]) -> None:
        """Show ``lines`` (from the top)."""
        self.lines = list(lines)
        self.rebuild()


class TextScreen(Screen[None]):
    """A document screen whose lines ``make()`` returns, computed in a worker thread.

    Args:
        title: The title bar.
        make: Returns the lines (may raise an :class:`~fpdebug.errors.FpdebugError` or ``OSError``).
        busy: What the screen says while ``make`` runs.
    """

    DEFAULT_CSS = """
    TextScreen {
        layout: vertical;
        & #text-title { height: 1; padding: 0 1; background: $accent 30%; }
        & #text-document { height: 1fr; border: round $panel-lighten-2; }
        & #text-document:focus { border: round $accent; }
        & #text-status { height: 1; padding: 0 1; color: $text-muted; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = list(TEXT_SCREEN_KEYS)

    def __init__(self, title: str, make: Callable[[], Sequence[Line]], *, busy: str = "reading…") -> None:
        super().__init__()
        self.title_text = title
        self.make = make
        self.busy = busy
        self.done = False
        """The lines are on screen (or the error is)."""

    def compose(self) -> ComposeResult:
        yield Static(Text(inert_line(self.title_text)), id="text-title")
        yield TextDocument()
        yield Static(Text(self.busy), id="text-status")

    def on_mount(self) -> None:
        self.query_one(TextDocument).focus()
        self.run_worker(self._make, thread=True, exclusive=True, group="text-screen")

    def _make(self) -> None:
        try:
            lines = self.make()
        except (FpdebugError, OSError, ValueError) as error:
            self.app.call_from_thread(self._failed, f"{type(error).__name__}: {error}")
            return
        self.app.call_from_thread(self._show, lines)

    def _show(self, lines: Sequence[Line]) -> None:
        if not self.is_mounted:
            return
        self.query_one(TextDocument).show_lines(lines)
        self.query_one("#text-status", Static).update(
            Text("j/k scroll · pgdn/pgup page · escape back to the trace")
        )
        self.done = True

    def _failed(self, message: str) -> None:
        if not self.is_mounted:
            return
        self.query_one(TextDocument).show_lines(["could not build this view", "  " + inert_line(message)])
        self.query_one("#text-status", Static).update(Text("escape back to the trace"))
        self.done = True

    def action_close(self) -> None:
        """Back to the trace screen."""
        self.dismiss(None)
