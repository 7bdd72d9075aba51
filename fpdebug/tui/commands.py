"""The command palette (``ctrl+p``): commands named ``area: verb …`` (``go:``, ``view:``, ``filter:``…).

Fixed commands are offered on an empty prompt and matched fuzzily; commands with an argument are
recognised from what is typed:

- ``go: iteration 12`` (in the selected iteration's turn first), ``go: turn 2 iteration 3``,
  ``go: call 3`` (the Calls view of the iteration holding LLM call #3), ``go: seq 17`` and
  ``go: line 120`` (the Events view), ``go: first`` / ``go: last``; the ``:`` prompt takes the same
  without ``go:`` (``call 3``, ``c3``, ``iter 2``, ``seq 17``, a bare number is a seq);
- ``filter: <query>`` filters the current view (``filter: kind lease_prune`` is ``kind:lease_prune``);
- ``view: <name>`` for every view;
- ``diff: iteration 3 vs 7`` (also ``diff: 3 vs 7``, ``diff: turn 1 iteration 2 vs turn 2 iteration 1``;
  typing ``diff: iteration 3`` offers it against the selected iteration), ``diff: mark iteration``,
  ``diff: clear mark``; ``backtrack: final answer``, ``backtrack: this call``, ``backtrack: ablate
  suspects``, ``backtrack: bisect``, ``backtrack: restore missing``, ``backtrack: walk``,
  ``backtrack: cancel``.

A run controller (drive mode) adds its own commands through
:meth:`~fpdebug.tui.app.RunController.commands`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, cast

from rich.text import Text
from textual.command import DiscoveryHit, Hit, Hits, Provider

from fpdebug.tui.text import counted
from fpdebug.views.query import FIELDS

if TYPE_CHECKING:
    from fpdebug.tui.app import FpdebugApp
    from fpdebug.tui.screens.trace_screen import TraceScreen

__all__ = [
    "PaletteCommand",
    "TraceCommands",
    "diff_backtrack_commands",
    "diff_command",
    "filter_query",
    "go_command",
    "go_prompt_text",
    "parametric_command",
]

_GO_ITERATION = re.compile(r"^go:?\s*(?:turn\s+(\d+)\s*,?\s*)?iter(?:ation)?\s+(\d+)\s*$", re.IGNORECASE)
_GO_LINE = re.compile(r"^go:?\s*line\s+(\d+)\s*$", re.IGNORECASE)
_GO_CALL = re.compile(r"^go:?\s*(?:llm[_ ]?)?c(?:all)?\s*#?\s*(\d+)\s*$", re.IGNORECASE)
_GO_SEQ = re.compile(r"^go:?\s*s(?:eq)?\s*(\d+)\s*$", re.IGNORECASE)
_GO_SHORT = re.compile(r"^:?\s*(c|call|i|it|iter|iteration|s|seq|l|line)?\s*#?\s*(\d+)\s*$", re.IGNORECASE)
_SHORT_WORDS = {
    "c": "call",
    "i": "iteration",
    "it": "iteration",
    "iter": "iteration",
    "s": "seq",
    "l": "line",
}
_FILTER = re.compile(r"^filter:\s*(.+)$", re.IGNORECASE)


@dataclass(frozen=True)
class PaletteCommand:
    """One palette command."""

    text: str
    """``area: verb …``"""
    help: str
    """One line."""
    callback: Callable[[], object]
    """What it does."""


def filter_query(argument: str) -> str:
    """``kind lease_prune`` → ``kind:lease_prune``; any other text is a query as typed."""
    field, _, value = argument.strip().partition(" ")
    if field.lower() in FIELDS and value.strip() and ":" not in field:
        return f"{field.lower()}:{value.strip()}"
    return argument.strip()


_FILTERS: tuple[tuple[str, str, str, str | None], ...] = (
    # The query, then what it keeps in the timeline, in the Events view and in the Leases view
    # (None: the query would keep every lease or none, so the palette does not offer it there).
    (
        "kind lease_prune",
        "iterations where a lease was pruned",
        "lease_prune lines",
        "leases that were pruned",
    ),
    ("kind lease_grant", "iterations where a lease was granted", "lease_grant lines", None),
    ("badge park", "passes on which a map parked", "the lines of passes on which a map parked", None),
    (
        "badge reengage",
        "passes on which a parked map came back",
        "the lines of passes on which a parked map came back",
        None,
    ),
    (
        "badge conflict",
        "iterations with a route conflict",
        "the lines of iterations with a route conflict",
        None,
    ),
    (
        "badge rejected",
        "iterations with a rejected read_skill pick",
        "the lines of iterations with a rejected read_skill pick",
        None,
    ),
    (
        "badge error",
        "iterations with a failed LLM or tool call",
        "the lines of iterations with a failed LLM or tool call",
        None,
    ),
    ("kind invalid", "iterations with an invalid or opaque line in or next to them", "invalid lines", None),
)
"""The fixed ``filter:`` commands and what each keeps, per kind of list."""


def _filtered(screen: TraceScreen) -> str | None:
    """Which kind of list a filter acts on in the current view (``None``: the view has no rows)."""
    target = screen.current_list()
    if target is None:
        return None
    if target is screen.timeline:
        return "timeline"
    return "events" if target is screen.lists.get("events") else "leases"


def _view_title(screen: TraceScreen) -> str:
    return next((view.title for view in screen.VIEWS if view.id == screen.view), screen.view)


def _same_as(command: PaletteCommand) -> str:
    """What a command does, to spot two entries doing the same (``filter: kind:K`` is ``filter: kind K``)."""
    area, colon, rest = command.text.partition(":")
    if colon and area.strip().lower() == "filter":
        return "filter:" + filter_query(rest).lower()
    return command.text.strip().lower()


def fixed_commands(screen: TraceScreen) -> list[PaletteCommand]:
    """The commands offered on an empty prompt."""
    commands = [
        # ``skill-map`` reads ``view: skill map`` in the palette.
        PaletteCommand(
            f"view: {view.id.replace('-', ' ')}", view.description, partial(screen.action_show_view, view.id)
        )
        for view in screen.VIEWS
    ]
    timeline = screen.timeline
    commands += [
        PaletteCommand(
            "go: first iteration", "Select the first iteration", lambda: timeline.action_cursor_first()
        ),
        PaletteCommand(
            "go: last iteration", "Select the newest iteration", lambda: timeline.action_cursor_last()
        ),
        PaletteCommand(
            "go: next iteration", "Select the next iteration", partial(screen.action_step_iteration, 1)
        ),
        PaletteCommand(
            "go: previous iteration",
            "Select the previous iteration",
            partial(screen.action_step_iteration, -1),
        ),
        # The argument-taking ones open the ``:`` prompt with the word typed (or type ``go: call 3``).
        PaletteCommand(
            "go: call N",
            "The exact prompt of LLM call #N (keys: c N enter)",
            partial(screen.action_go_to, "call "),
        ),
        PaletteCommand(
            "go: iteration N", "Select iteration N (keys: : i N enter)", partial(screen.action_go_to, "iter ")
        ),
        PaletteCommand(
            "go: seq N",
            "The record numbered N in Events (keys: : N enter)",
            partial(screen.action_go_to, "seq "),
        ),
    ]
    target = _filtered(screen)
    if target is not None:
        column = ("timeline", "events", "leases").index(target)
        title = _view_title(screen)
        for query, *meanings in _FILTERS:
            meaning = meanings[column]
            if meaning is None:
                continue  # it would keep every row of this view, or none
            commands.append(
                PaletteCommand(
                    f"filter: {query}",
                    f"Show only {meaning} (the {title} view)",
                    partial(_apply, screen, filter_query(query)),
                )
            )
        # only where there is a list: a view without rows (Backtrack) has no filter to clear
        commands.append(
            PaletteCommand("filter: clear", "Show every row of the current view", screen.action_clear_filter)
        )
    commands += [
        PaletteCommand(
            "expand: long contents",
            "Expand or collapse long prompts and results",
            screen.action_toggle_expand,
        ),
        PaletteCommand(
            "follow: toggle",
            "Follow the file as it grows (fpdebug view --follow)",
            screen.action_toggle_follow,
        ),
        # A trace screen only ever runs in the fpdebug app (or its drive mode), which has the key help.
        PaletteCommand(
            "help: keys", "Every key and how to remap it", cast("FpdebugApp", screen.app).action_help
        ),
    ]
    commands += diff_backtrack_commands(screen)
    controller = getattr(screen.app, "controller", None)
    if controller is not None:
        commands += list(controller.commands())
    return commands


def _apply(screen: TraceScreen, query: str) -> None:
    target = screen.current_list()
    if target is not None:
        screen.apply_filter(target, query)


def _go_iteration(screen: TraceScreen, turn: int | None, number: int) -> None:
    session = screen.session
    near = max(screen.selected, 0)
    if turn is None and 0 <= screen.selected < len(session.iterations):
        row = session.find_iteration(number, turn=session.iterations[screen.selected].turn, near=0)
        if row is None:
            row = session.find_iteration(number, near=near)
    else:
        row = session.find_iteration(number, turn=turn, near=near)
    if row is None:
        where = f" of turn {turn}" if turn is not None else ""
        screen.app.notify(f"No iteration {number}{where} in this trace.", severity="warning", timeout=3)
        return
    screen.select_row(row)


def _go_line(screen: TraceScreen, line: int) -> None:
    from fpdebug.tui.screens.view_handlers import EventsHandler

    if line >= screen.session.lines:
        screen.app.notify(
            f"Line {line} is not in the trace ({counted(screen.session.lines, 'line')}).",
            severity="warning",
            timeout=3,
        )
        return
    screen.handler("events", EventsHandler).go_to_line(line)


def _call_row(screen: TraceScreen, number: int) -> int | None:
    """The timeline row holding LLM call ``#number`` (``call_index``), in the selected run first."""
    session = screen.session
    selected = session.iterations[screen.selected] if 0 <= screen.selected < len(session.iterations) else None
    found: int | None = None
    for row, iteration in enumerate(session.iterations):
        for line, kind in zip(iteration.lines, iteration.kinds, strict=True):
            if kind != "llm_call" or getattr(session.record(line), "call_index", None) != number:
                continue
            if selected is None or iteration.run_id == selected.run_id:
                return row
            found = row if found is None else found
    return found


def _go_call(screen: TraceScreen, number: int) -> None:
    row = _call_row(screen, number)
    if row is None:
        screen.app.notify(f"No LLM call #{number} in this trace.", severity="warning", timeout=3)
        return
    screen.select_row(row)
    screen.action_show_view("calls")


def _seq_line(screen: TraceScreen, seq: int) -> int | None:
    """The line of the record numbered ``seq`` (line ``seq`` in a one-run trace; searched otherwise)."""
    session = screen.session
    candidates = [seq] if 0 <= seq < session.lines else []
    candidates += [line for line in range(session.lines) if line != seq]
    for line in candidates:
        if session.is_invalid(line):
            continue
        if getattr(session.record(line), "seq", None) == seq:
            return line
    return None


def _go_seq(screen: TraceScreen, seq: int) -> None:
    line = _seq_line(screen, seq)
    if line is None:
        screen.app.notify(f"No record with seq {seq} in this trace.", severity="warning", timeout=3)
        return
    _go_line(screen, line)


def go_prompt_text(typed: str) -> str:
    """What the ``:`` prompt means in palette words: ``c3`` → ``go: call 3``, ``17`` → ``go: seq 17``."""
    typed = typed.strip()
    if match := _GO_SHORT.match(typed):
        word = (match.group(1) or "seq").lower()
        return f"go: {_SHORT_WORDS.get(word, word)} {match.group(2)}"
    return typed if typed.lower().startswith(("go", "diff", "filter")) else f"go: {typed.lstrip(':')}"


def go_command(screen: TraceScreen, typed: str) -> PaletteCommand | None:
    """``go: call N``, ``go: seq N`` (the two kinds of place the palette and the ``:`` prompt share)."""
    if match := _GO_CALL.match(typed):
        number = int(match.group(1))
        return PaletteCommand(
            f"go: call {number}",
            "Show the exact prompt and reply of LLM call #N (the Calls view)",
            partial(_go_call, screen, number),
        )
    if match := _GO_SEQ.match(typed):
        seq = int(match.group(1))
        return PaletteCommand(
            f"go: seq {seq}",
            "Show the record with this seq in the Events view",
            partial(_go_seq, screen, seq),
        )
    return None


def parametric_command(screen: TraceScreen, typed: str) -> PaletteCommand | None:
    """The command an argument-taking prompt names (``go: iteration 12``…), if it names one."""
    typed = typed.strip()
    if (diff := diff_command(screen, typed)) is not None:
        return diff
    if (go := go_command(screen, typed)) is not None:
        return go
    if match := _GO_ITERATION.match(typed):
        turn = int(match.group(1)) if match.group(1) else None
        number = int(match.group(2))
        text = f"go: turn {turn} iteration {number}" if turn is not None else f"go: iteration {number}"
        return PaletteCommand(text, "Select this iteration", partial(_go_iteration, screen, turn, number))
    if match := _GO_LINE.match(typed):
        line = int(match.group(1))
        return PaletteCommand(
            f"go: line {line}", "Show this line in the Events view", partial(_go_line, screen, line)
        )
    if (match := _FILTER.match(typed)) and match.group(1).strip().lower() != "clear":
        if _filtered(screen) is None:
            return None  # the view has no rows to filter
        query = filter_query(match.group(1))
        return PaletteCommand(
            f"filter: {match.group(1).strip()}",
            f"Filter the {_view_title(screen)} view with {query!r}",
            partial(_apply, screen, query),
        )
    return None


# ----------------------------------------------------------------------------------------------
# The pass diff and the backtrack pane (part 2 of the debugger)

_SIDE = r"(?:turn\s+(\d+)\s*,?\s*)?(?:iter(?:ation)?\s+)?(\d+)"
_DIFF_PAIR = re.compile(
    rf"^diff:?\s*{_SIDE}\s*(?:vs\.?|versus|against|and|to|-|→)\s*{_SIDE}\s*$", re.IGNORECASE
)
_DIFF_ONE = re.compile(rf"^diff:?\s*{_SIDE}\s*(?:vs\.?)?\s*$", re.IGNORECASE)


def diff_backtrack_commands(screen: TraceScreen) -> list[PaletteCommand]:
    """The fixed ``diff:`` and ``backtrack:`` commands."""
    from fpdebug.tui.widgets.backtrack_pane import BacktrackPane

    def pane() -> BacktrackPane:
        return screen.query_one("#view-backtrack", BacktrackPane)

    def final() -> None:
        pane().open(None)
        screen.view = "backtrack"

    def traced() -> BacktrackPane | None:
        """The pane, shown, once its call is traced (``None`` and a notice while it is not)."""
        screen.view = "backtrack"
        target = pane()
        if target.report is None:
            target.ensure_open()
            screen.app.notify(
                "Tracing the answer first: run the command again once the chain shows.", timeout=3
            )
            return None
        return target

    def walk() -> None:
        target = traced()
        if target is not None:
            target.start_walk()

    def rerun(bisect: bool, restore: bool) -> None:
        target = traced()
        if target is None:
            return
        target.start(bisect=bisect, restore=restore)

    commands = [
        PaletteCommand(
            "diff: mark iteration",
            "Mark the selected iteration as A of the Diff view",
            screen.action_mark_diff,
        ),
        PaletteCommand(
            "diff: clear mark", "Compare each pass with the one before it again", partial(_clear_mark, screen)
        ),
    ]
    pair = _default_pair(screen)
    if pair is not None:
        a, b = pair
        commands.append(
            PaletteCommand(
                f"diff: iteration {_number(screen, a)} vs {_number(screen, b)}",
                "Compare these two passes (type any two: diff: iteration 3 vs 7)",
                partial(screen.compare, a, b),
            )
        )
    commands += [
        PaletteCommand("backtrack: final answer", "Explain the final answer of the last turn", final),
        PaletteCommand(
            "backtrack: this call", "Explain the selected iteration's LLM call", screen.action_backtrack_call
        ),
        PaletteCommand(
            "backtrack: ablate suspects",
            "Rerun the call without each top suspect (causal verdicts)",
            partial(rerun, False, False),
        ),
        PaletteCommand(
            "backtrack: bisect", "Ablate, then find the minimal culprit sets", partial(rerun, True, False)
        ),
        PaletteCommand(
            "backtrack: restore missing",
            "Ablate, and rerun with each missing piece put back",
            partial(rerun, False, True),
        ),
        PaletteCommand(
            "backtrack: walk",
            "Walk back to the root: ablate a beam per call, hop to the call that wrote the convict",
            walk,
        ),
        PaletteCommand(
            "backtrack: cancel",
            "Stop the running reruns (finished verdicts are kept)",
            lambda: pane().cancel(),
        ),
    ]
    return commands


def _number(screen: TraceScreen, row: int) -> str:
    iteration = screen.session.iterations[row]
    selected = screen.session.iterations[max(screen.selected, 0)]
    if iteration.turn != selected.turn or iteration.run_id != selected.run_id:
        return f"{iteration.number} (turn {iteration.turn})"
    return str(iteration.number)


def _default_pair(screen: TraceScreen) -> tuple[int, int] | None:
    from fpdebug.tui.screens.view_handlers import DiffHandler

    if screen.selected < 0:
        return None
    diff = screen.handler("diff", DiffHandler).diff  # the view is mounted after the first screen
    a = diff.mark if diff.mark is not None else diff.previous_row(screen.selected)
    if a is None or a == screen.selected:
        return None
    return a, screen.selected


def _clear_mark(screen: TraceScreen) -> None:
    from fpdebug.tui.screens.view_handlers import DiffHandler

    handler = screen.handler("diff", DiffHandler)

    def clear() -> None:
        handler.diff.set_mark(None)
        screen.show_selection()

    handler.when_ready(clear)


def _find(screen: TraceScreen, turn: int | None, number: int) -> int | None:
    session = screen.session
    if turn is None and 0 <= screen.selected < len(session.iterations):
        found = session.find_iteration(number, turn=session.iterations[screen.selected].turn, near=0)
        if found is not None:
            return found
    return session.find_iteration(number, turn=turn, near=0)


def _side_text(turn: int | None, number: int) -> str:
    return f"turn {turn} iteration {number}" if turn is not None else f"iteration {number}"


def _diff_pair(screen: TraceScreen, a: tuple[int | None, int], b: tuple[int | None, int]) -> None:
    rows = [_find(screen, *a), _find(screen, *b)]
    missing = [_side_text(*side) for side, row in zip((a, b), rows, strict=True) if row is None]
    if missing:
        screen.app.notify(f"No {' and no '.join(missing)} in this trace.", severity="warning", timeout=3)
        return
    assert rows[0] is not None and rows[1] is not None
    screen.compare(rows[0], rows[1])


def diff_command(screen: TraceScreen, typed: str) -> PaletteCommand | None:
    """``diff: iteration 3 vs 7`` (or the start of one: ``diff: iteration 3`` pairs it with the selection)."""
    if match := _DIFF_PAIR.match(typed):
        a = (int(match.group(1)) if match.group(1) else None, int(match.group(2)))
        b = (int(match.group(3)) if match.group(3) else None, int(match.group(4)))
        return PaletteCommand(
            f"diff: {_side_text(*a)} vs {_side_text(*b)}",
            "Compare these two passes: what entered and left each slot, and why",
            partial(_diff_pair, screen, a, b),
        )
    if (match := _DIFF_ONE.match(typed)) and 0 <= screen.selected < len(screen.session.iterations):
        a = (int(match.group(1)) if match.group(1) else None, int(match.group(2)))
        selected = screen.session.iterations[screen.selected]
        b = (selected.turn if a[0] is not None else None, selected.number)
        return PaletteCommand(
            f"diff: {_side_text(*a)} vs {_side_text(*b)}",
            "Compare it with the selected iteration (type … vs N for another)",
            partial(_diff_pair, screen, a, b),
        )
    return None


class TraceCommands(Provider):
    """Palette commands for the trace screen."""

    def _trace_screen(self) -> TraceScreen | None:
        from fpdebug.tui.screens.trace_screen import TraceScreen

        screen = self.screen
        return screen if isinstance(screen, TraceScreen) else None

    def _commands(self) -> Iterator[PaletteCommand]:
        screen = self._trace_screen()
        if screen is not None:
            yield from fixed_commands(screen)

    async def discover(self) -> Hits:
        for command in self._commands():
            yield DiscoveryHit(Text(command.text), command.callback, text=command.text, help=command.help)

    async def search(self, query: str) -> Hits:
        screen = self._trace_screen()
        if screen is None:
            return
        special = parametric_command(screen, query)
        commands = list(self._commands())
        if special is not None:
            # A typed command that a fixed one does too is listed once, as the fixed one (its help
            # says more), on top even when the fuzzy match would not find it (``kind:K``).
            twin = next((command for command in commands if _same_as(command) == _same_as(special)), None)
            if twin is not None:
                commands.remove(twin)
                special = twin
            yield Hit(1.0, Text(special.text), special.callback, text=special.text, help=special.help)
        matcher = self.matcher(query)
        for command in commands:
            score = matcher.match(command.text)
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(command.text),
                    command.callback,
                    text=command.text,
                    help=command.help,
                )
