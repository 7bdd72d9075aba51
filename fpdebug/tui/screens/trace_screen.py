"""TraceScreen: one open trace, its views, the selection they share, and the routing between them.

State owned here and pushed down to the widgets: the current view, the selected iteration (a
timeline row), the follow state and the count of rows that arrived while the user looked
elsewhere. Widgets post messages up (a list's cursor moved, a row was opened); workers post
:mod:`~fpdebug.tui.messages` after updating the session; nothing but the UI thread touches a widget.

The screen composes and routes; the work is done by its parts:

- :class:`~fpdebug.tui.screens.loader.TraceLoader`: the first load and the tail of a followed file;
- :mod:`~fpdebug.tui.screens.view_handlers`: one handler per view (its widget, its focus, its list,
  how it follows the selection, its own keys);
- :class:`~fpdebug.tui.screens.filters.RowFilters`: the ``/`` search of each list;
- :class:`~fpdebug.tui.screens.status_bar.TraceStatusBar`: the status line.

Views are declared in :data:`VIEWS` (id, tab title, key). A screen adds views by subclassing,
extending :data:`VIEWS`, and overriding :meth:`TraceScreen.handler_for` (or :meth:`TraceScreen.compose_view`
and :meth:`TraceScreen.show_selection`).
"""

from __future__ import annotations

import functools
import gc
import threading
from collections.abc import Callable
from typing import ClassVar, Literal, TypeVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.reactive import reactive
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import ContentSwitcher, Input, Tab, Tabs
from textual.worker import Worker, WorkerState

from fpdebug.trace.inert import inert_line
from fpdebug.tui import collector
from fpdebug.tui.commands import go_prompt_text, parametric_command
from fpdebug.tui.messages import FilterGrew, LoadFinished, TraceChecked, TraceGrew, TraceReplaced
from fpdebug.tui.screens.badge_reason import BadgeReasons
from fpdebug.tui.screens.filters import RowFilters
from fpdebug.tui.screens.go_prompt import GoPrompt
from fpdebug.tui.screens.layout import PaneZoom, fit_timeline
from fpdebug.tui.screens.loader import TraceLoader
from fpdebug.tui.screens.screen_keys import TRACE_SCREEN_KEYS
from fpdebug.tui.screens.status_bar import TraceStatusBar
from fpdebug.tui.screens.view_handlers import (
    HANDLERS,
    BacktrackHandler,
    DiffHandler,
    EventsHandler,
    LeasesHandler,
    ViewHandler,
)
from fpdebug.tui.screens.view_spec import VIEWS, ViewSpec, view_bindings
from fpdebug.tui.text import Palette
from fpdebug.tui.widgets.bars import (
    DOCUMENT_SEARCH,
    LIST_FILTER,
    KeysFooter,
    RunHeader,
    SearchBar,
    TextBar,
    header_text,
)
from fpdebug.tui.widgets.document import DocumentView
from fpdebug.tui.widgets.link_document import Jump, LinkDocument
from fpdebug.tui.widgets.row_list import RowList
from fpdebug.tui.widgets.timeline import IterationTimeline, timeline_header, timeline_legend
from fpdebug.views.session import TraceSession

__all__ = [
    "VIEWS",
    "Mode",
    "TraceScreen",
    "ViewSpec",
    "view_bindings",
    "while_showing",
]

Mode = Literal["replay", "follow", "drive"]
"""How the trace is read: a saved file, a file another process writes, or a run the app drives."""

_Handler = TypeVar("_Handler", bound=ViewHandler)

WRITER_LOOK_EVERY = 1.0
"""Seconds between two redraws of the bars of a followed file (what is known of its writer changes)."""

FOOTER_WAIT_TICKS = 100
"""How many 10 ms ticks the first-paint notice waits for the key bar at most (then it is sent anyway)."""


def while_showing(handler: Callable[..., None]) -> Callable[..., None]:
    """Skip ``handler`` once the screen's widgets are gone.

    Worker threads (the loader, the tail, a driven run) post messages that can be handled after the
    app began exiting: the screen is still mounted then, but its children have been removed, and a
    handler that queries them would raise out of the app. Late messages have nothing left to show.
    """

    @functools.wraps(handler)
    def guarded(self: TraceScreen, *args: object) -> None:
        if self.showing:
            handler(self, *args)

    return guarded


class TraceScreen(Screen[None]):
    """The debugger's main screen for one trace.

    Args:
        session: The trace.
        mode: ``replay``, ``follow`` or ``drive`` (drive also follows the file).
        source_name: What the header calls the trace (the file name).
    """

    BINDINGS: ClassVar[list[BindingType]] = [*view_bindings(VIEWS), *TRACE_SCREEN_KEYS]

    VIEWS: tuple[ViewSpec, ...] = VIEWS
    """The views this screen shows (subclasses may extend)."""

    # Textual focuses the first focusable widget once the screen is composed (the tabs, which
    # on_mount then makes unfocusable): the first frame drew them focused, and the timeline's
    # focus restyled both afterwards. The timeline is focused from the start.
    AUTO_FOCUS = "#timeline"

    view: reactive[str] = reactive("passes", init=False)
    """The view on show."""
    selected: reactive[int] = reactive(-1, init=False)
    """The selected iteration, as a timeline row (``-1`` before any row exists)."""
    following: reactive[bool] = reactive(False, init=False)
    """Follow mode: new iterations move the cursor when it is on the last one."""
    new_rows: reactive[int] = reactive(0, init=False)
    """Iterations that arrived while the cursor was away from the end."""

    def __init__(self, session: TraceSession, *, mode: Mode = "replay", source_name: str = "") -> None:
        super().__init__()
        self.session = session
        """The trace."""
        self.replaced = False
        """The followed file was replaced (or copied over, or truncated): what is shown is the old one."""
        self.mode: Mode = mode
        """How the trace is read."""
        self.source_name = source_name or session.reader.path.name
        """What the header calls the trace."""
        self.loaded = False
        """The first load finished."""
        self.error: str | None = None
        """The last worker error, shown in the status bar."""
        self._invalid_shown = 0
        self._announcing = False  # a first-paint check is pending
        self._first_screen_up = False
        self._mounting = False  # in on_mount: the widgets are up, though Textual says not mounted yet
        self._first_frame = False  # the first frame (with the first rows) was drawn
        self._view_drawn = False  # and the frame after it, with the view of the selected iteration
        self.loader = TraceLoader(self, session)
        """Reads the trace in the background: the first load, then the tail."""
        self.filters = RowFilters(self, session)
        """The ``/`` filters of the lists."""
        self._searching: DocumentView | RowList | None = None  # what the open search prompt acts on
        self.handlers: dict[str, ViewHandler] = {view.id: self.handler_for(view) for view in self.VIEWS}
        """The handler of each view, by view id."""
        self.zoom = PaneZoom(self)
        """The ``z`` key's state."""
        self.badge_reasons = BadgeReasons(self)
        """The ``w`` key's state."""

    @property
    def first_paint(self) -> threading.Event:
        """Set once the first rows are on screen (the first-screen probe of the benchmarks waits on it)."""
        return self.loader.first_paint

    # ------------------------------------------------------------------------------------------
    # Composition

    def handler_for(self, view: ViewSpec) -> ViewHandler:
        """The handler of one view (:data:`~fpdebug.tui.screens.view_handlers.HANDLERS` by its id)."""
        handler = HANDLERS.get(view.id)
        if handler is None:
            raise ValueError(f"unknown view {view.id!r}")
        return handler(self)

    def handler(self, view: str, kind: type[_Handler]) -> _Handler:
        """The handler of view ``view``, which must be a ``kind``."""
        found = self.handlers[view]
        assert isinstance(found, kind), f"view {view!r} is handled by {type(found).__name__}"
        return found

    def compose(self) -> ComposeResult:
        yield RunHeader(id="header")
        yield Tabs(*(Tab(f"{view.key} {view.title}", id=f"tab-{view.id}") for view in self.VIEWS), id="tabs")
        with ContentSwitcher(initial=f"view-{self.VIEWS[0].id}", id="views"):
            for view in self.VIEWS:
                if not self.handlers[view.id].deferred:  # mounted when first needed (cold start)
                    yield self.compose_view(view)
        yield TraceStatusBar(id="status")  # the search bar is mounted above it on the first `/`
        yield KeysFooter()

    def compose_view(self, view: ViewSpec) -> Widget:
        """The widget of one view (its id must be ``view-<id>``)."""
        return self.handlers[view.id].compose()

    @property
    def timeline(self) -> IterationTimeline:
        """The iteration timeline."""
        return self.query_one("#timeline", IterationTimeline)

    @property
    def lists(self) -> dict[str, RowList]:
        """Every filterable list, by view id."""
        found: dict[str, RowList] = {}
        for view, handler in self.handlers.items():
            row_list = handler.row_list()
            if row_list is not None:
                found[view] = row_list
        return found

    def _row_lists(self) -> list[RowList]:
        """Every filterable list, once each (several views filter the timeline)."""
        return list({id(row_list): row_list for row_list in self.lists.values()}.values())

    def current_list(self) -> RowList | None:
        """The list ``/``, ``n`` and ``N`` act on in the current view."""
        handler = self.handlers.get(self.view)
        return handler.row_list() if handler is not None else None

    def on_descendant_focus(self) -> None:
        self._refresh_bars()  # the status line names the search of the focused document

    def on_mount(self) -> None:
        self.tabs_widget = self.query_one(Tabs)
        self.tabs_widget.can_focus = False
        self.following = self.mode != "replay"
        self.timeline.focus()
        # The first slice is read now and its rows synced (its notice, posted too, finds them so),
        # so the first frame has them; what the rows do not need (the view of the selected
        # iteration: the inspector's document) comes right after that frame (issue 22).
        self.call_after_refresh(self._first_frame_drawn)
        self._mounting = True
        try:
            if self.loader.start_load():
                self._trace_grew(TraceGrew())
            else:
                self._refresh_bars()
        finally:
            self._mounting = False
        if self.mode == "follow":
            # A writer that stops writes nothing to redraw on: look again now and then, so the
            # header stops saying "running" once the file has been quiet for a while.
            self.set_interval(WRITER_LOOK_EVERY, self._refresh_bars)

    def on_unmount(self) -> None:
        self.loader.stop()

    @while_showing
    def _first_frame_drawn(self) -> None:
        self._first_frame = True
        self.show_selection()
        self.call_after_refresh(self._first_view_drawn)

    def _first_view_drawn(self) -> None:
        self._view_drawn = True

    # ------------------------------------------------------------------------------------------
    # Worker notices

    @on(TraceGrew)
    @while_showing
    def _trace_grew(self, message: TraceGrew) -> None:
        timeline = self.timeline
        was_at_end = timeline.at_end
        before = timeline.total  # rows known before this notice
        events = self.handler("events", EventsHandler).row_list()  # None until its view is mounted
        events_at_end = events is not None and events.at_end
        for row_list in self._row_lists():
            row_list.sync()
            row_filter = row_list.row_filter
            if row_filter is not None and row_filter.done:
                self.filters.scan(row_list, row_filter)
        added = timeline.total - before
        if self.loaded and added > 0:
            if self.following and was_at_end:
                timeline.action_cursor_last()
            else:
                self.new_rows += added
        if self.loaded and self.following and events_at_end and self.view == "events" and events is not None:
            events.action_cursor_last()
        if self.selected < 0 and len(self.session.iterations):
            self.selected = max(timeline.cursor, 0)
        self.show_selection(refresh=True)
        if self.loaded and self.mode != "replay":
            self.handler("backtrack", BacktrackHandler).trace_grew()
        self._refresh_bars()
        if not self.first_paint.is_set():
            self.call_after_refresh(self._announce_first_paint)

    def _announce_first_paint(self, waited: int = 0) -> None:
        """Set :attr:`first_paint` once the whole first screen is drawn: rows, bars and the key bar.

        The footer composes its keys after the screen's first refreshes (when the bindings are
        known), so rows can be on screen a frame or more before it. The loader waits on this event
        before its long haul, and the deferred views are mounted after it, so neither delays the
        first screen (issue 20; ``python -m bench.cold_start`` stamps it).
        """
        if self.first_paint.is_set() or not self.showing or (self._announcing and not waited):
            return
        self._announcing = True
        # The view of the selected iteration is built after the frame with the first rows: a full
        # screen has it too (drawn by the refresh after that).
        if (self.query_one(KeysFooter).children and self._view_drawn) or waited >= FOOTER_WAIT_TICKS:
            self.call_after_refresh(self._first_screen_drawn)
        else:
            self.set_timer(0.01, lambda: self._announce_first_paint(waited + 1))

    def _first_screen_drawn(self) -> None:
        self.first_paint.set()
        collector.resume()  # paused by `fpdebug view` over its start-up
        self._first_screen_up = True  # the bench's probe replaces first_paint.set: not its flag
        if self.loaded:
            self.call_after_refresh(self._mount_deferred_views)

    @on(LoadFinished)
    @while_showing
    def _load_finished(self) -> None:
        self.loaded = True
        # The model of a big trace is millions of long-lived objects: move them out of the
        # collector's view, or every full collection walks them all (hundreds of ms per jump).
        gc.freeze()
        self._trace_grew(TraceGrew())
        timeline = self.timeline
        if self.following and timeline.cursor <= 0:
            # Follow mode opens on the newest iteration (unless the user moved during the load);
            # on the end, the cursor then keeps following the rows that arrive.
            timeline.action_cursor_last()
            self.new_rows = 0
        if self.mode != "replay":
            self.loader.start_tail()
        # Once the first screen is up, build the views it left out, so a palette command or a key
        # finds them ready (a view needed before this is mounted on demand).
        if self._first_screen_up:
            self.call_after_refresh(self._mount_deferred_views)

    @while_showing
    def _mount_deferred_views(self) -> None:
        if not self.query_one(ContentSwitcher).is_attached:
            return  # the app quit before this callback ran: its widgets are being taken down
        for handler in self.handlers.values():
            handler.mount()

    @on(TraceChecked)
    @while_showing
    def _trace_checked(self) -> None:
        invalid = self.session.invalid_count
        if invalid != self._invalid_shown:
            self._invalid_shown = invalid
            # Rows that matched (or not) before these lines were known to be invalid may now not.
            for row_list in self._row_lists():
                row_filter = row_list.row_filter
                if row_filter is not None and "invalid" in (
                    *row_filter.query.kinds,
                    *row_filter.query.badges,
                ):
                    self.apply_filter(row_list, row_filter.query.text)
            self.timeline.refresh()
            self.show_selection(refresh=True)
        self._refresh_bars()

    @on(FilterGrew)
    @while_showing
    def _filter_grew(self, message: FilterGrew) -> None:
        for row_list in self._row_lists():
            row_filter = row_list.row_filter
            if (
                row_list.id == message.target
                and row_filter is not None
                and row_filter.generation == message.generation
            ):
                row_list.sync()
        self._refresh_bars()

    @while_showing
    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            collector.resume()  # no first screen may come now
            error = event.worker.error
            self.error = f"{type(error).__name__}: {error}"
            self.app.notify(
                self.error,
                title="fpdebug could not read the trace",
                severity="error",
                markup=False,
                timeout=8,
            )
            self._refresh_bars()

    # ------------------------------------------------------------------------------------------
    # Selection

    @on(RowList.Highlighted, "#timeline")
    @while_showing
    def _timeline_moved(self, message: RowList.Highlighted) -> None:
        if not message.is_current:
            return  # a later move's notice follows: only the newest may set the selection
        self.selected = message.row
        if self.timeline.at_end:
            self.new_rows = 0

    @on(RowList.Highlighted, "#events")
    @while_showing
    def _event_moved(self, message: RowList.Highlighted) -> None:
        if message.is_current:
            self.handler("events", EventsHandler).cursor_moved(message.row)

    @on(RowList.Highlighted, "#leases")
    @while_showing
    def _lease_moved(self, message: RowList.Highlighted) -> None:
        if message.is_current:
            self.handler("leases", LeasesHandler).cursor_moved(message.row)

    @on(RowList.Selected, "#leases")
    @while_showing
    def _lease_opened(self, message: RowList.Selected) -> None:
        self.handler("leases", LeasesHandler).opened(message.row)

    @on(RowList.Selected, "#timeline")
    @while_showing
    def _timeline_opened(self, message: RowList.Selected) -> None:
        self.view = "calls"

    @on(RowList.Selected, "#events")
    @while_showing
    def _event_opened(self, message: RowList.Selected) -> None:
        self.handler("events", EventsHandler).opened()

    @while_showing
    def watch_selected(self, row: int) -> None:
        timeline = self.timeline
        # A selection that came from the timeline is already under its cursor: only a selection
        # made elsewhere (events, a jump, a lease) moves the cursor, never back to an older row.
        if row >= 0 and timeline.cursor != row:
            timeline.move_to_row(row, center=True)
        self.show_selection()
        self._refresh_bars()

    @while_showing
    def watch_view(self, view: str) -> None:
        if self.zoom.zoomed:
            self.zoom.restore()  # the zoom was of a pane of the view left
        handler = self.handlers.get(view)
        if handler is not None:
            handler.mount()  # a deferred view's widget, the first time it is shown
        self.query_one(ContentSwitcher).current = f"view-{view}"
        if self.tabs_widget.active != f"tab-{view}":
            self.tabs_widget.active = f"tab-{view}"
        self.show_selection()
        focus = handler.focus if handler is not None else None
        if handler is not None and focus is not None and not self.has_class("-searching"):
            # Now, not after the queue (Widget.focus defers): a key typed right after the view's
            # key is already queued and must reach the new view, not the one it replaced. (A
            # deferred view shown before its widget was mounted takes the focus once it is.)
            selector: str = focus
            handler.when_ready(lambda: self.set_focus(self.query_one(selector)))
        self._refresh_bars()

    def show_selection(self, *, refresh: bool = False) -> None:
        """Bring the current view up to date with the selected iteration (after the first frame)."""
        if not self._first_frame:
            return  # the first frame shows the rows first; the view follows right after it
        handler = self.handlers.get(self.view)
        if handler is not None:
            handler.show(self.selected if self.selected >= 0 else None)

    def action_mark_diff(self) -> None:
        """Mark the selected iteration as A of the Diff view (again on the marked one clears the mark)."""
        if self.selected < 0:
            self.app.bell()
            return
        self.handler("diff", DiffHandler).toggle_mark(self.selected)
        if self.view == "diff":
            self.show_selection()

    def compare(self, a_row: int, b_row: int) -> None:
        """Show the Diff view of timeline rows ``a_row`` (A) and ``b_row`` (B, selected)."""
        self.handler("diff", DiffHandler).compare(a_row, b_row)

    def action_backtrack_call(self) -> None:
        """Backtrack the selected iteration's LLM call (its last one with a reply)."""
        if self.selected < 0:
            self.app.bell()
            return
        self.handler("backtrack", BacktrackHandler).backtrack(self.selected)

    @on(LinkDocument.JumpRequested)
    @while_showing
    def _jump_requested(self, message: LinkDocument.JumpRequested) -> None:
        self.jump_to(message.jump)

    def jump_to(self, jump: Jump) -> None:
        """Go to a link's target: select the iteration holding its line, or show the line in Events."""
        row = self.session.row_at_line(jump.line)
        if row is not None and jump.view != "events":
            self.select_row(row)
            self.view = jump.view
            if jump.anchor is not None:
                anchor = jump.anchor
                self.call_after_refresh(
                    self.reveal, f"#view-{jump.view}", lambda row: row.lstrip().startswith(anchor)
                )
            return
        self.handler("events", EventsHandler).go_to_line(jump.line)

    def select_row(self, row: int) -> None:
        """Select timeline row ``row`` (clearing the timeline filter if it hides the row)."""
        timeline = self.timeline
        if timeline.position_of(row) is None and timeline.row_filter is not None:
            self.clear_filter(timeline)
        self.selected = row

    # ------------------------------------------------------------------------------------------
    # Actions

    def action_show_view(self, view: str) -> None:
        """Show a view by id."""
        if any(spec.id == view for spec in self.VIEWS):
            self.view = view

    @on(Tabs.TabActivated)
    @while_showing
    def _tab_activated(self, event: Tabs.TabActivated) -> None:
        if event.tab is not None and event.tab.id and event.tab.id.startswith("tab-"):
            self.action_show_view(event.tab.id.removeprefix("tab-"))

    def action_step_iteration(self, delta: int) -> None:
        """Select the previous (``-1``) or next (``1``) iteration of the (filtered) timeline."""
        timeline = self.timeline
        if timeline.position_of(self.selected) is None and self.selected >= 0:
            timeline.move_to_row(self.selected)
        if timeline.position_of(timeline.cursor) is None:
            timeline.step(delta)
        elif not timeline.step(delta):
            self.app.bell()

    def focused_document(self) -> DocumentView | None:
        """The document ``/``, ``n``, ``N`` and ``escape`` search in: the focused one, or the one whose
        search prompt is open (``None``: they act on the view's list)."""
        if self.has_class("-searching") and isinstance(self._searching, DocumentView):
            return self._searching
        focused = self.focused
        return focused if isinstance(focused, DocumentView) else None

    async def action_search(self) -> None:
        """Open the search prompt: it searches the focused document, or filters the view's list."""
        target: DocumentView | RowList | None = self.focused_document() or self.current_list()
        if target is None:
            return
        if self.query_one_optional("#search-bar", SearchBar) is None:
            # Mounted on first use, not with the first screen (issue 22). Awaited: the keys typed
            # after `/` wait for it in the app's queue, then reach the prompt.
            await self.mount(SearchBar(id="search-bar"), before=self.query_one(TraceStatusBar))
        self._searching = target
        self.add_class("-searching")
        search = self.query_one("#search-input", Input)
        if isinstance(target, DocumentView):
            search.placeholder = DOCUMENT_SEARCH
            search.value = target.finder.query
        else:
            search.placeholder = LIST_FILTER
            search.value = self.filters.text_of(target)
        search.cursor_position = len(search.value)
        search.focus()

    @on(Input.Changed, "#search-input")
    def _search_changed(self, event: Input.Changed) -> None:
        target = self._searching if self.has_class("-searching") else None
        if isinstance(target, DocumentView):
            target.search(event.value)
            self._refresh_bars()
            return
        target = self.current_list()
        if target is not None:
            self.apply_filter(target, event.value)

    @on(Input.Submitted, "#search-input")
    def _search_submitted(self, event: Input.Submitted) -> None:
        self._close_search()

    @on(SearchBar.Closed)
    def _search_closed(self) -> None:
        self._close_search()

    def _close_search(self) -> None:
        searched = self._searching
        self.remove_class("-searching")
        target = searched if isinstance(searched, DocumentView) else self.current_list()
        if target is not None:
            target.focus()

    def apply_filter(self, target: RowList, text: str) -> None:
        """Filter ``target`` with the query ``text`` (an empty query shows every row)."""
        self.filters.apply(target, text)
        self._refresh_bars()

    def clear_filter(self, target: RowList) -> None:
        """Show every row of ``target`` again."""
        self.filters.clear(target)
        self._refresh_bars()

    def action_clear_filter(self) -> None:
        """End the focused document's search, or clear the current view's filter."""
        document = self.focused_document()
        if document is not None and document.finder.active:
            document.clear_search()
            self._refresh_bars()
            return
        target = self.current_list()
        if target is not None and target.row_filter is not None:
            self.clear_filter(target)

    def action_next_match(self) -> None:
        """Next row of the filter (wrapping)."""
        self._step_match(1)

    def action_previous_match(self) -> None:
        """Previous row of the filter (wrapping)."""
        self._step_match(-1)

    def _step_match(self, delta: int) -> None:
        document = self.focused_document()
        if document is not None and document.finder.active:
            if not document.step_match(delta):
                self.app.bell()
            self._refresh_bars()
            return
        target = self.current_list()
        if target is None or target.row_filter is None:
            self.app.notify("No filter: press / to search.", timeout=2)
            return
        if not target.step(delta, wrap=True):
            self.app.bell()

    def action_toggle_expand(self) -> None:
        """Expand or collapse the long contents of the current view."""
        view = self.query_one(f"#view-{self.view}")
        documents = [view] if isinstance(view, DocumentView) else list(view.query(DocumentView))
        if documents:
            expanded = not documents[0].expanded
            for document in documents:
                document.expanded = expanded

    @on(TraceReplaced)
    def _trace_replaced(self, message: TraceReplaced) -> None:
        self.replaced = True
        self.following = False
        reason = inert_line(message.reason)
        self.app.notify(f"The file was replaced: following stopped. {reason}", timeout=8, markup=False)
        self._refresh_bars()

    def reveal(self, selector: str, match: Callable[[str], bool]) -> None:
        """Scroll the document ``selector`` to its first row ``match`` accepts and highlight it."""
        for document in self.query(selector).results(DocumentView):
            document.reveal(match)

    def action_go_to(self, typed: str) -> None:
        """Open the ``:`` prompt (with ``typed`` in it) and go where it names."""
        self.app.push_screen(GoPrompt(typed), self._go_typed)

    def _go_typed(self, typed: str | None) -> None:
        if typed is None:
            return
        command = parametric_command(self, go_prompt_text(typed))
        if command is None:
            self.app.notify(
                f"Cannot go to {typed!r}: type call N, iter N, seq N or line N.", severity="warning"
            )
            return
        command.callback()

    def action_fork_pass(self) -> None:
        """Open the fork edit screen on the selected pass (:mod:`~fpdebug.tui.screens.fork_screen`)."""
        from fpdebug.tui.screens.fork_actions import open_fork

        open_fork(self)

    def action_ledger(self) -> None:
        """Open the Ledger view of the trace's folder."""
        from fpdebug.tui.screens.fork_actions import open_ledger

        open_ledger(self)

    def action_badge_reason(self) -> None:
        """Scroll the pass inspector to the row explaining the selected iteration's next badge."""
        self.badge_reasons.next()

    def action_toggle_zoom(self) -> None:
        """Let the focused pane take the whole screen, or give the other panes back."""
        self.zoom.toggle()
        self._refresh_bars()

    @on(IterationTimeline.ContentGrew)
    @while_showing
    def _timeline_grew(self) -> None:
        self._refresh_bars()

    def action_toggle_follow(self) -> None:
        """Turn follow mode on or off."""
        if self.replaced:
            self.app.notify("The file was replaced: open it again to follow the new one.", timeout=3)
            return
        if self.mode == "replay":
            self.app.notify("This trace is a saved file: open it with --follow to follow it.", timeout=3)
            return
        self.following = not self.following
        if self.following:
            self.timeline.action_cursor_last()
        self._refresh_bars()

    # ------------------------------------------------------------------------------------------
    # Bars

    @property
    def showing(self) -> bool:
        """Whether the screen's widgets are up (not before mount, nor while the app tears it down).

        Worker threads post messages that can arrive after the app began exiting; the screen is
        still mounted then but its children are gone, so handlers check this before they query.
        """
        mounted = self.is_mounted or self._mounting
        return mounted and self.query_one_optional("#timeline", IterationTimeline) is not None

    def _refresh_bars(self) -> None:
        if not self.showing:
            return
        session = self.session
        palette = self.timeline.palette
        run = None
        if 0 <= self.selected < len(session.iterations):
            run = session.run_of(session.iterations[self.selected])
        elif session.model.runs:
            run = session.model.runs[-1]
        state = self.run_header_state(palette) if run is not None else None
        header = self.query_one(RunHeader)
        live = self.mode != "replay"
        width = header.content_size.width or None
        header.show(header_text(session, run, self.source_name, palette, live=live, state=state, width=width))
        if fit_timeline(self):
            self.call_after_refresh(self._refresh_bars)  # the header and legend follow the new width
        timeline_cells = self.timeline.scrollable_content_region.width or 80
        self.query_one("#timeline-header", TextBar).show(
            timeline_header(timeline_cells, label=session.label_width)
        )
        legend = self.query_one("#passes-legend", TextBar)
        room = legend.content_size.width or None
        seen = self.timeline.seen_badges
        legend.show(timeline_legend(timeline_cells, session.label_width, seen, palette, room=room))
        self.query_one(TraceStatusBar).show_status(self, palette)

    @while_showing
    def on_resize(self) -> None:
        self._refresh_bars()
        if self.view == "leases":
            self.show_selection()

    def run_header_state(self, palette: Palette) -> Text | None:
        """What the header says of a run without ``run_end`` (``None``: ``● running`` when followed).

        Drive mode says what its gate knows: paused, stopped on a breakpoint, being stopped.
        """
        return None

    def run_state_text(self, palette: Palette) -> Text:
        """How the (last) run stands, for the end of the status line (drive mode shows its gate)."""
        text = Text(no_wrap=True, end="")
        session = self.session
        run = session.model.runs[-1] if session.model.runs else None
        if self.mode != "replay" and run is not None:
            if run.ended:
                text.append(
                    f"  run ended: {run.status}", palette.good if run.status == "completed" else palette.bad
                )
            else:
                text.append(f"  {session.writer.state().status_words()}", palette.warn)
        elif self.loaded and run is not None and not run.ended:
            text.append("  no run_end: the run was cut short or is still writing", palette.warn)
        return text

    @while_showing
    def watch_new_rows(self) -> None:
        self._refresh_bars()

    @while_showing
    def watch_following(self) -> None:
        self._refresh_bars()
