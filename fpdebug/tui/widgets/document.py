"""DocumentView: a scrollable, virtualised document made of blocks (headings, facts, untrusted contents).

A document is a list of :class:`Block`. A :class:`TextBlock` is a short Rich ``Text`` built by fpdebug
(labels, ids through :func:`~fpdebug.tui.text.plain`) and wrapped at the view's width. A
:class:`ContentBlock` holds one untrusted string (a prompt, a reply, a tool result) of any size: it
is made inert, wrapped by slicing, and *collapsed* to its first rows when long; ``e`` expands every
collapsed block of the view. Only the rows on screen are rendered, so a 5 MB result costs one
screen of work.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from array import array
from bisect import bisect_right
from collections.abc import Callable, Hashable
from typing import ClassVar

from rich.cells import cell_len, chop_cells
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Size
from textual.reactive import reactive
from textual.strip import Strip

from fpdebug.trace.inert import inert
from fpdebug.tui.text import Palette, human_bytes, number, plain
from fpdebug.tui.widgets.doc_search import DocumentFinder, Match
from fpdebug.tui.widgets.line_view import LineView, palette_classes

__all__ = [
    "Block",
    "ColumnsBlock",
    "ContentBlock",
    "DocBuilder",
    "DocumentView",
    "TextBlock",
    "blank",
    "error_block",
]

COLLAPSED_ROWS = 8
"""Rows a long content shows while collapsed."""

_COLLAPSED_CHARS = 4096  # characters made inert for a collapsed preview (enough for 8 rows)


class Block(ABC):
    """A piece of a document: some rows at a given width."""

    collapsible = False
    """Whether ``e`` changes this block."""

    @abstractmethod
    def height(self, console: Console, width: int, expanded: bool) -> int:
        """How many rows the block takes."""

    @abstractmethod
    def row(self, console: Console, width: int, expanded: bool, y: int) -> Text:
        """Row ``y`` of the block, as one line of Text."""


class TextBlock(Block):
    """A short Text (built from plain strings), wrapped at the width, with an optional indent.

    Args:
        text: The text.
        indent: Spaces before every row.
        hang: Extra spaces before every row after the first (a hanging indent).
    """

    def __init__(self, text: Text, *, indent: int = 0, hang: int = 0) -> None:
        self.text = text
        """The text."""
        self.indent = indent
        """Spaces before every row."""
        self.hang = hang
        """Extra spaces before continuation rows."""
        self._lines: tuple[int, list[Text]] | None = None

    def _layout(self, console: Console, width: int) -> list[Text]:
        if self._lines is None or self._lines[0] != width:
            first = max(width - self.indent, 8)
            lines = list(self.text.wrap(console, first, overflow="fold", no_wrap=False)) or [Text("")]
            hang = self._hang(width)
            if len(lines) > 1 and hang:
                # Re-wrap what follows the first row at the narrower, hanging width.
                rest = self.text[len(lines[0].plain) :]
                rest = rest[len(rest.plain) - len(rest.plain.lstrip(" ")) :]
                narrow = max(width - self.indent - hang, 8)
                lines = [lines[0], *(rest.wrap(console, narrow, overflow="fold", no_wrap=False) or [])]
            self._lines = (width, lines)
        return self._lines[1]

    def _hang(self, width: int) -> int:
        # A narrow view keeps at least 24 columns for the continuation rows.
        return max(min(self.hang, width - self.indent - 24), 0)

    def height(self, console: Console, width: int, expanded: bool) -> int:
        return len(self._layout(console, width))

    def row(self, console: Console, width: int, expanded: bool, y: int) -> Text:
        line = self._layout(console, width)[y]
        pad = self.indent + (self._hang(width) if y else 0)
        return Text(" " * pad, end="") + line if pad else line


class ColumnsBlock(TextBlock):
    """Fixed columns, then a free text that continues the row while it has room, else goes under it.

    A table row whose last column is prose (why an injection rode) wraps that prose in what is left
    of the row; on a narrow view that is a few cells, and a sentence becomes a column of words. Below
    ``room`` cells the prose starts on the next row instead, indented under the columns.

    Args:
        head: The columns (one row, padded to their widths).
        tail: The prose.
        indent: Spaces before every row.
        under: Spaces (after ``indent``) before the prose when it goes under the columns.
        room: The fewest cells the prose needs beside the columns.
    """

    def __init__(self, head: Text, tail: Text, *, indent: int = 0, under: int = 4, room: int = 44) -> None:
        super().__init__(Text(end="").append_text(head).append_text(tail), indent=indent, hang=head.cell_len)
        self.head = head
        """The columns."""
        self.tail = tail
        """The prose."""
        self.under = under
        self.room = room
        self._blocks: tuple[int, list[TextBlock]] | None = None

    def _parts(self, width: int) -> list[TextBlock]:
        if self._blocks is None or self._blocks[0] != width:
            if width - self.indent - self.head.cell_len >= self.room:
                blocks = [TextBlock(self.text, indent=self.indent, hang=self.head.cell_len)]
            else:
                head = self.head.copy()
                head.rstrip()
                blocks = [
                    TextBlock(head, indent=self.indent, hang=self.under),
                    TextBlock(self.tail, indent=self.indent + self.under),
                ]
            self._blocks = (width, blocks)
        return self._blocks[1]

    def height(self, console: Console, width: int, expanded: bool) -> int:
        return sum(block.height(console, width, expanded) for block in self._parts(width))

    def row(self, console: Console, width: int, expanded: bool, y: int) -> Text:
        for block in self._parts(width):
            rows = block.height(console, width, expanded)
            if y < rows:
                return block.row(console, width, expanded, y)
            y -= rows
        return Text("", end="")


class ContentBlock(Block):
    """One untrusted string of any size: inert, wrapped by slicing, collapsed when long.

    Args:
        content: The string as recorded.
        style: Its style.
        indent: Spaces before every row.
        collapsed_rows: Rows shown while collapsed.
    """

    collapsible = True

    def __init__(
        self,
        content: str,
        *,
        style: Style | str = "",
        indent: int = 2,
        collapsed_rows: int = COLLAPSED_ROWS,
        note_style: Style | str = "",
    ) -> None:
        self.content = content
        """The raw string."""
        self.style = style
        """Its style."""
        self.note_style = note_style
        """The style of the "more" row."""
        self.indent = indent
        """Spaces before every row."""
        self.collapsed_rows = collapsed_rows
        """Rows shown while collapsed."""
        self._inert: dict[bool, str] = {}
        self._spans: dict[tuple[int, bool], array[int]] = {}

    def _text(self, expanded: bool) -> str:
        full = expanded or len(self.content) <= _COLLAPSED_CHARS
        text = self._inert.get(full)
        if text is None:
            text = self._inert[full] = inert(self.content if full else self.content[:_COLLAPSED_CHARS])
        return text

    def _layout(self, width: int, expanded: bool) -> array[int]:
        """Row spans as a flat array ``[start0, end0, start1, end1, …]`` into :meth:`_text`."""
        key = (width, expanded)
        spans = self._spans.get(key)
        if spans is None:
            limit = None if expanded else self.collapsed_rows + 1
            spans = self._spans[key] = _wrap(self._text(expanded), max(width - self.indent, 8), limit)
        return spans

    def _more(self, width: int) -> bool:
        spans = self._layout(width, False)
        return len(spans) // 2 > self.collapsed_rows or len(self.content) > _COLLAPSED_CHARS

    def height(self, console: Console, width: int, expanded: bool) -> int:
        if expanded:
            return max(len(self._layout(width, True)) // 2, 1)
        rows = min(len(self._layout(width, False)) // 2, self.collapsed_rows)
        return max(rows, 1) + (1 if self._more(width) else 0)

    def row(self, console: Console, width: int, expanded: bool, y: int) -> Text:
        spans = self._layout(width, expanded)
        pad = " " * self.indent
        shown_rows = min(len(spans) // 2, self.collapsed_rows)
        if not expanded and y >= shown_rows and self._more(width):
            shown = spans[2 * shown_rows - 1] if shown_rows else 0
            hidden = max(len(self.content) - shown, 0)
            size = human_bytes(len(self.content.encode("utf-8", "replace")))
            note = f"⋯ {number(hidden)} more characters ({size} "
            note += "in all) · press e to expand"
            return Text(pad + note, style=self.note_style, end="")
        if not spans:
            return Text(pad, end="")
        text = self._text(expanded)
        return Text(pad + text[spans[2 * y] : spans[2 * y + 1]], style=self.style, end="")


def _wrap(text: str, width: int, limit: int | None) -> array[int]:
    """Spans of rows of at most ``width`` cells; stops after ``limit`` rows when given."""
    spans: array[int] = array("q")
    start = 0
    length = len(text)
    while start <= length:
        end = text.find("\n", start)
        if end < 0:
            end = length
        _wrap_line(text, start, end, width, spans, limit)
        if limit is not None and len(spans) // 2 >= limit:
            break
        start = end + 1
    return spans


def _wrap_line(text: str, start: int, end: int, width: int, spans: array[int], limit: int | None) -> None:
    """Rows of ``text[start:end]`` (one line, no newline), broken after the last space that fits.

    A word is cut only when it is longer than a whole row: a prompt reads as prose, and a word
    split over two rows (``re`` / ``-engage``) reads as two words.
    """
    if start == end:
        spans.extend((start, start))
        return
    ascii_only = text[start:end].isascii()
    position = start
    while position < end:
        piece = text[position : min(position + width, end)]
        if not ascii_only and cell_len(piece) > width:
            piece = chop_cells(piece, width)[0]
        cut = following = position + len(piece)
        if cut < end and text[cut] == " ":
            following = cut + 1  # the row ends on a word: the space between is not drawn
        elif cut < end and (space := piece.rfind(" ")) > 0:
            cut = following = position + space + 1
        spans.extend((position, cut))
        position = following
        if limit is not None and len(spans) // 2 >= limit:
            return


def blank() -> TextBlock:
    """An empty row."""
    return TextBlock(Text(""))


def error_block(what: str, error: BaseException, palette: Palette) -> TextBlock:
    """A row saying that part of a view could not be shown (never a crash)."""
    return TextBlock(plain(f"⚠ {what} could not be shown: {type(error).__name__}: {error}", palette.bad))


Part = Text | str | tuple[object, Style | str]
"""A piece of a line: our own text (``str``), a built Text, or ``(untrusted value, style)``."""


class DocBuilder:
    """Builds a document line by line; untrusted values go in as ``(value, style)`` pairs.

    Args:
        palette: The semantic styles.
    """

    def __init__(self, palette: Palette) -> None:
        self.palette = palette
        """The semantic styles."""
        self.blocks: list[Block] = []
        """What was built."""

    @staticmethod
    def compose(*parts: Part) -> Text:
        """One Text from parts: ``str`` is fpdebug's own wording, ``(value, style)`` is trace text."""
        text = Text(end="")
        for part in parts:
            if isinstance(part, Text):
                text.append_text(part)
            elif isinstance(part, tuple):
                value, style = part
                text.append_text(plain(value, style))
            else:
                text.append(part)
        return text

    def line(self, *parts: Part, indent: int = 0, hang: int = 0) -> DocBuilder:
        """Add one (wrapped) line; ``hang`` indents its continuation rows further."""
        self.blocks.append(TextBlock(self.compose(*parts), indent=indent, hang=hang))
        return self

    def heading(self, title: str, *detail: Part) -> DocBuilder:
        """Add a section title (preceded by a blank row unless it is the first block)."""
        if self.blocks:
            self.blocks.append(blank())
        self.blocks.append(TextBlock(self.compose(Text(title, style=self.palette.heading), *detail)))
        return self

    def columns(self, head: list[Part], tail: list[Part], *, indent: int = 0, under: int = 4) -> DocBuilder:
        """Add a row of fixed columns ending in prose (:class:`ColumnsBlock`)."""
        self.blocks.append(ColumnsBlock(self.compose(*head), self.compose(*tail), indent=indent, under=under))
        return self

    def fact(self, key: str, *value: Part, indent: int = 2, width: int = 12) -> DocBuilder:
        """Add a ``key  value`` line (continuation rows align under the value)."""
        return self.line(
            Text(f"{key:<{width}} ", style=self.palette.key), *value, indent=indent, hang=width + 1
        )

    def content(
        self, value: str, *, indent: int = 4, rows: int = COLLAPSED_ROWS, style: Style | str = ""
    ) -> DocBuilder:
        """Add an untrusted multi-line string (collapsed when long)."""
        if value == "":
            return self.line(Text("(empty)", style=self.palette.dim), indent=indent)
        self.blocks.append(
            ContentBlock(value, indent=indent, collapsed_rows=rows, style=style, note_style=self.palette.dim)
        )
        return self

    def error(self, what: str, error: BaseException) -> DocBuilder:
        """Add a row saying that a part could not be shown."""
        self.blocks.append(error_block(what, error, self.palette))
        return self


class DocumentView(LineView, can_focus=True):
    """A scrollable document of blocks; subclasses build the blocks in :meth:`build`."""

    DEFAULT_CSS = """
    DocumentView {
        overflow-x: hidden;
        overflow-y: auto;
        padding: 0 1;
        & > .document--heading { text-style: bold; color: $text-primary; }
        & > .document--key { text-style: bold; }
        & > .document--dim { color: $text-muted; }
        & > .document--accent { color: $text-accent; text-style: bold; }
        & > .document--good { color: $text-success; }
        & > .document--bad { color: $text-error; }
        & > .document--warn { color: $text-warning; }
        & > .document--match { background: $warning 40%; }
        & > .document--found { background: $warning 40%; }
        & > .document--found-current { background: $warning; color: $background; text-style: bold; }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "document--heading",
        "document--key",
        "document--dim",
        "document--accent",
        "document--good",
        "document--bad",
        "document--warn",
        "document--match",
        "document--found",
        "document--found-current",
    }

    PALETTE_CLASSES: ClassVar[dict[str, str]] = palette_classes("document")

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "j,down",
            "scroll_down",
            "Down",
            show=False,
            id="scroll-down",
            tooltip="Scroll the document one row down.",
        ),
        Binding(
            "k,up", "scroll_up", "Up", show=False, id="scroll-up", tooltip="Scroll the document one row up."
        ),
        Binding(
            "g,home",
            "scroll_home",
            "Top",
            show=False,
            id="scroll-top",
            tooltip="Scroll to the top of the document.",
        ),
        Binding(
            "G,end",
            "scroll_end",
            "Bottom",
            show=False,
            id="scroll-bottom",
            tooltip="Scroll to the bottom of the document.",
        ),
        Binding(
            "pagedown,ctrl+d",
            "page_down",
            "Page down",
            show=False,
            id="scroll-page-down",
            tooltip="Scroll the document one screen down (as ctrl+d moves a list's cursor).",
        ),
        Binding(
            "pageup,ctrl+u",
            "page_up",
            "Page up",
            show=False,
            id="scroll-page-up",
            tooltip="Scroll the document one screen up (as ctrl+u moves a list's cursor).",
        ),
        Binding(
            "e",
            "toggle_expand",
            "Expand",
            id="expand",
            tooltip="Expand (or collapse again) every long content of this view.",
        ),
    ]

    expanded: reactive[bool] = reactive(False, init=False)
    """Whether long contents are shown in full."""

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.blocks: list[Block] = []
        """The document."""
        self._generation = 0
        self._layout_key: tuple[int, int, bool] | None = None
        self._offsets: array[int] = array("q", [0])
        self._cache: LRUCache[Hashable, Strip] = LRUCache(512)
        self._revealed: tuple[int, int, int] | None = None  # (generation, first block, end block)
        self.finder = DocumentFinder()
        """The ``/`` search of this document."""

    def build(self) -> list[Block]:
        """The blocks of the document (subclasses override; called by :meth:`rebuild`)."""
        return list(self.blocks)

    def rebuild(self, *, keep_scroll: bool = False) -> None:
        """Build the blocks again (the data or the theme changed)."""
        try:
            blocks = self.build()
        except Exception as error:
            blocks = [error_block("this view", error, self.palette)]
        self.set_blocks(blocks, keep_scroll=keep_scroll)

    def set_blocks(self, blocks: list[Block], *, keep_scroll: bool = False) -> None:
        """Show ``blocks``."""
        self.blocks = blocks
        self._generation += 1
        self._layout_key = None
        self._cache.clear()
        self._relayout()
        if not keep_scroll:
            self.scroll_to(0, 0, animate=False, immediate=True)
        self.refresh()

    @property
    def document_height(self) -> int:
        """Rows of the whole document at the current width."""
        self._relayout()
        return self._offsets[-1]

    def text_lines(self) -> list[str]:
        """The document's rows as plain text at the current width (for tests and copying)."""
        width = self._width()
        self._relayout()
        return [self._row_text(position, width).plain for position in range(self._offsets[-1])]

    def _width(self) -> int:
        width = self.scrollable_content_region.width
        return width if width > 0 else 80

    def _relayout(self) -> None:
        width = self._width()
        key = (self._generation, width, self.expanded)
        if key == self._layout_key:
            return
        console = self.app.console
        offsets = array("q", [0])
        total = 0
        for block in self.blocks:
            try:
                total += block.height(console, width, self.expanded)
            except Exception:
                total += 1
            offsets.append(total)
        self._offsets = offsets
        self._layout_key = key
        self._set_document_height(total)

    def _set_document_height(self, total: int) -> None:
        """Make the scroll range ``total`` rows, without a layout of the screen when none is needed.

        ``virtual_size`` is a layout reactive: assigning it reflows the whole screen and paints it
        a second time, a frame after the new document was first shown. The view's box never depends
        on its content, so unless the scrollbar comes or goes (which changes the width the rows
        wrap at), the size is set quietly and only the scrollbar is told.
        """
        size = Size(0, total)
        if size == self.virtual_size:
            return
        overflow = self.styles.overflow_y
        height = self.container_size.height
        wants_bar = overflow == "scroll" or (overflow == "auto" and total > height)
        if not self.is_mounted or height <= 0 or wants_bar != self.show_vertical_scrollbar:
            self.virtual_size = size
            return
        self.set_reactive(DocumentView.virtual_size, size)
        if wants_bar:
            bar = self.vertical_scrollbar
            bar.window_virtual_size = total
            bar.window_size = height - self.scrollbar_size_horizontal
        if self.scroll_y > self.max_scroll_y:
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True)

    def on_resize(self) -> None:
        self._relayout()

    def reveal(self, match: Callable[[str], bool]) -> bool:
        """Scroll the first row whose text ``match`` accepts to the top and highlight it.

        The highlight covers that row's block and the content right under it (a segment's label
        and its text); it lasts until the document is built again. Returns whether a row matched.
        """
        for index, block in enumerate(self.blocks):
            if isinstance(block, TextBlock) and match(block.text.plain):
                end = index + 1
                if end < len(self.blocks) and isinstance(self.blocks[end], ContentBlock):
                    end += 1
                self._relayout()
                self._revealed = (self._generation, index, end)
                self.scroll_to(0, self._offsets[index], animate=False, immediate=True)
                self.refresh()
                return True
        return False

    def _revealed_rows(self) -> tuple[int, int] | None:
        revealed = self._revealed
        if revealed is None or revealed[0] != self._generation:
            return None
        return self._offsets[revealed[1]], self._offsets[revealed[2]]

    # ------------------------------------------------------------------------------------------
    # Search (/, n, N: the trace screen and the help route them here when a document has the focus)

    def _found(self) -> list[Match]:
        self._relayout()
        return self.finder.matches(self._layout_key, self.text_lines)

    def search(self, query: str) -> int:
        """Search ``query``: highlight every match and go to the first at or below the top; the count."""
        self.finder.set_query(query)
        found = self._found()
        self.finder.current = self.finder.first_from(int(self.scroll_offset.y))
        if found:
            self._show_match()
        self._cache.clear()
        self.refresh()
        return len(found)

    def step_match(self, delta: int) -> bool:
        """Go to the next (``1``) or previous (``-1``) match, wrapping; whether there is one."""
        if not self._found():
            return False
        self.finder.step(delta)
        self._show_match()
        self.refresh()
        return True

    def clear_search(self) -> None:
        """End the search (no highlight)."""
        self.finder.set_query("")
        self.refresh()

    def search_status(self) -> tuple[str, int, int]:
        """The query, the matches (at this width) and the 1-based place of the current one (0: none)."""
        found = self._found() if self.finder.active else []
        return self.finder.query, len(found), self.finder.current + 1 if found else 0

    def _show_match(self) -> None:
        found = self._found()
        if not 0 <= self.finder.current < len(found):
            return
        row = found[self.finder.current].row
        top = int(self.scroll_offset.y)
        height = max(self.scrollable_content_region.height, 1)
        if not top <= row < top + height:
            self.scroll_to(0, max(row - height // 3, 0), animate=False, immediate=True)
        self.match_shown(row)

    def match_shown(self, row: int) -> None:
        """The search moved to a match on row ``row`` (a document with a cursor puts it there)."""

    def block_at(self, row: int) -> int:
        """The index of the block that holds document row ``row``."""
        self._relayout()
        return bisect_right(self._offsets, row) - 1

    def watch_expanded(self) -> None:
        self._cache.clear()
        self._relayout()
        self.refresh()

    def action_scroll_end(self) -> None:
        """Scroll to the bottom, also of a view that the key typed just before this one showed.

        Textual's own action gives up on a view with no scroll range yet, and a view shown this
        moment has none until its layout (``3G`` typed fast). ``scroll_end`` itself waits for the
        layout, so it is asked for in any case (a short document stays put).
        """
        self.scroll_end(x_axis=self.scroll_y == self.is_vertical_scroll_end)

    def action_toggle_expand(self) -> None:
        """Expand or collapse every long content."""
        self.expanded = not self.expanded

    def notify_style_update(self) -> None:
        built = self._palette is not None
        super().notify_style_update()
        if built and self.is_mounted:  # the blocks carry the old theme's styles
            self.rebuild(keep_scroll=True)

    def _row_text(self, position: int, width: int) -> Text:
        index = bisect_right(self._offsets, position) - 1
        block = self.blocks[index]
        try:
            return block.row(self.app.console, width, self.expanded, position - self._offsets[index])
        except Exception as error:
            message = f"⚠ could not show this row: {type(error).__name__}: {error}"
            return plain(message, self.palette.bad)

    def render_line(self, y: int) -> Strip:
        self._relayout()
        position = int(self.scroll_offset.y) + y
        width = self._width()
        if position >= self._offsets[-1]:
            return Strip.blank(width, self.base_style())
        found = self.finder.on_row(position) if self.finder.active and self._found() else []
        key = (self._generation, width, self.expanded, position)
        strip = None if found else self._cache.get(key)
        if strip is None:
            text = self._row_text(position, width)
            if found:
                text = text.copy()  # a block may hand out its own laid-out line: never mark that one
            for match, current in found:
                # Over the row's own spans (a later span wins), so the match shows on any segment.
                name = "document--found-current" if current else "document--found"
                text.stylize(self.get_component_rich_style(name, partial=True), match.start, match.end)
            strip = self.text_strip(text, width).apply_style(self.base_style())
            if not found:
                self._cache[key] = strip
        rows = self._revealed_rows()
        if rows is not None and rows[0] <= position < rows[1]:
            # On top of the row's own styles, like the link cursor (Strip.apply_style goes under).
            revealed = self.get_component_rich_style("document--match", partial=True)
            strip = Strip(Segment.apply_style(strip, post_style=revealed), strip.cell_length)
        return strip
