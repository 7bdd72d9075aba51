"""The turn-start cascade (docs/context-model.md §5.1): where iteration 1 of a turn starts the cursor.

Once per turn, before the first Evaluate pass, the cascade asks its tiers in order and the first that
decides wins:

1. the **classifier** (tier 2, ``by: intent``): the app's deterministic function scores the map's
   skills against the user message (entry scoring); the best score at or above the threshold starts
   the cursor, ties going to declaration order;
2. **continuity** (``by: continuity``): a cursor the conversation carried holds the start;
3. the **decider** (tier 3, ``by: decider``): the app's function picks one skill of a menu (the
   classifier's positive scores, best first, else every node of the map) out of band.

Nothing deciding leaves the cold start to the map's entries. ``intent`` and ``decider`` are
semantic evidence (tentative, §6.1): a guess the engagement kernel parks if nothing renews it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from fpdebug.engine.injections import TurnRoute
from fpdebug.engine.skillmap import bounded_witness
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import Witness

__all__ = ["Classifier", "Decider", "TurnStart", "turn_route"]

Classifier = Callable[[str], Mapping[str, float]]
"""Scores skills against the user message: skill id → score (ids it does not score count as 0)."""

Decider = Callable[[str, tuple[str, ...]], "str | None"]
"""Picks one skill of the menu for the user message, or ``None`` to decide nothing."""


@dataclass(frozen=True, slots=True)
class TurnStart:
    """The declared tiers of the turn-start cascade (:meth:`Agent.turn_start`)."""

    classifier: Classifier | None = None
    """Tier 2: the entry scorer."""
    threshold: float = 0.5
    """The score a classifier's best skill needs to start the cursor."""
    decider: Decider | None = None
    """Tier 3: resolves a menu when the classifier (and continuity) decided nothing."""


def _scores(start: TurnStart, message: str, node_ids: tuple[str, ...]) -> dict[str, float]:
    if start.classifier is None:
        return {}
    raw = start.classifier(message)
    if not isinstance(raw, Mapping):
        raise DefinitionError(
            f"the turn-start classifier must return a mapping of skill id to score, got {raw!r}"
        )
    scores: dict[str, float] = {}
    for skill_id, score in raw.items():
        if skill_id not in node_ids:
            raise DefinitionError(
                f"the turn-start classifier scored {skill_id!r}, which is not a node of the map"
            )
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise DefinitionError(
                f"the turn-start classifier's score for {skill_id!r} is not a number: {score!r}"
            )
        scores[skill_id] = float(score)
    return scores


def turn_route(
    start: TurnStart | None, message: str, carried: str | None, node_ids: tuple[str, ...]
) -> TurnRoute | None:
    """The cascade's verdict for one turn (computed once, before iteration 1).

    Args:
        start: The declared tiers (``None``: only continuity).
        message: The turn's user message.
        carried: The cursor the conversation carried into this turn (``None`` on a fresh start).
        node_ids: The skill map's nodes, in declaration order.

    Returns:
        The :class:`TurnRoute` the resolver honours on iteration 1, or ``None`` when no tier decided.

    Raises:
        DefinitionError: A classifier that returns something other than scores of the map's nodes, or
            a decider that picks a skill off its menu.
    """
    witness = Witness(text=bounded_witness(message)) if message.strip() else None
    scores = _scores(start, message, node_ids) if start is not None else {}
    ranked = sorted((s for s in node_ids if scores.get(s, 0.0) > 0.0), key=lambda s: -scores[s])
    if start is not None and ranked and scores[ranked[0]] >= start.threshold:
        best = ranked[0]
        return TurnRoute(to_skill=best, from_skill=carried, by="intent", witness=witness, score=scores[best])
    if carried is not None:
        return TurnRoute(to_skill=carried, from_skill=carried, by="continuity")
    if start is None or start.decider is None:
        return None
    menu = tuple(ranked) or node_ids
    picked = start.decider(message, menu)
    if picked is None:
        return None
    if picked not in menu:
        raise DefinitionError(
            f"the turn-start decider picked {picked!r}, which is not on its menu {list(menu)}"
        )
    return TurnRoute(
        to_skill=picked,
        by="decider",
        witness=witness,
        score=scores[picked] if picked in ranked else None,
        offered=menu,
    )
