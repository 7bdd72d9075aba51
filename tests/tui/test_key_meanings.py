"""Keys that never surprise (issue 20), checked on the bindings themselves (no app is run):

- no key means two things: across the app, the trace screen, drive mode, every list, document and
  link view, the backtrack pane and the menus, a key has one meaning (moving down is moving down,
  whether it moves a list's cursor, a document or a link cursor; escape always backs out);
- every list, menu and document answers ``j``/``k``, ``g``/``G``, ``ctrl+d``/``ctrl+u``, ``/`` and
  ``n``/``N`` (its own bindings, or its screen's for the search keys).

What the keys do on screen is read from the drawn screen in test_keys_everywhere.
"""

from __future__ import annotations

from collections import defaultdict

import pytest
from textual.binding import Binding
from textual.dom import DOMNode

from fpdebug.tui.drive.app import DriveApp
from fpdebug.tui.drive.breakpoints_menu import BreakpointsScreen
from fpdebug.tui.screens.help_screen import HelpDocument, HelpScreen
from fpdebug.tui.screens.run_diff_screen import RunDiffDocument, RunDiffScreen
from fpdebug.tui.screens.runs_screen import RunsScreen
from fpdebug.tui.screens.trace_screen import TraceScreen
from fpdebug.tui.widgets.backtrack_pane import BacktrackDocument
from fpdebug.tui.widgets.calls import CallView
from fpdebug.tui.widgets.diff import DiffView
from fpdebug.tui.widgets.events import EventDetail, EventList
from fpdebug.tui.widgets.inspector import PassInspector
from fpdebug.tui.widgets.leases import LeaseDetail, LeaseGantt
from fpdebug.tui.widgets.runs_list import RunsList
from fpdebug.tui.widgets.skill_map import SkillMapView
from fpdebug.tui.widgets.timeline import IterationTimeline

_SAME = {
    "down": {"cursor-down", "scroll-down", "next-link", "breakpoints-down"},
    "up": {"cursor-up", "scroll-up", "previous-link", "breakpoints-up"},
    "first": {"cursor-first", "scroll-top", "breakpoints-first"},
    "last": {"cursor-last", "scroll-bottom", "breakpoints-last"},
    "page down": {"page-down", "scroll-page-down", "breakpoints-page-down"},
    "page up": {"page-up", "scroll-page-up", "breakpoints-page-up"},
    "open": {"select", "open-link"},
    "search": {"search", "breakpoints-search", "runs-filter"},
    "mark to diff": {"mark-diff", "runs-mark"},
}
"""Binding ids that mean the same thing in different places."""

_CLOSING_BY_OPENER = {("help-close", "question_mark"): "help", ("breakpoints-close", "b"): "run-breakpoints"}
"""A menu closed by the key that opened it: the key toggles it, one meaning."""


def _meaning(binding_id: str, key: str) -> str:
    if key == "escape":
        return "back out"  # close a prompt or menu, clear a search, cancel reruns: leave what you are in
    if (binding_id, key) in _CLOSING_BY_OPENER:
        return _CLOSING_BY_OPENER[binding_id, key]
    if binding_id == "help-close" and key == "q":
        return "quit"  # q leaves what is on top: the help, else the app
    return next((name for name, ids in _SAME.items() if binding_id in ids), binding_id)


def test_no_key_means_two_things() -> None:
    meanings: dict[str, set[str]] = defaultdict(set)
    where: dict[str, set[str]] = defaultdict(set)
    for title, bindings in DriveApp.binding_groups():
        for binding in bindings:
            assert isinstance(binding, Binding) and binding.id is not None
            for key in binding.key.split(","):
                meanings[key.strip()].add(_meaning(binding.id, key.strip()))
                where[key.strip()].add(f"{title}: {binding.id}")
    clashes = {key: sorted(where[key]) for key, found in meanings.items() if len(found) > 1}
    assert not clashes, f"keys with two meanings: {clashes}"


def test_bisect_and_cancel_do_not_take_the_breakpoints_and_go_to_call_keys() -> None:
    """The two clashes of issue 20: b bisected on view 7 of a live run, c cancelled there."""
    keys = {
        binding.id: binding.key
        for _title, bindings in DriveApp.binding_groups()
        for binding in bindings
        if isinstance(binding, Binding)
    }
    assert keys["run-breakpoints"] == "b" and keys["go-to-call"] == "c"
    assert "b" not in keys["backtrack-bisect"].split(",")
    assert "c" not in keys["backtrack-cancel"].split(",")


_MOVES = {
    "j": "down",
    "k": "up",
    "g": "first",
    "G": "last",
    "ctrl+d": "page down",
    "ctrl+u": "page up",
    "slash": "search",
    "n": "next-match",
    "N": "previous-match",
}


def _keys_of(*nodes: type[DOMNode]) -> dict[str, str]:
    """Key → meaning of the first of ``nodes`` (a widget, then its screen) that binds it."""
    found: dict[str, str] = {}
    for node in nodes:
        for key, bindings in node._merge_bindings().key_to_bindings.items():
            if key not in found and bindings[0].id is not None:
                found[key] = _meaning(bindings[0].id, key)
    return found


@pytest.mark.parametrize(
    ("widget", "screen"),
    [
        (IterationTimeline, TraceScreen),
        (LeaseGantt, TraceScreen),
        (EventList, TraceScreen),
        (PassInspector, TraceScreen),
        (CallView, TraceScreen),
        (EventDetail, TraceScreen),
        (LeaseDetail, TraceScreen),
        (SkillMapView, TraceScreen),
        (DiffView, TraceScreen),
        (BacktrackDocument, TraceScreen),
        (HelpDocument, HelpScreen),
        (BreakpointsScreen, BreakpointsScreen),
        (RunsList, RunsScreen),
        (RunDiffDocument, RunDiffScreen),
    ],
)
def test_every_list_menu_and_document_answers_the_same_keys(
    widget: type[DOMNode], screen: type[DOMNode]
) -> None:
    keys = _keys_of(widget, screen)
    missing = {key: meaning for key, meaning in _MOVES.items() if keys.get(key) != meaning}
    assert not missing, f"{widget.__name__} does not answer {missing} (it has {keys})"
