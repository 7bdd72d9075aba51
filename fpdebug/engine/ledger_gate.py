"""The context ledger's gate (docs/backtracking.md §9.10): demote injections that rarely earn their place.

The ledger itself (offers, uses, earn rates across runs) is built from traces by the backtrack
layer (:mod:`fpdebug.backtrack.ledger`); the engine never imports it. The gate takes a plain
*snapshot* of its rows (data: ``kind``, ``id``, ``offered``, ``earn_rate``), so an agent can be
gated on a ledger exported as JSON by another process.

The policy (``min_offers = 5, earn_rate_floor = 0.05, refresh_every = 10``), in order:

- a piece the snapshot does not know is included;
- a piece offered fewer than ``min_offers`` times is included (not enough data to judge);
- a piece whose earn rate is at least the floor is included;
- any other piece is demoted, but every ``refresh_every``-th demotion decision for that piece lets
  it through (*parole*), so it keeps producing fresh ledger data: a piece demoted once could
  otherwise never earn again.

:func:`ledger_gated` joins the verdict to an injection's trigger: an ``always`` injection becomes a
rule on the verdict, a ``rule`` becomes ``original AND verdict`` (the verdict is asked only when the
original predicate admitted it, so a rule that is off spends no parole count), other triggers are
returned untouched (they are already demand-driven). The evaluator records each decision in the
pass event (``pass.ledger``), and a demotion as a ``ledger-demoted`` skip.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from fpdebug.engine.injections.context import InjectionContext
from fpdebug.engine.injections.injection import Injection
from fpdebug.engine.injections.triggers import Always, Rule
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import LedgerDecision, Skipped

__all__ = [
    "LedgerGate",
    "LedgerPolicy",
    "LedgerStanding",
    "ledger_gated",
    "ledger_kind",
]

LedgerKind = Literal["injection", "skill"]


@dataclass(frozen=True, slots=True)
class LedgerPolicy:
    """The gate's three knobs (the reference's defaults)."""

    min_offers: int = 5
    """Below this many offers, a piece is always included (the ledger barely knows it)."""
    earn_rate_floor: float = 0.05
    """At or above this earn rate, a piece is included."""
    refresh_every: int | None = 10
    """Every this-many-th demotion of a piece is let through (parole); ``None``: no parole."""

    def __post_init__(self) -> None:
        if isinstance(self.min_offers, bool) or not isinstance(self.min_offers, int) or self.min_offers < 0:
            raise DefinitionError(f"min_offers must be an integer >= 0, got {self.min_offers!r}")
        floor = self.earn_rate_floor
        if isinstance(floor, bool) or not isinstance(floor, int | float) or not 0 <= floor <= 1:
            raise DefinitionError(f"earn_rate_floor must be a number in [0, 1], got {floor!r}")
        every = self.refresh_every
        if every is not None and (isinstance(every, bool) or not isinstance(every, int) or every < 1):
            raise DefinitionError(f"refresh_every must be an integer >= 1 or None, got {every!r}")


@dataclass(frozen=True, slots=True)
class LedgerStanding:
    """What the gate knows of one ledger row."""

    offered: int
    """How many calls it was offered to."""
    earn_rate: float
    """``used / offered`` (0 when never offered)."""


def _standings(rows: Iterable[Mapping[str, object]]) -> dict[tuple[str, str], LedgerStanding]:
    """Index ledger rows (dicts with ``kind``, ``id``, ``offered``, ``earn_rate``) by ``(kind, id)``."""
    found: dict[tuple[str, str], LedgerStanding] = {}
    for row in rows:
        if not isinstance(row, Mapping):
            raise DefinitionError(f"a ledger row must be a mapping, got {row!r:.80}")
        kind, piece, offered, rate = row.get("kind"), row.get("id"), row.get("offered"), row.get("earn_rate")
        if not isinstance(kind, str) or not isinstance(piece, str):
            raise DefinitionError(f"a ledger row needs a string kind and id, got {row!r:.80}")
        if isinstance(offered, bool) or not isinstance(offered, int) or offered < 0:
            raise DefinitionError(f"ledger row {kind}:{piece}: offered must be an integer >= 0")
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not math.isfinite(rate):
            raise DefinitionError(f"ledger row {kind}:{piece}: earn_rate must be a number")
        found[(kind, piece)] = LedgerStanding(offered, float(rate))
    return found


@dataclass(slots=True)
class LedgerGate:
    """The verdict over a snapshot of ledger rows, with its parole counters (one per gate instance).

    Args:
        rows: The ledger's rows as data (``Ledger.snapshot()`` or an exported JSON's ``rows``).
        policy: The three knobs.
    """

    rows: Iterable[Mapping[str, object]] = ()
    policy: LedgerPolicy = field(default_factory=LedgerPolicy)
    _standings: dict[tuple[str, str], LedgerStanding] = field(init=False, repr=False)
    _demotions: dict[tuple[str, str], int] = field(init=False, repr=False, default_factory=dict)
    _lock: threading.Lock = field(init=False, repr=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if not isinstance(self.policy, LedgerPolicy):
            raise DefinitionError(f"policy must be a LedgerPolicy, got {self.policy!r}")
        self._standings = _standings(self.rows)
        self.rows = ()  # the index is what the gate keeps

    def standing(self, kind: str, piece: str) -> LedgerStanding | None:
        """The row the gate judges ``(kind, piece)`` by, or ``None`` when the snapshot lacks it."""
        return self._standings.get((kind, piece))

    def decide(self, kind: LedgerKind, piece: str) -> LedgerDecision:
        """One verdict; a demotion below the floor bumps the piece's parole counter."""
        standing = self._standings.get((kind, piece))
        if standing is None:
            return LedgerDecision(id=piece, kind=kind, verdict="included", why="unknown")
        policy = self.policy
        if standing.offered < policy.min_offers:
            return LedgerDecision(
                id=piece,
                kind=kind,
                verdict="included",
                why="few-offers",
                offered=standing.offered,
                earn_rate=standing.earn_rate,
            )
        if standing.earn_rate >= policy.earn_rate_floor:
            return LedgerDecision(
                id=piece,
                kind=kind,
                verdict="included",
                why="earning",
                offered=standing.offered,
                earn_rate=standing.earn_rate,
            )
        with self._lock:  # agents may run on several threads; each demotion is counted once
            count = self._demotions.get((kind, piece), 0) + 1
            self._demotions[(kind, piece)] = count
        paroled = policy.refresh_every is not None and count % policy.refresh_every == 0
        return LedgerDecision(
            id=piece,
            kind=kind,
            verdict="paroled" if paroled else "demoted",
            why="below-floor",
            demotions=count,
            offered=standing.offered,
            earn_rate=standing.earn_rate,
        )

    def skip_for(self, decision: LedgerDecision) -> Skipped:
        """The ``ledger-demoted`` skip a demotion records, its numbers in one sentence."""
        every = self.policy.refresh_every
        parole = f"; parole once every {every} demotions" if every is not None else "; no parole"
        return Skipped(
            id=decision.id,
            reason="ledger-demoted",
            error=(
                f"the context ledger demoted it: earn rate {decision.earn_rate:.2f} over "
                f"{decision.offered} offers is below the floor {self.policy.earn_rate_floor:g} "
                f"(demotion {decision.demotions}{parole})"
            ),
        )


@dataclass(frozen=True, slots=True)
class LedgerCheck:
    """The gate a :class:`~fpdebug.engine.injections.triggers.Rule` carries (set by :func:`ledger_gated`)."""

    gate: LedgerGate
    kind: LedgerKind


def ledger_kind(injection: Injection) -> LedgerKind:
    """The ledger row an injection is judged by: a skill-flavored one as a skill, any other as an injection."""
    return "skill" if injection.flavor == "skill" else "injection"


def _always(ctx: InjectionContext) -> bool:
    return True


def ledger_gated(injection: Injection, gate: LedgerGate) -> Injection:
    """Join the ledger's verdict to one injection's trigger (DOMAIN ``ledgerGated``).

    Args:
        injection: The injection to gate.
        gate: The verdict (shared by every injection of one agent, so parole counts add up per gate).

    Returns:
        ``always`` → a rule on the verdict; ``rule`` → ``original AND verdict``; any other trigger
        (``on-tool-return``, ``llm-activated``) → the injection unchanged.
    """
    if not isinstance(gate, LedgerGate):
        raise DefinitionError(f"ledger_gated() takes a LedgerGate, got {gate!r}")
    check = LedgerCheck(gate, ledger_kind(injection))
    trigger = injection.trigger
    if isinstance(trigger, Always):
        return replace(
            injection, trigger=Rule(_always, description="always, gated by the context ledger", ledger=check)
        )
    if isinstance(trigger, Rule) and trigger.ledger is None:
        described = trigger.description or "its rule"
        return replace(
            injection,
            trigger=Rule(
                trigger.active_when,
                description=f"{described} AND the context ledger's verdict",
                graph_node=trigger.graph_node,
                ledger=check,
            ),
        )
    return injection
