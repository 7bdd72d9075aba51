"""SVG snapshots of the skill map view on the committed samples (fixed size, fixed clock, no blink).

Regenerate after an intended change with
``pytest tests/tui/test_skill_map_snapshots.py --snapshot-update`` and look at the SVGs
(``tests/tui/__snapshots__/test_skill_map_snapshots/``) before committing them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from textual.pilot import Pilot

from fpdebug.tui.app import FpdebugApp
from tests.tui.helpers import NARROW, WIDE, snapshot_keys
from tests.tui.traces import sample


def _at_iteration(number: int) -> Callable[[Pilot[object]], Awaitable[None]]:
    """Select iteration ``number`` on the timeline, then show the skill map."""
    return snapshot_keys(*["right_square_bracket"] * (number - 1), "5")


class TestSkillMapView:
    def test_support_after_the_model_pick_into_refund(self, snap_compare: Callable[..., bool]) -> None:
        assert snap_compare(FpdebugApp(sample("support")), run_before=_at_iteration(4), terminal_size=WIDE)

    def test_the_zone_trap_parked_on_pass_4_at_100_columns(self, snap_compare: Callable[..., bool]) -> None:
        app = FpdebugApp(sample("zone-trap"))
        assert snap_compare(app, run_before=_at_iteration(4), terminal_size=NARROW)

    def test_the_cyclic_map_back_at_triage(self, snap_compare: Callable[..., bool]) -> None:
        assert snap_compare(
            FpdebugApp(sample("leases-cyclic")), run_before=_at_iteration(4), terminal_size=WIDE
        )
