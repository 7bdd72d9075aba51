"""GoPrompt: the ``:`` prompt (as in vi and less) that goes to a place named by a number.

``call 3`` (or ``c3``) shows LLM call #3 in the Calls view, ``iter 2`` (``i2``) selects iteration 2,
``seq 17`` or a bare ``17`` shows the record numbered 17 in the Events view, ``line 17`` the line
(palette words work too: ``go: call 3``, ``diff: 2 vs 4``). ``c`` opens it with ``call`` typed, so the
exact prompt of LLM call N is ``c N enter``. The prompt only reads a line: it dismisses with what
was typed and the trace screen runs it through the palette's parser (one grammar for both).
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import ModalScreen
from textual.widgets import Input, Label

__all__ = ["GoPrompt"]

PLACEHOLDER = "call N · iter N · seq N (a bare number is a seq) · line N"
"""What the empty prompt says it takes."""


class GoPrompt(ModalScreen[str | None]):
    """A one-line prompt at the bottom of the screen; dismisses with the typed text (``None``: cancelled).

    Args:
        typed: What the prompt starts with (``"call "`` for the ``c`` key).
    """

    DEFAULT_CSS = """
    GoPrompt {
        align: left bottom;
        background: transparent;
        & > Horizontal { height: 1; width: 100%; background: $panel; }
        & Label { width: auto; padding: 0 0 0 1; color: $text-accent; text-style: bold; }
        & #go-input, & #go-input:focus {
            border: none;
            height: 1;
            padding: 0 1;
            width: 1fr;
            background: $panel;
        }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="go-cancel", tooltip="Close the prompt without going."),
    ]

    def __init__(self, typed: str = "") -> None:
        super().__init__()
        self.typed = typed
        """The prompt's text when it opens."""

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Label(":")
            yield Input(self.typed, placeholder=PLACEHOLDER, id="go-input", select_on_focus=False)

    def on_mount(self) -> None:
        field = self.query_one(Input)
        field.cursor_position = len(field.value)
        field.focus()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        """Close without going anywhere."""
        self.dismiss(None)
