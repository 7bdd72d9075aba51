"""The thin bars around the views: the run header, the status bar and the search bar."""

from __future__ import annotations

from typing import ClassVar

from rich.console import RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input, Label

from fpdebug.trace.model import Run
from fpdebug.tui.session import TraceSession
from fpdebug.tui.text import Palette, number, plain

__all__ = ["RunHeader", "SearchBar", "StatusBar", "TextBar", "header_text"]


def header_text(
    session: TraceSession,
    run: Run | None,
    source_name: str,
    palette: Palette,
    *,
    live: bool = False,
    state: Text | None = None,
) -> Text:
    """Two lines: the trace and run; the run's size, tokens and status.

    Args:
        session: The trace.
        run: The run to describe (the selected iteration's).
        source_name: What to call the trace.
        palette: Styles.
        live: The file is being followed (a run without ``run_end`` is running, not cut short).
        state: What a run without ``run_end`` is doing, from whoever drives it (paused at …);
            replaces ``● running``.
    """
    text = Text(no_wrap=True, end="")
    text.append("fpdebug ", palette.heading)
    text.append_text(plain(source_name, palette.accent))
    if run is None:
        text.append("\n")
        text.append("no run yet" if session.model_done else "reading the trace…", palette.dim)
        return text
    runs = len(session.model.runs)
    text.append("  run ", palette.dim)
    text.append_text(plain(run.run_id, palette.accent))
    if runs > 1:
        text.append(f" ({session.run_number(run.run_id)} of {runs})", palette.dim)
    if run.agent_name:
        text.append(" · ", palette.dim)
        text.append_text(plain(run.agent_name))
    text.append(" · ", palette.dim)
    text.append_text(plain(f"{run.provider or '?'} / {run.model or '?'}"))
    text.append("\n")
    iterations = run.iteration_count
    text.append(f"{number(len(run.turns))} turn{'s' if len(run.turns) != 1 else ''}")
    text.append(" · ", palette.dim)
    text.append(f"{number(iterations)} iteration{'s' if iterations != 1 else ''}")
    text.append(" · ", palette.dim)
    text.append(f"{number(run.input_tokens)} in / {number(run.output_tokens)} out tokens")
    text.append(" · ", palette.dim)
    if run.status == "completed":
        text.append("■ completed", palette.good)
    elif run.status == "running":
        if state is not None:
            text.append_text(state)
        else:
            text.append("● running" if live else "■ no run_end (cut short?)", palette.warn)
    else:
        text.append(f"■ {run.status}", palette.bad)
    if run.error:
        text.append(": ", palette.bad)
        text.append_text(plain(run.error, palette.bad, limit=200))
    return text


class TextBar(Widget):
    """A fixed-height line (or two) of Text; changing it repaints without a layout pass.

    ``Static.update`` asks for a new layout of the whole screen; these bars change on every
    cursor move, and a layout per keypress would cost more than everything else a jump does.
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._text = Text()

    @property
    def text(self) -> Text:
        """What the bar shows."""
        return self._text

    def show(self, text: Text) -> None:
        """Show ``text`` (repaints only when it changed)."""
        if text.plain != self._text.plain or text.spans != self._text.spans:
            self._text = text
            self.refresh()

    def render(self) -> RenderableType:
        return self._text


class RunHeader(TextBar):
    """The run of the selected iteration: id, provider and model, turns, iterations, tokens, status."""

    DEFAULT_CSS = """
    RunHeader {
        height: 2;
        padding: 0 1;
        background: $panel;
    }
    """


class StatusBar(TextBar):
    """Loading progress, problems, the filter, follow state and new rows."""

    DEFAULT_CSS = """
    StatusBar {
        height: 1;
        padding: 0 1;
        background: $panel;
        color: $text-muted;
    }
    """


class SearchBar(Horizontal):
    """The ``/`` prompt: typing filters the current view's rows as you type."""

    DEFAULT_CSS = """
    SearchBar {
        height: 1;
        background: $panel;
        & > Label { width: auto; padding: 0 1; color: $text-accent; }
        & > #search-input { border: none; height: 1; padding: 0; background: $panel; width: 1fr; }
        & > #search-input:focus { border: none; background: $panel; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape",
            "close",
            "Close",
            id="search-close",
            tooltip="Close the search prompt (the filter stays; escape again clears it).",
        ),
    ]

    class Closed(Message):
        """The user left the search prompt."""

    def compose(self) -> ComposeResult:
        yield Label("/")
        yield Input(
            placeholder="filter: words, kind:K, skill:S, badge:B — enter to keep, escape to close",
            id="search-input",
            select_on_focus=False,
        )

    def action_close(self) -> None:
        """Leave the prompt."""
        self.post_message(self.Closed())
