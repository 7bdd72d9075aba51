"""The thin bars around the views: the run header, the status bar and the search bar."""

from __future__ import annotations

from typing import ClassVar

from rich.console import Console, RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, HorizontalGroup
from textual.message import Message
from textual.reactive import Reactive
from textual.widget import Widget
from textual.widgets import Footer, Input, Label

from fpdebug.trace.model import Run
from fpdebug.tui.costs import run_costs
from fpdebug.tui.text import Palette, clip, number, plain
from fpdebug.views.session import TraceSession

__all__ = [
    "DOCUMENT_SEARCH",
    "LIST_FILTER",
    "NAME_MIN",
    "KeysFooter",
    "RunHeader",
    "SearchBar",
    "StatusBar",
    "TextBar",
    "fit_lines",
    "header_text",
    "wrap_rows",
]

NAME_MIN = 16
"""Characters of the file name the header keeps however narrow the terminal."""


def header_text(
    session: TraceSession,
    run: Run | None,
    source_name: str,
    palette: Palette,
    *,
    live: bool = False,
    state: Text | None = None,
    width: int | None = None,
) -> Text:
    """Two lines: the trace and run; the run's size, tokens and status.

    Each line is one row: a line wider than ``width`` ends in ``…``. On the first line, words that
    repeat another give way first (the agent's name when the run id holds it, the provider when the
    model's name starts with it), then the file name (down to :data:`NAME_MIN` characters), since
    the run id and model say more about what is on screen than a long path does.

    Args:
        session: The trace.
        run: The run to describe (the selected iteration's).
        source_name: What to call the trace.
        palette: Styles.
        live: The file is being followed (a run without ``run_end`` is running, not cut short).
        state: What a run without ``run_end`` is doing, from whoever drives it (paused at …);
            replaces ``● running``.
        width: The cells each line may take (``None``: no limit).
    """
    text = Text(no_wrap=True, end="")
    if run is None:
        text.append("fpdebug ", palette.heading)
        text.append_text(plain(source_name, palette.accent))
        text.append("\n")
        if live and not session.reader.has_header:
            # An empty followed file: say what is awaited rather than show a blank screen.
            text.append_text(
                plain(f"waiting for the writer: {source_name} (nothing written yet)", palette.warn)
            )
        elif live and session.model_done:
            text.append_text(
                plain(f"waiting for the writer: {source_name} (no run has started yet)", palette.warn)
            )
        else:
            text.append("no run yet" if session.model_done else "reading the trace…", palette.dim)
        return fit_lines(text, width)
    name = source_name
    text = _run_words(session, run, palette, repeats=True)
    if width is not None:
        # What gives way first: words that repeat another (the agent named in the run id, the
        # provider in the model's name), then the file name, down to NAME_MIN characters.
        if len("fpdebug ") + len(name) + text.cell_len > width:
            text = _run_words(session, run, palette, repeats=False)
        room = width - len("fpdebug ") - text.cell_len
        if len(name) > room:
            name = clip(name, max(room, NAME_MIN))
    first = Text(no_wrap=True, end="")
    first.append("fpdebug ", palette.heading)
    first.append_text(plain(name, palette.accent))
    text = first.append_text(text)
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
    elif run.status == "paused":  # closed while an argument ask waited for the user's answer
        text.append("■ paused (an argument ask was never answered)", palette.warn)
    elif run.status == "running":
        if state is not None:
            text.append_text(state)
        else:
            text.append(_unended(session, run, live=live), palette.warn)
    else:
        text.append(f"■ {run.status}", palette.bad)
    if run.error:
        text.append(": ", palette.bad)
        text.append_text(plain(run.error, palette.bad, limit=200))
    # The price last: on a narrow screen the status and its error are what must stay in sight.
    text.append(" · ", palette.dim)
    text.append(run_costs(session, run).run.text())
    return fit_lines(text, width)


def _run_words(session: TraceSession, run: Run, palette: Palette, *, repeats: bool) -> Text:
    """``  run ID (N of M) · agent · provider / model``; without ``repeats``, the agent is left out
    when the run id names it and the provider when the model's name starts with it."""
    text = Text(no_wrap=True, end="")
    runs = len(session.model.runs)
    text.append("  run ", palette.dim)
    text.append_text(plain(run.run_id, palette.accent))
    if runs > 1:
        text.append(f" ({session.run_number(run.run_id)} of {runs})", palette.dim)
    if run.agent_name and (repeats or run.agent_name not in run.run_id):
        text.append(" · ", palette.dim)
        text.append_text(plain(run.agent_name))
    text.append(" · ", palette.dim)
    provider, model = run.provider or "?", run.model or "?"
    if repeats or not model.startswith(provider):
        text.append_text(plain(f"{provider} / {model}"))
    else:
        text.append_text(plain(model))
    return text


def _unended(session: TraceSession, run: Run, *, live: bool) -> str:
    if live:
        # Not "running" on trust: a writer that stopped (paused, or killed before run_end) is said so.
        return session.writer.state().header_words()
    if not session.model_done:
        # Its run_end may be in the part of the file not read yet.
        return "… still loading (run_end not read yet)"
    return "■ no run_end (cut short?)"


def fit_lines(text: Text, width: int | None) -> Text:
    """``text`` with each line cut to ``width`` cells, ending in ``…`` where it was cut.

    Textual wraps a long line of a bar into the next row; a bar of fixed height would then lose
    its last lines.
    """
    if width is None or all(line.cell_len <= width for line in text.split("\n")):
        return text
    lines = text.split("\n")
    for line in lines:
        line.truncate(max(width, 1), overflow="ellipsis")
    fitted = Text("\n", end="", no_wrap=True).join(lines)
    fitted.end = ""
    return fitted


class TextBar(Widget):
    """A fixed-height line (or two) of Text; changing it repaints without a layout pass.

    ``Static.update`` asks for a new layout of the whole screen; these bars change on every
    cursor move, and a layout per keypress would cost more than everything else a jump does.
    """

    def __init__(
        self, text: Text | None = None, *, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(id=id, classes=classes)
        self._text = Text() if text is None else text

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
    """The run of the selected iteration: id, provider and model, turns, iterations, tokens, status.

    Each line stays on its row (cut with ``…`` to the width), so the second line always shows.
    """

    DEFAULT_CSS = """
    RunHeader {
        height: 2;
        padding: 0 1;
        background: $panel;
    }
    """

    def render(self) -> RenderableType:
        # The screen fits the text when it builds it; this covers a resize before the next build.
        return fit_lines(self.text, self.content_size.width or None)


class StatusBar(TextBar):
    """Loading progress, problems, the filter, follow state and new rows.

    A line too long for one row wraps, between words, onto a second row (the bar grows) before
    anything is cut: a breakpoint hit names its lease and what became of it at the end of the line.
    """

    DEFAULT_CSS = """
    StatusBar {
        height: 1;
        padding: 0 1;
        background: $panel;
        color: $text-muted;
    }
    """

    MAX_ROWS = 2
    """Rows the bar grows to; beyond them the line is cut with ``…``."""

    def show(self, text: Text) -> None:
        super().show(text)
        self._fit_height()

    def on_resize(self) -> None:
        self._fit_height()

    def _rows(self) -> list[Text]:
        width = self.content_size.width
        if width <= 0:
            return [self.text]
        return wrap_rows(self.text, width, self.MAX_ROWS, self.app.console)

    def _fit_height(self) -> None:
        if not self.is_mounted:
            return
        rows = len(self._rows())
        if self.styles.height is None or self.styles.height.value != rows:
            self.styles.height = rows

    def render(self) -> RenderableType:
        return Text("\n", end="", no_wrap=True).join(self._rows())


def wrap_rows(text: Text, width: int, rows: int, console: Console) -> list[Text]:
    """``text`` wrapped between words to ``width`` cells, at most ``rows`` rows; the last ends in ``…``
    when more was left."""
    wrapped = text.copy()
    wrapped.no_wrap = False
    lines = list(wrapped.wrap(console, width, overflow="fold"))
    if len(lines) <= rows:
        return lines or [Text("")]
    kept = lines[:rows]
    last = kept[-1]
    rest = Text(" ", end="").join(lines[rows - 1 :])
    rest.truncate(width, overflow="ellipsis")
    kept[-1] = rest if rest.cell_len else last
    return kept


LIST_FILTER = "filter: words, kind:K, skill:S, badge:B — enter to keep, escape to close"
"""What the ``/`` prompt says when it filters a list."""

DOCUMENT_SEARCH = "search this document — enter to keep, n / N next and previous, escape to close"
"""What the ``/`` prompt says when it searches a document."""


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
            tooltip="Close the search prompt (the filter or search stays; escape again clears it).",
        ),
    ]

    class Closed(Message):
        """The user left the search prompt."""

    def compose(self) -> ComposeResult:
        yield Label("/")
        yield Input(
            placeholder=LIST_FILTER,
            id="search-input",
            select_on_focus=False,
        )

    def action_close(self) -> None:
        """Leave the prompt."""
        self.post_message(self.Closed())


class KeysFooter(Footer):
    """The key bar, with the keys a user needs most kept in sight at every width.

    A view with many keys of its own (Backtrack: ablate, bisect, cancel…) fills the bar before the
    screen's and app's keys, and the keys that matter most would be the first to fall off the right
    edge. Here ``s`` (step), ``b`` (breakpoints), ``q`` (quit) and ``?`` (every other key) sit at the
    right end, beside the palette key, and the other keys give way.
    """

    DEFAULT_CSS = """
    KeysFooter > HorizontalGroup.-meta-keys {
        dock: right;
        width: auto;
        & > FooterKey.-command-palette { dock: none; }
    }
    """

    KEPT_ACTIONS: tuple[str, ...] = ("run_step", "breakpoints", "quit", "help")
    """The actions of the keys kept in sight, in the order they are shown (those the screen has)."""

    HELP_ACTION = "help"
    """The action of the key that lists every other one."""

    _drawn: tuple[object, ...] | None = None
    """What the keys on the bar were composed from (:meth:`_keys_drawn`)."""

    def _keys_drawn(self) -> tuple[object, ...]:
        """Everything the bar's keys are made from: the screen's shown bindings and the bar's settings."""
        app = self.app
        return (
            self.compact,
            self.show_command_palette,
            tuple(
                (key, binding, app.get_key_display(binding), enabled, tooltip)
                for key, (_node, binding, enabled, tooltip) in self.screen.active_bindings.items()
            ),
        )

    async def recompose(self) -> None:
        # Textual recomposes the bar on every change of the screen's bindings (each focus move, each
        # view mounted): several times before the first screen is up, each time mounting and styling
        # every key anew (issue 20: cold start). Keys that would come out the same are kept.
        if self._drawn is not None and self.children and self._drawn == self._keys_drawn():
            return
        await super().recompose()

    def compose(self) -> ComposeResult:
        if self._bindings_ready:
            self._drawn = self._keys_drawn()
        kept: dict[str, Widget] = {}
        palette: list[Widget] = []
        for widget in super().compose():
            # A key bound to the bar's setting is made compact (its default) and then not (the bar's):
            # each a restyle of the key once mounted. Given the bar's setting before it is mounted, it
            # is styled once. (The palette's key is not bound to it: it stays as Textual makes it.)
            compact = getattr(type(widget), "compact", None)
            if isinstance(compact, Reactive) and not widget.has_class("-command-palette"):
                widget.set_reactive(compact, self.compact)
                widget.set_class(self.compact, "-compact", update=False)
            # FooterKey is not public API: a kept key is known by its action, the palette's by its class
            action = getattr(widget, "action", None)
            if action in self.KEPT_ACTIONS and action not in kept:
                kept[action] = widget
            elif widget.has_class("-command-palette"):
                palette.append(widget)
            else:
                yield widget
        meta = [kept[action] for action in self.KEPT_ACTIONS if action in kept] + palette
        if meta:
            with HorizontalGroup(classes="-meta-keys"):
                yield from meta
