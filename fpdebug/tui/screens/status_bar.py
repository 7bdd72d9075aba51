"""TraceStatusBar: the trace screen's status line (mode, loading, problems, filter, new rows, run state).

The bar reads the screen's state when the screen asks it to (:meth:`TraceStatusBar.show_status`);
it holds no state of its own beyond the text on show.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from fpdebug.tui.text import Palette, counted, human_bytes, number, plain
from fpdebug.tui.widgets.bars import StatusBar
from fpdebug.tui.widgets.document import DocumentView
from fpdebug.tui.widgets.row_list import RowList

if TYPE_CHECKING:
    from fpdebug.tui.screens.trace_screen import TraceScreen

__all__ = ["TraceStatusBar", "status_text"]


class TraceStatusBar(StatusBar):
    """The status line of a trace screen."""

    def show_status(self, screen: TraceScreen, palette: Palette) -> None:
        """Show how ``screen`` stands now (repaints only when the text changed)."""
        self.show(status_text(screen, palette))


def status_text(screen: TraceScreen, palette: Palette) -> Text:
    """The status line of ``screen``."""
    text = Text(no_wrap=True, end="")
    _mode(text, screen, palette)
    text.append("  ")
    _progress(text, screen, palette)
    document = screen.focused_document()
    target = screen.current_list()
    if document is not None and document.finder.active:
        _search(text, document, palette)
    elif target is not None:
        _filter(text, target, palette)
    if screen.zoom.zoomed:
        text.append("  zoomed (z restores)", palette.accent)
    if screen.new_rows:
        text.append(f"  +{number(screen.new_rows)} new (G to jump)", palette.good)
    text.append_text(screen.run_state_text(palette))
    if screen.error:
        text.append("  ")
        text.append_text(plain(screen.error, palette.bad, limit=120))
    return text


def _mode(text: Text, screen: TraceScreen, palette: Palette) -> None:
    """``replay``, ``follow ●``, ``follow ‖ paused``, ``drive ○ not following``…"""
    mode = {"replay": "replay", "follow": "follow", "drive": "drive"}[screen.mode]
    if screen.replaced:
        text.append(f"{mode} ✗ the file was replaced (reopen it to read the new one)", palette.bad)
        return
    if screen.mode != "replay":
        stopped = " ‖ paused" if screen.mode == "follow" else " ○ not following"
        mode += " ●" if screen.following else stopped
    text.append(mode, palette.accent)


def _progress(text: Text, screen: TraceScreen, palette: Palette) -> None:
    """How far the load is, the counts of lines and iterations, and the invalid and opaque lines."""
    session = screen.session
    if not session.index_done:
        share = session.scanned / session.total if session.total else 1.0
        text.append(f"indexing {share:.0%} of {human_bytes(session.total)}", palette.warn)
    elif not screen.loaded:
        share = session.model.lines_fed / max(session.lines, 1)
        text.append(f"reading {share:.0%} · {counted(session.lines, 'line')}", palette.warn)
    else:
        text.append(f"{counted(session.lines, 'line')} · {counted(len(session.iterations), 'iteration')}")
    bad = session.invalid_count
    opaque = len(session.model.opaque_lines)
    if bad:
        text.append(f" · {number(bad)} invalid", palette.bad)
    if screen.loaded and not session.check_done:
        share = session.checked / max(session.model.lines_fed, 1)
        text.append(f" · checking {share:.0%}", palette.warn)
    if opaque:
        text.append(f" · {number(opaque)} opaque", palette.warn)
    torn = session.torn
    if torn is not None and torn.line == session.lines:
        text.append(f" · torn tail ({counted(torn.length, 'byte')} after the last newline)", palette.warn)


def _filter(text: Text, target: RowList, palette: Palette) -> None:
    """The current view's filter: its query, its matches so far, and the cursor's place among them."""
    row_filter = target.row_filter
    if row_filter is None:
        return
    found = len(row_filter.rows)
    text.append("  filter ", palette.key)
    text.append_text(plain(row_filter.query.text, palette.accent, limit=40))
    text.append(f" {number(found)} match{'es' if found != 1 else ''}")
    if not row_filter.done:
        text.append("…", palette.warn)
    position = target.position_of(target.cursor)
    if position is not None and found:
        text.append(f" ({position + 1}/{number(found)})", palette.dim)


def _search(text: Text, document: DocumentView, palette: Palette) -> None:
    """The focused document's search: its query, its matches and the current one's place."""
    query, found, place = document.search_status()
    text.append("  search ", palette.key)
    text.append_text(plain(query.strip(), palette.accent, limit=40))
    if not found:
        text.append(
            " no match (e expands long contents)" if not document.expanded else " no match", palette.warn
        )
        return
    text.append(f" {number(found)} match{'es' if found != 1 else ''}")
    if place:
        text.append(f" ({place}/{number(found)})", palette.dim)
