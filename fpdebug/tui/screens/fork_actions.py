"""What ``F`` (fork the selected pass) and ``L`` (the Ledger view) open from the trace screen.

Kept apart from :mod:`fpdebug.tui.screens.trace_screen` (which routes keys) and imported when a key
is pressed: neither the fork nor the ledger is needed for the first screen.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fpdebug.tui.screens.text_screen import Line, TextScreen
    from fpdebug.tui.screens.trace_screen import TraceScreen

__all__ = ["ledger_rows", "ledger_screen", "open_fork", "open_ledger", "trace_path"]


def trace_path(screen: TraceScreen) -> Path:
    """The trace the user opened (for an imported recording, the file named, not the cached import)."""
    source = getattr(screen.app, "source", None)
    path = getattr(source, "path", None)
    return Path(path) if path is not None else screen.session.reader.path


def open_fork(screen: TraceScreen) -> None:
    """Open the fork edit screen on the selected pass, or say why there is none to fork."""
    from fpdebug.tui.screens.fork_screen import ForkScreen

    session = screen.session
    if not 0 <= screen.selected < len(session.iterations):
        screen.app.bell()
        return
    iteration = session.iterations[screen.selected]
    if not iteration.llm_lines:
        label = session.label(iteration)
        screen.app.notify(f"{label} made no LLM call: there is no pass to fork at.", timeout=3)
        return
    source = getattr(screen.app, "source", None)
    module = getattr(source, "rerun_module", None)
    screen.app.push_screen(
        ForkScreen(
            trace_path(screen),
            at_pass=iteration.number,
            turn=iteration.turn,
            run_id=iteration.run_id,
            module=module if isinstance(module, str) else None,
            force_module=getattr(source, "force_module", False) is True,
        )
    )


def ledger_rows(folder: Path) -> list[Line]:
    """``fpdebug ledger FOLDER``'s lines, each table row split before its prose column (cost, used
    via, outcomes) so that a narrow screen puts the prose under the numbers."""
    from fpdebug.backtrack.ledger import build_ledger
    from fpdebug.views.ledger_text import ledger_lines

    lines = ledger_lines(build_ledger([str(folder)]))
    if len(lines) < 2:
        return list(lines)
    column = lines[1].find("cost /")
    rows: list[Line] = [lines[0]]
    for line in lines[1:]:
        table = (
            column > 0 and line.startswith("  ") and len(line) > column and line[column - 2 : column] == "  "
        )
        rows.append((line[:column], line[column:]) if table else line)
    return rows


def ledger_screen(folder: Path) -> TextScreen:
    """The Ledger view over every trace of ``folder`` (built in the screen's worker thread)."""
    from fpdebug.tui.screens.text_screen import TextScreen

    return TextScreen(
        f"Ledger · every trace of {folder.name}/ (as fpdebug ledger prints it)",
        lambda: ledger_rows(folder),
        busy=f"metering every trace of {folder.name}/…",
    )


def open_ledger(screen: TraceScreen) -> None:
    """Open the Ledger view of the trace's folder."""
    screen.app.push_screen(ledger_screen(trace_path(screen).resolve().parent))
