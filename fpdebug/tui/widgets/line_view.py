"""LineView: what the line-API widgets (lists and documents) share: styles and rows cut into strips.

A :class:`LineView` builds each row as a Rich ``Text`` styled with a :class:`~fpdebug.tui.text.Palette`
taken from its own component classes (so the built-in themes apply), and turns the row into a strip
of the view's width. Both :class:`~fpdebug.tui.widgets.row_list.RowList` and
:class:`~fpdebug.tui.widgets.document.DocumentView` are line views.
"""

from __future__ import annotations

from dataclasses import fields
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.scroll_view import ScrollView
from textual.strip import Strip

from fpdebug.tui.text import Palette

__all__ = ["LineView", "palette_classes"]


def palette_classes(prefix: str, **overrides: str) -> dict[str, str]:
    """The component class of every :class:`Palette` style: ``<prefix>--<style>`` unless overridden."""
    return {field.name: overrides.get(field.name, f"{prefix}--{field.name}") for field in fields(Palette)}


class LineView(ScrollView):
    """A ScrollView whose rows are Rich Text styled by a Palette of its component classes.

    Subclasses name the component class behind each palette style in :attr:`PALETTE_CLASSES` (and
    declare those classes in ``COMPONENT_CLASSES`` and their ``DEFAULT_CSS``).
    """

    PALETTE_CLASSES: ClassVar[dict[str, str]] = {}
    """Palette style → component class (a style left out keeps the Palette's plain default)."""

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._palette: Palette | None = None
        self._line_styles: dict[bool, Style] = {}

    @property
    def palette(self) -> Palette:
        """Semantic styles from this widget's component classes (taken again after a theme change)."""
        if self._palette is None:
            get = self.get_component_rich_style
            self._palette = Palette(
                **{style: get(name, partial=True) for style, name in self.PALETTE_CLASSES.items()}
            )
        return self._palette

    def base_style(self) -> Style:
        """The style under every row (the widget's own, with or without the focus)."""
        # ``rich_style`` is recomputed on every call; rows ask for it on every line.
        key = self.has_focus
        style = self._line_styles.get(key)
        if style is None:
            style = self._line_styles[key] = self.rich_style
        return style

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._line_styles = {}
        self._palette = None

    def text_strip(self, text: Text, width: int) -> Strip:
        """One row: ``text`` on a single line, cut or padded to exactly ``width`` cells."""
        text.no_wrap = True
        text.end = ""
        return Strip(text.render(self.app.console), text.cell_len).crop_extend(0, width, None)
