"""The backtrack report (docs/backtracking.md §9.9, adapted) and its sidecar file beside the trace.

:class:`BacktrackReport` is what the CLI prints and the TUI's backtrack pane renders: the claim,
the tier (``correlational`` until seeded reruns with a stable baseline say more), the answer and
the call that decided it, at most six suspect cards (each with its chain, where it was born, its
score, an upper-bound flag and, after reruns, a verdict stamp), the missing-context candidates with
their restoring verdicts, the baseline line, a score note, honesty lines, and the answer layer's
unsupported values. It is built from a provenance and a ranking (:func:`build_report`), then
updated probe by probe (:meth:`BacktrackReport.with_baseline`, :meth:`~BacktrackReport.with_probe`,
:meth:`~BacktrackReport.with_bisect`, :meth:`~BacktrackReport.finished`).

The sidecar that keeps a backtrack beside its trace is :mod:`fpdebug.backtrack.sidecar`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from fpdebug.backtrack.ablation import AblationVerdict, SuspectProbe
from fpdebug.backtrack.bisection import BisectResult
from fpdebug.backtrack.probe import ProbeStats
from fpdebug.backtrack.provenance import HonestyFlag, Hop, Provenance, ReadProblems
from fpdebug.backtrack.suspects import EdgeHop, Suspect, SuspectRanking, suspect_label

__all__ = [
    "CARD_LIMIT",
    "CLAIM_DISCIPLINE",
    "BacktrackReport",
    "BisectSummary",
    "BornAt",
    "CardEdge",
    "DecidedAt",
    "MissingCard",
    "ProbeVerdict",
    "SuspectCard",
    "UnsupportedCard",
    "VerdictStamp",
    "build_report",
    "probe_verdict_of",
]

CARD_LIMIT = 6
"""Suspect cards shown at most; the rest fold into one line (docs/backtracking.md §9.9)."""

CLAIM_DISCIPLINE: tuple[str, str] = (
    "Scores, rankings and chains are correlational: a high score means a piece is aligned with the "
    "answer, never that it caused it.",
    "Only a seeded ablation verdict is causal: N ≥ 2 reruns, a strict majority of flips, and zero "
    "flips in the baseline with nothing removed.",
)
"""The two lines every report ends its honesty block with."""

_TEXT_LIMIT = 280
Mode: TypeAlias = Literal["correlational", "causal"]
Status: TypeAlias = Literal["running", "complete", "cancelled", "failed"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _clip(text: str | None, limit: int = _TEXT_LIMIT) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


# ----------------------------------------------------------------------------------------------
# The report's parts


class DecidedAt(_Frozen):
    """The call whose answer is explained."""

    id: str
    """``llm_call#<call_index>``."""
    label: str
    """``llm_call #5 (seq 26, turn 1, iteration 5)``."""
    kind: Literal["llm"] = "llm"
    """Always an LLM call here (the reference also knows rule decisions)."""


class BornAt(_Frozen):
    """Where a suspect was born."""

    id: str
    """The record (``run_start``, ``turn_start``…) or ``unknown``."""
    label: str
    """The BORN hop's words."""
    via: str | None = None
    """How it was admitted to the call (``always``, ``lease``, ``cursor``…)."""
    seq: int | None = None
    """The record's seq."""


class CardEdge(_Frozen):
    """The hop adjacent to the suspect (docs/backtracking.md §9.9 ``edge``)."""

    key: str | None = None
    """What was carried (the slot, a lease…)."""
    weight: float = 1.0
    """The hop's weight."""
    kind: Literal["data", "control"] = "data"
    """A value read, or a decision that admitted it."""


class VerdictStamp(_Frozen):
    """The stamp on a card after reruns. Inconclusive probes get no stamp (docs/backtracking.md §9.9)."""

    kind: Literal["confirmed", "not-confirmed"]
    """Confirmed is causal; not-confirmed leaves the ranking a correlational proxy."""
    flips: int
    """Reruns that flipped."""
    samples: int
    """Reruns made."""
    claim: str
    """The verdict's sentence."""


class ProbeVerdict(_Frozen):
    """One probe's verdict on one suspect or missing piece."""

    source: str
    """The suspect's piece id."""
    label: str
    """``injection 'vip-override'``."""
    action: Literal["ablating", "restoring"]
    """Removed, or put back."""
    verdict: AblationVerdict
    """The verdict (confirmed, not-confirmed or inconclusive)."""
    mean_similarity: float
    """Mean similarity of the reruns' answers to the original."""
    answers: list[str] = Field(default_factory=list)
    """The distinct answers the reruns gave, clipped (the first few)."""


class SuspectCard(_Frozen):
    """One suspect as the pane shows it (docs/backtracking.md §9.9 ``Card``)."""

    rank: int
    """The TRUE rank in the ranking (display order may differ)."""
    source: str
    """The piece id (``injection:vip-override``)."""
    kind: str
    """``injection``, ``memory`` or ``tool``."""
    flavor: str | None = None
    """The injection's flavor."""
    name: str
    """The injection id or tool name."""
    label: str
    """``injection 'vip-override'``."""
    text: str | None = None
    """What the model read (clipped)."""
    score: float
    """The ranking score (correlational)."""
    upper_bound: bool = False
    """True when no text was scored: the score is an upper bound."""
    edge: CardEdge | None = None
    """The hop adjacent to the suspect."""
    path: list[EdgeHop] = Field(default_factory=list)
    """Every hop, only when there is more than one."""
    reason: str
    """``rode because …``."""
    chain: list[Hop] = Field(default_factory=list)
    """The walk back from the call (READ … BORN)."""
    born_at: BornAt
    """Where it was born."""
    verdict: VerdictStamp | None = None
    """The stamp, after a confirmed or not-confirmed probe."""
    probe: ProbeVerdict | None = None
    """The probe behind it, inconclusive ones included."""


class MissingCard(_Frozen):
    """A piece that was available but not sent, with its restoring verdict when probed."""

    rank: int
    """Its rank among the missing candidates."""
    source: str
    """The piece id (``missing:injection:wire-format``)."""
    kind: str
    """``injection``, ``memory`` or ``tool``."""
    name: str
    """The injection id or tool name."""
    label: str
    """``injection 'wire-format'``."""
    reason: str
    """``not sent: …``."""
    text: str | None = None
    """What a restoration would send (clipped)."""
    score: float
    """Its ranking score (correlational)."""
    upper_bound: bool = False
    """True when no text was scored."""
    verdict: VerdictStamp | None = None
    """The stamp after a restoring probe."""
    probe: ProbeVerdict | None = None
    """The probe behind it."""


class UnsupportedCard(_Frozen):
    """A value the answer states and no source holds: a suspect of its own kind, not ablatable."""

    kind: Literal["unsupported-value"] = "unsupported-value"
    """Always ``unsupported-value``."""
    text: str
    """The value as written in the answer."""
    value_kind: str
    """``number``, ``amount``, ``date``, ``id`` or ``quoted``."""
    start: int | None = None
    """Where it starts in the answer."""
    end: int | None = None
    """Where it ends."""
    seq: int | None = None
    """The ``finding`` record's seq."""
    note: str = "stated in the answer, held by no tool result, user message or declared source; not ablatable"
    """Why it is a suspect."""


class BisectSummary(_Frozen):
    """What a multi-culprit bisection found (docs/backtracking.md §9.7)."""

    verdict: Literal["confirmed", "not-reproducible", "inconclusive"]
    """Confirmed (causal), not-reproducible, or inconclusive."""
    tier: Literal["causal", "correlational"]
    """``causal`` exactly when confirmed."""
    culprits: list[list[str]] = Field(default_factory=list)
    """Minimal culprit sets, by label: each set must be removed TOGETHER to flip the answer."""
    sources: list[list[str]] = Field(default_factory=list)
    """The same sets, by piece id."""
    probes: int
    """Probes run."""
    runs_used: int
    """Reruns made."""
    baseline_flips: int | None = None
    """Flips of its baseline probe."""
    baseline_samples: int | None = None
    """Reruns of its baseline probe."""
    reason: str
    """One sentence."""

    @classmethod
    def of(cls, result: BisectResult) -> BisectSummary:
        """Summarise a :class:`~fpdebug.backtrack.ablation.BisectResult`."""
        return cls(
            verdict=result.verdict,
            tier=result.tier,
            culprits=[[suspect_label(s) for s in group] for group in result.culprits],
            sources=[[s.source for s in group] for group in result.culprits],
            probes=len(result.probes),
            runs_used=result.runs_used,
            baseline_flips=result.baseline.flips if result.baseline else None,
            baseline_samples=result.baseline.samples if result.baseline else None,
            reason=result.reason,
        )


# ----------------------------------------------------------------------------------------------
# The report


class BacktrackReport(_Frozen):
    """Why did the model answer this? The whole answer, tier by tier (docs/backtracking.md §9.9, adapted)."""

    format: Literal["fpdebug.backtrack"] = "fpdebug.backtrack"
    """Always ``fpdebug.backtrack``."""
    version: int = 1
    """The report's shape version."""
    claim: str
    """The question answered (``Why did the model answer this at iteration N?``)."""
    mode: Mode = "correlational"
    """``causal`` only once seeded reruns ran with a stable baseline; else ``correlational``."""
    mode_label: str
    """One line on what the mode rests on."""
    trace: str | None = None
    """The trace path."""
    run_id: str
    """The run."""
    agent: str | None = None
    """The agent's name."""
    model: str
    """The model that answered."""
    turn: int | None = None
    """The call's turn."""
    iteration: int
    """The call's iteration."""
    call_line: int
    """The explained ``llm_call`` record."""
    call_seq: int
    """Its seq (``--call``)."""
    call_index: int
    """Its call index."""
    answer: str
    """What the call answered."""
    decided_at: DecidedAt
    """The call that decided it."""
    cards: list[SuspectCard] = Field(default_factory=list)
    """At most :data:`CARD_LIMIT` suspects: those with content evidence first, shown in rank order."""
    folded: str | None = None
    """``N more suspect(s) folded — #r source · …``."""
    folded_count: int = 0
    """How many suspects were folded (those beyond the ranking's cut included)."""
    score_note: str | None = None
    """A warning when the top two scores are within 0.05."""
    missing: list[MissingCard] = Field(default_factory=list)
    """Missing-context candidates, ranked."""
    unsupported: list[UnsupportedCard] = Field(default_factory=list)
    """Values the answer states without support (from the answer layer's findings)."""
    assessed: bool = False
    """Whether the answer layer assessed this answer."""
    verdicts: list[ProbeVerdict] = Field(default_factory=list)
    """Every probe's verdict, in the order they completed (folded suspects' included)."""
    baseline: str | None = None
    """``f/n flipped with no ablation``."""
    baseline_flips: int | None = None
    """The baseline's flips."""
    baseline_samples: int | None = None
    """The baseline's reruns."""
    bisect: BisectSummary | None = None
    """The culprit sets, when a bisection ran."""
    flags: list[HonestyFlag] = Field(default_factory=list)
    """The honesty flags that apply."""
    rerun_provider: str | None = None
    """Where the reruns' model came from."""
    flip_test: str | None = None
    """How "the answer changed" was judged."""
    runs_used: int = 0
    """Reruns made so far."""
    status: Status = "complete"
    """``running`` while probes are still to come; ``cancelled`` or ``failed`` when stopped early."""
    target_note: str | None = None
    """Why the call explained by default is not the final answer as recorded (its record unreadable,
    torn, failed or missing), or that a later call is unreadable: shown first, never left out."""
    read_problems: ReadProblems = Field(default_factory=ReadProblems)
    """What the trace reader could not read (bad lines, a torn tail), as ``fpdebug summary`` counts it."""

    # -- derived lines ---------------------------------------------------------------------------

    @property
    def honesty(self) -> list[str]:
        """``⚠ target: …`` when the default call is not the final answer, ``⚠ trace: …`` when the reader
        met bad lines or a torn tail, ``⚠ <flag>: <note>`` for each flag, then the two claim-discipline
        lines."""
        lines = [f"⚠ target: {self.target_note}"] if self.target_note else []
        if self.read_problems.note:
            lines.append(f"⚠ trace: {self.read_problems.note}")
        return lines + [f"⚠ {flag.flag}: {flag.note}" for flag in self.flags] + list(CLAIM_DISCIPLINE)

    @property
    def stable_baseline(self) -> bool | None:
        """Zero baseline flips (``None`` before any baseline ran)."""
        return None if self.baseline_flips is None else self.baseline_flips == 0

    # -- updates -----------------------------------------------------------------------------------

    def with_baseline(self, stats: ProbeStats) -> BacktrackReport:
        """The report after the baseline probe (nothing removed)."""
        report = self.model_copy(
            update={
                "baseline": f"{stats.flips}/{stats.samples} flipped with no ablation",
                "baseline_flips": stats.flips,
                "baseline_samples": stats.samples,
                "runs_used": self.runs_used + stats.samples,
            }
        )
        return report._remoded()

    def with_probe(self, probe: SuspectProbe) -> BacktrackReport:
        """The report after one suspect's (or missing piece's) probe."""
        verdict = probe_verdict_of(probe.suspect.source, probe.verdict, probe.stats)
        return self.with_verdict(verdict, probe.stats)

    def with_verdict(self, verdict: ProbeVerdict, stats: ProbeStats) -> BacktrackReport:
        """The report after one probe, given as its verdict and stats (what the sidecar saves)."""
        stamp = _stamp(verdict.verdict)
        update = {"verdict": stamp, "probe": verdict}
        cards = [
            card.model_copy(update=update) if card.source == verdict.source else card for card in self.cards
        ]
        missing = [
            card.model_copy(update=update) if card.source == verdict.source else card for card in self.missing
        ]
        report = self.model_copy(
            update={
                "cards": cards,
                "missing": missing,
                "verdicts": [*self.verdicts, verdict],
                "runs_used": self.runs_used + stats.samples,
            }
        )
        return report._remoded()

    def with_bisect(self, result: BisectSummary) -> BacktrackReport:
        """The report after a bisection."""
        update: dict[str, object] = {"bisect": result, "runs_used": self.runs_used + result.runs_used}
        # The bisection's own baseline counts when there was none yet, and whenever it was unstable.
        if (self.baseline_flips is None and result.baseline_flips is not None) or result.baseline_flips:
            baseline = f"{result.baseline_flips}/{result.baseline_samples} flipped with no ablation"
            update |= {
                "baseline": baseline,
                "baseline_flips": result.baseline_flips,
                "baseline_samples": result.baseline_samples,
            }
        return self.model_copy(update=update)._remoded()

    def finished(self, status: Status) -> BacktrackReport:
        """The report with its final status."""
        return self.model_copy(update={"status": status})

    def _remoded(self) -> BacktrackReport:
        flags = [flag for flag in self.flags if flag.flag != "baseline-unstable"]
        if self.baseline_flips:
            flags.append(
                HonestyFlag(
                    flag="baseline-unstable",
                    note=(
                        f"{self.baseline_flips}/{self.baseline_samples} reruns changed the answer with nothing "
                        "removed; no rerun can prove anything (every verdict is inconclusive)"
                    ),
                )
            )
        ran = self.baseline_flips is not None
        if not ran:
            mode: Mode = "correlational"
            label = "correlational: chains and rankings only, no reruns"
        elif self.baseline_flips:
            mode = "correlational"
            label = (
                "correlational: the baseline changed outcome with nothing removed, so no rerun proves "
                "anything"
            )
        else:
            mode = "causal"
            label = (
                f"causal: seeded reruns against a stable baseline ({self.baseline}); only verdicts "
                'stamped CAUSAL say "because"'
            )
        return self.model_copy(update={"flags": flags, "mode": mode, "mode_label": label})


def probe_verdict_of(source: str, verdict: AblationVerdict, stats: ProbeStats) -> ProbeVerdict:
    """A probe's verdict as a report shows it: with up to three distinct rerun answers, clipped."""
    answers = list(dict.fromkeys(_clip(output, 160) or "" for output in stats.outputs))[:3]
    return ProbeVerdict(
        source=source,
        label=verdict.label,
        action=verdict.action,
        verdict=verdict,
        mean_similarity=stats.similarity.mean,
        answers=answers,
    )


def _stamp(verdict: AblationVerdict) -> VerdictStamp | None:
    if verdict.kind == "inconclusive":
        return None
    return VerdictStamp(kind=verdict.kind, flips=verdict.flips, samples=verdict.samples, claim=verdict.claim)


def _name(suspect: Suspect) -> str:
    return suspect.detail.injection_id or suspect.detail.tool_name or suspect.source


def _card(suspect: Suspect, provenance: Provenance) -> SuspectCard:
    origin = provenance.origin(suspect.source)
    born = origin.born if origin is not None else None
    via = None
    parts = provenance.pieces_of(suspect.source)
    if parts and parts[0].admission is not None:
        via = parts[0].admission.via
    edge = suspect.edge_path[-1] if suspect.edge_path else None
    return SuspectCard(
        rank=suspect.rank or 0,
        source=suspect.source,
        kind=suspect.kind,
        flavor=suspect.detail.flavor,
        name=_name(suspect),
        label=suspect_label(suspect),
        text=_clip(suspect.detail.text),
        score=suspect.score,
        upper_bound=not suspect.has_content_evidence,
        edge=CardEdge(key=edge.key, weight=edge.weight, kind=edge.kind) if edge else None,
        path=list(suspect.edge_path) if len(suspect.edge_path) > 1 else [],
        reason=origin.reason if origin is not None else "the trace does not say why it rode",
        chain=list(origin.chain) if origin is not None else [],
        born_at=BornAt(
            id=_born_id(born, provenance),
            label=born.text if born else "unknown",
            via=via,
            seq=born.seq if born else None,
        ),
    )


def _born_id(born: Hop | None, provenance: Provenance) -> str:
    if born is None or born.line is None:
        return "unknown"
    if born.line == provenance.run_start_line:
        return "run_start"
    return f"seq {born.seq}" if born.seq is not None else f"line {born.line}"


def _missing_card(suspect: Suspect, provenance: Provenance) -> MissingCard:
    origin = provenance.origin(suspect.source)
    return MissingCard(
        rank=suspect.rank or 0,
        source=suspect.source,
        kind=suspect.kind,
        name=_name(suspect),
        label=suspect_label(suspect),
        reason=origin.reason if origin is not None else "not sent",
        text=_clip(suspect.detail.text),
        score=suspect.score,
        upper_bound=not suspect.has_content_evidence,
    )


def _select(suspects: Sequence[Suspect], limit: int) -> tuple[list[Suspect], list[Suspect]]:
    # Cards with content evidence first (a real measurement beats an upper bound), then rank order.
    preferred = sorted(suspects, key=lambda s: not s.has_content_evidence)  # stable: rank order within
    chosen = {s.source for s in preferred[:limit]}
    shown = [s for s in suspects if s.source in chosen]
    rest = [s for s in suspects if s.source not in chosen]
    return shown, rest


def build_report(
    provenance: Provenance,
    ranking: SuspectRanking,
    *,
    claim: str | None = None,
    card_limit: int = CARD_LIMIT,
) -> BacktrackReport:
    """The correlational report of one call: cards, folded line, score note, missing context, flags.

    Args:
        provenance: The call's provenance.
        ranking: Its suspects, ranked (``rank_pieces(provenance.suspects, provenance.answer, …)``).
        claim: The question; ``Why did the model answer this at iteration N?`` by default.
        card_limit: Cards shown at most.

    Returns:
        The report, ``mode`` correlational (no reruns yet).
    """
    shown, rest = _select(ranking.suspects, card_limit)
    folded_count = len(rest) + ranking.folded
    folded = None
    if folded_count:
        listed = " · ".join(f"#{s.rank} {s.source}" for s in rest)
        beyond = f" (+{ranking.folded} beyond the ranking's cut)" if ranking.folded else ""
        folded = (
            f"{folded_count} more suspect(s) folded — {listed}{beyond}"
            if listed
            else (f"{folded_count} more suspect(s) folded{beyond}")
        )
    score_note = None
    margin = ranking.confidence.margin
    if margin is not None and margin < 0.05:
        score_note = (
            f"the top two suspects score within {margin:.3f} of each other (< 0.05): the ranking "
            "does not single out a leader"
        )
    unsupported = [
        UnsupportedCard(
            text=value.text, value_kind=value.value_kind, start=value.start, end=value.end, seq=value.line
        )
        for value in provenance.unsupported
    ]
    return BacktrackReport(
        claim=claim or f"Why did the model answer this at iteration {provenance.iteration}?",
        mode="correlational",
        mode_label="correlational: chains and rankings only, no reruns",
        trace=provenance.trace,
        run_id=provenance.run_id,
        agent=provenance.agent,
        model=provenance.model,
        turn=provenance.turn,
        iteration=provenance.iteration,
        call_line=provenance.call_line,
        call_seq=provenance.call_seq,
        call_index=provenance.call_index,
        answer=provenance.answer,
        decided_at=DecidedAt(
            id=f"llm_call#{provenance.call_index}",
            label=f"llm_call #{provenance.call_index} (seq {provenance.call_seq}, turn "
            f"{provenance.turn}, iteration {provenance.iteration})",
        ),
        cards=[_card(s, provenance) for s in shown],
        folded=folded,
        folded_count=folded_count,
        score_note=score_note,
        missing=[_missing_card(s, provenance) for s in ranking.missing],
        unsupported=unsupported,
        assessed=provenance.assessed,
        flags=list(provenance.flags),
        target_note=provenance.target_note,
        read_problems=provenance.read_problems,
    )
