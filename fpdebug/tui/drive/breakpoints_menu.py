"""BreakpointsScreen: the breakpoints menu of a driven run (``b``).

The menu lists what the run can stop on (:func:`breakpoint_choices`); ``space`` or ``enter`` toggles
an entry at once. ``/`` searches it as ``/`` searches every list: the field filters the entries as
you type, and ``enter`` sets the breakpoint typed in its command-line form (``tool:NAME``,
``cursor:SKILL``, a kind, ``park``), checked against the run's declarations: a name the run does
not declare is refused with the nearest one (``did you mean 'issue_refund'?``), never set to wait
for an event that cannot come.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, SelectionList, Static
from textual.widgets.selection_list import Selection

from fpdebug.errors import ConfigError
from fpdebug.tui.drive.declared import Declared
from fpdebug.tui.drive.gate import Breakpoint
from fpdebug.tui.text import plain

if TYPE_CHECKING:
    from fpdebug.trace.schema import RunStartEvent
    from fpdebug.tui.drive.driver import RunDriver

__all__ = ["BreakpointsScreen", "breakpoint_choices", "spec_of"]

_GENERIC_KINDS = (
    "cursor_move",
    "engagement",
    "lease_grant",
    "llm_call",
    "tool_result",
    "finding",
    "skill_rejected",
    "route_conflict",
    "reroute_superseded",
    "turn_start",
    "turn_end",
)


def breakpoint_choices(start: RunStartEvent | None) -> list[tuple[Breakpoint, str]]:
    """Every breakpoint the menu offers for a run, with a line saying what it stops on."""
    declared = Declared.of_start(start)
    choices: list[tuple[Breakpoint, str]] = [
        (Breakpoint.on_kind("lease_prune"), "leases are pruned (evaluate or tool-calls sweep)"),
        (Breakpoint.park(), "a map parks (an engagement event with a parked change)"),
        (Breakpoint.on_kind("pass"), "every pass (what s does once)"),
    ]
    for node in declared.skills:
        choices.append((Breakpoint.cursor_into(node), "the cursor moves into this skill"))
    for tool in declared.tools:
        choices.append((Breakpoint.tool(tool), "the model asks for this tool (before it runs)"))
    choices += [(Breakpoint.on_kind(kind), f"every {kind} event") for kind in _GENERIC_KINDS]
    return choices


def spec_of(point: Breakpoint) -> str:
    """The command-line form of a breakpoint (``--break``): ``lease_prune``, ``park``, ``tool:NAME``…"""
    if point.kind in ("cursor", "tool"):
        return f"{point.kind}:{point.value}"
    return point.label


class BreakpointsScreen(ModalScreen[None]):
    """Toggle breakpoints (``space`` or ``enter``); they apply at once. ``escape`` or ``b`` closes.

    Args:
        driver: The run driver whose gate holds the breakpoints.
        choices: What to offer (:func:`breakpoint_choices`).
        declared: What the run declares: a typed breakpoint is checked against it.
    """

    DEFAULT_CSS = """
    BreakpointsScreen {
        align: center middle;
        & > #breakpoints-frame {
            width: 80; max-width: 95%; height: auto; max-height: 90%;
            border: round $accent; background: $surface;
        }
        & #breakpoints-title { height: 2; padding: 0 1; background: $accent 30%; }
        & #breakpoint-input, & #breakpoint-input:focus {
            border: none; height: 1; padding: 0 1; background: $panel;
        }
        & #breakpoint-hint { height: auto; padding: 0 1; color: $text-muted; }
        & #breakpoint-hint.-refused { color: $text-error; }
        & SelectionList { height: auto; max-height: 30; border: none; }
        /* Textual draws an unchecked box in $panel-darken-2 on $panel: near black on navy, unreadable. */
        & SelectionList > .selection-list--button,
        & SelectionList > .selection-list--button-highlighted {
            color: $text-muted;
            background: $panel;
        }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,b", "close", "Close", id="breakpoints-close", tooltip="Close the breakpoints menu."),
        Binding(
            "slash",
            "search",
            "Search",
            id="breakpoints-search",
            key_display="/",
            tooltip="Search the entries; enter sets the breakpoint typed (tool:NAME, cursor:SKILL, a kind).",
        ),
        # The entries on show are the search's matches: n and N walk them, as in a filtered list.
        Binding("n", "menu('cursor_down')", "Next match", show=False, id="next-match", tooltip="Next entry."),
        Binding(
            "N", "menu('cursor_up')", "Prev match", show=False, id="previous-match", tooltip="Previous entry."
        ),
        # The list keys of every other list (the SelectionList itself knows only the arrows).
        Binding("j", "menu('cursor_down')", "Down", show=False, id="breakpoints-down", tooltip="Next entry."),
        Binding("k", "menu('cursor_up')", "Up", show=False, id="breakpoints-up", tooltip="Previous entry."),
        Binding("g", "menu('first')", "First", show=False, id="breakpoints-first", tooltip="First entry."),
        Binding("G", "menu('last')", "Last", show=False, id="breakpoints-last", tooltip="Last entry."),
        Binding(
            "ctrl+d",
            "menu('page_down')",
            "Page down",
            show=False,
            id="breakpoints-page-down",
            tooltip="Page down.",
        ),
        Binding(
            "ctrl+u", "menu('page_up')", "Page up", show=False, id="breakpoints-page-up", tooltip="Page up."
        ),
    ]

    def __init__(
        self, driver: RunDriver, choices: list[tuple[Breakpoint, str]], declared: Declared | None = None
    ) -> None:
        super().__init__()
        self.driver = driver
        """Whose breakpoints these are."""
        self.choices = choices
        """What is offered, in order."""
        self.declared = declared if declared is not None else Declared()
        """What the run declares (a typed breakpoint must name one of its tools or skills)."""

    def compose(self) -> ComposeResult:
        with Vertical(id="breakpoints-frame"):
            yield Static(self._title(), id="breakpoints-title")
            yield Input(
                placeholder="/ search, or type tool:NAME · cursor:SKILL · a kind · park, enter sets it",
                id="breakpoint-input",
            )
            yield Static("", id="breakpoint-hint")
            yield SelectionList[int](*self._selections(""), id="breakpoints")

    def _selections(self, query: str) -> list[Selection[int]]:
        selected = set(self.driver.gate.breakpoints)
        width = min(max((len(point.label) for point, _ in self.choices), default=10), 40) + 2
        words = query.strip().lower()
        found: list[Selection[int]] = []
        for index, (point, why) in enumerate(self.choices):
            if words and words not in f"{point.label} {spec_of(point)} {why}".lower():
                continue
            prompt = plain(point.label, "bold", limit=40)
            prompt.pad_right(width - len(prompt.plain))
            prompt.append(why, style="dim")
            found.append(Selection(prompt, index, point in selected))
        return found

    def _title(self) -> Text:
        count = len(self.driver.gate.breakpoints)
        title = Text("Breakpoints", style="bold")
        title.append(f" · {count} set", style="bold")
        title.append(" · space/enter toggles at once · / searches · esc closes\n", style="dim")
        title.append("A breakpoint pauses the run right after the event that hits it is written.", "dim")
        return title

    def on_mount(self) -> None:
        self.query_one(SelectionList).focus()

    def action_menu(self, action: str) -> None:
        """Move the menu's highlight (``cursor_down``, ``first``… of its SelectionList)."""
        getattr(self.query_one(SelectionList), f"action_{action}")()

    def action_search(self) -> None:
        """Put the focus in the search field."""
        self.query_one("#breakpoint-input", Input).focus()

    @on(Input.Changed, "#breakpoint-input")
    def _typed(self, event: Input.Changed) -> None:
        menu = self.query_one(SelectionList)
        menu.clear_options()
        menu.add_options(self._selections(event.value))
        if event.value:  # emptied after a breakpoint was set: its "set" line stays
            self._hint("")

    @on(Input.Submitted, "#breakpoint-input")
    def _submitted(self, event: Input.Submitted) -> None:
        typed = event.value.strip()
        if not typed:
            self.query_one(SelectionList).focus()
            return
        try:
            point = self.declared.parse(typed)
        except ConfigError as error:
            self._hint(str(error), refused=True)
            return
        gate = self.driver.gate
        if point not in gate.breakpoints:
            gate.add_breakpoint(point)
        if all(point != known for known, _ in self.choices):
            self.choices.append((point, "set by hand"))
        self.query_one("#breakpoint-input", Input).value = ""
        self._refresh()
        self._hint(f"breakpoint {point.label} set")
        self.query_one(SelectionList).focus()

    def _hint(self, text: str, *, refused: bool = False) -> None:
        hint = self.query_one("#breakpoint-hint", Static)
        hint.update(plain(text, limit=400))
        hint.set_class(refused, "-refused")

    def _refresh(self) -> None:
        self.query_one("#breakpoints-title", Static).update(self._title())
        menu = self.query_one(SelectionList)
        menu.clear_options()
        menu.add_options(self._selections(self.query_one("#breakpoint-input", Input).value))

    @on(SelectionList.SelectionToggled)
    def _toggled(self, event: SelectionList.SelectionToggled[int]) -> None:
        point, _ = self.choices[event.selection.value]
        gate = self.driver.gate
        if point in gate.breakpoints:
            gate.remove_breakpoint(point)
        else:
            gate.add_breakpoint(point)
        self.query_one("#breakpoints-title", Static).update(self._title())

    def action_close(self) -> None:
        """Close the menu."""
        self.dismiss(None)
