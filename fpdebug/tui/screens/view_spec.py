"""The views of the trace screen: their ids, tab titles, keys and bindings."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from textual.binding import Binding, BindingType

__all__ = ["VIEWS", "ViewSpec", "view_bindings"]


@dataclass(frozen=True)
class ViewSpec:
    """One view of the trace screen."""

    id: str
    """The view id (``view: <id>`` in the palette; the widget id is ``view-<id>``)."""
    title: str
    """The tab title."""
    key: str
    """The key that shows it."""
    description: str
    """One line for the help and the palette."""


VIEWS: tuple[ViewSpec, ...] = (
    ViewSpec(
        "passes", "Passes", "1", "the iteration timeline and the pass inspector of the selected iteration"
    ),
    ViewSpec(
        "leases", "Leases", "2", "every instruction lease from grant to prune, as a Gantt over iterations"
    ),
    ViewSpec(
        "calls", "Calls", "3", "the exact prompt of the selected iteration's LLM call by slot, and the reply"
    ),
    ViewSpec("events", "Events", "4", "the raw trace, one row per line (invalid and opaque lines included)"),
    ViewSpec(
        "skill-map",
        "Skill map",
        "5",
        "the declared skill map with the cursor's path up to the selected iteration",
    ),
    ViewSpec("diff", "Diff", "6", "two passes compared: what entered and left each slot and why (m marks A)"),
    ViewSpec(
        "backtrack",
        "Backtrack",
        "7",
        "from an answer back to its causes: chains, suspects, causal reruns (B picks a call)",
    ),
)
"""The views, in tab order."""


def view_bindings(views: Iterable[ViewSpec]) -> list[BindingType]:
    """One binding per view (id ``view-<id>``), for a screen's ``BINDINGS``."""
    return [
        Binding(
            view.key,
            f"show_view('{view.id}')",
            view.title,
            show=False,
            id=f"view-{view.id}",
            tooltip=f"Show the {view.title} view: {view.description}.",
        )
        for view in views
    ]
