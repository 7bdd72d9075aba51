"""Jump to the reason (issue 20): ``enter`` on a lease opens the pass that pruned it with the inspector
scrolled to that lease's row of its Leases section, highlighted.

"See why lease X was pruned, inside the pass inspector" takes ``2`` (``j``…) ``enter``: two keys for
the first lease, three for the second. Read from the drawn screen.
"""

from __future__ import annotations

import pytest

from tests.tui.helpers import opened, screen_text, wait_for
from tests.tui.test_link_cursor import row_backgrounds
from tests.tui.traces import sample


@pytest.mark.anyio
class TestEnterOnALeaseShowsWhyItWasPruned:
    @pytest.mark.parametrize(
        ("keys", "pruned_row", "tenant"),
        [
            (
                ("2", "enter"),
                "tenure-ended  refund-policy until-skill-exit granted by check_policy",
                "tenant refund",
            ),
            (("2", "j", "enter"), "spent  wire-format next-call granted by fetch_invoice", "tenant billing"),
        ],
    )
    async def test_the_pruned_row_is_on_screen_and_highlighted(
        self, keys: tuple[str, ...], pruned_row: str, tenant: str
    ) -> None:
        async with opened(sample("support")) as (pilot, _screen):
            await pilot.press(*keys)
            app = pilot.app

            def marked() -> set[str]:
                # against the section's own "pruned at …" row, drawn plainly
                return row_backgrounds(app, pruned_row) - row_backgrounds(app, "pruned  at evaluate")

            assert await wait_for(pilot, lambda: bool(marked())), "the lease's row is not highlighted"
            text = screen_text(app)
            # the pass that pruned it (I4 prunes in tenant refund, I3 in tenant billing)
            assert f"pruned  at evaluate (the pass's tenure sweep), {tenant}" in text
            assert not marked() & row_backgrounds(app, "Tool batch")
