"""SVG snapshots of the pass diff (fixed size, no animation). Regenerate with ``--snapshot-update``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from textual.pilot import Pilot

from fpdebug.tui.app import FpdebugApp
from tests.tui.helpers import loaded
from tests.tui.traces import sample

WIDE = (160, 48)
NARROW = (100, 30)


def _keys(*keys: str) -> Callable[[Pilot[object]], Awaitable[None]]:
    async def run_before(pilot: Pilot[object]) -> None:
        pilot.app.animation_level = "none"
        await loaded(pilot)
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
        pilot.app.clear_notifications()  # the "marked as A" toast would cover the view
        await pilot.pause()

    return run_before


class TestDiffView:
    def test_support_i2_vs_i4_lease_granted_then_pruned(self, snap_compare: Callable[..., bool]) -> None:
        # A = T1·I2 (marked), B = T1·I4: refund-policy leased then pruned tenure-ended, cursor billing → refund
        assert snap_compare(
            FpdebugApp(sample("support")), run_before=_keys("j", "m", "j", "j", "6"), terminal_size=WIDE
        )

    def test_a_map_parks_and_comes_back_at_100_columns(self, snap_compare: Callable[..., bool]) -> None:
        assert snap_compare(
            FpdebugApp(sample("zone-trap")), run_before=_keys("m", "G", "6", "j", "j"), terminal_size=NARROW
        )
