"""A layout that uses the screen (issue 20): panes sized to their content, the zoom key, the
legend, the Gantt's width, prose that never wraps mid-word, a status line that wraps before it cuts,
and a footer that keeps ``s``, ``b``, ``q`` and ``?`` last. Everything is read from what is drawn."""

from __future__ import annotations

import itertools
from typing import ClassVar

import pytest
from rich.console import Console
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.pilot import Pilot

from fpdebug.tui.screens.trace_screen import TraceScreen
from fpdebug.tui.widgets.bars import KeysFooter, StatusBar
from fpdebug.tui.widgets.document import ColumnsBlock, ContentBlock
from tests.tui.helpers import back_to_the_first_pass, opened, run_checks, screen_text, wait_for
from tests.tui.traces import sample

pytestmark = pytest.mark.anyio


def _pane_edge(text: str) -> int:
    """The column where the timeline pane's border ends (its top-right corner ``╮``)."""
    for row in text.splitlines():
        if "╮╭" in row:
            return row.index("╮╭")
    raise AssertionError("no two panes side by side:\n" + text)


# ----------------------------------------------------------------------------------------------
# Checks that share a session: the support sample opened at one size serves every check of that size
# (starting the app is most of a pilot test's time); ``run_checks`` names the one that failed.


async def the_timeline_takes_what_its_rows_need_at_200_columns(
    pilot: Pilot[object], _screen: TraceScreen, **_: object
) -> None:
    assert await wait_for(pilot, lambda: _pane_edge(screen_text(pilot.app)) < 70)
    text = screen_text(pilot.app)
    edge = _pane_edge(text)
    # 45% would be 90 columns; the rows (words for badges) need about 60.
    assert 55 <= edge < 70
    row = next(line for line in text.splitlines() if "T1·I3" in line)
    assert "prune" in row[:edge]  # the badges are still words: nothing was squeezed
    assert "Iteration 1" in next(line for line in text.splitlines() if "Iteration" in line)[edge:]


async def the_iterations_share_the_width(pilot: Pilot[object], _screen: TraceScreen, **_: object) -> None:
    await pilot.press("2")
    assert await wait_for(pilot, lambda: " I5 " in screen_text(pilot.app))
    axis = next(row for row in screen_text(pilot.app).splitlines() if "granted by" in row)
    starts = [axis.index(f"I{number} ") for number in range(1, 6)]
    steps = {b - a for a, b in itertools.pairwise(starts)}
    assert len(steps) == 1 and steps.pop() >= 20  # was 4 cells per iteration at any width


async def the_timeline_keeps_40_columns_at_80(
    pilot: Pilot[object], _screen: TraceScreen, **_: object
) -> None:
    text = screen_text(pilot.app)
    assert _pane_edge(text) == 39
    assert any("T1·I3" in row and row.split("││")[0].rstrip(" │").endswith("x") for row in text.splitlines())


async def the_first_screen_names_the_columns_and_the_letters_at_80_columns(
    pilot: Pilot[object], _screen: TraceScreen, **_: object
) -> None:
    assert await wait_for(pilot, lambda: "x prune" in screen_text(pilot.app))
    legend = next(row for row in screen_text(pilot.app).splitlines() if "act active" in row)
    for words in ("ls leases", "pk parked", "tl tools", "g grant", "x prune"):
        assert words in legend


async def z_gives_the_focused_pane_the_screen_and_z_again_gives_it_back(
    pilot: Pilot[object], _screen: TraceScreen, **_: object
) -> None:
    await pilot.press("j", "j")
    before = screen_text(pilot.app)
    assert "Iteration 3" in before and "fpdebug support" in before
    await pilot.press("z")
    assert await wait_for(pilot, lambda: "Iteration 3" not in screen_text(pilot.app))
    zoomed = screen_text(pilot.app).splitlines()
    assert "fpdebug support" not in zoomed[0] and "1 Passes" not in "\n".join(zoomed[:3])
    assert zoomed[0].startswith("╭") and zoomed[0].endswith("╮")  # one pane, full width
    assert any(row.startswith("│iter ") and "badges" in row for row in zoomed)  # words, not letters
    assert any(row.startswith("│T1·I3") for row in zoomed)
    assert any("zoomed" in row and "z restores" in row for row in zoomed[-3:])
    await pilot.press("z")
    assert await wait_for(pilot, lambda: "Iteration 3" in screen_text(pilot.app))
    assert "fpdebug support" in screen_text(pilot.app).splitlines()[0]


async def z_on_the_inspector_hides_the_timeline_and_a_view_key_restores(
    pilot: Pilot[object], _screen: TraceScreen, **_: object
) -> None:
    await pilot.press("j", "j", "tab", "z")
    assert await wait_for(pilot, lambda: "T1·I1" not in screen_text(pilot.app))
    zoomed = screen_text(pilot.app)
    assert "Iteration 3" in zoomed and "lease until-skill-exit granted by check_policy" in zoomed
    assert zoomed.splitlines()[0].startswith("╭") and zoomed.splitlines()[0].endswith("╮")
    await pilot.press("2", "tab", "z")  # another view restores; its detail zooms to the screen
    assert await wait_for(pilot, lambda: "instruction" not in screen_text(pilot.app))
    detail = screen_text(pilot.app).splitlines()
    assert "Lease refund-policy" in detail[1] and detail[-3].startswith("╰")
    await pilot.press("z", "2")
    assert await wait_for(pilot, lambda: "2 Leases" in screen_text(pilot.app))
    assert "refund-policy" in screen_text(pilot.app)


async def the_reason_reads_on_one_or_two_rows_at_120_columns(
    pilot: Pilot[object], _screen: TraceScreen, **_: object
) -> None:
    await pilot.press("j", "j")
    rows = screen_text(pilot.app).splitlines()
    at = next(i for i, row in enumerate(rows) if " 2 refund-policy instructions system-prompt" in row)
    reason = [row.split("││")[1] for row in rows[at + 1 : at + 4]]
    assert "lease until-skill-exit granted by check_policy (call" in reason[0]
    assert "call_2, iteration 2), tenant billing" in reason[1]
    assert reason[2].split("│")[0].strip().startswith("3 wire-format")


async def line_and_seq_have_titles_and_an_equal_seq_is_not_printed_twice(
    pilot: Pilot[object], _screen: TraceScreen, **_: object
) -> None:
    await pilot.press("j", "j", "4")
    assert await wait_for(pilot, lambda: "lease_prune" in screen_text(pilot.app))
    rows = screen_text(pilot.app).splitlines()
    header = next(row for row in rows if "line" in row and "seq" in row and "kind" in row)
    assert header.index("kind") == next(row for row in rows if "cursor_move" in row).index("cursor_move")
    row = next(row for row in rows if " cursor_move " in row and "T1·I3" in row)
    assert row.split()[1:3] == ["14", "="]


class TestSharedSessions:
    async def test_200_columns_pane_widths_and_the_gantt(self) -> None:
        async with opened(sample("support"), size=(200, 50)) as (pilot, screen):
            await run_checks(
                pilot,
                screen,
                the_timeline_takes_what_its_rows_need_at_200_columns,  # first: the launch screen
                the_iterations_share_the_width,
            )

    async def test_80_columns_the_first_screen(self) -> None:
        async with opened(sample("support"), size=(80, 24)) as (pilot, screen):
            await run_checks(
                pilot,
                screen,
                the_timeline_keeps_40_columns_at_80,  # neither presses a key: both read the launch screen
                the_first_screen_names_the_columns_and_the_letters_at_80_columns,
            )

    async def test_120_columns_zoom_reasons_and_events(self) -> None:
        async with opened(sample("support"), size=(120, 35)) as (pilot, screen):
            await run_checks(
                pilot,
                screen,
                z_gives_the_focused_pane_the_screen_and_z_again_gives_it_back,  # ends unzoomed, on I3
                back_to_the_first_pass,
                z_on_the_inspector_hides_the_timeline_and_a_view_key_restores,  # ends unzoomed
                back_to_the_first_pass,
                the_reason_reads_on_one_or_two_rows_at_120_columns,
                back_to_the_first_pass,
                line_and_seq_have_titles_and_an_equal_seq_is_not_printed_twice,
            )


class TestLegend:
    async def test_wide_badges_need_no_letters_only_the_columns(self) -> None:
        async with opened(sample("zone-trap"), size=(200, 50)) as (pilot, _screen):
            text = screen_text(pilot.app)
            legend = next(row for row in text.splitlines() if "act active injections" in row)
            assert "ls leases served · pk maps parked · tl tool calls" in legend and "│" not in legend


class TestWhyItRode:
    def test_the_columns_keep_the_prose_beside_them_when_it_has_room(self) -> None:
        console = Console(width=200)
        block = ColumnsBlock(Text("1 tone  steering  "), Text("always, because the rule fires"), indent=1)
        assert block.height(console, 70, False) == 1
        assert block.row(console, 70, False, 0).plain == " 1 tone  steering  always, because the rule fires"
        assert block.height(console, 40, False) == 2
        assert [block.row(console, 40, False, y).plain for y in range(2)] == [
            " 1 tone  steering",
            "     always, because the rule fires",
        ]


class TestNoMidWordWrap:
    @pytest.mark.parametrize("dot", [".", "·"])  # ASCII and not: both break between words
    def test_content_breaks_after_the_last_space_that_fits(self, dot: str) -> None:
        console = Console(width=200)
        text = f"engagement: PARKED {dot} reason: no recent evidence for this turn {dot} re-engage: available"
        block = ContentBlock(text, indent=0)
        rows = [block.row(console, 25, False, y).plain for y in range(block.height(console, 25, False))]
        assert all(len(row) <= 25 for row in rows)
        words = text.split(" ")
        assert [word for row in rows for word in row.split(" ") if word] == words
        assert rows[-1] == "re-engage: available"  # not "… re" and "-engage: available"

    def test_a_word_longer_than_the_row_is_still_cut(self) -> None:
        console = Console(width=200)
        block = ContentBlock("x" * 25 + " tail", indent=0)
        rows = [block.row(console, 10, False, y).plain for y in range(block.height(console, 10, False))]
        assert rows == ["x" * 10, "x" * 10, "x" * 5 + " tail"]

    async def test_the_park_card_in_the_calls_view_at_80_columns(self) -> None:
        async with opened(sample("zone-trap"), size=(80, 40)) as (pilot, _screen):
            await pilot.press("j", "j", "j", "3")
            assert await wait_for(pilot, lambda: "Map status" in screen_text(pilot.app))
            rows = [row.strip("│ ▁▂▃▄▅▆▇█") for row in screen_text(pilot.app).splitlines()]
            assert any(row.startswith("re-engage: available") for row in rows)
            assert not any(row.endswith(" re") or row.startswith("-engage") for row in rows)


class _Bars(App[None]):
    """A status bar and a key bar as a driven run at a breakpoint has them (many keys, long status)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left_square_bracket", "noop", "Prev iter", key_display="["),
        Binding("right_square_bracket", "noop", "Next iter", key_display="]"),
        Binding("slash", "noop", "Search", key_display="/"),
        Binding("e", "noop", "Expand"),
        Binding("space", "noop", "Pause/Go"),
        Binding("s", "run_step", "Step"),
        Binding("b", "breakpoints", "Breakpoints"),
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Keys", key_display="?"),
    ]

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        yield KeysFooter()

    def action_noop(self) -> None:
        """Nothing."""

    def action_run_step(self) -> None:
        """Nothing."""

    def action_breakpoints(self) -> None:
        """Nothing."""

    def action_help(self) -> None:
        """Nothing."""


class TestBars:
    async def test_a_breakpoint_hit_keeps_the_lease_and_spent_and_the_key_bar_keeps_s_b_q_help(self) -> None:
        app = _Bars()
        status = (
            "drive ●  16 lines · 3 iterations  ● breakpoint lease_prune hit at T1·I3 lease_prune (line 15)"
            " · at evaluate: wire-format (spent) · 1 breakpoint"
        )
        async with app.run_test(size=(80, 24)) as pilot:
            app.query_one(StatusBar).show(Text(status, no_wrap=True, end=""))
            assert await wait_for(pilot, lambda: "(spent)" in screen_text(app) and "Quit" in screen_text(app))
            rows = screen_text(app).splitlines()
            assert "breakpoint lease_prune" in rows[0] and "wire-format (spent)" in rows[1]
            footer = rows[-1]
            for key in ("s Step", "b Breakpoints", "q Quit", "? Keys"):
                assert key in footer, footer
            app.query_one(StatusBar).show(Text("replay  29 lines", no_wrap=True, end=""))
            assert await wait_for(pilot, lambda: "replay" in screen_text(app).splitlines()[0])
            assert "(spent)" not in screen_text(app)  # one row again: the bar shrank back

    async def test_a_status_longer_than_two_rows_is_cut_with_an_ellipsis(self) -> None:
        app = _Bars()
        async with app.run_test(size=(40, 10)) as pilot:
            app.query_one(StatusBar).show(Text(" ".join(["word"] * 40), no_wrap=True, end=""))
            assert await wait_for(pilot, lambda: "…" in screen_text(app))
            rows = screen_text(app).splitlines()
            assert rows[0].strip().startswith("word") and rows[1].rstrip().endswith("…")
            assert "word" not in rows[2]
