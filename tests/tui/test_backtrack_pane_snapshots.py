"""SVG snapshot of the backtrack pane after its reruns (on a copy of the planted-fact sample)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual.pilot import Pilot

from fpdebug.tui.app import FpdebugApp
from fpdebug.tui.widgets.backtrack_pane import BacktrackPane
from tests.tui.helpers import loaded, wait_for
from tests.tui.test_backtrack_pane import copy_sample

WIDE = (160, 48)


class TestBacktrackPane:
    def test_verdicts_after_ablation(self, snap_compare: Callable[..., bool], tmp_path: Path) -> None:
        # The copy keeps the sample's file name, so the header reads as it would on the sample.
        trace = copy_sample("planted-fact", tmp_path)

        async def run_before(pilot: Pilot[object]) -> None:
            pilot.app.animation_level = "none"
            await loaded(pilot)
            await pilot.press("7")
            pane = pilot.app.screen.query_one(BacktrackPane)
            assert await wait_for(pilot, lambda: pane.report is not None)
            await pilot.press("a")
            assert await wait_for(
                pilot,
                lambda: not pane.running and pane.report is not None and pane.report.status == "complete",
                timeout=180,
            )
            await pilot.pause()

        assert snap_compare(FpdebugApp(trace), run_before=run_before, terminal_size=WIDE)
