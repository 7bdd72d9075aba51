"""RunDiffScreen: ``fpdebug diff A B`` in the debugger: the first divergence, then its consequences.

The diff is :func:`fpdebug.views.run_diff.run_diff`, the same as the CLI's; this screen only draws
it. Both traces are read in a worker thread (a big trace never freezes the screen), then closed:
what the screen keeps is the diff and, for each aligned point, the line of each run it is about.
The first divergence's title and every consequence row are links: ``j``/``k`` move the cursor over
them, ``enter`` (or ``h``, left) opens that pass of A's trace in the debugger, ``l`` (right) opens B's, and
``escape`` comes back here. Every string from a trace goes in as plain text (made inert; markup
stays literal).

A run still being written, or a trace with unreadable lines, is compared as far as it is readable
(the CLI's ``--partial``), with a note that says so; a file that is not a trace says why in the
screen, never by a crash.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Input

from fpdebug.trace.model import Run
from fpdebug.tui.text import Palette
from fpdebug.tui.widgets.bars import DOCUMENT_SEARCH, KeysFooter, RunHeader, SearchBar
from fpdebug.tui.widgets.document import Block, DocBuilder, Part, blank
from fpdebug.tui.widgets.link_document import Jump, LinkBlock, LinkDocument
from fpdebug.views.run_diff import Difference, Point, RunDiff
from fpdebug.views.run_diff.text import STAGE_WORDS, point_summary
from fpdebug.views.session import TraceSession

__all__ = ["LoadedDiff", "PointLink", "RunDiffDocument", "RunDiffScreen", "load_diff"]


@dataclass
class LoadedDiff:
    """What the screen keeps of two compared runs."""

    diff: RunDiff | None = None
    """The diff (``None`` when it could not be made)."""
    error: str | None = None
    """Why there is no diff (a file that is not a trace…), in words."""
    lines: dict[str, tuple[int | None, int | None]] = field(default_factory=dict)
    """Each point's label → the trace line of A and of B it is about (``None``: that run lacks it)."""


def _point_line(run: Run, point: Point) -> int | None:
    """The line a point is about in ``run``: the pass record of a pass, else the turn's or run's record."""
    if point.turn is None:
        return run.end_line if run.end_line is not None else run.last_line or None
    turn = next((turn for turn in run.turns if turn.number == point.turn), None)
    if turn is None:
        return None
    if point.iteration is None:
        line = turn.end_line if point.label.endswith(" end") else turn.start_line
        return line
    iteration = next((it for it in turn.iterations if it.number == point.iteration), None)
    if iteration is None:
        return None
    lines = iteration.lines
    return lines[0] if lines else None


def _partial_notes(name: str, session: TraceSession, run: Run) -> list[str]:
    """What makes the comparison partial (the CLI refuses these without ``--partial``)."""
    notes = []
    if run.end_line is None:
        notes.append(
            f"{name}'s run has no run_end (still being written, or its process died): compared so far"
        )
    bad = len(session.model.invalid_lines) + len(session.found_invalid)
    if bad:
        notes.append(f"{name}'s trace has {bad} invalid line(s): compared as far as it is readable")
    if session.reader.torn_tail() is not None:
        notes.append(f"{name}'s last line is unfinished (torn or still being written)")
    return notes


def load_diff(
    left: Path, right: Path, run_left: str | None = None, run_right: str | None = None
) -> LoadedDiff:
    """Open both traces, compare the chosen runs (the first by default), close them again.

    Never raises for a bad input: the error comes back in :attr:`LoadedDiff.error`.
    """
    from fpdebug.trace.reader import TraceReader
    from fpdebug.views.run_diff import choose_run, run_diff
    from fpdebug.views.run_diff.reading import load_all, validate_run

    opened: list[TraceSession] = []
    try:
        for path in (left, right):
            opened.append(load_all(TraceSession(TraceReader(path, index=False))))
        a, b = opened
        run_a = choose_run(a, run_left, f"A ({left})")
        run_b = choose_run(b, run_right, f"B ({right})")
        diff = run_diff((a, run_a, str(left)), (b, run_b, str(right)))
        validate_run(a, run_a)
        validate_run(b, run_b)
        diff.notes += _partial_notes("A", a, run_a) + _partial_notes("B", b, run_b)
        for side, name in ((diff.a, "A"), (diff.b, "B")):
            if side.runs > 1:
                diff.notes.append(f"{name}'s file holds {side.runs} runs: run {side.number} is compared")
        lines = {point.label: (_point_line(run_a, point), _point_line(run_b, point)) for point in diff.points}
        return LoadedDiff(diff=diff, lines=lines)
    except Exception as error:  # any bad input is a message on the screen, never a crash
        return LoadedDiff(error=f"{type(error).__name__}: {error}" if not str(error) else str(error))
    finally:
        for session in opened:
            session.reader.close()


class PointLink(LinkBlock):
    """A link row about one aligned point: it knows the line of each run."""

    def __init__(self, text: Text, point: Point, lines: tuple[int | None, int | None], *, indent: int = 0):
        line = lines[0] if lines[0] is not None else lines[1]
        super().__init__(text, Jump(line if line is not None else 0), indent=indent, hang=4)
        self.point = point
        """The point."""
        self.lines = lines
        """The trace line of A and of B it is about."""


def _name(difference: Difference) -> str:
    if difference.subject.replace("_", "-").replace(" ", "-") == difference.kind:
        return difference.kind
    return f"{difference.kind} {difference.subject}"


def _difference(doc: DocBuilder, difference: Difference) -> None:
    palette = doc.palette
    doc.line((_name(difference), palette.accent), indent=2)
    for side, value in (("A", difference.a), ("B", difference.b)):
        shown: Part = (value, "") if value is not None else ("—", palette.dim)
        doc.line((f"{side}: ", palette.key), shown, indent=4, hang=3)
    if difference.why:
        doc.line(("why: ", palette.key), (difference.why, palette.dim), indent=4, hang=5)
    for row in difference.detail:
        style = palette.good if row.startswith("+") else palette.bad if row.startswith("-") else palette.dim
        doc.line(("| ", palette.dim), (row, style), indent=4)


def diff_blocks(loaded: LoadedDiff, palette: Palette) -> list[Block]:
    """The document of a diff: the two runs, notes, declared differences, the first divergence, then
    its consequences (one link row per point)."""
    doc = DocBuilder(palette)
    diff = loaded.diff
    if diff is None:
        doc.line(
            ("cannot compare the two runs: ", palette.bad), (loaded.error or "unknown error", palette.bad)
        )
        return doc.blocks
    for name, side in (("A", diff.a), ("B", diff.b)):
        source = "" if side.source == "fpdebug" else f", imported from {side.source}"
        doc.line(
            (f"{name} ", palette.heading),
            (side.path, palette.accent),
            f"  run {side.number} of {side.runs} (",
            (side.run_id, palette.dim),
            f"): {side.status}, {side.turns} turn(s), {side.iterations} iteration(s){source}",
            hang=2,
        )
    for note in diff.notes:
        doc.line(("note: ", palette.warn), (note, palette.warn), hang=6)
    if diff.identical:
        doc.heading(
            "Identical", (f"  the two runs agree at every point ({len(diff.points)} compared)", palette.dim)
        )
        return doc.blocks
    if diff.declared:
        doc.heading("Declared differently", ("  (run_start)", palette.dim))
        for difference in diff.declared:
            _difference(doc, difference)
    first = diff.first
    if first is None:
        doc.heading(
            "No pass differs", ("  the runs behave alike; only their declarations differ", palette.dim)
        )
        return doc.blocks
    stage = first.first_stage
    assert stage is not None
    doc.blocks.append(blank())
    title = doc.compose(
        Text("First divergence ", style=palette.heading),
        (first.label, palette.accent),
        (f", {STAGE_WORDS[stage]}", palette.heading),
        ("   enter/h: open in A · l: open in B", palette.dim),
    )
    doc.blocks.append(PointLink(title, first, loaded.lines.get(first.label, (None, None))))
    for difference in first.differences:
        if difference.stage == stage:
            _difference(doc, difference)
    rest = [d for d in first.differences if d.stage != stage]
    if rest:
        doc.heading("Then, on the same pass", (f" ({first.label})", palette.dim))
        for difference in rest:
            _difference(doc, difference)
    consequences = diff.consequences()
    if consequences:
        doc.heading("Consequences, pass by pass")
        width = max(len(point.label) for point in consequences)
        for point in consequences:
            style = palette.dim if point.identical else ""
            row = doc.compose((f"{point.label:<{width}}  ", palette.accent), (point_summary(point), style))
            doc.blocks.append(PointLink(row, point, loaded.lines.get(point.label, (None, None)), indent=2))
    return doc.blocks


class RunDiffDocument(LinkDocument):
    """The diff as a document whose points are links."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.loaded: LoadedDiff | None = None
        """The diff on show (``None`` while it is being made)."""

    def build(self) -> list[Block]:
        if self.loaded is None:
            return [DocBuilder(self.palette).line(("comparing the two runs…", self.palette.dim)).blocks[0]]
        return diff_blocks(self.loaded, self.palette)

    def current_point(self) -> PointLink | None:
        """The highlighted point link."""
        if 0 <= self.link < len(self.links):
            block = self.blocks[self.links[self.link]]
            if isinstance(block, PointLink):
                return block
        return None


class RunDiffScreen(Screen[None]):
    """The diff of two runs.

    Args:
        left: Run A's trace (the reference).
        right: Run B's trace.
        run_left: The run of A to compare, by id or 1-based number (default: the first).
        run_right: The run of B.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "h,left",
            "open_side(0)",
            "Open in A",
            show=False,  # the divergence's row says so; the footer keeps room for escape at 80 columns
            id="run-diff-open-a",
            tooltip="Open the highlighted pass in the left trace, A (as enter does).",
        ),
        Binding(
            "l,right",
            "open_side(1)",
            "Open in B",
            show=False,
            id="run-diff-open-b",
            tooltip="Open the highlighted pass in the right trace, B.",
        ),
        Binding(
            "escape",
            "back",
            "Back",
            id="run-diff-back",
            tooltip="End the search, else leave the run diff (back to the runs table).",
        ),
        # The search keys of every document, under the same ids (a remapped key is remapped here too).
        Binding("slash", "search", "Search", id="search", key_display="/", tooltip="Search the diff."),
        Binding("n", "step_match(1)", "Next match", show=False, id="next-match", tooltip="Next match."),
        Binding(
            "N", "step_match(-1)", "Prev match", show=False, id="previous-match", tooltip="Previous match."
        ),
    ]

    DEFAULT_CSS = """
    RunDiffScreen {
        & > RunDiffDocument { height: 1fr; }
        & > SearchBar { display: none; }
        &.-searching > SearchBar { display: block; }
    }
    """

    def __init__(
        self, left: Path, right: Path, *, run_left: str | None = None, run_right: str | None = None
    ) -> None:
        super().__init__()
        self.left = Path(left)
        """Run A's trace."""
        self.right = Path(right)
        """Run B's trace."""
        self._runs = (run_left, run_right)

    def compose(self) -> ComposeResult:
        yield RunHeader(id="run-diff-header")
        yield RunDiffDocument(id="run-diff")
        yield SearchBar(id="run-diff-search")
        yield KeysFooter()

    @property
    def document(self) -> RunDiffDocument:
        """The diff document."""
        return self.query_one(RunDiffDocument)

    @property
    def loaded(self) -> LoadedDiff | None:
        """The diff once made."""
        return self.document.loaded

    def on_mount(self) -> None:
        from fpdebug.tui.text import plain

        header = Text("Run diff  ", style="bold", end="")
        header.append_text(plain(f"A {self.left.name}  ·  B {self.right.name}"))
        header.append("\n")
        header.append("comparing…", style="dim")
        self.query_one(RunHeader).show(header)
        self.query_one("#search-input", Input).placeholder = DOCUMENT_SEARCH
        self.document.rebuild()
        self.document.focus()
        self._load()

    @work(thread=True, exclusive=True, group="run-diff")
    def _load(self) -> None:
        loaded = load_diff(self.left, self.right, *self._runs)
        try:
            self.app.call_from_thread(self._show, loaded)
        except RuntimeError:
            pass  # the app closed while the traces were read

    def _show(self, loaded: LoadedDiff) -> None:
        from fpdebug.tui.text import plain

        if not self.is_attached:
            return  # the user left before the diff was made

        document = self.document
        document.loaded = loaded
        document.rebuild()
        diff = loaded.diff
        header = Text("Run diff  ", style="bold", end="")
        header.append_text(plain(f"A {self.left.name}  ·  B {self.right.name}"))
        header.append("\n")
        if diff is None:
            header.append("cannot compare", style="bold red")
        elif diff.identical:
            header.append("identical", style="bold")
        else:
            first = diff.first
            where = f"first divergence at {first.label}" if first is not None else "declared differently"
            differing = sum(1 for point in diff.points if not point.identical)
            header.append(f"different: {where}; {differing} of {len(diff.points)} points differ")
        self.query_one(RunHeader).show(header)
        if document.links:
            document.link = 0  # the cursor starts on the first divergence

    @on(LinkDocument.JumpRequested)
    def _jump_requested(self, message: LinkDocument.JumpRequested) -> None:
        message.stop()
        self.action_open_side(0)

    def action_open_side(self, side: int) -> None:
        """Open the highlighted point in A's trace (``0``) or B's (``1``) in the debugger."""
        link = self.document.current_point()
        if link is None:
            self.app.bell()
            self.notify("move the cursor to a point first (j/k)", severity="warning")
            return
        line = link.lines[side]
        name = "AB"[side]
        if line is None:
            self.notify(f"{link.point.label} is not in {name}'s run", severity="warning")
            return
        from fpdebug.tui.screens.opened_trace import open_trace

        open_trace(self.app, self.left if side == 0 else self.right, line)

    def action_search(self) -> None:
        """Open the search prompt of the diff."""
        self.add_class("-searching")
        field = self.query_one("#search-input", Input)
        field.value = self.document.finder.query
        field.focus()

    @on(Input.Changed, "#search-input")
    def _typed(self, event: Input.Changed) -> None:
        self.document.search(event.value)

    @on(Input.Submitted, "#search-input")
    @on(SearchBar.Closed)
    def _search_closed(self) -> None:
        self.remove_class("-searching")
        self.document.focus()

    def action_step_match(self, delta: int) -> None:
        """The next (``1``) or previous (``-1``) match of the search."""
        document = self.document
        if not document.finder.active:
            self.notify("No search: press / to search.", timeout=2)
        elif not document.step_match(delta):
            self.app.bell()

    def action_back(self) -> None:
        """End the search; else back to the screen below (the runs table)."""
        if self.document.finder.active:
            self.document.clear_search()
            return
        if len(self.app.screen_stack) > 1:
            self.app.pop_screen()
        else:
            self.app.exit()
