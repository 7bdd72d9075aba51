"""Keys that never surprise (issue 20): ``ctrl+d``/``ctrl+u`` page documents as they page lists, and the
breakpoints menu moves with ``j``/``k`` like every other list. Read from the drawn screen.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tui.helpers import SIZE, opened, screen_text, wait_for
from tests.tui.test_drive import LONG, make_app, paused_at
from tests.tui.traces import sample


def _calls_top(text: str) -> str:
    """The first row of the Calls document as drawn (below the tab bar and the box's top border)."""
    rows = text.splitlines()
    border = next(i for i, row in enumerate(rows) if row.startswith("╭"))
    return rows[border + 1]


@pytest.mark.anyio
class TestKeys:
    async def test_ctrl_d_and_ctrl_u_page_a_document(self) -> None:
        async with opened(sample("support"), size=(120, 24)) as (
            pilot,
            _screen,
        ):  # a call longer than the screen
            await pilot.press("3")
            assert await wait_for(pilot, lambda: "│ Call 1 · " in _calls_top(screen_text(pilot.app)))
            top = _calls_top(screen_text(pilot.app))
            await pilot.press("ctrl+d")
            assert await wait_for(pilot, lambda: _calls_top(screen_text(pilot.app)) != top), (
                "ctrl+d did not page"
            )
            await pilot.press("ctrl+u")
            assert await wait_for(pilot, lambda: _calls_top(screen_text(pilot.app)) == top), (
                "ctrl+u did not page"
            )

    async def test_j_and_k_move_in_the_breakpoints_menu(self, tmp_path: Path) -> None:
        app, driver = make_app(tmp_path, "zone-trap")
        async with app.run_test(size=SIZE) as pilot:
            await paused_at(pilot, app, driver, lambda kind, it: kind == "pass")
            await pilot.press("b")
            assert await wait_for(pilot, lambda: "Breakpoints · 0 set" in screen_text(app), timeout=LONG)
            await pilot.press("j", "space")
            assert await wait_for(pilot, lambda: "Breakpoints · 1 set" in screen_text(app))
            # k moved to another entry: space sets a second breakpoint instead of clearing the first
            await pilot.press("k", "space")
            assert await wait_for(pilot, lambda: "Breakpoints · 2 set" in screen_text(app))
