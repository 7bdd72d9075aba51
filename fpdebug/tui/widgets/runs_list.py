"""RunsList: the rows of the runs table (``fpdebug runs``), one per run, then one per file that has none.

The rows are :class:`~fpdebug.views.runs.RunRow` objects from :func:`~fpdebug.views.runs.build_table`,
the same as the CLI prints; a file that yields no run (foreign, broken, empty, being written) is a
:class:`~fpdebug.views.runs.FileEntry` row that says what it is. Columns that do not fit the width
are left out, least needed first; the answer's first line takes what is left. Every string from a
trace goes through :func:`~fpdebug.tui.text.plain` (clipped, inert, never markup).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace

from rich.style import Style
from rich.text import Text

from fpdebug.tui.text import Palette, number, plain
from fpdebug.tui.widgets.row_list import RowList
from fpdebug.views.runs import FileEntry, RunRow

__all__ = ["COLUMNS", "Column", "RunsList", "fit_columns", "heading"]

Item = RunRow | FileEntry
"""A row of the table: a run, or a file with none."""


def _started(row: RunRow) -> str:
    return (row.started or "?")[:16].replace("T", " ")


def _cost(row: RunRow) -> str:
    if not row.llm_calls:
        return "no calls"  # "$0.00" would claim a price
    usd = row.cost.get("usd")
    # A run with a call that has no price has no total (the CLI says why: "no price: scripted").
    return f"${usd:.4f}" if isinstance(usd, int | float) else "no price"


def _source(row: RunRow) -> str:
    # Any source but native was imported (by fpdebug import, or on the fly).
    return row.source


@dataclass(frozen=True)
class Column:
    """One column of the table."""

    title: str
    """Its heading."""
    sort: str | None
    """The :data:`~fpdebug.views.runs.SORT_COLUMNS` key it sorts by (``None``: not sortable)."""
    width: int
    """Its width in cells."""
    rank: int
    """Which columns go first when the width is short (the highest rank goes first)."""
    cell: Callable[[RunRow], str]
    """Its text for a run."""
    right: bool = False
    """Right-aligned (numbers)."""


AGENT = Column("agent", "agent", 12, 2, lambda row: row.agent or "?")
"""The agent column (the one that widens on a wide screen)."""

COLUMNS: tuple[Column, ...] = (
    Column("started", "started", 16, 3, _started),
    AGENT,
    Column("status", "status", 11, 1, lambda row: row.status),
    Column("t/iter", "iterations", 6, 4, lambda row: f"{row.turns}/{row.iterations}", right=True),
    Column("tokens", "tokens", 9, 5, lambda row: number(row.tokens), right=True),
    Column("cost", "cost", 9, 6, _cost, right=True),
    Column("ls", "leases", 3, 8, lambda row: str(row.leases), right=True),
    Column("pk", "parks", 3, 9, lambda row: str(row.parks), right=True),
    Column("un", "unsupported", 3, 10, lambda row: str(row.unsupported_values), right=True),
    Column("source", "source", 14, 7, _source),
)
"""Every column but the answer, in display order."""

MARK_WIDTH = 2
"""The mark column (``●`` on a run marked for the diff)."""

ANSWER_MIN = 14
"""The least room the answer column keeps before other columns give way."""


WIDE_AGENT = 24
"""The agent column's width when the screen has room to spare (names are cut at the narrow width)."""

ROOMY_ANSWER = 60
"""The answer's room at which the agent column widens to :data:`WIDE_AGENT`."""


def fit_columns(width: int) -> list[Column]:
    """The columns shown at ``width`` cells (the lowest-ranked are left out first; on a wide screen
    the agent column grows so that names are not cut)."""
    shown = list(COLUMNS)
    while shown and MARK_WIDTH + sum(c.width + 1 for c in shown) + ANSWER_MIN > width:
        shown.remove(max(shown, key=lambda column: column.rank))
    used = MARK_WIDTH + sum(c.width + 1 for c in shown)
    if width - used - (WIDE_AGENT - AGENT.width) >= ROOMY_ANSWER:
        shown = [replace(c, width=WIDE_AGENT) if c is AGENT else c for c in shown]
    return shown


def _pad(text: str, column: Column) -> str:
    if len(text) > column.width:
        text = text[: column.width - 1] + "…"
    return text.rjust(column.width) if column.right else text.ljust(column.width)


def heading(width: int, sort: str, descending: bool) -> Text:
    """The heading row at ``width``, the sorted column marked with an arrow."""
    text = Text(" " * MARK_WIDTH, end="", no_wrap=True)
    arrow = "↓" if descending else "↑"
    for column in fit_columns(width):
        title = column.title + (arrow if column.sort == sort else "")
        text.append(_pad(title, column) + " ", style="bold" if column.sort == sort else "")
    text.append("answer" + (arrow if sort == "answer" else ""), style="bold" if sort == "answer" else "")
    return text


class RunsList(RowList):
    """The runs table's rows: the screen sets :attr:`items` and the marked runs."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.items: list[Item] = []
        """The rows shown, in order (already filtered and sorted)."""
        self.marked: list[RunRow] = []
        """The runs marked for the diff (at most two, in the order they were marked)."""
        self.generation = 0
        """Changes whenever :attr:`items` or the marks change (part of each row's cache key)."""

    def show_items(self, items: list[Item]) -> None:
        """Show ``items`` (the cursor goes to the first row)."""
        self.items = items
        self.generation += 1
        self.cursor = -1
        self.sync()
        if items:
            self.move_to_row(0)
        self.invalidate()

    def marks_changed(self) -> None:
        """Repaint after a mark was set or cleared."""
        self.generation += 1
        self.invalidate()

    def current(self) -> Item | None:
        """The row under the cursor."""
        return self.items[self.cursor] if 0 <= self.cursor < len(self.items) else None

    def total_rows(self) -> int:
        return len(self.items)

    def row_version(self, row: int) -> Hashable:
        return self.generation

    def render_row(self, row: int, width: int) -> Text:
        item = self.items[row]
        palette = self.palette
        if isinstance(item, FileEntry):
            return _entry_row(item, palette)
        mark = "● " if any(m is item for m in self.marked) else "  "
        text = Text(mark, style=palette.accent, end="", no_wrap=True)
        for column in fit_columns(width):
            cell = _pad(column.cell(item), column)
            style: Style | str = _status_style(item, palette) if column.title == "status" else ""
            text.append_text(plain(cell, style))
            text.append(" ")
        answer = item.answer_first_line
        if item.notes or item.error:
            answer = answer or "⚠ " + "; ".join([*item.notes, *([item.error] if item.error else [])])
        text.append_text(plain(answer, palette.dim if not item.answer_first_line else ""))
        return text


def _status_style(row: RunRow, palette: Palette) -> Style | str:
    if row.status == "completed":
        return palette.good
    if row.status in ("running", "paused"):
        return palette.warn
    return palette.bad


def _entry_row(entry: FileEntry, palette: Palette) -> Text:
    text = Text("  ", end="", no_wrap=True)
    text.append_text(plain(f"⚠ {entry.what}", palette.warn))
    text.append("  ")
    text.append_text(plain(entry.path, palette.dim))
    text.append("  ")
    text.append_text(plain(entry.reason, palette.dim))
    return text
