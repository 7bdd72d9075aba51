"""Suspects, the correlational tier: lexical influence, rankings, ablation specs (docs/backtracking.md §9.3–§9.6).

Everything here is a proxy from lexical geometry: a high score means a piece is *aligned with* the
answer, never that it *caused* it. Only :mod:`fpdebug.backtrack.ablation` makes causal claims, and
every model below says so in its ``tier`` field.

Ranking formula (:func:`rank_pieces`), for a piece explained against the answer of the call made at
iteration ``at``::

    semantic   = clamp01(influence composite of the piece's text against the answer, with the
                 outputs of the intermediate LLM calls on its path as ancestor texts)   # §9.5
    structural = Π(edge weights on its path) × recency_decay ** (at − iteration)
                                             × hop_decay ** depth
    score      = structural × semantic      when the piece has text (content evidence)
               = structural                 otherwise: an UPPER BOUND, not a measurement

``structural`` keeps the reference's meaning (the strongest path's weight product, §9.3 step 4);
the two decays (0.9 each by default) are fpdebug's stand-in for its commit-log slice, where one hop
is one iteration: a piece one iteration older, or one provenance hop further back, needs about 11 %
more lexical alignment to outrank a nearer one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Annotated, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, model_validator

from fpdebug.errors import BacktrackError

__all__ = [
    "DEFAULT_WEIGHTS",
    "PERSIST_THRESHOLD",
    "STOP_WORDS",
    "AblationSpec",
    "ArgSpec",
    "ClearWinnerStrategy",
    "EdgeHop",
    "EvidenceInput",
    "InfluenceScore",
    "InfluenceSignals",
    "InfluenceWeights",
    "InjectionSpec",
    "MemorySpec",
    "Piece",
    "RankingConfidence",
    "RestoreSpec",
    "Suspect",
    "SuspectDetail",
    "SuspectKind",
    "SuspectRanking",
    "ToolSpec",
    "ablation_spec_for",
    "is_bisectable",
    "is_removable",
    "lexical_overlap",
    "margin_strategy",
    "rank_pieces",
    "ranking_confidence",
    "ratio_strategy",
    "restore_spec_for",
    "score_influence",
    "spec_label",
    "suspect_label",
    "token_set",
    "tokenize",
]

SuspectKind: TypeAlias = Literal["tool", "injection", "memory", "arg", "stage"]
"""What a suspect is: a tool's result, an injection, a memory entry, an untracked argument, or a
stage with nothing more specific to blame (docs/backtracking.md §9.4)."""

Correlational: TypeAlias = Literal["correlational"]
"""The tier of every score and ranking (docs/backtracking.md §9.1)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# ----------------------------------------------------------------------------------------------
# Lexical strategy (docs/backtracking.md §9.5): deterministic, no embedder.

STOP_WORDS: frozenset[str] = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "to",
        "of",
        "for",
        "in",
        "on",
        "at",
        "by",
        "with",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "it",
        "this",
        "that",
        "these",
        "those",
        "i",
        "you",
        "we",
        "my",
        "our",
        "me",
        "please",
        "can",
        "could",
        "would",
        "should",
        "do",
        "does",
        "how",
        "what",
        "need",
        "want",
    ]
)
"""Words dropped before overlap is measured (the reference's list, exactly)."""

_SPLIT = re.compile(r"[^a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Content tokens of ``text`` in order (duplicates kept).

    Lowercase, split on ``[^a-z0-9]+``, drop tokens shorter than 2 characters and stop words, then
    fold a trailing ``s`` off tokens of 4 or more characters that do not end in ``ss``.

    Args:
        text: Any text.

    Returns:
        The tokens.
    """
    tokens: list[str] = []
    for token in _SPLIT.split(text.lower()):
        if len(token) < 2 or token in STOP_WORDS:
            continue
        if len(token) >= 4 and token.endswith("s") and not token.endswith("ss"):
            token = token[:-1]
        tokens.append(token)
    return tokens


def token_set(text: str) -> frozenset[str]:
    """The set of :func:`tokenize`'s tokens: the lexical strategy works with sets."""
    return frozenset(tokenize(text))


def lexical_overlap(a: str, b: str) -> float:
    """``|A∩B| / sqrt(|A|·|B|)`` over the two token sets; 0 when either set is empty.

    Args:
        a: One text.
        b: The other.

    Returns:
        A similarity in [0, 1]; symmetric.
    """
    left, right = token_set(a), token_set(b)
    if not left or not right:
        return 0.0
    return len(left & right) / math.sqrt(len(left) * len(right))


# ----------------------------------------------------------------------------------------------
# Influence scoring (docs/backtracking.md §9.5)

PERSIST_THRESHOLD = 0.3
"""An ancestor "carries" the evidence when their similarity exceeds this."""


class InfluenceWeights(_Frozen):
    """How the four influence signals are mixed; finite, non-negative, not all zero."""

    fa: float = 0.4
    """Weight of the evidence's similarity to the final answer."""
    avg: float = 0.3
    """Weight of its mean similarity to the ancestor texts."""
    persist: float = 0.2
    """Weight of the fraction of ancestors it carries into."""
    depth: float = 0.1
    """Weight of ``1 / (1 + ancestors)``: nearer evidence counts more."""

    @model_validator(mode="after")
    def _check(self) -> InfluenceWeights:
        values = (self.fa, self.avg, self.persist, self.depth)
        # BacktrackError is not a ValueError, so pydantic lets it through unwrapped.
        if not all(math.isfinite(value) and value >= 0 for value in values):
            raise BacktrackError(f"influence weights must be finite and non-negative, got {values}")
        if not any(values):
            raise BacktrackError("influence weights must not all be zero")
        return self

    def without_ancestors(self) -> InfluenceWeights:
        """The weights used when there are no ancestors.

        The mass of ``avg`` and ``persist`` moves onto ``fa`` and ``depth`` in proportion to their
        weights (defaults give ``fa 0.8, depth 0.2``). When ``fa`` and ``depth`` are both zero the
        mass is split evenly between them, so the score still means something.
        """
        moved = self.avg + self.persist
        base = self.fa + self.depth
        fa_share = self.fa / base if base > 0 else 0.5
        return InfluenceWeights(
            fa=self.fa + moved * fa_share, avg=0.0, persist=0.0, depth=self.depth + moved * (1.0 - fa_share)
        )


DEFAULT_WEIGHTS = InfluenceWeights()
"""``fa 0.4, avg 0.3, persist 0.2, depth 0.1``."""


class EvidenceInput(_Frozen):
    """One piece of evidence to score against an answer."""

    id: str
    """Unique among the inputs of one scoring."""
    text: str
    """The evidence's text."""
    ancestor_texts: list[str] = Field(default_factory=list)
    """Outputs of the intermediate LLM calls between the evidence and the answer."""


class InfluenceSignals(_Frozen):
    """The four signals of one piece of evidence, each in [0, 1]."""

    fa: float
    """Similarity to the final answer."""
    avg: float
    """Mean similarity to the ancestors; 0 with none."""
    persist: float
    """Fraction of ancestors with similarity above :data:`PERSIST_THRESHOLD`; 0 with none."""
    depth: float
    """``1 / (1 + number of ancestors)``."""


class InfluenceScore(_Frozen):
    """The influence composite of one piece of evidence (correlational)."""

    tier: Correlational = "correlational"
    """Always correlational: an alignment, never a cause."""
    id: str
    """The evidence id."""
    score: float
    """``Σ weight × signal``."""
    signals: InfluenceSignals
    """The signals that were mixed."""
    weights: InfluenceWeights
    """The weights actually used (redistributed when ``adapted``)."""
    adapted: bool
    """True when there were no ancestors and the weights were redistributed."""


def score_influence(
    evidence: Sequence[EvidenceInput],
    answer_text: str,
    *,
    weights: InfluenceWeights = DEFAULT_WEIGHTS,
    similarity: Callable[[str, str], float] = lexical_overlap,
    persist_threshold: float = PERSIST_THRESHOLD,
) -> list[InfluenceScore]:
    """Score each piece of evidence against the final answer (docs/backtracking.md §9.5).

    Args:
        evidence: The pieces; ids must be unique.
        answer_text: The final answer.
        weights: The signal weights.
        similarity: The similarity function (lexical overlap by default).
        persist_threshold: The ``T`` of the persist signal.

    Returns:
        One score per piece, sorted by descending score; ties keep input order.

    Raises:
        BacktrackError: Two inputs share an id.
    """
    _require_unique((item.id for item in evidence), "evidence")
    scored: list[InfluenceScore] = []
    for item in evidence:
        ancestors = item.ancestor_texts
        fa = similarity(item.text, answer_text)
        sims = [similarity(item.text, ancestor) for ancestor in ancestors]
        signals = InfluenceSignals(
            fa=fa,
            avg=sum(sims) / len(sims) if sims else 0.0,
            persist=sum(1 for value in sims if value > persist_threshold) / len(sims) if sims else 0.0,
            depth=1.0 / (1 + len(ancestors)),
        )
        used = weights if ancestors else weights.without_ancestors()
        score = (
            used.fa * signals.fa
            + used.avg * signals.avg
            + used.persist * signals.persist
            + used.depth * signals.depth
        )
        scored.append(
            InfluenceScore(id=item.id, score=score, signals=signals, weights=used, adapted=not ancestors)
        )
    # sorted() is stable: equal scores keep the caller's (slice) order.
    return sorted(scored, key=lambda entry: -entry.score)


# ----------------------------------------------------------------------------------------------
# Ranking confidence (docs/backtracking.md §9.5)

ClearWinnerStrategy: TypeAlias = Callable[[float, float, float], bool]
"""``strategy(s0, s1, threshold) -> clear winner?`` for the top two scores."""


def margin_strategy(s0: float, s1: float, threshold: float) -> bool:
    """A clear winner iff ``s0 − s1 ≥ threshold``."""
    return s0 - s1 >= threshold


def ratio_strategy(s0: float, s1: float, threshold: float) -> bool:
    """A clear winner iff ``(s0 − s1) / |s0| ≥ threshold``; never when ``s0`` is 0."""
    if s0 == 0:
        return False
    return (s0 - s1) / abs(s0) >= threshold


class RankingConfidence(_Frozen):
    """How decisively a ranking picks its leader (correlational)."""

    tier: Correlational = "correlational"
    """Always correlational."""
    clear_winner: bool
    """The leader stands apart from the runner-up."""
    margin: float | None = None
    """``s0 − s1``; ``None`` with fewer than two scores."""
    shortlist: list[int] = Field(default_factory=list)
    """Indices (into the scores given) worth a closer look, best first."""


def ranking_confidence(
    scores: Sequence[float],
    *,
    clear_winner_margin: float = 0.05,
    shortlist_band: float = 0.1,
    strategy: ClearWinnerStrategy = margin_strategy,
) -> RankingConfidence:
    """Judge how clear a ranking's winner is (docs/backtracking.md §9.5 ``rankingConfidence``).

    Non-finite scores take no part: they neither lead nor join the shortlist.

    Args:
        scores: The scores, in any order.
        clear_winner_margin: The threshold handed to ``strategy``.
        shortlist_band: Scores within this distance of the top join the shortlist.
        strategy: :func:`margin_strategy` (default) or :func:`ratio_strategy`, or your own.

    Returns:
        Whether there is a clear winner, the margin, and the shortlist: every finite score within
        the band of the top, always the lead, and the runner-up too when there is no clear winner.
    """
    finite = [index for index, score in enumerate(scores) if math.isfinite(score)]
    ranked = sorted(finite, key=lambda index: -scores[index])
    if not ranked:
        return RankingConfidence(clear_winner=False)
    if len(ranked) == 1:
        return RankingConfidence(clear_winner=True, shortlist=ranked)
    s0, s1 = scores[ranked[0]], scores[ranked[1]]
    clear = strategy(s0, s1, clear_winner_margin)
    shortlist = [index for index in ranked if s0 - scores[index] <= shortlist_band]
    if ranked[0] not in shortlist:  # a negative band: the lead still belongs
        shortlist.insert(0, ranked[0])
    if not clear and ranked[1] not in shortlist:
        shortlist.insert(1, ranked[1])
    return RankingConfidence(clear_winner=clear, margin=s0 - s1, shortlist=shortlist)


# ----------------------------------------------------------------------------------------------
# Ablation specs (docs/backtracking.md §9.6): what a rerun leaves out, or puts back


class ToolSpec(_Frozen):
    """Rerun without these tools (filtered by schema name when the agent is built)."""

    kind: Literal["tool"] = "tool"
    ignored_tools: list[str]
    """Tool names to leave out."""


class InjectionSpec(_Frozen):
    """Rerun without these injections."""

    kind: Literal["injection"] = "injection"
    exclude_injection_ids: list[str]
    """Injection ids to leave out."""


class MemorySpec(_Frozen):
    """Rerun without these memory entries."""

    kind: Literal["memory"] = "memory"
    exclude_memory_ids: list[str]
    """Memory entry ids to leave out."""


class ArgSpec(_Frozen):
    """An untracked input: the runner must override it itself (fpdebug's runners cannot)."""

    kind: Literal["arg"] = "arg"
    source: str
    """The piece whose input is untracked."""
    note: str
    """What the runner would have to change."""


class RestoreSpec(_Frozen):
    """Rerun WITH a piece that was available but not sent (missing context, docs/backtracking.md §9.3)."""

    kind: Literal["restore"] = "restore"
    unit_kind: Literal["tool", "injection", "memory"]
    """What kind of unit to put back."""
    unit_id: str
    """Its tool name, injection id or memory id."""


AblationSpec = Annotated[
    ToolSpec | InjectionSpec | MemorySpec | ArgSpec | RestoreSpec, Field(discriminator="kind")
]
"""One change a rerun makes to what the agent is built from; an empty list is the baseline."""

_ARG_NOTE = "untracked input: the runner must override it itself; fpdebug's runners cannot"


def ablation_spec_for(
    kind: SuspectKind,
    *,
    source: str,
    tool_name: str | None = None,
    injection_id: str | None = None,
) -> ToolSpec | InjectionSpec | MemorySpec | ArgSpec | None:
    """The spec that removes a suspect of ``kind`` (docs/backtracking.md §9.6); ``None`` for a stage.

    Args:
        kind: The suspect kind.
        source: The suspect's source (used by ``arg`` specs).
        tool_name: The tool (``tool`` suspects).
        injection_id: The injection or memory id (``injection`` and ``memory`` suspects).

    Returns:
        The spec, or ``None`` when nothing can be removed.

    Raises:
        BacktrackError: The name the kind needs is missing.
    """
    match kind:
        case "tool":
            return ToolSpec(ignored_tools=[_needed(tool_name, "tool_name", kind, source)])
        case "injection":
            return InjectionSpec(exclude_injection_ids=[_needed(injection_id, "injection_id", kind, source)])
        case "memory":
            return MemorySpec(exclude_memory_ids=[_needed(injection_id, "injection_id", kind, source)])
        case "arg":
            return ArgSpec(source=source, note=_ARG_NOTE)
        case "stage":
            return None
    raise BacktrackError(f"unknown suspect kind {kind!r}")


def restore_spec_for(
    kind: SuspectKind,
    *,
    source: str,
    tool_name: str | None = None,
    injection_id: str | None = None,
) -> RestoreSpec:
    """The spec that puts a missing piece back.

    Raises:
        BacktrackError: The kind cannot be restored (``arg``, ``stage``) or its name is missing.
    """
    match kind:
        case "tool":
            return RestoreSpec(unit_kind="tool", unit_id=_needed(tool_name, "tool_name", kind, source))
        case "injection" | "memory":
            return RestoreSpec(unit_kind=kind, unit_id=_needed(injection_id, "injection_id", kind, source))
    raise BacktrackError(
        f"a {kind} piece ({source!r}) cannot be restored: only tools, injections and "
        "memory entries can be put back"
    )


def spec_label(spec: AblationSpec) -> str:
    """A short label for a spec given without a suspect (``"tool 'lookup'"``, ``"restore injection 'x'"``)."""
    match spec:
        case ToolSpec():
            return " + ".join(f"tool '{name}'" for name in spec.ignored_tools)
        case InjectionSpec():
            return " + ".join(f"injection '{name}'" for name in spec.exclude_injection_ids)
        case MemorySpec():
            return " + ".join(f"memory '{name}'" for name in spec.exclude_memory_ids)
        case ArgSpec():
            return f"arg '{spec.source}'"
        case RestoreSpec():
            return f"restore {spec.unit_kind} '{spec.unit_id}'"
    raise BacktrackError(f"not an ablation spec: {spec!r}")


def _needed(value: str | None, field: str, kind: str, source: str) -> str:
    if not value:
        raise BacktrackError(f"a {kind} piece ({source!r}) needs {field} to build its ablation spec")
    return value


# ----------------------------------------------------------------------------------------------
# Suspects


class EdgeHop(_Frozen):
    """One hop of a suspect's provenance path, from the explained call back towards the suspect."""

    from_id: str
    """The node nearer the explained call."""
    from_name: str | None = None
    """Its display name."""
    to_id: str
    """The node nearer the suspect."""
    to_name: str | None = None
    """Its display name."""
    kind: Literal["data", "control"] = "data"
    """A value that was read (data) or a decision that admitted it (control)."""
    key: str | None = None
    """What was carried (``lastToolResult``, ``system-prompt``, a lease…)."""
    weight: float = Field(default=1.0, ge=0.0, le=1.0)
    """The hop's weight; the path's product is its structural strength."""


class SuspectDetail(_Frozen):
    """What a suspect is, by name."""

    tool_name: str | None = None
    """``tool`` suspects: the tool."""
    injection_id: str | None = None
    """``injection`` suspects: the injection; ``memory`` suspects: the memory entry id."""
    flavor: str | None = None
    """The injection's flavor (``fact``, ``steering``…)."""
    text: str | None = None
    """The text the model read, when there is one."""


class Suspect(_Frozen):
    """A piece of context ranked as a possible cause of an answer (docs/backtracking.md §9.3): correlational."""

    tier: Correlational = "correlational"
    """Always correlational: only an ablation verdict says "because"."""
    source: str
    """The piece's id (its node in the provenance)."""
    kind: SuspectKind
    """What it is."""
    detail: SuspectDetail = Field(default_factory=SuspectDetail)
    """Its names and text."""
    score: float = 0.0
    """The ranking score (``structural × semantic``, or ``structural`` alone as an upper bound)."""
    structural_score: float = 1.0
    """The path's strength: edge weights and the recency and depth decays."""
    semantic_score: float | None = None
    """The influence composite against the answer, in [0, 1]; ``None`` without text."""
    has_content_evidence: bool = False
    """False when ``score`` is an upper bound (no text was scored)."""
    signals: InfluenceSignals | None = None
    """The influence signals behind ``semantic_score``."""
    edge_path: list[EdgeHop] = Field(default_factory=list)
    """The hops from the explained call to the suspect."""
    iteration: int | None = None
    """The iteration it was last written."""
    depth: int = 0
    """Provenance hops back from the explained call (0: it rode the call itself)."""
    missing: bool = False
    """It was available but NOT sent: a candidate for missing context, probed by restoring it."""
    rank: int | None = None
    """1-based position in its ranking (the true rank, before any display folding)."""
    ablation: AblationSpec | None = None
    """How a rerun removes it (or, when ``missing``, puts it back); ``None`` for a stage."""


def suspect_label(suspect: Suspect) -> str:
    """``"<kind> '<tool name or injection id or source>'"`` (docs/backtracking.md §9.3)."""
    name = suspect.detail.tool_name or suspect.detail.injection_id or suspect.source
    return f"{suspect.kind} '{name}'"


def is_removable(suspect: Suspect) -> bool:
    """A tool, injection or memory suspect that a rerun can leave out."""
    return suspect.kind in ("tool", "injection", "memory") and isinstance(
        suspect.ablation, ToolSpec | InjectionSpec | MemorySpec
    )


def is_bisectable(suspect: Suspect) -> bool:
    """A suspect :func:`~fpdebug.backtrack.ablation.bisect_culprits` may remove: a spec that is
    neither ``arg`` (no runner support) nor ``restore`` (the other direction)."""
    return isinstance(suspect.ablation, ToolSpec | InjectionSpec | MemorySpec)


# ----------------------------------------------------------------------------------------------
# Ranking pieces


class Piece(_Frozen):
    """One piece of context the provenance found for the explained call: the ranking's input."""

    id: str
    """Unique among the pieces of one ranking (``injection:refund-policy``, ``tool:call_3``…)."""
    kind: SuspectKind
    """What it is."""
    text: str | None = None
    """The exact text the model read; ``None`` when there is none to score."""
    tool_name: str | None = None
    """``tool`` pieces: the tool name (required)."""
    injection_id: str | None = None
    """``injection`` pieces: the injection id; ``memory`` pieces: the memory id (required)."""
    flavor: str | None = None
    """The injection's flavor."""
    iteration: int | None = None
    """The iteration it was last written; ``None`` when unknown (no recency penalty)."""
    depth: int = Field(default=0, ge=0)
    """Provenance hops back from the explained call (0: it rode that call)."""
    ancestor_texts: list[str] = Field(default_factory=list)
    """Outputs of the intermediate LLM calls on its path to the explained call."""
    edge_path: list[EdgeHop] = Field(default_factory=list)
    """Its hops from the explained call."""
    missing: bool = False
    """Available but not sent (skipped, parked, expired lease): a restoration candidate."""


class SuspectRanking(_Frozen):
    """The ranked suspects of one answer: the correlational tier, whole."""

    tier: Correlational = "correlational"
    """Always correlational."""
    strategy: Literal["lexical-overlap"] = "lexical-overlap"
    """How text was compared."""
    at_iteration: int | None = None
    """The iteration recency was measured from."""
    suspects: list[Suspect]
    """Pieces that were sent, best first, at most ``max_suspects``."""
    missing: list[Suspect] = Field(default_factory=list)
    """Pieces available but not sent, best first, at most ``max_missing``; each has a restore spec."""
    folded: int = 0
    """Sent pieces ranked below the cut."""
    confidence: RankingConfidence
    """How clear the leader is among ``suspects``."""


def rank_pieces(
    pieces: Sequence[Piece],
    answer_text: str,
    *,
    at_iteration: int | None = None,
    weights: InfluenceWeights = DEFAULT_WEIGHTS,
    recency_decay: float = 0.9,
    hop_decay: float = 0.9,
    max_suspects: int = 12,
    max_missing: int = 5,
) -> SuspectRanking:
    """Rank the pieces of an explained call as suspects for its answer (formula: module docstring).

    Args:
        pieces: The pieces, in provenance (slice) order; ids must be unique.
        answer_text: The answer being explained.
        at_iteration: The explained call's iteration; defaults to the latest piece iteration.
        weights: The influence signal weights.
        recency_decay: Factor per iteration of age, in (0, 1].
        hop_decay: Factor per provenance hop, in (0, 1].
        max_suspects: How many sent pieces to keep (the reference keeps 12).
        max_missing: How many missing pieces to keep (the reference probes 5).

    Returns:
        The ranking; ties keep the pieces' order.

    Raises:
        BacktrackError: Duplicate ids, a decay outside (0, 1], a negative cap, or a piece without
            the name its kind needs.
    """
    _require_unique((piece.id for piece in pieces), "piece")
    _check_ranking(recency_decay, hop_decay, max_suspects, max_missing)
    if at_iteration is None:
        iterations = [piece.iteration for piece in pieces if piece.iteration is not None]
        at_iteration = max(iterations) if iterations else None

    texts = [
        EvidenceInput(id=piece.id, text=piece.text, ancestor_texts=piece.ancestor_texts)
        for piece in pieces
        if piece.text is not None
    ]
    influence = {entry.id: entry for entry in score_influence(texts, answer_text, weights=weights)}

    sent: list[Suspect] = []
    missing: list[Suspect] = []
    for piece in pieces:
        age = 0 if piece.iteration is None or at_iteration is None else max(0, at_iteration - piece.iteration)
        structural = math.prod(hop.weight for hop in piece.edge_path)
        structural *= recency_decay**age * hop_decay**piece.depth
        scored = influence.get(piece.id)
        semantic = None if scored is None else min(1.0, max(0.0, scored.score))
        spec = _spec_for(piece)
        suspect = Suspect(
            source=piece.id,
            kind=piece.kind,
            detail=SuspectDetail(
                tool_name=piece.tool_name,
                injection_id=piece.injection_id,
                flavor=piece.flavor,
                text=piece.text,
            ),
            score=structural if semantic is None else structural * semantic,
            structural_score=structural,
            semantic_score=semantic,
            has_content_evidence=semantic is not None,
            signals=None if scored is None else scored.signals,
            edge_path=piece.edge_path,
            iteration=piece.iteration,
            depth=piece.depth,
            missing=piece.missing,
            ablation=spec,
        )
        (missing if piece.missing else sent).append(suspect)

    ranked = _ranked(sent)
    kept = ranked[:max_suspects]
    return SuspectRanking(
        at_iteration=at_iteration,
        suspects=kept,
        missing=_ranked(missing)[:max_missing],
        folded=len(ranked) - len(kept),
        confidence=ranking_confidence([suspect.score for suspect in kept]),
    )


def _check_ranking(recency_decay: float, hop_decay: float, max_suspects: int, max_missing: int) -> None:
    for name, decay in (("recency_decay", recency_decay), ("hop_decay", hop_decay)):
        if not (math.isfinite(decay) and 0 < decay <= 1):
            raise BacktrackError(f"{name} must be in (0, 1], got {decay}")
    if max_suspects < 0 or max_missing < 0:
        raise BacktrackError("max_suspects and max_missing must not be negative")


def _spec_for(piece: Piece) -> AblationSpec | None:
    """What a rerun changes for ``piece``: a restoration when it was missing, else a removal."""
    if piece.missing:
        return restore_spec_for(
            piece.kind, source=piece.id, tool_name=piece.tool_name, injection_id=piece.injection_id
        )
    return ablation_spec_for(
        piece.kind, source=piece.id, tool_name=piece.tool_name, injection_id=piece.injection_id
    )


def _ranked(suspects: list[Suspect]) -> list[Suspect]:
    ordered = sorted(suspects, key=lambda suspect: -suspect.score)  # stable: ties keep slice order
    return [suspect.model_copy(update={"rank": rank}) for rank, suspect in enumerate(ordered, start=1)]


def _require_unique(ids: Iterable[str], what: str) -> None:
    seen: set[str] = set()
    for item in ids:
        if item in seen:
            raise BacktrackError(f"duplicate {what} id {item!r}: ids must be unique")
        seen.add(item)
