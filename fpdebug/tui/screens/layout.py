"""The trace screen's layout: the timeline pane sized to its rows, and the zoom key (``z``).

The Passes view puts the timeline beside the pass inspector. A fixed share of the screen is too
much on a wide terminal (88 columns for rows that need about 60) and the inspector, whose lines
are long, is what wraps; so the pane takes what its rows need (:func:`timeline_pane_width`),
never less than :data:`TIMELINE_MIN` nor more than :data:`TIMELINE_SHARE` of the screen.

``z`` zooms the focused pane: the run header, the tabs and the other panes of the view are hidden
until ``z`` is pressed again (or another view is shown).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.widget import Widget

from fpdebug.tui.widgets.timeline import timeline_width

if TYPE_CHECKING:
    from fpdebug.tui.screens.trace_screen import TraceScreen

__all__ = ["PANES", "TIMELINE_MIN", "TIMELINE_SHARE", "PaneZoom", "fit_timeline", "timeline_pane_width"]

TIMELINE_MIN = 40
"""Columns the timeline pane keeps on any screen (its narrow layout fits labels, counts and badges)."""

TIMELINE_SHARE = 0.45
"""The most of the screen's width the timeline pane takes: the rest is the inspector's."""

_CHROME = 4  # the pane's border (2) and the list's scrollbar (2)

PANES = "#timeline-pane, #inspector, #lease-pane, #lease-detail, #events-pane, #event-detail"
"""The panes a view is split into (a view not listed here is one pane)."""


def timeline_pane_width(screen_width: int, label: int, badges: int) -> int:
    """The timeline pane's width on a screen ``screen_width`` wide.

    Args:
        screen_width: The terminal's columns.
        label: The longest row label.
        badges: The cells the widest row's badges need as words.
    """
    wanted = timeline_width(label, badges) + _CHROME
    return max(TIMELINE_MIN, min(wanted, int(screen_width * TIMELINE_SHARE)))


def fit_timeline(screen: TraceScreen) -> bool:
    """Size the timeline pane to its rows; returns whether its width changed."""
    pane = screen.query_one_optional("#timeline-pane", Widget)
    width = screen.size.width
    if pane is None or width <= 0:
        return False
    wanted = "1fr"  # zoomed: the whole screen
    if not screen.zoom.zoomed:
        wanted = str(timeline_pane_width(width, screen.session.label_width, screen.timeline.badge_room))
    current = pane.styles.width
    if current is not None and str(current) == wanted:
        return False
    pane.styles.width = wanted
    return True


class PaneZoom:
    """The ``z`` key: the focused pane takes the whole screen, ``z`` again gives the others back.

    Args:
        screen: The trace screen.
    """

    HIDDEN = "-zoom-hidden"
    """The class of a pane the zoom hides."""

    def __init__(self, screen: TraceScreen) -> None:
        self.screen = screen
        self.zoomed = False
        """Whether a pane is zoomed."""

    def toggle(self) -> None:
        """Zoom the focused pane, or restore the layout."""
        if self.zoomed:
            self.restore()
        else:
            self.zoom()

    def zoom(self) -> None:
        """Hide the header, the tabs and every pane of the view but the focused one."""
        screen = self.screen
        view = screen.query_one_optional(f"#view-{screen.view}", Widget)
        if view is None:
            return
        focused = screen.focused
        panes = list(view.query(PANES))
        held = [
            pane for pane in panes if focused is not None and (focused is pane or pane in focused.ancestors)
        ]
        if held:  # a focus outside the view's panes (none: a search prompt) hides none of them
            for pane in panes:
                if pane not in held:
                    pane.add_class(self.HIDDEN)
        self.zoomed = True
        screen.add_class("-zoomed")

    def restore(self) -> None:
        """Show everything the zoom hid."""
        screen = self.screen
        for pane in screen.query(f".{self.HIDDEN}"):
            pane.remove_class(self.HIDDEN)
        self.zoomed = False
        screen.remove_class("-zoomed")
