"""The turn-start cascade (docs/context-model.md §5.1): where iteration 1 of a turn starts the cursor.

Once per turn, before the first Evaluate pass (the reference's ``pick-entry`` / ``RouteTurn`` stage),
the cascade asks its tiers in order and the first that decides wins:

1. the **start rules** (tier 1, ``by: entry``): deterministic rules over the user message
   (keywords, a regex, or a ``when(ctx)`` predicate), in declaration order; a keyword or regex rule
   records the matched text as its ``witness``;
2. the **classifier or entry scorer** (tier 2, ``by: intent``): the app's deterministic function
   scores skills (the classifier scores the map's nodes from the message; the entry scorer scores
   its entries from the pass context, or the turn's precomputed ``entry_scores`` stand in for it);
   the best score at or above the threshold starts the cursor when it is a **clear winner** (at
   least ``margin`` over the runner-up, DOMAIN's ``rankingConfidence`` margin strategy on raw
   scores); on a **near tie** tier 2 does not decide and hands the later tiers its shortlist (the
   scores within ``shortlist_band`` of the best, the runner-up always on it, at most ``menu_size``);
   equal scores keep declaration order;
3. **continuity** (``by: continuity``): a cursor the conversation carried holds the start;
4. the **decider** (tier 3, ``by: decider``): the app's function picks one skill of a menu (the
   near-tie shortlist, else the tier-2 positive scores, best first, at most ``menu_size``, else
   every node of the map) out of band;
5. with ``offer_menu``, a menu nothing resolved is left **outstanding to the model**: no entry loads,
   the ``read_skill`` description leads with the menu, and the model pick that resolves it records
   ``offered`` (and ``declined_offer`` when it picked off the menu).

Nothing deciding leaves the cold start to the map's entries. ``intent`` and ``decider`` are
semantic evidence (tentative, §6.1): a guess the engagement kernel parks if nothing renews it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fpdebug.engine.injections import InjectionContext, TurnRoute, define_skill
from fpdebug.engine.skillmap import Entry, SkillMapBuilder, bounded_witness
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import LlmRequest, NearTie, Witness

if TYPE_CHECKING:
    from fpdebug.engine.skillmap import SkillMap

__all__ = [
    "Classifier",
    "Decider",
    "EntryScorer",
    "TurnPlan",
    "TurnStart",
    "checked_ranking",
    "menu_lead",
    "plan_turn",
    "turn_route",
]

Classifier = Callable[[str], Mapping[str, float]]
"""Scores skills against the user message: skill id → score (ids it does not score count as 0)."""

EntryScorer = Callable[[InjectionContext], Mapping[str, float]]
"""Scores the map's entries from the first pass's context: entry id → score (unscored count as 0)."""

Decider = Callable[[str, tuple[str, ...]], "str | None"]
"""Picks one skill of the menu for the user message, or ``None`` to decide nothing."""


@dataclass(frozen=True, slots=True)
class TurnStart:
    """The declared tiers of the turn-start cascade (:meth:`Agent.turn_start`, :meth:`Agent.start_rule`)."""

    classifier: Classifier | None = None
    """Tier 2: scores the map's nodes from the user message."""
    threshold: float = 0.5
    """The score tier 2's best skill needs to start the cursor."""
    decider: Decider | None = None
    """Tier 3: resolves a menu when the earlier tiers (and continuity) decided nothing."""
    rules: tuple[Entry, ...] = ()
    """Tier 1: deterministic start rules, in declaration order."""
    entry_scorer: EntryScorer | None = None
    """Tier 2 without a classifier: scores the map's entries from the pass context."""
    offer_menu: bool = False
    """Leave a menu nothing resolved outstanding to the model (instead of the entries' cold start)."""
    margin: float = 0.05
    """How far tier 2's best score must lead the runner-up to decide (DOMAIN's ``clearWinnerMargin``)."""
    shortlist_band: float = 0.1
    """On a near tie, the scores within this of the best make the shortlist (DOMAIN's ``shortlistBand``)."""
    menu_size: int | None = 3
    """At most this many scored skills on a menu (``None``: every one)."""


@dataclass(frozen=True, slots=True)
class TurnPlan:
    """What the cascade decided for one turn, and the entry scores it wrote."""

    route: TurnRoute | None
    """The verdict the resolver honours (``None``: no tier decided, the entries cold-start)."""
    entry_scores: Mapping[str, float] | None
    """The turn's tier-2 scores (the scorer's, else the precomputed ones); ``None`` when unused."""


def _checked(raw: object, who: str, ids: tuple[str, ...], what: str) -> dict[str, float]:
    if not isinstance(raw, Mapping):
        raise DefinitionError(f"the turn-start {who} must return a mapping of skill id to score, got {raw!r}")
    scores: dict[str, float] = {}
    for skill_id, score in raw.items():
        if skill_id not in ids:
            raise DefinitionError(f"the turn-start {who} scored {skill_id!r}, which is not {what}")
        if isinstance(score, bool) or not isinstance(score, int | float) or score != score:
            raise DefinitionError(f"the turn-start {who}'s score for {skill_id!r} is not a number: {score!r}")
        scores[skill_id] = float(score)
    return scores


def _scores(
    start: TurnStart | None, ctx: InjectionContext, node_ids: tuple[str, ...], entry_ids: tuple[str, ...]
) -> tuple[dict[str, float], tuple[str, ...]]:
    """Tier 2's scores and the ids they rank over (declaration order)."""
    if start is not None and start.classifier is not None:
        raw = start.classifier(ctx.user_message)
        return _checked(raw, "classifier", node_ids, "a node of the map"), node_ids
    if start is not None and start.entry_scorer is not None:
        raw = start.entry_scorer(ctx)
        return _checked(raw, "entry scorer", entry_ids, "an entry of the map"), entry_ids
    if ctx.entry_scores is not None:
        return _checked(ctx.entry_scores, "entry scores", entry_ids, "an entry of the map"), entry_ids
    return {}, entry_ids


def checked_ranking(
    margin: object, shortlist_band: object, menu_size: object
) -> tuple[float, float, int | None]:
    """Validate :meth:`Agent.turn_start`'s ranking knobs.

    Raises:
        DefinitionError: ``margin`` not a number in [0, 1), ``shortlist_band`` not one in [0, 1], or
            ``menu_size`` neither ``None`` nor an integer of at least 2 (a menu of one is a decision).
    """
    for name, value, top in (("margin", margin, "1)"), ("shortlist_band", shortlist_band, "1]")):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise DefinitionError(f"turn_start(): {name} must be a number, got {value!r}")
        if not (0.0 <= value < 1.0 or (top == "1]" and value == 1.0)):
            raise DefinitionError(f"turn_start(): {name} must be in [0, {top}, got {value!r}")
    if menu_size is not None and (
        isinstance(menu_size, bool) or not isinstance(menu_size, int) or menu_size < 2
    ):
        raise DefinitionError(
            f"turn_start(): menu_size must be None or an integer of at least 2, got {menu_size!r}"
        )
    return float(margin), float(shortlist_band), menu_size  # type: ignore[arg-type]


def _near_tie(
    start: TurnStart | None, ranked: list[str], scores: Mapping[str, float]
) -> tuple[NearTie, tuple[str, ...]] | None:
    """The near tie and its shortlist, when tier 2's best cleared the threshold by less than the margin.

    The margin is on raw scores (DOMAIN's ``rankingConfidence`` margin strategy): no runner-up is a
    clear winner. The shortlist is every score within the band of the best, best first, with the
    runner-up always on it, cut to ``menu_size``.
    """
    if len(ranked) < 2:
        return None
    margin, band, size = (start.margin, start.shortlist_band, start.menu_size) if start else (0.05, 0.1, 3)
    best, runner_up = scores[ranked[0]], scores[ranked[1]]
    if best - runner_up >= margin:
        return None
    shortlist = ranked[:2] + [s for s in ranked[2:] if best - scores[s] <= band]
    return NearTie(best=best, runner_up=runner_up), tuple(shortlist[:size] if size else shortlist)


def _tier2(
    start: TurnStart | None, ranked: list[str], scores: Mapping[str, float]
) -> tuple[str | None, NearTie | None, list[str]]:
    """Tier 2's verdict over the ranked ids: the clear winner (or ``None``), the near tie if there was
    one, and the menu the later tiers choose from (the shortlist on a near tie), cut to ``menu_size``."""
    threshold = start.threshold if start is not None else 0.5
    tie: NearTie | None = None
    if ranked and scores[ranked[0]] >= threshold:
        near = _near_tie(start, ranked, scores)
        if near is None:
            return ranked[0], None, ranked
        tie, shortlist = near
        ranked = list(shortlist)  # a near tie: the later tiers choose among the shortlist only
    size = start.menu_size if start is not None else None
    return None, tie, ranked[:size] if size else ranked


def _start_rule(start: TurnStart, ctx: InjectionContext, carried: str | None) -> TurnRoute | None:
    """Tier 1: the first start rule that matches (a raising ``when`` propagates: the run fails)."""
    for rule in start.rules:
        matched, witness = rule.match(ctx)
        if matched:
            return TurnRoute(to_skill=rule.skill_id, from_skill=carried, by="entry", witness=witness)
    return None


def plan_turn(
    start: TurnStart | None, ctx: InjectionContext, carried: str | None, skill_map: SkillMap
) -> TurnPlan:
    """The cascade's verdict for one turn (computed once, before iteration 1).

    Args:
        start: The declared tiers (``None``: only continuity, and precomputed scores if any).
        ctx: The first pass's context as the cascade sees it (user message, history, the turn's
            precomputed ``entry_scores``).
        carried: The cursor the conversation carried into this turn (``None`` on a fresh start).
        skill_map: The agent's map.

    Returns:
        The :class:`TurnPlan`.

    Raises:
        DefinitionError: A classifier or scorer that returns something other than scores of its
            skills, or a decider that picks a skill off its menu.
    """
    node_ids, entry_ids = skill_map.node_ids, skill_map.entry_ids
    if start is not None:
        ruled = _start_rule(start, ctx, carried)
        if ruled is not None:
            return TurnPlan(ruled, ctx.entry_scores)
    message = ctx.user_message
    witness = Witness(text=bounded_witness(message)) if message.strip() else None
    scores, ranked_over = _scores(start, ctx, node_ids, entry_ids)
    written = scores if (start is not None and start.entry_scorer is not None) else ctx.entry_scores
    # Sorted is stable: equal scores keep declaration order, so a tie goes to the first declared.
    ranked = sorted((s for s in ranked_over if scores.get(s, 0.0) > 0.0), key=lambda s: -scores[s])
    decided, tie, ranked = _tier2(start, ranked, scores)
    if decided is not None:
        route = TurnRoute(
            to_skill=decided, from_skill=carried, by="intent", witness=witness, score=scores[decided]
        )
        return TurnPlan(route, written)
    if carried is not None:
        return TurnPlan(
            TurnRoute(to_skill=carried, from_skill=carried, by="continuity", near_tie=tie), written
        )
    if start is None:
        return TurnPlan(None, written)
    if start.decider is not None:
        menu = tuple(ranked) or node_ids
        picked = start.decider(message, menu)
        if picked is not None:
            if picked not in menu:
                raise DefinitionError(
                    f"the turn-start decider picked {picked!r}, which is not on its menu {list(menu)}"
                )
            score = scores[picked] if picked in ranked else None
            route = TurnRoute(
                to_skill=picked, by="decider", witness=witness, score=score, offered=menu, near_tie=tie
            )
            return TurnPlan(route, written)
    if start.offer_menu:
        # At a cold start the read_skill gate admits the entries: the model's menu is the scored
        # entries, best first, else every entry.
        menu = tuple(s for s in ranked if s in entry_ids) or entry_ids
        if menu:
            return TurnPlan(TurnRoute(by="menu", offered=menu, near_tie=tie), written)
    return TurnPlan(None, written)


def turn_route(
    start: TurnStart | None, message: str, carried: str | None, node_ids: tuple[str, ...]
) -> TurnRoute | None:
    """:func:`plan_turn` over a bare map of ``node_ids``, each an unconditional entry (for tests and
    tools that hold only the message)."""
    builder = SkillMapBuilder()
    for node in node_ids:
        builder.skill(define_skill(node, description=node, body=node)).entry(node)
    return plan_turn(start, InjectionContext(1, user_message=message), carried, builder.build()).route


def menu_lead(
    request: LlmRequest, route: TurnRoute | None, cursor: str | None, read_skill: str
) -> LlmRequest:
    """Lead ``read_skill``'s description with the menu while it is outstanding to the model.

    A menu is outstanding from a ``menu`` verdict until a cursor lands (the reference's
    ``menuOutstanding``); the request is returned unchanged otherwise.
    """
    if route is None or route.by != "menu" or route.offered is None or cursor is not None:
        return request
    lead = (
        "Routing choice: no skill is loaded yet. Read the one that fits the request first, "
        f"one of: {', '.join(route.offered)}. "
    )
    tools = [
        t.model_copy(update={"description": lead + t.description}) if t.name == read_skill else t
        for t in request.tools
    ]
    return request.model_copy(update={"tools": tools})
