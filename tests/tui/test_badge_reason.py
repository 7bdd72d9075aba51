"""Jump to the reason (issue 20): ``w`` on the selected iteration scrolls the pass inspector to the
row that explains its badge, highlighted, and ``w`` again steps to the row of its next badge.

Read from the drawn screen: a row is highlighted when its cells carry a background that a plain row
of the inspector (a section heading) does not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tui.helpers import opened, screen_text, wait_for
from tests.tui.test_link_cursor import row_backgrounds
from tests.tui.traces import sample, write_support_run

PLAIN = "Tool batch"
"""A heading of the inspector, never highlighted by ``w``."""


@pytest.mark.anyio
class TestWhyBadge:
    async def test_a_park_badge_from_another_view_shows_the_maps_change_row(self) -> None:
        # zone-trap parks its skill map at T1·I4 (the badge "park") and re-engages it at T1·I5
        async with opened(sample("zone-trap")) as (pilot, _screen):
            await pilot.press("G", "k", "2", "w")  # from the Leases view: w opens the Passes view
            app = pilot.app

            def marked(text: str) -> set[str]:
                return row_backgrounds(app, text) - row_backgrounds(app, PLAIN)

            assert await wait_for(pilot, lambda: bool(marked("PARKED by"))), "the change row is not marked"
            # the map's standing says PARKED too, but the change row is the reason for the badge
            assert not marked("PARKED since")

    async def test_w_again_steps_through_the_rows_badges(self, tmp_path: Path) -> None:
        # T1·I3 of the support run carries grant, prune, park and rejected, in that order
        path = tmp_path / "support.fptrace.jsonl"
        write_support_run(path)
        rows = {
            "grant": "granted style",
            "prune": "pruned  at evaluate",
            "park": "PARKED by",
            "rejected": "rejected pick faq",
        }
        async with opened(path) as (pilot, _screen):
            app = pilot.app
            # the timeline zoomed to the whole screen: w gives the inspector back
            await pilot.press("right_square_bracket", "right_square_bracket", "z")

            def marked_rows() -> set[str]:
                return {
                    badge
                    for badge, row in rows.items()
                    if row_backgrounds(app, row) - row_backgrounds(app, PLAIN)
                }

            for badge in [*rows, "grant"]:  # after the last badge, the first again
                await pilot.press("w")
                assert await wait_for(pilot, lambda: marked_rows() == {badge}), (badge, marked_rows())

    async def test_an_unsupported_value_badge_shows_the_answers_unsupported_row(self) -> None:
        # revised-amount: T1·I2 is the draft the evidence gate sent back (route rev), stating $75.00
        async with opened(sample("revised-amount")) as (pilot, _screen):
            app = pilot.app

            def draft_row() -> str:
                return next((line for line in screen_text(app).splitlines() if "T1·I2" in line), "")

            assert await wait_for(pilot, lambda: " rev " in draft_row() and "unsupported" in draft_row())
            await pilot.press("G", "k", "w")

            def marked() -> set[str]:
                return row_backgrounds(app, "unsupported $75.00") - row_backgrounds(app, PLAIN)

            assert await wait_for(pilot, lambda: bool(marked())), screen_text(app)
            # The results layer's row is shown in full: the call, its tool, the values it holds.
            text = screen_text(app)
            assert "result call_1 get_invoice · batch of I1" in text
            assert "values INV-204, 1250.0, 2026-02-01" in text, text
            assert "validation passed" in text and "assessment 3 of 4 value(s) supported" in text
