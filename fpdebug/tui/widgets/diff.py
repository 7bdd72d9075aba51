"""DiffView: two passes side by side in time — what entered and left each slot, and why.

A is the iteration marked with ``m`` (or chosen with the palette's ``diff: iteration 3 vs 7``);
without a mark it is the pass before B. B is the selected iteration, so ``[`` and ``]`` walk B while
A stays. The document (built by :func:`diff_document` from :func:`~fpdebug.views.pass_diff.pass_diff`):

- a title naming both passes and how they relate (same turn, across turns, across runs; swapped
  when A was the later one; "identical" for the same pass);
- per slot (system-prompt, messages, tools) the ids kept, entered, left, came and went (or were off
  the wire for a while), each with WHY and a link to the pass where it happened;
- the cursor (A → B and every move between), the leases (serving A or B, granted or pruned between)
  and each mounted map's standing;
- the two LLM requests: the conversation messages in one only, the tool schemas offered on one
  only, the system prompt segment by segment (a rewritten segment with its line diff).

Every string from the trace goes through :func:`~fpdebug.tui.text.plain` (inert, never markup).
"""

from __future__ import annotations

from rich.text import Text

from fpdebug.tui.text import Palette, clip, number
from fpdebug.tui.widgets.document import Block, DocBuilder, Part
from fpdebug.tui.widgets.link_document import Jump, LinkDocument, link_line
from fpdebug.views.pass_diff import ACTIVE, Change, PassDiff, pass_diff
from fpdebug.views.session import TraceSession

__all__ = ["DiffView", "diff_document"]

_SIGN = {"entered": "+", "left": "−", "came-and-went": "±", "kept-with-gap": "~"}


def _jump(line: int | None) -> Jump | None:
    return Jump(line, "passes") if line is not None else None


def diff_document(session: TraceSession, diff: PassDiff, palette: Palette, *, marked: bool) -> list[Block]:
    """The diff view's document.

    Args:
        session: The trace.
        diff: The two passes compared.
        palette: Styles.
        marked: Whether A was marked by the user (else it is the pass before B).
    """
    doc = DocBuilder(palette)
    a, b = diff.a, diff.b
    doc.line(
        Text("Diff ", style=palette.heading),
        ("A ", palette.dim),
        (a.label, palette.accent),
        "  →  ",
        ("B ", palette.dim),
        (b.label, palette.accent),
        (f"   lines {a.first_line} → {b.first_line}", palette.dim),
    )
    if diff.same:
        relation = "the same pass on both sides"
    elif diff.across_runs:
        relation = f"across runs: {a.run_id} → {b.run_id} (nothing between them is walked)"
    elif diff.across_turns:
        relation = f"across turns: turn {a.turn} → turn {b.turn}, {diff.walked} pass(es) walked"
    else:
        relation = f"same turn, {diff.walked} pass(es) walked"
    how = (
        "A is the marked iteration (m)" if marked else "A is the pass before B (press m on a pass to mark A)"
    )
    parts: list[Part] = [(relation, palette.key), "  ·  ", (how, palette.dim)]
    if diff.swapped:
        parts += ["  ·  ", ("A was the later pass: shown earlier → later", palette.warn)]
    doc.line(*parts, indent=2)
    if diff.same:
        doc.heading("Identical", ("  A and B are the same pass: nothing entered or left", palette.dim))
        return doc.blocks
    if diff.identical:
        doc.heading(
            "Identical", ("  the context of the two passes is the same: nothing entered or left", palette.dim)
        )
    for note in diff.notes:
        doc.line(("⚠ ", palette.warn), (note, palette.warn), indent=2)
    if diff.walk_cut:
        cut = "⚠ the walk between A and B was cut: changes after it are not explained"
        doc.line((cut, palette.warn), indent=2)

    _slots_section(doc, diff)
    _cursor_section(doc, diff)
    _lease_section(doc, diff)
    _map_section(doc, diff)
    _request_section(doc, diff)
    return doc.blocks


def _slots_section(doc: DocBuilder, diff: PassDiff) -> None:
    palette = doc.palette
    if not (diff.a.has_pass and diff.b.has_pass):
        return
    doc.heading("Slots", ("  what entered and left between A and B, and why (docs §3.5)", palette.dim))
    if ACTIVE in diff.slots:
        doc.line(
            ("the passes record no slot routing: their active injections are compared", palette.dim), indent=2
        )
    for slot in diff.slots:
        changes = diff.slots.get(slot, [])
        kept = diff.kept.get(slot, [])
        summary: list[Part] = [(f"{slot:<15}", palette.key)]
        if kept:
            summary += [("kept ", palette.dim), (", ".join(kept), "")]
        elif not changes:
            summary += [(_empty_slot(slot, diff), palette.dim)]
        else:
            summary += [("nothing kept", palette.dim)]
        doc.line(*summary, indent=2, hang=15)
        for change in changes:
            _change_rows(doc, change)


def _empty_slot(slot: str, diff: PassDiff) -> str:
    """What a slot with no injection on either side says.

    Not "nothing": the conversation and the agent's own tools are in no slot, yet on the wire.
    """
    if slot == ACTIVE:
        return "nothing on either side"
    if slot == "tools" and diff.tools_same:
        return f"no injection on either side; offered on both calls: {', '.join(diff.tools_same)}"
    return "no injection on either side"


def _change_rows(doc: DocBuilder, change: Change) -> None:
    palette = doc.palette
    style = {
        "entered": palette.good,
        "left": palette.bad,
        "came-and-went": palette.warn,
        "kept-with-gap": palette.warn,
    }[change.change]
    flavor: list[Part] = [(f" ({change.flavor})", palette.dim)] if change.flavor else []
    words = {
        "entered": "entered",
        "left": "left",
        "came-and-went": "came and went between A and B",
        "kept-with-gap": "kept, but off the wire for a while",
    }[change.change]
    sign = f"{_SIGN[change.change]} "
    doc.line((sign, style), (change.id, palette.accent), *flavor, "  ", (words, style), indent=4)
    if change.change in ("entered", "left"):
        at = [f"at {change.label}: "] if change.label else []
        link_line(doc, _jump(change.line), *at, (change.why, ""), indent=8, hang=2)
        return
    if change.change == "came-and-went":
        link_line(doc, _jump(change.line), f"entered at {change.label}: ", (change.why, ""), indent=8, hang=2)
        link_line(
            doc,
            _jump(change.left_line),
            f"left at {change.left_label}: ",
            (change.why_left or "", ""),
            indent=8,
            hang=2,
        )
        return
    link_line(
        doc,
        _jump(change.left_line),
        f"left at {change.left_label}: ",
        (change.why_left or "", ""),
        indent=8,
        hang=2,
    )
    link_line(doc, _jump(change.line), (change.why, ""), indent=8, hang=2)


def _cursor_section(doc: DocBuilder, diff: PassDiff) -> None:
    palette = doc.palette
    a, b = diff.a.cursor, diff.b.cursor
    if a is None and b is None and not diff.cursor_steps:
        return
    doc.heading(
        "Cursor",
        "  ",
        (a or "(none)", palette.accent),
        " → ",
        (b or "(none)", palette.accent),
        ("   (unchanged)" if a == b and not diff.cursor_steps else "", palette.dim),
    )
    for step in diff.cursor_steps:
        strength = [(f" · {step.strength}", palette.dim)] if step.strength else []
        link_line(
            doc,
            _jump(step.line),
            (f"{step.label:<8}", palette.key),
            (step.from_skill or "(none)", ""),
            " → ",
            (step.to_skill or "(none)", palette.accent),
            "  by ",
            (step.by or "?", palette.key),
            *strength,
            indent=4,
        )


def _lease_section(doc: DocBuilder, diff: PassDiff) -> None:
    palette = doc.palette
    if not diff.leases:
        return
    doc.heading("Leases", ("  serving A or B, or granted or pruned between them", palette.dim))
    for note in diff.leases:
        served = {
            (True, True): "A and B",
            (True, False): "A only",
            (False, True): "B only",
            (False, False): "neither A nor B",
        }[(note.at_a, note.at_b)]
        link_line(
            doc,
            _jump(note.grant_line),
            (note.instruction_id, palette.accent),
            " ",
            (note.delivery_lease, palette.key),
            " granted by ",
            (note.granted, ""),
            ("  · served ", palette.dim),
            (served, palette.good if note.at_b else palette.dim),
            indent=2,
            hang=4,
        )
        if note.pruned:
            link_line(
                doc, _jump(note.prune_line), ("pruned ", palette.bad), (note.pruned, palette.bad), indent=6
            )
        elif note.granted_between and not note.at_b:
            doc.line(("not yet serving at B", palette.dim), indent=6)


def _map_section(doc: DocBuilder, diff: PassDiff) -> None:
    palette = doc.palette
    if not diff.maps:
        return
    doc.heading("Engagement", ("  each mounted map's standing at A and at B", palette.dim))
    for note in diff.maps:
        doc.line(
            ("map ", palette.key),
            (note.map_id, palette.accent),
            "  ",
            (note.at_a or "not recorded at A", palette.bad if (note.at_a or "").startswith("parked") else ""),
            "  →  ",
            (note.at_b or "not recorded at B", palette.bad if (note.at_b or "").startswith("parked") else ""),
            indent=2,
            hang=4,
        )
        for label, change, line in note.changes:
            link_line(
                doc,
                _jump(line),
                (f"{label:<8}", palette.key),
                (change, palette.bad if change == "parked" else palette.good),
                indent=6,
            )


def _request_section(doc: DocBuilder, diff: PassDiff) -> None:
    palette = doc.palette
    if not (diff.a.has_call and diff.b.has_call):
        return
    before, after = diff.messages_counts
    doc.heading("Requests", ("  the two LLM calls: conversation, tools offered, system prompt", palette.dim))
    doc.line(
        ("messages", palette.key),
        f"  {number(before)} → {number(after)}",
        (
            "   (only the ones in one request are listed)" if diff.messages else "   (the same conversation)",
            palette.dim,
        ),
        indent=2,
    )
    for message in diff.messages:
        sign, style = ("+ ", palette.good) if message.change == "entered" else ("− ", palette.bad)
        preview: list[Part] = []
        if message.text:
            preview = ["  ", (clip(message.text, 100), palette.dim)]
        link_line(
            doc,
            Jump(message.line, "calls") if message.line is not None else None,
            (sign, style),
            (message.what, ""),
            *preview,
            indent=4,
            hang=4,
        )
    _tools_offered(doc, diff)
    doc.line(
        ("system prompt", palette.key),
        (f"  {diff.segments_same} segment(s) the same", palette.dim),
        ("; segments added or removed by injection:" if diff.segments else "", palette.dim),
        indent=2,
    )
    for segment in diff.segments:
        sign, style = {
            "added": ("+ ", palette.good),
            "removed": ("− ", palette.bad),
            "changed": ("~ ", palette.warn),
        }[segment.change]
        who: list[Part] = [(segment.source, palette.key)]
        if segment.injection_id is not None:
            who += [" · ", (segment.injection_id, palette.accent)]
        side = "A" if segment.change == "removed" else "B"
        doc.line(
            (sign, style), f"[{segment.position} of {side}] ", *who, ("  " + segment.change, style), indent=4
        )
        if segment.change == "changed":
            for row in segment.diff:
                row_style = palette.dim
                if row.startswith(("+", "-")):
                    row_style = palette.good if row.startswith("+") else palette.bad
                doc.line((row, row_style), indent=8)
        else:
            doc.content(segment.text, indent=8, rows=3, style=palette.dim)


class DiffView(LinkDocument):
    """The pass diff: A (marked, or the pass before B) against B (the selected iteration)."""

    DEFAULT_CSS = """
    DiffView {
        border: round $panel-lighten-2;
        &:focus { border: round $accent; }
    }
    """

    def __init__(self, session: TraceSession, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.session = session
        """The trace."""
        self.mark: int | None = None
        """The timeline row marked as A (``None``: A is the pass before B)."""
        self.pair: tuple[int, int] | None = None
        """The rows compared, as chosen (A, B)."""
        self.diff: PassDiff | None = None
        """The diff on show."""
        self._shown: tuple[int | None, int | None, int] | None = None

    def set_mark(self, row: int | None) -> None:
        """Mark timeline row ``row`` as A (``None`` clears the mark)."""
        self.mark = row
        self._shown = None

    def previous_row(self, row: int) -> int | None:
        """The row of the pass before ``row`` in its run (the default A)."""
        rows = self.session.iterations
        if row <= 0 or row >= len(rows):
            return None
        run_id = rows[row].run_id
        for candidate in range(row - 1, -1, -1):
            if rows[candidate].run_id == run_id:
                return candidate
        return None

    def show(self, row: int | None, *, force: bool = False) -> None:
        """Compare A with B = timeline row ``row``."""
        rows = self.session.iterations
        a = self.mark if self.mark is not None and self.mark < len(rows) else None
        if a is None and row is not None:
            a = self.previous_row(row)
        version = (a, row, len(rows[row]) if row is not None and row < len(rows) else 0)
        if version == self._shown and not force:
            return
        same = self.pair == (a, row)
        self._shown = version
        self.pair = (a, row) if a is not None and row is not None else None
        self.rebuild(keep_scroll=same)

    def build(self) -> list[Block]:
        doc = DocBuilder(self.palette)
        rows = self.session.iterations
        missing = self.session.not_recorded("pass")
        if missing is not None and rows:
            doc.line(Text("Diff of two passes", style=self.palette.heading))
            doc.line((f"Passes are {missing}: there is no pass to compare.", self.palette.dim), indent=2)
            return doc.blocks
        if self.pair is None:
            if not rows:
                doc.line(("No iteration yet.", self.palette.dim))
            else:
                doc.line(Text("Diff of two passes", style=self.palette.heading))
                doc.line(
                    (
                        "Select B in the timeline; press m on another iteration to mark it as A (or the "
                        "palette's 'diff: iteration 3 vs 7'). The first pass of a run has no pass before it.",
                        self.palette.dim,
                    ),
                    indent=2,
                )
            return doc.blocks
        a, b = self.pair
        if a >= len(rows) or b >= len(rows):
            doc.line(("That iteration is not in the trace.", self.palette.bad))
            return doc.blocks
        self.diff = pass_diff(self.session, a, b)
        return diff_document(self.session, self.diff, self.palette, marked=self.mark is not None)


def _tools_offered(doc: DocBuilder, diff: PassDiff) -> None:
    """The tools of the two calls: those on both (named, so "same" is checkable), then those on one only."""
    palette = doc.palette
    if diff.tools_same:
        both = f"  on both calls: {', '.join(diff.tools_same)}"
    else:
        both = "  none on both calls" if diff.tools else "  none on either call"
    doc.line(("tools offered", palette.key), (both, palette.dim), indent=2)
    for tool in diff.tools:
        sign, style = ("+ ", palette.good) if tool.change == "entered" else ("− ", palette.bad)
        doc.line((sign, style), (tool.name, palette.accent), "  ", (tool.why, palette.dim), indent=4, hang=4)
