"""The trace screen's own keys (beside one key per view): navigation, search, filters, folding, follow.

Kept apart from :mod:`fpdebug.tui.screens.trace_screen` so the screen reads as what it composes and
routes; the help screen and the keymap read these bindings through the screen's ``BINDINGS``.
"""

from __future__ import annotations

from textual.binding import Binding, BindingType

__all__ = ["TRACE_SCREEN_KEYS"]

TRACE_SCREEN_KEYS: list[BindingType] = [
    Binding(
        "left_square_bracket",
        "step_iteration(-1)",
        "Prev iter",
        id="prev-iteration",
        key_display="[",
        tooltip="Select the previous iteration (of the filtered timeline).",
    ),
    Binding(
        "right_square_bracket",
        "step_iteration(1)",
        "Next iter",
        id="next-iteration",
        key_display="]",
        tooltip="Select the next iteration (of the filtered timeline).",
    ),
    Binding(
        "slash",
        "search",
        "Search",
        id="search",
        tooltip="Filter the view's list (words, kind:K, skill:S, badge:B), or search the focused document.",
    ),
    Binding(
        "colon",
        "go_to('')",
        "Go to",
        show=False,
        id="go-to",
        key_display=":",
        tooltip="Go to a place: call N, iter N, seq N (a bare number is a seq), line N.",
    ),
    Binding(
        "c",
        "go_to('call ')",
        "Go to call",
        show=False,
        id="go-to-call",
        tooltip="Go to LLM call N: its exact prompt in the Calls view (c 3 enter).",
    ),
    Binding(
        "n",
        "next_match",
        "Next match",
        show=False,
        id="next-match",
        tooltip="The next match: the filtered list's next row, or the document search's next hit.",
    ),
    Binding(
        "N",
        "previous_match",
        "Prev match",
        show=False,
        id="previous-match",
        tooltip="The previous match: the filtered list's previous row, or the search's previous hit.",
    ),
    Binding(
        "escape",
        "clear_filter",
        "Clear filter",
        show=False,
        id="clear-filter",
        tooltip="End the focused document's search, or show every row of the list again.",
    ),
    Binding(
        "e",
        "toggle_expand",
        "Expand",
        id="expand",
        tooltip="Expand (or collapse) long prompts, replies and results in this view.",
    ),
    Binding(
        "f",
        "toggle_follow",
        "Follow",
        show=False,
        id="toggle-follow",
        tooltip="Follow mode: keep the cursor on the newest iteration as the file grows.",
    ),
    Binding(
        "m",
        "mark_diff",
        "Mark A",
        show=False,
        id="mark-diff",
        tooltip="Mark the selected iteration as A of the Diff view (B is the selected iteration).",
    ),
    Binding(
        "B",
        "backtrack_call",
        "Backtrack",
        show=False,
        id="backtrack-call",
        tooltip="Backtrack the selected iteration's LLM call in the Backtrack view.",
    ),
    Binding(
        "F",
        "fork_pass",
        "Fork",
        show=False,
        id="fork-pass",
        tooltip="Fork the run at the selected pass: edit its context, rerun from there, diff with the parent.",
    ),
    Binding(
        "L",
        "ledger",
        "Ledger",
        show=False,
        id="ledger",
        tooltip="The context ledger of the trace's folder: what each injection, skill and tool costs and earns.",
    ),
    Binding(
        "w",
        "badge_reason",
        "Why badge",
        show=False,
        id="badge-reason",
        tooltip="Why the selected iteration has a badge: its inspector row, highlighted (w again: the next badge).",
    ),
    Binding(
        "z",
        "toggle_zoom",
        "Zoom",
        show=False,
        id="zoom",
        tooltip="Zoom the focused pane to the whole screen (z again gives the other panes back).",
    ),
    Binding(
        "tab",
        "app.focus_next",
        "Next pane",
        show=False,
        id="focus-next",
        tooltip="Move the focus to the next pane.",
    ),
    Binding(
        "shift+tab",
        "app.focus_previous",
        "Previous pane",
        show=False,
        id="focus-previous",
        tooltip="Move the focus to the previous pane.",
    ),
]
"""Every key of the trace screen but the view keys, each with its remappable id."""
