"""From a badge to its reason (issue 20): ``w`` on the selected iteration steps through its timeline
badges and scrolls the pass inspector to the row that explains the current one, highlighted.

``park`` and ``reengage`` go to the map's ``change`` row of the Engagement section, ``grant`` and
``prune`` to the Leases section's granted and pruned rows, ``rejected``, ``superseded`` and
``conflict`` to the Routing section, ``error`` to the error row, ``invalid`` to the bad lines and
``refused`` to the LLM call, ``unsupported`` to the answer's unsupported value in the findings. The highlight is the one ``enter`` on a lease uses
(:meth:`fpdebug.tui.widgets.document.DocumentView.reveal`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from fpdebug.tui.widgets.inspector import PassInspector

if TYPE_CHECKING:
    from fpdebug.tui.screens.trace_screen import TraceScreen

__all__ = ["BADGE_REASONS", "BadgeReason", "BadgeReasons"]


class BadgeReason(NamedTuple):
    """Where the inspector explains a badge."""

    section: str
    """The inspector section, as the notice names it."""
    row: Callable[[str], bool]
    """Whether a row of the inspector (its plain text) is the one to show."""


def _starts(*words: str, holding: str = "") -> Callable[[str], bool]:
    def match(text: str) -> bool:
        row = text.lstrip()
        return row.startswith(words) and holding in row

    return match


BADGE_REASONS: dict[str, BadgeReason] = {
    "grant": BadgeReason("Leases", _starts("granted ")),
    "prune": BadgeReason("Leases", _starts("pruned  at ")),
    "park": BadgeReason("Engagement", _starts("change", holding="PARKED")),
    "reengage": BadgeReason("Engagement", _starts("change", holding="re-engaged")),
    "conflict": BadgeReason("Routing and findings", _starts("route conflict ")),
    "rejected": BadgeReason("Routing and findings", _starts("rejected pick ")),
    # "superseded" alone is also the Pass facts key (the ids a pass superseded), not the reroute
    "superseded": BadgeReason("Routing and findings", _starts("superseded ", holding="the cursor went to")),
    "error": BadgeReason("Tool batch / LLM call", _starts("error ")),
    "invalid": BadgeReason("Bad lines nearby", _starts("Bad lines nearby")),
    "refused": BadgeReason("LLM call", _starts("LLM call")),
    "unsupported": BadgeReason("Routing and findings", _starts("unsupported ")),
    "beyond": BadgeReason("Routing and findings", _starts("result ", holding="beyond now")),
    "nudge": BadgeReason("Routing and findings", _starts("step nudge ")),
    "wrapup": BadgeReason("Routing and findings", _starts("wrap-up ")),
    "ask": BadgeReason("Routing and findings", _starts("argument ask ")),
    "retry": BadgeReason("Routing and findings", _starts("output retry ")),
    "budget": BadgeReason("Routing and findings", _starts("stopped early ", holding="cost-budget")),
    "compact": BadgeReason("Routing and findings", _starts("compacted ")),
    "proposal": BadgeReason("Tool batch", _starts("effect ", holding="propose-transition")),
    "declined": BadgeReason("Cursor", _starts("declined ")),
}
"""Each timeline badge's row of the pass inspector."""


class BadgeReasons:
    """The ``w`` key's state: which badge of which row it showed last."""

    def __init__(self, screen: TraceScreen) -> None:
        self.screen = screen
        self._last: tuple[int, int] = (-1, -1)  # (row, index of the badge shown)

    def next(self) -> None:
        """Show the reason for the selected row's next badge (the first, on a newly selected row)."""
        screen = self.screen
        row = screen.selected
        badges = [badge for badge in screen.session.badges(row) if badge in BADGE_REASONS] if row >= 0 else []
        if not badges:
            screen.app.notify("This iteration has no badge (w shows why a badge is there).", timeout=3)
            return
        last_row, last = self._last
        index = (last + 1) % len(badges) if last_row == row else 0
        self._last = (row, index)
        screen.view = "passes"
        if screen.zoom.zoomed:
            screen.action_toggle_zoom()  # give the panes back: a zoomed timeline hides the inspector
        # after the refresh: a view switched to now, or a row just selected, builds the inspector first
        screen.call_after_refresh(self._reveal, badges, index)

    def _reveal(self, badges: list[str], index: int) -> None:
        badge = badges[index]
        reason = BADGE_REASONS[badge]
        found = any(inspector.reveal(reason.row) for inspector in self.screen.query(PassInspector))
        place = f" ({index + 1} of {len(badges)}, w: next)" if len(badges) > 1 else ""
        if found:
            self.screen.app.notify(f"Badge {badge}: see {reason.section}{place}.", timeout=3)
        else:
            self.screen.app.notify(
                f"Badge {badge}: the inspector has no {reason.section} row for it{place}.", timeout=3
            )
