"""SVG snapshots of the pass diff (fixed size, no animation). Regenerate with ``--snapshot-update``."""

from __future__ import annotations

from collections.abc import Callable

from fpdebug.tui.app import FpdebugApp
from tests.tui.helpers import NARROW, WIDE, snapshot_keys
from tests.tui.traces import sample


class TestDiffView:
    # quiet: the "marked as A" toast would cover the view
    def test_support_i2_vs_i4_lease_granted_then_pruned(self, snap_compare: Callable[..., bool]) -> None:
        # A = T1·I2 (marked), B = T1·I4: refund-policy leased then pruned tenure-ended,
        # the cursor billing → refund
        keys = snapshot_keys("j", "m", "j", "j", "6", quiet=True)
        assert snap_compare(FpdebugApp(sample("support")), run_before=keys, terminal_size=WIDE)

    def test_a_map_parks_and_comes_back_at_100_columns(self, snap_compare: Callable[..., bool]) -> None:
        keys = snapshot_keys("m", "G", "6", "j", "j", quiet=True)
        assert snap_compare(FpdebugApp(sample("zone-trap")), run_before=keys, terminal_size=NARROW)
