"""One handler per view of the trace screen: its widget, focus and list, and how it follows the selection.

The screen composes each view through its handler, routes the selection and the view's own notices
(a lease opened, an event highlighted, ``m``, ``B``) to it, and keeps only what the views share:
the selected iteration, the view on show, the filters and the bars. A handler is keyed by its
view id in :data:`HANDLERS`; a screen that adds a view adds a handler for it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from textual.containers import Horizontal, Vertical
from textual.widget import AwaitMount, Widget

from fpdebug.tui.widgets.bars import TextBar
from fpdebug.tui.widgets.events import EventDetail, EventList, events_header
from fpdebug.tui.widgets.inspector import PassInspector
from fpdebug.tui.widgets.leases import LeaseDetail, LeaseGantt
from fpdebug.tui.widgets.row_list import RowList
from fpdebug.tui.widgets.timeline import IterationTimeline

if TYPE_CHECKING:
    from fpdebug.tui.screens.trace_screen import TraceScreen
    from fpdebug.tui.widgets.backtrack_pane import BacktrackPane
    from fpdebug.tui.widgets.diff import DiffView

__all__ = [
    "HANDLERS",
    "BacktrackHandler",
    "CallsHandler",
    "DiffHandler",
    "EventsHandler",
    "LeasesHandler",
    "PassesHandler",
    "SkillMapHandler",
    "ViewHandler",
]


class ViewHandler(ABC):
    """What the trace screen asks of one view.

    Args:
        screen: The screen the view is on.
    """

    focus: ClassVar[str | None] = None
    """The selector of the widget that takes the focus when the view is shown."""

    deferred: ClassVar[bool] = False
    """The widget is not composed with the screen but mounted the first time it is needed
    (:meth:`mount`): its module imports what the first screen does not need (cold start)."""

    def __init__(self, screen: TraceScreen) -> None:
        self.screen = screen
        self._widget: Widget | None = None
        self._mounting: AwaitMount | None = None

    @property
    def built(self) -> bool:
        """The view's widget exists (always, unless the view is :attr:`deferred` and not yet needed)."""
        return not self.deferred or self._widget is not None

    def mount(self) -> None:
        """Mount a deferred view's widget, hidden, into the view switcher (once; no-op otherwise)."""
        if self.built:
            return
        from textual.widgets import ContentSwitcher

        widget = self._widget = self.compose()
        widget.display = False  # the switcher shows it when it becomes the current view
        self._mounting = self.screen.query_one(ContentSwitcher).mount(widget)

    def when_ready(self, act: Callable[[], None]) -> None:
        """Run ``act`` once the view's widget is mounted with its children (now, if it is)."""
        self.mount()
        widget, mounting = self._widget, self._mounting
        if widget is None or mounting is None or widget.is_mounted:
            act()
            return

        async def after_mount() -> None:
            await mounting
            # Not when the screen was taken down (a quit) while it mounted: its widgets are going.
            if widget.is_attached and self.screen.showing:
                act()

        self.screen.call_later(after_mount)

    def _sync(self) -> None:
        """Bring the view's list, mounted late, up to date with the session."""
        row_list = self.row_list()
        if row_list is not None:
            row_list.sync()

    @abstractmethod
    def compose(self) -> Widget:
        """The view's widget (its id is ``view-<id>``)."""

    def row_list(self) -> RowList | None:
        """The list ``/``, ``n`` and ``N`` act on in this view (``None``: nothing to filter)."""
        return None

    def show(self, row: int | None) -> None:  # noqa: B027 - a hook: a view with nothing to update keeps it
        """Bring the view up to date with the selected timeline row (``None``: no row yet)."""


class _TimelineFiltered(ViewHandler):
    """A view of the selected iteration whose ``/`` filters the iteration timeline."""

    def row_list(self) -> RowList | None:
        return self.screen.timeline


class PassesHandler(_TimelineFiltered):
    """The iteration timeline beside the pass inspector of the selected iteration."""

    focus = "#timeline"

    def compose(self) -> Widget:
        session = self.screen.session
        return Vertical(
            Horizontal(
                Vertical(
                    TextBar(id="timeline-header"),
                    IterationTimeline(session, id="timeline"),
                    id="timeline-pane",
                ),
                PassInspector(session, id="inspector"),
                id="passes-panes",
            ),
            TextBar(id="passes-legend"),
            id="view-passes",
        )

    def show(self, row: int | None) -> None:
        self.screen.query_one("#inspector", PassInspector).show(row)


class LeasesHandler(ViewHandler):
    """The lease Gantt over iterations, its time axis and the detail of the lease under the cursor."""

    focus = "#leases"
    deferred = True  # hidden on the first screen: composed and styled after it (issue 22)

    def compose(self) -> Widget:
        session = self.screen.session
        return Vertical(
            Vertical(TextBar(id="lease-axis"), LeaseGantt(session, id="leases"), id="lease-pane"),
            LeaseDetail(session, id="lease-detail"),
            id="view-leases",
        )

    @property
    def gantt(self) -> LeaseGantt:
        """The lease Gantt."""
        return self.screen.query_one("#leases", LeaseGantt)

    def mount(self) -> None:
        if not self.built:
            super().mount()
            self.when_ready(self._sync)  # the leases read while it was not there

    def row_list(self) -> RowList | None:
        # None until the view is mounted: the screen's notices bring only mounted lists up to date.
        return self.screen.query_one_optional("#leases", LeaseGantt)

    def show(self, row: int | None) -> None:
        self.when_ready(lambda: self._show(row))

    def _show(self, row: int | None) -> None:
        gantt = self.gantt
        if row is not None:
            gantt.set_focus_row(row)
        detail = self.screen.query_one("#lease-detail", LeaseDetail)
        detail.show(gantt.cursor if gantt.cursor >= 0 else None)
        self.update_axis()
        self.screen.call_after_refresh(self.update_axis)  # the width is known after layout

    def update_axis(self) -> None:
        """Draw the iteration axis above the Gantt to its current width."""
        gantt = self.gantt
        width = gantt.scrollable_content_region.width
        if width > 0:
            self.screen.query_one("#lease-axis", TextBar).show(gantt.axis_text(width))

    def cursor_moved(self, row: int) -> None:
        """The Gantt's cursor is on lease ``row``: show its detail."""
        self.screen.query_one("#lease-detail", LeaseDetail).show(row)

    def opened(self, row: int) -> None:
        """Lease ``row`` was opened: go to the pass that pruned it (or granted it) in the Passes view,
        the inspector scrolled to that lease's row of its Leases section, highlighted."""
        span = self.gantt.span(row)
        target = span.prune if span.prune is not None else span.grant
        if target is None:
            return
        lease = self.screen.session.leases[row]
        phrase = f" {lease.instruction_id} {lease.delivery_lease} granted by {lease.tool_name} "
        pruned = span.prune is not None

        def is_its_row(text: str) -> bool:
            # A prune row starts with its reason (spent, tenure-ended); served and granted rows say so.
            verb = text.lstrip().partition(" ")[0]
            wanted = verb not in ("served", "granted") if pruned else verb == "granted"
            return wanted and phrase in text

        self.screen.select_row(target)
        self.screen.view = "passes"
        self.screen.call_after_refresh(self.screen.reveal, "#inspector", is_its_row)


class CallsHandler(_TimelineFiltered):
    """The exact prompt of the selected iteration's LLM call by slot, and the reply."""

    focus = "#view-calls"
    deferred = True  # hidden on the first screen: composed and styled after it (cold start)

    def compose(self) -> Widget:
        from fpdebug.tui.widgets.calls import CallView

        return CallView(self.screen.session, id="view-calls")

    def show(self, row: int | None) -> None:
        from fpdebug.tui.widgets.calls import CallView

        self.when_ready(lambda: self.screen.query_one("#view-calls", CallView).show(row))


class EventsHandler(ViewHandler):
    """The raw trace, one row per line, and the detail of the line under the cursor."""

    focus = "#events"
    deferred = True  # hidden on the first screen: composed and styled after it (issue 22)

    def __init__(self, screen: TraceScreen) -> None:
        super().__init__(screen)
        # Set while the event cursor selects an iteration, so showing it does not move that cursor.
        self._syncing = False

    def compose(self) -> Widget:
        session = self.screen.session
        return Vertical(
            Vertical(
                TextBar(events_header(), id="events-header"),
                EventList(session, id="events"),
                id="events-pane",
            ),
            EventDetail(session, id="event-detail"),
            id="view-events",
        )

    @property
    def events(self) -> EventList:
        """The event list."""
        return self.screen.query_one("#events", EventList)

    def mount(self) -> None:
        if not self.built:
            super().mount()
            self.when_ready(self._sync)  # the lines read while it was not there

    def row_list(self) -> RowList | None:
        # None until the view is mounted: the screen's notices bring only mounted lists up to date.
        return self.screen.query_one_optional("#events", EventList)

    def go_to_line(self, line: int) -> None:
        """Show the Events view with its cursor on ``line`` (clearing a filter that hides it)."""
        self.screen.view = "events"
        self.when_ready(lambda: self._go_to_line(line))

    def _go_to_line(self, line: int) -> None:
        events = self.events
        if not events.move_to_row(line, center=True):
            self.screen.clear_filter(events)
            events.move_to_row(line, center=True)

    def show(self, row: int | None) -> None:
        self.when_ready(lambda: self._show(row))

    def _show(self, row: int | None) -> None:
        events = self.events
        if row is not None and not self._syncing:
            iteration = self.screen.session.iterations[row]
            line = events.cursor
            if not (iteration.first_line <= line <= iteration.last_line):
                events.move_to_row(iteration.first_line, center=True)
        if events.cursor >= 0:
            self.screen.query_one("#event-detail", EventDetail).show(events.cursor)

    def cursor_moved(self, line: int) -> None:
        """The event cursor is on ``line``: show it, and select the iteration that holds it."""
        screen = self.screen
        screen.query_one("#event-detail", EventDetail).show(line)
        row = screen.session.row_at_line(line)
        if row is not None and row != screen.selected:
            self._syncing = True
            try:
                screen.selected = row
            finally:
                self._syncing = False

    def opened(self) -> None:
        """A line was opened: move the focus to its detail."""
        self.screen.query_one("#event-detail", EventDetail).focus()


class SkillMapHandler(_TimelineFiltered):
    """The declared skill map with the cursor's path up to the selected iteration."""

    focus = "#view-skill-map"
    deferred = True  # hidden on the first screen, and its module lays out maps (cold start)

    def compose(self) -> Widget:
        from fpdebug.tui.widgets.skill_map import SkillMapView

        return SkillMapView(self.screen.session, id="view-skill-map")

    def show(self, row: int | None) -> None:
        from fpdebug.tui.widgets.skill_map import SkillMapView

        self.when_ready(lambda: self.screen.query_one("#view-skill-map", SkillMapView).show(row))


class DiffHandler(_TimelineFiltered):
    """Two passes compared: A is the marked iteration (or the pass before B), B the selected one."""

    focus = "#view-diff"
    deferred = True  # hidden on the first screen, and its module imports the pass diff (cold start)

    def compose(self) -> Widget:
        from fpdebug.tui.widgets.diff import DiffView

        return DiffView(self.screen.session, id="view-diff")

    @property
    def diff(self) -> DiffView:
        """The diff view (mounted now if it was not yet; :meth:`when_ready` waits for its children)."""
        from fpdebug.tui.widgets.diff import DiffView

        self.mount()
        return self.screen.query_one("#view-diff", DiffView)

    def show(self, row: int | None) -> None:
        self.when_ready(lambda: self.diff.show(row))

    def toggle_mark(self, row: int) -> None:
        """Mark timeline row ``row`` as A (again on the marked one clears the mark), and say so."""
        self.when_ready(lambda: self._toggle_mark(row))

    def _toggle_mark(self, row: int) -> None:
        screen = self.screen
        diff = self.diff
        label = screen.session.label(screen.session.iterations[row])
        if diff.mark == row:
            diff.set_mark(None)
            screen.app.notify(
                "Mark cleared: the Diff view compares each pass with the one before.", timeout=3
            )
        else:
            diff.set_mark(row)
            screen.app.notify(f"{label} marked as A: select B and press 6 for the diff.", timeout=3)

    def compare(self, a_row: int, b_row: int) -> None:
        """Show rows ``a_row`` (A) and ``b_row`` (B, selected) compared."""
        screen = self.screen
        screen.select_row(b_row)
        screen.view = "diff"

        def marked() -> None:
            self.diff.set_mark(a_row)
            screen.show_selection()

        self.when_ready(marked)


class BacktrackHandler(ViewHandler):
    """From an answer back to its causes: chains, suspects and causal reruns of one LLM call.

    Deferred: the pane's module imports the backtracker, and through it the engine and the
    providers, which cost a viewer's first screen most of its start-up time.
    """

    focus = "#backtrack-doc"
    deferred = True

    def compose(self) -> Widget:
        from fpdebug.tui.widgets.backtrack_pane import BacktrackPane

        return BacktrackPane(self.screen.session, id="view-backtrack")

    @property
    def pane(self) -> BacktrackPane:
        """The backtrack pane (mounted now if it was not yet; its children come with the next mount)."""
        from fpdebug.tui.widgets.backtrack_pane import BacktrackPane

        self.mount()
        return self.screen.query_one("#view-backtrack", BacktrackPane)

    def show(self, row: int | None) -> None:
        self.when_ready(lambda: self.pane.ensure_open())

    def trace_grew(self) -> None:
        """The followed trace grew: let a pane that was opened trace the new answer."""
        if self.built:
            self.when_ready(lambda: self.pane.trace_grew())

    def backtrack(self, row: int) -> None:
        """Backtrack the last LLM call of timeline row ``row`` (or say it made none)."""
        screen = self.screen
        iteration = screen.session.iterations[row]
        lines = iteration.llm_lines
        if not lines:
            label = screen.session.label(iteration)
            screen.app.notify(f"{label} made no LLM call: there is no answer to backtrack.", timeout=3)
            return
        self.when_ready(lambda: self.pane.open(lines[-1]))
        screen.view = "backtrack"


HANDLERS: dict[str, type[ViewHandler]] = {
    "passes": PassesHandler,
    "leases": LeasesHandler,
    "calls": CallsHandler,
    "events": EventsHandler,
    "skill-map": SkillMapHandler,
    "diff": DiffHandler,
    "backtrack": BacktrackHandler,
}
"""The handler of each view, by view id."""
