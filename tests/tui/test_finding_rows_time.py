"""The time layer's rows in the pass inspector (docs/honesty.md §12.6): the clock, each call's
window and a result that runs past ``now``, read from the rows the document draws."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from rich.console import Console

from fpdebug.trace.schema import CallWindowRow, ClockRow, FindingEvent, ResultRow
from fpdebug.tui.text import Palette
from fpdebug.tui.widgets.document import DocBuilder
from fpdebug.tui.widgets.finding_rows import finding_rows
from tests.conftest import T0

PARIS = ZoneInfo("Europe/Paris")


def drawn(finding: FindingEvent, width: int = 100) -> list[str]:
    doc = DocBuilder(Palette())
    finding_rows(doc, finding)
    console = Console(width=width)
    return [
        block.row(console, width, False, y).plain.rstrip()
        for block in doc.blocks
        for y in range(block.height(console, width, False))
    ]


def event(layer: str, rows: list[object]) -> FindingEvent:
    return FindingEvent(seq=1, ts=T0, run_id="r", turn=1, iteration=1, layer=layer, rows=rows)  # type: ignore[arg-type]


def test_the_clock_and_the_window_are_drawn_in_the_zone_they_were_read_in() -> None:
    clock = ClockRow(turn=1, now=datetime(2026, 3, 10, 10, 30, tzinfo=PARIS), zone="Europe/Paris")
    window = CallWindowRow(
        tool_call_id="c1",
        tool_name="sales",
        start=datetime(2026, 3, 1, tzinfo=PARIS),
        end=datetime(2026, 4, 1, tzinfo=PARIS),
        zone="Europe/Paris",
    )
    lines = drawn(event("inputs", [clock, window]))
    assert lines == [
        "  finding inputs layer: 2 row(s)",
        "    clock turn 1 · now 2026-03-10 10:30+01:00 Europe/Paris",
        "    window c1 sales · 2026-03-01 00:00+01:00 → 2026-04-01 00:00+02:00 Europe/Paris",
    ]


def test_a_result_past_now_says_so_and_one_within_it_does_not() -> None:
    past = ResultRow(batch_iteration=1, tool_call_id="c1", tool_name="sales", beyond_now=True)
    within = ResultRow(batch_iteration=1, tool_call_id="c2", tool_name="sales", beyond_now=False)
    lines = drawn(event("results", [past, within]))
    assert "    result c1 sales · batch of I1 · beyond now" in lines
    assert "    result c2 sales · batch of I1" in lines


def test_a_zone_name_from_the_trace_is_drawn_as_text_not_markup() -> None:
    clock = ClockRow(turn=1, now=T0, zone="[bold]Evil/Zone[/bold]")
    assert "[bold]Evil/Zone[/bold]" in drawn(event("inputs", [clock]))[1]
