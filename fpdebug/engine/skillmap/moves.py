"""The cursor move one pass decides (docs/context-model.md §5.1), its witness, and a route conflict."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fpdebug.trace.schema import NearTie, RouteConflict, Witness

MOVE_CAUSES: tuple[str, ...] = (
    "entry",
    "route",
    "model-pick",
    "tool-proposal",
    "intent",
    "continuity",
    "decider",
    "stay",
    "none",
)
"""The ``by`` vocabulary of a cursor move (docs/context-model.md §5.1)."""

WITNESS_LIMIT = 80
"""A witness's maximum length, the closing "…" included."""


def bounded_witness(text: str) -> str:
    """Collapse whitespace and bound to :data:`WITNESS_LIMIT` characters ("…" counts toward it)."""
    collapsed = " ".join(text.split())
    if len(collapsed) <= WITNESS_LIMIT:
        return collapsed
    return collapsed[: WITNESS_LIMIT - 1] + "…"


@dataclass(frozen=True, slots=True, kw_only=True)
class CursorMove:
    """What one pass decided about the cursor, and why (docs/context-model.md §5.1)."""

    by: str
    """The clause that decided, from :data:`MOVE_CAUSES`."""
    to_skill: str | None = None
    """The cursor after the pass (``None``: no cursor)."""
    from_skill: str | None = None
    """The cursor before the pass, when there was one."""
    conflict: RouteConflict | None = None
    """``route`` moves only: results whose edges named other targets."""
    witness: Witness | None = None
    """``entry`` moves decided by a data matcher, and ``intent`` / ``decider`` moves: the bounded text."""
    guard: str | None = None
    """``route`` moves: the winning edge's guard, when it had one."""
    guards_closed: tuple[str, ...] | None = None
    """``route`` moves: guarded edges from the cursor whose guard stopped them (``from→to: guard``)."""
    score: float | None = None
    """``intent`` (and a scored ``decider``) moves: the turn-start classifier's score of ``to_skill``."""
    offered: tuple[str, ...] | None = None
    """``decider`` moves: the menu the turn-start decider resolved out of band; ``model-pick`` moves:
    the menu outstanding to the model that the pick resolved."""
    declined_offer: bool | None = None
    """``model-pick`` moves that resolved an outstanding menu: ``True`` when the pick was off the menu
    (absent when it was on it)."""
    near_tie: NearTie | None = None
    """Turn-start moves after a near tie: tier 2's best and runner-up scores (``offered`` is the shortlist)."""


@dataclass(frozen=True, slots=True)
class RouteConflictReport:
    """A ``route_conflict`` fact: edges (or proposals) in one batch named different targets."""

    from_skill_id: str | None
    """The cursor the edges or proposals left from."""
    conflict: RouteConflict
    """The winner (first in call order) and the losers."""
    source: Literal["tool-proposal"] | None = None
    """``tool-proposal`` when the conflict was between proposals."""

    def fields(self) -> dict[str, object]:
        """The fields of a ``route_conflict`` event (:class:`~fpdebug.trace.schema.RouteConflictEvent`)."""
        return {
            "from_skill_id": self.from_skill_id,
            "winner": self.conflict.winner,
            "losers": list(self.conflict.losers),
            "source": self.source,
        }
