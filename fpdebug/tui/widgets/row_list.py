"""RowList: a virtualised, filterable, keyboard-driven list (the Line API; one row rendered per screen line).

Subclasses say how many rows their data has (:meth:`RowList.total_rows`), what identifies a row's
current content (:meth:`RowList.row_version`) and how a row looks (:meth:`RowList.render_row`). The
list renders only the rows on screen and keeps an LRU cache of rendered strips, so a million rows
scroll like ten.

A *filter* hides rows: it is a sorted array of the matching row numbers, filled by a worker (see
:class:`RowFilter`); the list shows the matches found so far and grows as the worker finds more.
The cursor is a *row number* (stable under filtering), not a screen position.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.strip import Strip

from fpdebug.tui.text import plain
from fpdebug.tui.widgets.line_view import LineView, palette_classes
from fpdebug.views.query import Query

__all__ = ["RowFilter", "RowList"]


@dataclass
class RowFilter:
    """The rows a query keeps, found so far (a worker appends; the UI thread reads)."""

    query: Query
    """What is being searched for."""
    generation: int
    """Identifies this filter (a newer one supersedes it)."""
    rows: array[int] = field(default_factory=lambda: array("q"))
    """Matching row numbers, ascending."""
    scanned: int = 0
    """Rows ``[0, scanned)`` have been tested."""
    done: bool = False
    """Every row that existed when the worker last looked has been tested."""


class _RowMessage(Message):
    """Something happened to one row of a list."""

    def __init__(self, row_list: RowList, row: int) -> None:
        self.row_list = row_list
        """The list."""
        self.row = row
        """The row."""
        super().__init__()

    @property
    def control(self) -> RowList:
        """The list (so handlers can use ``@on(RowList.Highlighted, "#id")``)."""
        return self.row_list


class RowList(LineView, can_focus=True):
    """A virtualised list of rows with a cursor and an optional filter."""

    DEFAULT_CSS = """
    RowList {
        overflow-x: hidden;
        overflow-y: auto;
        & > .row-list--cursor { background: $block-cursor-blurred-background; }
        &:focus > .row-list--cursor {
            background: $block-cursor-background;
            color: $block-cursor-foreground;
            text-style: bold;
        }
        & > .row-list--heading { text-style: bold; }
        & > .row-list--dim { color: $text-muted; }
        & > .row-list--accent { color: $text-accent; }
        & > .row-list--good { color: $text-success; }
        & > .row-list--bad { color: $text-error; }
        & > .row-list--warn { color: $text-warning; }
        & > .row-list--match { background: $warning 40%; }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "row-list--cursor",
        "row-list--heading",
        "row-list--dim",
        "row-list--accent",
        "row-list--good",
        "row-list--bad",
        "row-list--warn",
        "row-list--match",
    }

    PALETTE_CLASSES: ClassVar[dict[str, str]] = palette_classes("row-list", key="row-list--heading")

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "j,down",
            "cursor_down",
            "Down",
            show=False,
            id="cursor-down",
            tooltip="Move the cursor one row down.",
        ),
        Binding("k,up", "cursor_up", "Up", show=False, id="cursor-up", tooltip="Move the cursor one row up."),
        Binding(
            "g,home", "cursor_first", "First", show=False, id="cursor-first", tooltip="Jump to the first row."
        ),
        Binding(
            "G,end",
            "cursor_last",
            "Last",
            show=False,
            id="cursor-last",
            tooltip="Jump to the last row (and catch up with new rows while following).",
        ),
        Binding(
            "pagedown,ctrl+d",
            "page_down",
            "Page down",
            show=False,
            id="page-down",
            tooltip="Move the cursor one screen down.",
        ),
        Binding(
            "pageup,ctrl+u",
            "page_up",
            "Page up",
            show=False,
            id="page-up",
            tooltip="Move the cursor one screen up.",
        ),
        Binding(
            "enter",
            "select",
            "Open",
            show=False,
            id="select",
            tooltip="Open the row: an iteration its call, a lease the pass that pruned it, a line its detail.",
        ),
    ]

    CACHE_SIZE = 1024
    """Rendered rows kept (about twenty screens)."""

    cursor: reactive[int] = reactive(-1, repaint=False, init=False)
    """The row under the cursor (a row number, ``-1`` when the list is empty)."""

    class Highlighted(_RowMessage):
        """The cursor moved to another row (``row`` is the row it moved to)."""

        @property
        def is_current(self) -> bool:
            """Whether ``row`` is still under the cursor.

            The message is handled after the move that posted it, so moves made in between
            (fast keys, a screen moving the cursor back) have made it stale. A handler that acts
            on a stale one moves things to an old row, whose own notice can then undo the newer
            move, and two notices in flight bounce for ever.
            """
            return self.row_list.cursor == self.row

    class Selected(_RowMessage):
        """The user opened a row (``enter`` or a double click)."""

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._cache: LRUCache[Hashable, Strip] = LRUCache(self.CACHE_SIZE)
        self._total = 0
        self._filter: RowFilter | None = None
        self._shown_filter_rows = 0
        self._pending_scroll: bool | None = None

    # ------------------------------------------------------------------------------------------
    # What subclasses provide

    def total_rows(self) -> int:
        """How many rows the data has now (read on the UI thread)."""
        return 0

    def row_version(self, row: int) -> Hashable:
        """Anything that changes when the row's content changes (part of the cache key)."""
        return None

    def render_row(self, row: int, width: int) -> Text:
        """One row as a single-line Text built from plain strings."""
        return Text(str(row))

    # ------------------------------------------------------------------------------------------
    # Data and filter

    @property
    def row_filter(self) -> RowFilter | None:
        """The active filter, if any."""
        return self._filter

    @property
    def total(self) -> int:
        """How many rows the data had at the last :meth:`sync`."""
        return self._total

    @property
    def visible_count(self) -> int:
        """How many rows are shown (all rows, or the matches found so far)."""
        return self._shown_filter_rows if self._filter is not None else self._total

    @property
    def at_end(self) -> bool:
        """The cursor is on the last shown row (or the list is empty)."""
        count = self.visible_count
        return count == 0 or self.position_of(self.cursor) == count - 1

    def row_at(self, position: int) -> int:
        """The row shown at a screen position (0-based over the shown rows)."""
        return self._filter.rows[position] if self._filter is not None else position

    def position_of(self, row: int) -> int | None:
        """Where a row is shown, or ``None`` when it is hidden or out of range."""
        if row < 0:
            return None
        if self._filter is None:
            return row if row < self._total else None
        rows = self._filter.rows
        position = bisect_left(rows, row, 0, self._shown_filter_rows)
        return position if position < self._shown_filter_rows and rows[position] == row else None

    def sync(self) -> None:
        """Take in rows (or filter matches) that appeared since the last call, and repaint."""
        self._total = self.total_rows()
        if self._filter is not None:
            self._shown_filter_rows = len(self._filter.rows)
        self.virtual_size = Size(0, self.visible_count)
        if self.position_of(self.cursor) is None and self.visible_count:
            self._move_to_position(self._nearest_position(self.cursor))
        elif not self.visible_count and self.cursor != -1:
            self.cursor = -1
        self.refresh()

    def set_filter(self, row_filter: RowFilter | None) -> None:
        """Show only the rows of ``row_filter`` (``None`` shows every row again)."""
        self._filter = row_filter
        self._shown_filter_rows = 0
        self._cache.clear()
        self.sync()
        if self.cursor >= 0 and self.position_of(self.cursor) is not None:
            self._scroll_to_cursor(center=True)

    def invalidate(self) -> None:
        """Forget every rendered row (the data changed in a way versions do not show)."""
        self._cache.clear()
        self.refresh()

    # ------------------------------------------------------------------------------------------
    # Cursor movement

    def move_to_row(self, row: int, *, center: bool = False) -> bool:
        """Put the cursor on ``row`` if it is shown; return whether it is."""
        if self.position_of(row) is None:
            return False
        self.cursor = row
        self._scroll_to_cursor(center=center)
        return True

    def _nearest_position(self, row: int) -> int:
        if self._filter is None:
            return min(max(row, 0), self._total - 1)
        position = bisect_left(self._filter.rows, row, 0, self._shown_filter_rows)
        return min(position, self._shown_filter_rows - 1)

    def _move_to_position(self, position: int) -> None:
        count = self.visible_count
        if not count:
            return
        position = min(max(position, 0), count - 1)
        self.cursor = self.row_at(position)
        self._scroll_to_cursor()

    def _move_by(self, delta: int) -> None:
        position = self.position_of(self.cursor)
        if position is None:
            self._move_to_position(0 if delta > 0 else self.visible_count - 1)
        else:
            self._move_to_position(position + delta)

    def _scroll_to_cursor(self, *, center: bool = False) -> None:
        position = self.position_of(self.cursor)
        if position is None:
            return
        if self.scrollable_content_region.height <= 0:
            # Not laid out yet (a hidden view): scroll once it has a size.
            self._pending_scroll = center
            return
        self.scroll_to_region(Region(0, position, 1, 1), animate=False, center=center, immediate=True)

    def on_resize(self) -> None:
        if self._pending_scroll is not None:
            center, self._pending_scroll = self._pending_scroll, None
            self._scroll_to_cursor(center=center)

    def step(self, delta: int, *, wrap: bool = False) -> bool:
        """Move the cursor ``delta`` shown rows; return whether it moved."""
        count = self.visible_count
        if not count:
            return False
        position = self.position_of(self.cursor)
        if position is None:
            target = 0 if delta > 0 else count - 1
        else:
            target = position + delta
            if wrap:
                target %= count
            elif not 0 <= target < count:
                return False
        self._move_to_position(target)
        return True

    def action_cursor_down(self) -> None:
        """Move down one row."""
        self._move_by(1)

    def action_cursor_up(self) -> None:
        """Move up one row."""
        self._move_by(-1)

    def action_cursor_first(self) -> None:
        """Jump to the first row."""
        self._move_to_position(0)

    def action_cursor_last(self) -> None:
        """Jump to the last row."""
        self._move_to_position(self.visible_count - 1)

    def action_page_down(self) -> None:
        """One screen down."""
        self._move_by(max(self.scrollable_content_region.height - 1, 1))

    def action_page_up(self) -> None:
        """One screen up."""
        self._move_by(-max(self.scrollable_content_region.height - 1, 1))

    def action_select(self) -> None:
        """Open the row under the cursor."""
        if self.position_of(self.cursor) is not None:
            self.post_message(self.Selected(self, self.cursor))

    def watch_cursor(self, old: int, new: int) -> None:
        for row in (old, new):
            position = self.position_of(row)
            if position is not None:
                self.refresh_line(position)  # content coordinates (STYLE gotcha 2)
        if new >= 0:
            self.post_message(self.Highlighted(self, new))

    async def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        position = int(self.scroll_offset.y) + offset.y
        if 0 <= position < self.visible_count:
            row = self.row_at(position)
            if event.chain >= 2 and row == self.cursor:
                self.post_message(self.Selected(self, row))
            self.cursor = row
            self.focus()

    def on_focus(self, event: events.Focus) -> None:
        self.invalidate()

    def on_blur(self, event: events.Blur) -> None:
        self.invalidate()

    # ------------------------------------------------------------------------------------------
    # Rendering

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()

    def render_line(self, y: int) -> Strip:
        position = int(self.scroll_offset.y) + y
        width = self.scrollable_content_region.width
        if position >= self.visible_count or width <= 0:
            return Strip.blank(width, self.base_style())
        row = self.row_at(position)
        selected = row == self.cursor
        query = self._filter.query if self._filter is not None else None
        key = (row, self.row_version(row), selected, selected and self.has_focus, width, query)
        strip = self._cache.get(key)
        if strip is None:
            strip = self._cache[key] = self._render_strip(row, width, selected=selected, query=query)
        return strip

    def _render_strip(self, row: int, width: int, *, selected: bool, query: Query | None) -> Strip:
        try:
            text = self.render_row(row, width)
        except Exception as error:
            message = f"⚠ row {row} could not be shown: {type(error).__name__}: {error}"
            text = plain(message, self.palette.bad)
        if query is not None and query.words:
            text.highlight_words(query.words, self.palette.match, case_sensitive=False)
        style: Style = self.base_style()
        if selected:
            style = style + self.get_component_rich_style("row-list--cursor", partial=True)
        return self.text_strip(text, width).apply_style(style)
