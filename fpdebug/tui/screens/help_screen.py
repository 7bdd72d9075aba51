"""HelpScreen: every key (as remapped by the user's keymap), the mouse, the palette, the badges."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.keys import format_key
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from fpdebug.tui.keymap import KEYMAP_ENV
from fpdebug.tui.text import Palette
from fpdebug.tui.widgets.bars import DOCUMENT_SEARCH, SearchBar
from fpdebug.tui.widgets.document import Block, DocBuilder, DocumentView
from fpdebug.tui.widgets.timeline import BADGE_LETTERS
from fpdebug.views.query import FIELDS

__all__ = ["HelpDocument", "HelpScreen", "KeyGroup", "format_keys", "help_document"]

KeyGroup = tuple[str, list[BindingType]]
"""A titled group of bindings for the help."""

_BADGE_MEANING = {
    "grant": "a tool granted a lease in this iteration's batch",
    "prune": "a lease was pruned (spent or tenure-ended)",
    "park": "a map parked on this pass",
    "reengage": "a parked map came back",
    "conflict": "edges or proposals in one batch named different targets",
    "rejected": "the read_skill gate refused a pick",
    "superseded": "a pick or proposal the pass did not honour",
    "error": "the LLM call or a tool call failed",
    "invalid": "an invalid or opaque line is in or next to this iteration",
    "refused": "the turn's final reply was a refusal (refusal or content filter), not an answer",
    "unsupported": "the answer assessed here states a value no source holds (route rev: the gate sent it back)",
    "beyond": "a result's call window ends after the turn's clock: it cannot cover what is still to come",
    "nudge": "the model answered with steps unfinished; the loop re-asked it (step-nudge)",
    "wrapup": "the model still asked for tools at the limit; one more call ran with tools off (wrap-up)",
    "ask": "an argument no source held: the call waited for the user's answer (argument ask)",
    "retry": "the final reply failed the output schema; the loop re-asked it (output-retry)",
    "budget": "the turn ended here because the run's spend reached its cost budget",
    "compact": "the window strategy folded older messages out of the history before this pass (Compact)",
    "proposal": "a tool's route proposal was accepted in this batch (the next pass moves the cursor)",
    "declined": "the model's pick resolved the turn-start menu left to it by picking off the menu",
}


def format_keys(keys: str) -> str:
    """``"j,down"`` → ``"j / ↓"`` for display."""
    shown = []
    for key in keys.split(","):
        modifiers, _, name = key.strip().rpartition("+")
        label = format_key(name)
        shown.append(f"{modifiers}+{label}" if modifiers else label)
    return " / ".join(shown)


def help_document(
    groups: Iterable[KeyGroup], keymap: Mapping[str, str], palette: Palette, *, commands: Iterable[str] = ()
) -> list[Block]:
    """The help text.

    Args:
        groups: Titled binding groups.
        keymap: The user's remapping (binding id → keys).
        palette: Styles.
        commands: Example palette commands.
    """
    doc = DocBuilder(palette)
    doc.line(
        Text("fpdebug keys", style=palette.heading),
        ("   every binding has an id: remap it in a keymap file (see the end)", palette.dim),
    )
    rows: list[tuple[str, list[tuple[str, str, str]]]] = []
    for title, bindings in groups:
        rows.append((title, []))
        for binding in bindings:
            if not isinstance(binding, Binding) or binding.id is None:
                continue
            keys = keymap.get(binding.id, binding.key)
            shown = (
                binding.key_display if binding.key_display and binding.id not in keymap else format_keys(keys)
            )
            rows[-1][1].append((shown, binding.id, binding.tooltip or binding.description))
    entries = [entry for _title, group in rows for entry in group]
    # Columns as wide as their longest entry; a wrapped description continues under itself,
    # never under the key or id columns.
    key_width = max((len(shown) + 2 for shown, _id, _text in entries), default=16)
    id_width = max((len(binding_id) + 2 for _shown, binding_id, _text in entries), default=18)
    key_width, id_width = max(key_width, 16), max(id_width, 18)
    for title, group in rows:
        doc.heading(title)
        for shown, binding_id, description in group:
            doc.line(
                (f"{shown:<{key_width}}", palette.accent),
                (f"{binding_id:<{id_width}}", palette.dim),
                description,
                indent=2,
                hang=key_width + id_width,
            )
    doc.heading("Mouse")
    doc.line(
        "click a row to select it, double-click to open it; the wheel scrolls; click a tab to switch view",
        indent=2,
    )
    doc.heading(
        "Search and filter", ("   / in any view; the filter hides rows that do not match", palette.dim)
    )
    doc.line(
        "free words match the record text as stored (ASCII case-insensitive); all terms must match", indent=2
    )
    doc.line(
        f"fields: {', '.join(f'{name}:' for name in FIELDS)}   e.g. kind:lease_prune   skill:billing   "
        "badge:park   kind:invalid",
        indent=2,
    )
    doc.line(
        "[ and ] move through the filtered timeline from every view; n / N through the current list", indent=2
    )
    doc.heading("Timeline columns and badges")
    doc.line(
        "act active/evaluated injections · ls leases served · pk maps parked · tl tool calls · route "
        "(r: t tools, f final when narrow; there pk, then ls, give way so badges still fit)",
        indent=2,
    )
    for name, meaning in _BADGE_MEANING.items():
        doc.line(
            (f"{name:<11}", palette.accent),
            (f"{BADGE_LETTERS[name]}  ", palette.key),
            meaning,
            indent=2,
            hang=14,
        )
    doc.heading("Command palette", ("   ctrl+p, then type", palette.dim))
    for command in commands:
        doc.line((command, palette.accent), indent=2)
    doc.heading("Remapping keys")
    doc.line(
        "put a TOML file at ~/.config/fpdebug/keymap.toml (or pass --keymap FILE, or set "
        f"{KEYMAP_ENV}=FILE):",
        indent=2,
    )
    doc.line(("[keys]", palette.accent), indent=4)
    doc.line(('cursor-down = "j,down,ctrl+n"', palette.accent), indent=4)
    doc.line(('next-iteration = "right_square_bracket,l"', palette.accent), indent=4)
    return doc.blocks


class HelpDocument(DocumentView):
    """The help text (a document, so it scrolls at any size)."""

    def __init__(self, groups: list[KeyGroup], keymap: Mapping[str, str], commands: list[str]) -> None:
        super().__init__(id="help-document")
        self.groups = groups
        self.keymap = keymap
        self.commands = commands

    def build(self) -> list[Block]:
        return help_document(self.groups, self.keymap, self.palette, commands=self.commands)

    def on_mount(self) -> None:
        self.rebuild()


class HelpScreen(ModalScreen[None]):
    """The key help (``?``): press escape, q or ? to close."""

    DEFAULT_CSS = """
    HelpScreen {
        align: center middle;
        & > #help-frame { width: 90%; height: 90%; border: round $accent; background: $surface; }
        & #help-title { dock: top; height: 1; padding: 0 1; background: $accent 30%; }
        & SearchBar { dock: bottom; display: none; }
        &.-searching SearchBar { display: block; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "close", "Close", id="help-close", tooltip="Close the help."),
        # The search keys of every document, under the same ids (a remapped key is remapped here too).
        Binding("slash", "search", "Search", id="search", key_display="/", tooltip="Search the help."),
        Binding("n", "step_match(1)", "Next match", show=False, id="next-match", tooltip="Next match."),
        Binding(
            "N", "step_match(-1)", "Prev match", show=False, id="previous-match", tooltip="Previous match."
        ),
    ]

    def __init__(self, groups: list[KeyGroup], keymap: Mapping[str, str], commands: list[str]) -> None:
        super().__init__()
        self.groups = groups
        self.keymap = keymap
        self.commands = commands

    def compose(self) -> ComposeResult:
        from textual.containers import Vertical

        with Vertical(id="help-frame"):
            yield Static(Text("Help · escape to close · j/k to scroll · / to search"), id="help-title")
            yield HelpDocument(self.groups, self.keymap, self.commands)
            yield SearchBar()

    def on_mount(self) -> None:
        self.query_one(HelpDocument).focus()
        self.query_one("#search-input", Input).placeholder = DOCUMENT_SEARCH

    def action_search(self) -> None:
        """Open the search prompt of the help."""
        self.add_class("-searching")
        field = self.query_one("#search-input", Input)
        field.value = self.query_one(HelpDocument).finder.query
        field.focus()

    @on(Input.Changed, "#search-input")
    def _typed(self, event: Input.Changed) -> None:
        self.query_one(HelpDocument).search(event.value)

    @on(Input.Submitted, "#search-input")
    @on(SearchBar.Closed)
    def _search_closed(self) -> None:
        self.remove_class("-searching")
        self.query_one(HelpDocument).focus()

    def action_step_match(self, delta: int) -> None:
        """The next (``1``) or previous (``-1``) match of the search."""
        document = self.query_one(HelpDocument)
        if not document.finder.active:
            self.notify("No search: press / to search.", timeout=2)
        elif not document.step_match(delta):
            self.app.bell()

    def action_close(self) -> None:
        """Close the help."""
        self.dismiss(None)
