"""SVG snapshots of every view on the committed sample traces (fixed size, fixed clock, no animation).

Regenerate after an intended change with ``pytest tests/tui/test_snapshots.py --snapshot-update`` and
look at the SVGs (``tests/tui/__snapshots__/``) before committing them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot

from fpdebug.tui.app import FpdebugApp
from fpdebug.tui.widgets.timeline import IterationTimeline
from tests.tui.helpers import WIDE, loaded, wait_for
from tests.tui.helpers import snapshot_keys as _keys
from tests.tui.traces import sample

SIZES = pytest.mark.parametrize("size", [(80, 24), (120, 35), (200, 50)], ids=["80x24", "120x35", "200x50"])
"""The terminals every main screen is checked at: a small one, a common one, a wide one (issue 20)."""


@SIZES
class TestMainScreens:
    """The main screens at each size: panes sized to their content, nothing cut that matters."""

    def test_timeline_and_inspector_on_a_lease_pass(
        self, snap_compare: Callable[..., bool], size: tuple[int, int]
    ) -> None:
        assert snap_compare(FpdebugApp(sample("support")), run_before=_keys("j", "j"), terminal_size=size)

    def test_a_parked_map(self, snap_compare: Callable[..., bool], size: tuple[int, int]) -> None:
        assert snap_compare(
            FpdebugApp(sample("zone-trap")), run_before=_keys("j", "j", "j"), terminal_size=size
        )

    def test_gantt_and_lease_detail(self, snap_compare: Callable[..., bool], size: tuple[int, int]) -> None:
        assert snap_compare(
            FpdebugApp(sample("support")), run_before=_keys("j", "j", "2"), terminal_size=size
        )

    def test_prompt_by_slot_and_reply(self, snap_compare: Callable[..., bool], size: tuple[int, int]) -> None:
        assert snap_compare(
            FpdebugApp(sample("support")), run_before=_keys("j", "j", "3"), terminal_size=size
        )

    def test_the_raw_events(self, snap_compare: Callable[..., bool], size: tuple[int, int]) -> None:
        assert snap_compare(
            FpdebugApp(sample("support")), run_before=_keys("j", "j", "4"), terminal_size=size
        )


class TestEventsView:
    def test_invalid_and_opaque_rows(
        self, snap_compare: Callable[..., bool], hostile_trace: tuple[Path, dict[str, int]]
    ) -> None:
        path, _ = hostile_trace
        assert snap_compare(FpdebugApp(path), run_before=_keys("4", "G", "k", "k"), terminal_size=WIDE)


class TestSearch:
    def test_a_filtered_timeline(self, snap_compare: Callable[..., bool]) -> None:
        async def run_before(pilot: Pilot[object]) -> None:
            pilot.app.animation_level = "none"
            await loaded(pilot)
            await pilot.press("slash", *"kind:lease_prune")
            timeline = pilot.app.screen.query_one("#timeline", IterationTimeline)
            assert await wait_for(pilot, lambda: timeline.row_filter is not None and timeline.row_filter.done)
            await pilot.pause()

        assert snap_compare(FpdebugApp(sample("support")), run_before=run_before, terminal_size=WIDE)


class TestHelp:
    def test_key_help(self, snap_compare: Callable[..., bool]) -> None:
        assert snap_compare(
            FpdebugApp(sample("leases")), run_before=_keys("question_mark"), terminal_size=WIDE
        )


class TestHonesty:
    def test_an_answer_the_evidence_gate_sent_back(self, snap_compare: Callable[..., bool]) -> None:
        # revised-amount's draft (T1·I2): route rev, the unsupported badge, the findings in full
        assert snap_compare(FpdebugApp(sample("revised-amount")), run_before=_keys("j"), terminal_size=WIDE)

    def test_an_argument_ask(self, snap_compare: Callable[..., bool]) -> None:
        # argument-ask's T1·I1: the ask badge, the ask and its question, the user's answer
        assert snap_compare(FpdebugApp(sample("argument-ask")), run_before=_keys(), terminal_size=WIDE)
