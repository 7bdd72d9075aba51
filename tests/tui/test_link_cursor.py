"""The link cursor of the Diff and Backtrack views is drawn: its row's background differs from every other row's.

Read from the rendered screen (the compositor's strips and their styles), never from the widget's
``link`` index: issue 20 found the index moving while every row looked the same.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App

from fpdebug.tui.widgets.backtrack_pane import BacktrackPane
from fpdebug.tui.widgets.diff import DiffView
from tests.tui.helpers import opened, wait_for
from tests.tui.test_backtrack_pane import copy_sample
from tests.tui.traces import sample


def drawn_rows(app: App[object]) -> list[tuple[str, set[str]]]:
    """Every screen row: its text and the background colours of its non-blank cells."""
    rows: list[tuple[str, set[str]]] = []
    for strip in app.screen._compositor.render_strips():
        text = "".join(segment.text for segment in strip)
        backgrounds = {
            str(segment.style.bgcolor.name if segment.style and segment.style.bgcolor else None)
            for segment in strip
            if segment.text.strip()
        }
        rows.append((text, backgrounds))
    return rows


def row_backgrounds(app: App[object], text: str) -> set[str]:
    """The backgrounds of the first screen row containing ``text`` (empty when none does)."""
    return next((backgrounds for row, backgrounds in drawn_rows(app) if text in row), set())


def cursor_rows(app: App[object], link_text: str) -> list[str]:
    """The screen rows containing ``link_text`` drawn with a background no row without it has."""
    rows = drawn_rows(app)
    with_link = [(text, backgrounds) for text, backgrounds in rows if link_text in text]
    others = set().union(*(backgrounds for text, backgrounds in rows if link_text not in text))
    return [text for text, backgrounds in with_link if backgrounds - others]


@pytest.mark.anyio
class TestLinkCursorIsDrawn:
    async def test_diff_cursor_row_has_its_own_background(self) -> None:
        async with opened(sample("support")) as (pilot, screen):
            await pilot.press(
                "right_square_bracket", "m", "right_square_bracket", "right_square_bracket", "6"
            )
            assert await wait_for(pilot, lambda: screen.view == "diff")
            await pilot.pause()
            await pilot.press("j")
            await pilot.pause()
            view = screen.query_one(DiffView)
            first = view.link_texts()[0].strip()
            marked = cursor_rows(pilot.app, first[:40])
            assert marked, f"the row {first!r} is not drawn differently from the others"
            await pilot.press("j")
            await pilot.pause()
            second = view.link_texts()[1].strip()
            assert cursor_rows(pilot.app, second[:40])
            assert not cursor_rows(pilot.app, first[:40]), "the cursor left a highlight behind"

    async def test_backtrack_cursor_row_has_its_own_background(self, tmp_path: Path) -> None:
        async with opened(copy_sample("planted-fact", tmp_path)) as (pilot, screen):
            await pilot.press("7")
            await pilot.pause()
            pane = screen.query_one(BacktrackPane)
            assert await wait_for(pilot, lambda: pane.report is not None)
            pane.document_view.focus()
            await pilot.press("j")
            await pilot.pause()
            first = pane.document_view.link_texts()[0].strip()
            assert cursor_rows(pilot.app, first[:40]), f"the row {first!r} is not highlighted"
