"""LeaseGantt and LeaseDetail: every instruction lease from grant to prune, over the iterations.

One row per lease (docs/context-model.md §4.3): what it serves and how long (``next-call`` / ``until-skill-exit``),
who granted it (tool, call, iteration), then a bar over the timeline's iterations: ``◆`` the batch
that granted it, ``█`` each pass it served, ``✕`` the pass whose sweep pruned it (``█✕`` when it
served that pass too, as a spent ``next-call`` lease does), ``─`` alive in between; and how it ended (``spent``, ``tenure-ended``) or ``alive``. The bars show a window of the
iterations around the selected one, whose column is highlighted.
"""

from __future__ import annotations

from collections.abc import Hashable

from rich.style import Style
from rich.text import Text
from textual.cache import LRUCache

from fpdebug.trace.model import LeaseLifetime
from fpdebug.tui.text import Palette, clip, plain
from fpdebug.tui.widgets.document import Block, DocBuilder, DocumentView
from fpdebug.tui.widgets.row_list import RowList
from fpdebug.views.session import TraceSession

__all__ = ["LeaseDetail", "LeaseGantt", "lease_document"]

_ID, _KIND, _GRANT, _STATE = 16, 5, 20, 22
_LABEL = _ID + _KIND + _GRANT + 3
_MEANING = {
    "next-call": "serves exactly the pass right after the batch that granted it, then the sweep of that "
    "same pass prunes it (spent).",
    "until-skill-exit": "serves every pass while its tenant skill holds the cursor; the first pass with "
    "another tenant prunes it for good (tenure-ended), so re-entering the skill "
    "revives nothing.",
}


class _Span:
    """Where a lease's events fall on the timeline's rows."""

    __slots__ = ("grant", "prune", "served")

    def __init__(self, grant: int | None, served: list[int], prune: int | None) -> None:
        self.grant = grant
        self.served = served
        self.prune = prune


class LeaseGantt(RowList):
    """Every lease of the trace, as a Gantt over the iterations."""

    DEFAULT_CSS = """
    LeaseGantt > .lease-gantt--column { background: $accent 25%; }
    """

    COMPONENT_CLASSES = RowList.COMPONENT_CLASSES | {"lease-gantt--column"}

    def __init__(self, session: TraceSession, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.session = session
        """The trace."""
        self.focus_row = 0
        """The selected iteration's timeline row (its column is highlighted)."""
        self._spans: LRUCache[Hashable, _Span] = LRUCache(4096)

    def set_focus_row(self, row: int) -> None:
        """Centre the bars on timeline row ``row``."""
        if row != self.focus_row:
            self.focus_row = row
            self.invalidate()

    def total_rows(self) -> int:
        return len(self.session.leases)

    def row_version(self, row: int) -> Hashable:
        lease = self.session.leases[row]
        return (len(lease.served), lease.prune_line, self.focus_row, len(self.session.iterations))

    def window(self, width: int) -> tuple[int, int, int]:
        """``(first timeline row, iterations shown, cells per iteration)`` of the bars at this width."""
        cells = max(width - _LABEL - _STATE - 2, 4)
        rows = len(self.session.iterations)
        # The iterations share the width: few get wide cells, many get one cell each (and a
        # window of them around the selected one is shown).
        cell = max(cells // max(rows, 1), 1)
        columns = cells // cell
        start = max(min(self.focus_row - columns // 2, rows - columns), 0)
        return start, columns, cell

    def span(self, index: int) -> _Span:
        """Where lease ``index`` was granted, served and pruned, as timeline rows."""
        lease = self.session.leases[index]
        key = (index, len(lease.served), lease.prune_line)
        found = self._spans.get(key)
        if found is None:
            row_of = self.session.row_of_pass
            served = [
                row
                for turn, number in lease.served
                if (row := row_of(lease.run_id, turn, number)) is not None
            ]
            found = self._spans[key] = _Span(
                row_of(lease.run_id, lease.turn, lease.granted_iteration),
                served,
                row_of(lease.run_id, lease.pruned_turn, lease.pruned_iteration),
            )
        return found

    def axis_text(self, width: int) -> Text:
        """The column titles and the iteration axis above the bars."""
        start, columns, cell = self.window(width)
        palette = self.palette
        head = f"{'instruction':<{_ID}} {'lease':<{_KIND}} {'granted by':<{_GRANT}} "
        chars = [" "] * (columns * cell)
        iterations = self.session.iterations
        every = 1 if cell >= 3 else 5
        for position in range(min(columns, len(iterations) - start)):
            iteration = iterations[start + position]
            label = f"I{iteration.number}"
            at = position * cell
            if (
                (iteration.number % every == 0 or iteration.number == 1)
                and at + len(label) <= len(chars)
                and all(char == " " for char in chars[max(at - 1, 0) : at + len(label)])
            ):
                chars[at : at + len(label)] = list(label)
        text = Text(head, style=palette.heading, no_wrap=True, end="")
        axis = Text("".join(chars), style=palette.dim, end="")
        focus = self.focus_row - start
        if 0 <= focus < columns:
            axis.stylize(
                self.get_component_rich_style("lease-gantt--column", partial=True),
                focus * cell,
                focus * cell + cell,
            )
        text.append("│", palette.dim)
        text.append_text(axis)
        text.append("│ ", palette.dim)
        text.append("ended", palette.heading)
        return text

    def render_row(self, row: int, width: int) -> Text:
        palette = self.palette
        lease = self.session.leases[row]
        span = self.span(row)
        kind = "next" if lease.delivery_lease == "next-call" else "until"
        grant = f"{lease.tool_name}@I{lease.granted_iteration}"
        text = Text(no_wrap=True, end="")
        text.append_text(plain(f"{clip(lease.instruction_id, _ID):<{_ID}} ", palette.accent))
        text.append(f"{kind:<{_KIND}} ", palette.key)
        text.append_text(plain(f"{clip(grant, _GRANT):<{_GRANT}} "))
        start, columns, cell = self.window(width)
        text.append("│", palette.dim)
        text.append_text(self._bar(span, start, columns, cell, palette))
        text.append("│ ", palette.dim)
        text.append_text(self._ending(lease, palette))
        return text

    def _bar(self, span: _Span, start: int, columns: int, cell: int, palette: Palette) -> Text:
        end_of_life = span.prune if span.prune is not None else len(self.session.iterations) - 1
        first = span.grant if span.grant is not None else (span.served[0] if span.served else end_of_life)
        served = set(span.served)
        column_style = self.get_component_rich_style("lease-gantt--column", partial=True)
        bar = Text(end="")
        for position in range(columns):
            row = start + position
            style: Style = palette.dim
            if row == span.grant:
                char, style = "◆", palette.accent
            elif row in served and row == span.prune:
                # Served, then pruned by the same pass's sweep (how a next-call lease is spent,
                # docs/context-model.md §4.3): the cell shows both marks; a one-column cell shows the prune.
                focus = column_style if row == self.focus_row else Style()
                if cell > 1:
                    bar.append("█" * (cell - 1), palette.good + focus)
                bar.append("✕", palette.bad + focus)
                continue
            elif row in served:
                char, style = "█", palette.good
            elif row == span.prune:
                char, style = "✕", palette.bad
            elif first < row < end_of_life:
                char = "─"
            elif row == end_of_life and span.prune is None and first <= row:
                char = "→"
            else:
                char = " "
            if row == self.focus_row:
                style = style + column_style
            if cell > 1:
                # A wide cell: a served pass fills it; a point event (grant, prune) is drawn once;
                # the last character joins the alive stretch to the next cell.
                joined = "─" if first <= row < end_of_life else " "
                body = char * (cell - 1) if char in ("█", "─") else char + joined * (cell - 2)
                char = body + joined
            bar.append(char, style)
        return bar

    def _ending(self, lease: LeaseLifetime, palette: Palette) -> Text:
        if lease.prune_reason is None:
            return Text("alive", style=palette.good, end="")
        where = f"T{lease.pruned_turn}·I{lease.pruned_iteration}"
        return plain(f"{lease.prune_reason} {where}", palette.bad)


def lease_document(session: TraceSession, lease: LeaseLifetime, palette: Palette) -> list[Block]:
    """Everything known about one lease.

    Args:
        session: The trace.
        lease: The lease.
        palette: Styles.
    """
    doc = DocBuilder(palette)
    doc.line(
        Text("Lease ", style=palette.heading),
        (lease.instruction_id, palette.accent),
        " · ",
        (lease.delivery_lease, palette.key),
        " · run ",
        (lease.run_id, palette.dim),
    )
    tenant = lease.tenant if lease.tenant is not None else "(none: granted without a tenant)"
    grant_line = (
        f"   line {lease.grant_line}" if lease.grant_line is not None else "   (no lease_grant record)"
    )
    doc.fact(
        "granted",
        "by ",
        (lease.tool_name, palette.accent),
        " (call ",
        (lease.tool_call_id or "?", ""),
        f") in the batch of T{lease.turn if lease.turn is not None else '?'}·I{lease.granted_iteration}",
        " · tenant ",
        (tenant, ""),
        (grant_line, palette.dim),
    )
    served = ", ".join(f"T{turn}·I{number}" for turn, number in lease.served)
    doc.fact(
        "served",
        (served or "no pass yet", palette.good if served else palette.dim),
        (f"   {len(lease.served)} pass(es)", palette.dim),
    )
    if lease.prune_reason is None:
        doc.fact("ended", ("alive", palette.good), " — still in the lease record")
    else:
        site = "the pass's tenure sweep" if lease.prune_site == "evaluate" else "the prune beside a grant"
        doc.fact(
            "ended",
            (lease.prune_reason, palette.bad),
            f" at T{lease.pruned_turn}·I{lease.pruned_iteration}",
            f" by {lease.prune_site} ({site}), tenant compared: ",
            (lease.prune_tenant if lease.prune_tenant is not None else "(none)", ""),
            (f"   line {lease.prune_line}", palette.dim),
        )
    meaning = _MEANING.get(lease.delivery_lease)
    if meaning:
        doc.fact("meaning", (f"{lease.delivery_lease} {meaning}", palette.dim))
    return doc.blocks


class LeaseDetail(DocumentView):
    """The selected lease in full."""

    def __init__(self, session: TraceSession, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.session = session
        """The trace."""
        self.index: int | None = None
        """The lease row shown."""
        self._shown: Hashable = None

    def show(self, index: int | None) -> None:
        """Show lease row ``index``."""
        version = None
        if index is not None and index < len(self.session.leases):
            lease = self.session.leases[index]
            version = (index, len(lease.served), lease.prune_line)
        if version == self._shown and index == self.index and self.blocks:
            return
        self.index, self._shown = index, version
        self.rebuild()

    def build(self) -> list[Block]:
        if self.index is None or self.index >= len(self.session.leases):
            doc = DocBuilder(self.palette)
            missing = self.session.not_recorded("lease_grant")
            if missing is not None and not self.session.leases:
                doc.line(
                    (f"Leases {missing}: its runs' leases, if any, are not in this trace.", self.palette.dim)
                )
                return doc.blocks
            doc.line(
                (
                    "No lease in this trace yet: a tool grants one with a require-instruction effect.",
                    self.palette.dim,
                )
            )
            return doc.blocks
        return lease_document(self.session, self.session.leases[self.index], self.palette)
