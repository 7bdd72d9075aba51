"""LinkDocument: a DocumentView whose rows may be *links* to a place in the trace; a cursor walks them.

The pass diff and the backtrack pane explain things that happened at other iterations (a lease
granted at I2, the tool result an answer's value came from, a hop of a provenance chain). Each such
row is a :class:`LinkBlock` carrying a :class:`Jump`. ``j``/``k`` move a highlight from link to link
(scrolling the document with it; past the last link they scroll by a row) and ``enter`` posts
:class:`LinkDocument.JumpRequested`, which the screen turns into "select that iteration and show
it". The widget never changes the selection itself (messages up).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import ClassVar, Literal

from rich.segment import Segment
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region
from textual.message import Message
from textual.reactive import reactive
from textual.strip import Strip

from fpdebug.tui.widgets.document import Block, DocBuilder, DocumentView, Part, TextBlock

__all__ = ["Jump", "JumpView", "LinkBlock", "LinkDocument", "link_line"]

JumpView = Literal["passes", "calls", "events"]
"""Where a jump shows its target: the pass inspector, the call view, or the raw line."""


@dataclass(frozen=True)
class Jump:
    """A place in the trace a link leads to."""

    line: int
    """The trace line (the screen selects the iteration that holds it; a run- or turn-level line
    opens the Events view on it)."""
    view: JumpView = "passes"
    """The view to show it in when it is inside an iteration."""
    anchor: str | None = None
    """The start of the row to scroll to and highlight there (``[4] `` for a system-prompt segment)."""


class LinkBlock(TextBlock):
    """A text row (wrapped like any :class:`TextBlock`) that leads somewhere.

    Args:
        text: The row.
        jump: Where it leads.
        indent: Spaces before every row.
        hang: Extra spaces before continuation rows.
    """

    def __init__(self, text: Text, jump: Jump, *, indent: int = 0, hang: int = 0) -> None:
        super().__init__(text, indent=indent, hang=hang)
        self.jump = jump
        """Where it leads."""


def link_line(doc: DocBuilder, jump: Jump | None, *parts: Part, indent: int = 0, hang: int = 0) -> None:
    """Add a line to ``doc``: a link when ``jump`` is given, plain text otherwise."""
    if jump is None:
        doc.line(*parts, indent=indent, hang=hang)
    else:
        doc.blocks.append(LinkBlock(doc.compose(*parts), jump, indent=indent, hang=hang))


class LinkDocument(DocumentView):
    """A document with a cursor over its link rows."""

    DEFAULT_CSS = """
    LinkDocument {
        & > .link-document--cursor { background: $block-cursor-blurred-background; }
        &:focus > .link-document--cursor {
            background: $block-cursor-background;
            color: $block-cursor-foreground;
        }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {"link-document--cursor"}

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "j,down",
            "next_link",
            "Next link",
            show=False,
            id="next-link",
            tooltip="Highlight the next link (or scroll one row when there is none below).",
        ),
        Binding(
            "k,up",
            "previous_link",
            "Previous link",
            show=False,
            id="previous-link",
            tooltip="Highlight the previous link (or scroll one row when there is none above).",
        ),
        Binding(
            "enter",
            "open_link",
            "Jump",
            id="open-link",
            tooltip="Jump to the iteration (or line) the highlighted row is about.",
        ),
    ]

    link: reactive[int] = reactive(-1, init=False)
    """The highlighted link (an index into :attr:`links`; ``-1``: none)."""

    class JumpRequested(Message):
        """The user asked to go to a link's target."""

        def __init__(self, document: LinkDocument, jump: Jump) -> None:
            self.document = document
            """The document."""
            self.jump = jump
            """Where to go."""
            super().__init__()

        @property
        def control(self) -> LinkDocument:
            """The document."""
            return self.document

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._links: list[int] = []

    @property
    def links(self) -> list[int]:
        """The block indexes of the link rows, in document order."""
        return self._links

    def set_blocks(self, blocks: list[Block], *, keep_scroll: bool = False) -> None:
        self._links = [index for index, block in enumerate(blocks) if isinstance(block, LinkBlock)]
        super().set_blocks(blocks, keep_scroll=keep_scroll)
        if not self._links:
            self.link = -1
        elif not keep_scroll or self.link >= len(self._links):
            self.link = -1 if not keep_scroll else min(self.link, len(self._links) - 1)

    @property
    def current_jump(self) -> Jump | None:
        """The highlighted link's target."""
        if 0 <= self.link < len(self._links):
            block = self.blocks[self._links[self.link]]
            if isinstance(block, LinkBlock):
                return block.jump
        return None

    def link_texts(self) -> list[str]:
        """The plain text of every link row (for tests)."""
        return [self.blocks[index].text.plain for index in self._links]  # type: ignore[attr-defined]

    def _block_rows(self, index: int) -> tuple[int, int]:
        self._relayout()
        return self._offsets[index], self._offsets[index + 1]

    def _rows_visible(self) -> tuple[int, int]:
        top = int(self.scroll_offset.y)
        return top, top + max(self.scrollable_content_region.height, 1)

    def action_next_link(self) -> None:
        """Highlight the next link below (or scroll when none is left)."""
        self._step(1)

    def action_previous_link(self) -> None:
        """Highlight the previous link above (or scroll when none is left)."""
        self._step(-1)

    def _step(self, delta: int) -> None:
        links = self._links
        target = self.link + delta if self.link >= 0 else (0 if delta > 0 else len(links) - 1)
        if self.link < 0 and links:
            # Start from the first link on screen rather than the top of the document.
            top, bottom = self._rows_visible()
            on_screen = [i for i, block in enumerate(links) if top <= self._block_rows(block)[0] < bottom]
            if on_screen:
                target = on_screen[0] if delta > 0 else on_screen[-1]
        if 0 <= target < len(links):
            start, end = self._block_rows(links[target])
            top, bottom = self._rows_visible()
            # A far link (more than a screen away) is reached by scrolling first.
            if delta > 0 and start >= bottom + (bottom - top):
                self.scroll_down(animate=False)
                return
            if delta < 0 and end < top - (bottom - top):
                self.scroll_up(animate=False)
                return
            self.link = target
            return
        if delta > 0:
            self.scroll_down(animate=False)
        else:
            self.scroll_up(animate=False)

    def watch_link(self, old: int, new: int) -> None:
        if 0 <= new < len(self._links):
            start, end = self._block_rows(self._links[new])
            self.scroll_to_region(Region(0, start, 1, max(end - start, 1)), animate=False, immediate=True)
        self.refresh()

    def match_shown(self, row: int) -> None:
        """A search match on a link's row highlights that link (``enter`` then jumps where it says)."""
        index = self.block_at(row)
        if index in self._links:
            self.link = self._links.index(index)

    def action_open_link(self) -> None:
        """Ask the screen to go to the highlighted link's target."""
        jump = self.current_jump
        if jump is None:
            self.app.bell()
            return
        self.post_message(self.JumpRequested(self, jump))

    def render_line(self, y: int) -> Strip:
        strip = super().render_line(y)
        links = self._links
        if 0 <= self.link < len(links):
            position = int(self.scroll_offset.y) + y
            start, end = self._block_rows(links[self.link])
            if start <= position < end:
                # On top of the row: every segment already carries the view's own background,
                # which a style applied underneath (``Strip.apply_style``) would never show through.
                cursor = self.get_component_rich_style("link-document--cursor", partial=True)
                strip = Strip(Segment.apply_style(strip, post_style=cursor), strip.cell_length)
        return strip

    def _link_at(self, position: int) -> int | None:
        self._relayout()
        index = bisect_right(self._offsets, position) - 1
        if index < 0 or index >= len(self.blocks):
            return None
        try:
            return self._links.index(index)
        except ValueError:
            return None

    async def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        found = self._link_at(int(self.scroll_offset.y) + offset.y)
        if found is not None:
            if event.chain >= 2 and found == self.link:
                self.action_open_link()
            self.link = found
        self.focus()
