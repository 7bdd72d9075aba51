"""RunsScreen: the runs table of ``fpdebug view DIR`` (the rows ``fpdebug runs`` prints).

The table is :func:`fpdebug.views.runs.build_table`, built in a worker thread (DuckDB reads the
traces in place; the screen stays live meanwhile), filtered with the same syntax as
``fpdebug runs --filter`` (``status:failed tool:refund lease:x`` or free text over the answers) and
sorted by :data:`~fpdebug.views.runs.SORT_COLUMNS`. ``enter`` opens a run's trace in the debugger
(``escape`` comes back); ``m`` marks a run and ``d`` diffs two (the marked pair, or the marked
run against the one under the cursor). A file that yields no run is a row that says what it is;
opening it is a notice, never a crash.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Input

from fpdebug.tui.text import plain
from fpdebug.tui.widgets.bars import KeysFooter, RunHeader, SearchBar, StatusBar, TextBar
from fpdebug.tui.widgets.runs_list import RunsList, heading
from fpdebug.views.runs import FileEntry, RunRow, RunsTable, parse_filters

__all__ = ["SORTS", "RunsScreen"]

SORTS: tuple[str, ...] = (
    "started",
    "agent",
    "status",
    "iterations",
    "tokens",
    "cost",
    "leases",
    "parks",
    "unsupported",
    "source",
    "answer",
)
"""The columns ``o`` cycles through, in order (each a :data:`~fpdebug.views.runs.SORT_COLUMNS` key)."""

RUNS_FILTER = "filter: status:S tool:T lease:L model:M agent:A source:S or words — enter to keep, escape"
"""What the ``/`` prompt says."""


class RunsHeading(TextBar):
    """The column titles, fitted to the width as the rows are."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.sort = "started"
        self.descending = False

    def render(self) -> Text:
        return heading(self.content_size.width or 80, self.sort, self.descending)


class RunsScreen(Screen[None]):
    """A table of the runs in many traces.

    Args:
        paths: Trace files and folders (as ``fpdebug runs`` takes them).
        use_cache: Read and write the table's per-trace cache.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "m",
            "mark",
            "Mark",
            id="runs-mark",
            tooltip="Mark the run to diff it (again: unmark), as m marks a pass for the pass diff.",
        ),
        Binding(
            "d",
            "diff",
            "Diff",
            id="runs-diff",
            tooltip="Diff the two marked runs (or the marked one, as A, and the one under the cursor).",
        ),
        Binding(
            "o",
            "sort",
            "Sort",
            id="runs-sort",
            tooltip="Order the runs by the next column (started, agent…).",
        ),
        Binding("O", "reverse", "Reverse", show=False, id="runs-sort-reverse", tooltip="Reverse the order."),
        Binding(
            "slash",
            "filter",
            "Filter",
            id="runs-filter",
            tooltip="Filter the runs: status:failed, tool:refund, lease:x, model:, agent:, source:, or words.",
        ),
        # As in every filtered list: n / N step through the rows the filter keeps (wrapping).
        Binding("n", "step_match(1)", "Next match", show=False, id="next-match", tooltip="Next match."),
        Binding(
            "N", "step_match(-1)", "Prev match", show=False, id="previous-match", tooltip="Previous match."
        ),
        Binding(
            "escape",
            "clear_filter",
            "Clear",
            show=False,
            id="runs-clear-filter",
            tooltip="Clear the filter.",
        ),
        Binding("R", "reload", "Reload", show=False, id="runs-reload", tooltip="Read the traces again."),
    ]

    DEFAULT_CSS = """
    RunsScreen {
        layout: vertical;
        & > #runs-heading { height: 1; padding: 0 1; color: $text-muted; }
        & > #runs { height: 1fr; padding: 0 1; }
        & > SearchBar { display: none; }
        & > SearchBar.-open { display: block; }
    }
    """

    def __init__(self, paths: Sequence[str], *, use_cache: bool = True) -> None:
        super().__init__()
        self.paths = [str(path) for path in paths]
        """What the table lists."""
        self.use_cache = use_cache
        self.table: RunsTable | None = None
        """The table once built."""
        self.error: str | None = None
        """Why the table could not be built (it never should: each bad file is a row)."""
        self.filter_text = ""
        """The filter in force (``fpdebug runs --filter`` syntax)."""
        self.sort = "started"
        """The sort column."""
        self.descending = False
        """The sort order."""

    def compose(self) -> ComposeResult:
        yield RunHeader(id="runs-header")
        yield RunsHeading(id="runs-heading")
        yield RunsList(id="runs")
        yield SearchBar(id="runs-search")
        yield StatusBar(id="runs-status")
        yield KeysFooter()

    @property
    def runs_list(self) -> RunsList:
        """The table's rows."""
        return self.query_one(RunsList)

    def on_mount(self) -> None:
        self.query_one("#search-input", Input).placeholder = RUNS_FILTER
        self.runs_list.focus()
        self._refresh_bars()
        self.action_reload()

    # ------------------------------------------------------------------------------------------
    # Loading

    def action_reload(self) -> None:
        """Build the table (again) in a worker."""
        self.table = None
        self._refresh_bars()
        self._build()

    @work(thread=True, exclusive=True, group="runs-table")
    def _build(self) -> None:
        from fpdebug.views.runs import build_table

        try:
            table, error = build_table(self.paths, use_cache=self.use_cache), None
        except Exception as exc:  # the table says why, the app stays up
            table, error = RunsTable(), f"{type(exc).__name__}: {exc}"
        try:
            self.app.call_from_thread(self._built, table, error)
        except RuntimeError:
            pass  # the app closed while the traces were read

    def _built(self, table: RunsTable, error: str | None) -> None:
        if not self.is_attached:
            return
        self.table = table
        self.error = error
        self.show_rows()

    @property
    def loaded(self) -> bool:
        """The table is built."""
        return self.table is not None

    def show_rows(self) -> None:
        """Filter and sort the table's rows into the list (files without a run last)."""
        table = self.table
        if table is None:
            return
        rows = RunsTable.sorted_rows(
            table.filtered([self.filter_text]), self.sort, descending=self.descending
        )
        items: list[RunRow | FileEntry] = [*rows, *(table.entries if not self.filter_text else [])]
        runs_list = self.runs_list
        keep = {id(row) for row in rows}
        runs_list.marked = [row for row in runs_list.marked if id(row) in keep]
        runs_list.show_items(items)
        heading_bar = self.query_one(RunsHeading)
        heading_bar.sort, heading_bar.descending = self.sort, self.descending
        heading_bar.refresh()
        self._refresh_bars()

    def _refresh_bars(self) -> None:
        header = Text("Runs  ", style="bold", end="")
        header.append_text(plain(", ".join(self.paths)))
        header.append("\n")
        table = self.table
        runs_list = self.runs_list
        if table is None:
            header.append("reading the traces…", style="dim")
        else:
            shown = sum(1 for item in runs_list.items if isinstance(item, RunRow))
            total = len(table.rows)
            header.append(f"{shown} of {total} runs" if shown != total else f"{total} runs")
            if table.entries:
                header.append(f" · {len(table.entries)} other file(s)", style="dim")
            header.append(f" · {table.scanned_files} read, {table.cached_files} from the cache", style="dim")
        self.query_one(RunHeader).show(header)
        status = Text(end="")
        if self.error:
            status.append_text(plain(f"⚠ the table could not be built: {self.error}", "bold"))
            status.append("  ")
        status.append(f"sort: {self.sort} {'↓' if self.descending else '↑'}")
        if self.filter_text:
            status.append("  filter: ")
            status.append_text(plain(self.filter_text, "bold"))
        marked = runs_list.marked
        if marked:
            status.append(f"  marked: {len(marked)} (d diffs)")
        self.query_one(StatusBar).show(status)

    # ------------------------------------------------------------------------------------------
    # Keys

    def action_sort(self) -> None:
        """Sort by the next column."""
        index = SORTS.index(self.sort) if self.sort in SORTS else -1
        self.sort = SORTS[(index + 1) % len(SORTS)]
        self.show_rows()

    def action_reverse(self) -> None:
        """Reverse the sort order."""
        self.descending = not self.descending
        self.show_rows()

    def action_filter(self) -> None:
        """Open the filter prompt."""
        bar = self.query_one(SearchBar)
        bar.add_class("-open")
        prompt = self.query_one("#search-input", Input)
        prompt.value = self.filter_text
        prompt.focus()

    @on(Input.Changed, "#search-input")
    def _filter_typed(self, event: Input.Changed) -> None:
        # A quote still open while typing is not an error yet: the last filter stays until it closes.
        self.apply_filter(event.value, quiet=True)

    @on(Input.Submitted, "#search-input")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        if self.apply_filter(event.value):
            self._filter_closed()

    @on(SearchBar.Closed)
    def _filter_closed(self) -> None:
        self.query_one(SearchBar).remove_class("-open")
        self.runs_list.focus()

    def apply_filter(self, text: str, *, quiet: bool = False) -> bool:
        """Keep the runs ``text`` matches (an unbalanced quote keeps the last filter and says so)."""
        try:
            parse_filters([text])
        except ValueError as exc:
            if not quiet:
                self.notify(f"cannot read the filter: {exc}", severity="warning", markup=False)
            return False
        self.filter_text = text.strip()
        self.show_rows()
        return True

    def action_step_match(self, delta: int) -> None:
        """The next (``1``) or previous (``-1``) run the filter keeps."""
        if not self.filter_text:
            self.notify("No filter: press / to filter.", timeout=2)
        elif not self.runs_list.step(delta, wrap=True):
            self.app.bell()

    def action_clear_filter(self) -> None:
        """Clear the filter."""
        if self.filter_text:
            self.apply_filter("")

    def action_mark(self) -> None:
        """Mark (or unmark) the run under the cursor; a third mark replaces the oldest."""
        runs_list = self.runs_list
        item = runs_list.current()
        if not isinstance(item, RunRow):
            self.app.bell()
            self.notify("only a run can be marked: this row is a file without one", severity="warning")
            return
        marked = runs_list.marked
        if any(row is item for row in marked):
            marked[:] = [row for row in marked if row is not item]
        else:
            marked.append(item)
            del marked[:-2]
        runs_list.marks_changed()
        self._refresh_bars()

    def pair(self) -> tuple[RunRow, RunRow] | None:
        """The two runs ``d`` compares: the marked pair, or the marked one and the one under the cursor."""
        marked = self.runs_list.marked
        current = self.runs_list.current()
        if len(marked) == 2:
            return marked[0], marked[1]
        if len(marked) == 1 and isinstance(current, RunRow) and current is not marked[0]:
            return marked[0], current
        return None

    def action_diff(self) -> None:
        """Diff the pair (A: the first marked)."""
        from fpdebug.tui.screens.run_diff_screen import RunDiffScreen

        pair = self.pair()
        if pair is None:
            self.app.bell()
            self.notify("mark two runs with m (or mark one and press d on another)", severity="warning")
            return
        a, b = pair
        self.app.push_screen(
            RunDiffScreen(Path(a.trace), Path(b.trace), run_left=a.run_id, run_right=b.run_id)
        )

    @on(RunsList.Selected)
    def _opened(self, message: RunsList.Selected) -> None:
        from fpdebug.tui.screens.opened_trace import open_trace

        item = self.runs_list.items[message.row]
        if isinstance(item, FileEntry):
            self.app.bell()
            self.notify(
                plain(f"{item.what}: {item.path}: {item.reason}").plain,
                title="not a run",
                severity="warning",
                markup=False,
            )
            return
        open_trace(self.app, Path(item.trace), run=item.run_id)
