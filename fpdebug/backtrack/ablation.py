"""Seeded reruns without (or with) a piece of context: the only causal tier (docs/backtracking.md §9.6–§9.7).

A causal verdict needs N ≥ 2 seeded reruns, a strict majority of flips, and a stable baseline
(zero flips among the reruns with nothing removed). Everything else stays correlational.

The runner contract: ``runner(specs, *, seed) -> str | RunOutput``. It must build a FRESH agent and a
FRESH provider on every call (scripted providers are stateful), apply the specs to what the agent is
built from, and replay the explained call's exact input. An empty ``specs`` list is the baseline.

"Did the answer change?" is pluggable (:data:`AnswerChanged`): :func:`exact_changed`,
:func:`normalized_changed`, or :func:`similarity_changed` (the default, threshold 0.8). Similarity
(:func:`answer_similarity`) is the lexical overlap of docs/backtracking.md §9.5 — deterministic, no embedder —
with two fpdebug additions: identical texts are 1.0, and when either text has no content token
(``"OK"`` against ``"I"``) it falls back to difflib's ratio of the normalized texts. Like the
reference's cosine default, it is blind to a flip carried by one short word: "refund approved" and
"refund not approved" are 0.82 alike, so pass :func:`normalized_changed` (or a domain test) when a
short yes/no answer is being explained.
"""

from __future__ import annotations

import difflib
import math
import statistics
import unicodedata
from collections.abc import Callable, Sequence
from typing import Literal, Protocol, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from fpdebug.backtrack.suspects import (
    AblationSpec,
    Suspect,
    is_bisectable,
    is_removable,
    lexical_overlap,
    spec_label,
    suspect_label,
    token_set,
)
from fpdebug.errors import BacktrackError, FpdebugError

__all__ = [
    "DEFAULT_FLIP_THRESHOLD",
    "AblationVerdict",
    "Action",
    "AnswerChanged",
    "BisectResult",
    "BisectVerdict",
    "CostStats",
    "ProbeRecord",
    "ProbeStats",
    "RerunResult",
    "RunCost",
    "RunOutput",
    "Runner",
    "Similarity",
    "SimilarityStats",
    "Spread",
    "SuspectProbe",
    "SuspectProbes",
    "WhatChanged",
    "answer_similarity",
    "bisect_culprits",
    "exact_changed",
    "median",
    "normalize_answer",
    "normalized_changed",
    "probe_flipped",
    "probe_suspects",
    "removable_sources",
    "rerun_without",
    "resolve_samples",
    "run_ablation_probe",
    "similarity_changed",
    "verdict_for",
]

DEFAULT_FLIP_THRESHOLD = 0.8
"""A rerun whose similarity to the original falls below this counts as a flip (docs/backtracking.md §9.6)."""

Action: TypeAlias = Literal["ablating", "restoring"]
"""Which direction a probe went: a piece removed, or a missing piece put back."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# ----------------------------------------------------------------------------------------------
# The runner contract


class RunCost(_Frozen):
    """What one rerun cost, as far as the runner knows."""

    loops: int | None = Field(default=None, ge=0)
    """ReAct iterations the rerun took."""
    tokens: int | None = Field(default=None, ge=0)
    """Tokens it used."""


class RunOutput(_Frozen):
    """A rerun's answer and, optionally, its cost."""

    output: str
    """The answer text."""
    cost: RunCost | None = None
    """Loops and tokens, when the runner measured them."""


class Runner(Protocol):
    """Reruns the explained call with ``specs`` applied, seeded."""

    def __call__(self, specs: Sequence[AblationSpec], *, seed: int) -> str | RunOutput:
        """Build a fresh agent and provider, apply ``specs``, rerun, return the answer."""
        ...


# ----------------------------------------------------------------------------------------------
# "Did the answer change?"

AnswerChanged: TypeAlias = Callable[[str, str], bool]
"""``answer_changed(original, output) -> True`` when the rerun's answer counts as a different one."""

Similarity: TypeAlias = Callable[[str, str], float]
"""``similarity(original, output)`` in [0, 1]."""


def _is_edge_junk(char: str) -> bool:
    # Unicode punctuation too: models write “curly quotes”, «guillemets» and em dashes.
    return char.isspace() or unicodedata.category(char).startswith("P")


def normalize_answer(text: str) -> str:
    """Casefold, collapse whitespace, strip punctuation (any Unicode ``P*``) and spaces at both ends."""
    collapsed = " ".join(text.casefold().split())
    start, end = 0, len(collapsed)
    while start < end and _is_edge_junk(collapsed[start]):
        start += 1
    while end > start and _is_edge_junk(collapsed[end - 1]):
        end -= 1
    return collapsed[start:end]


def answer_similarity(original: str, output: str) -> float:
    """How alike two answers are, in [0, 1] (see the module docstring for the rule)."""
    if original == output:
        return 1.0
    if token_set(original) and token_set(output):
        return lexical_overlap(original, output)
    return difflib.SequenceMatcher(None, normalize_answer(original), normalize_answer(output)).ratio()


def exact_changed(original: str, output: str) -> bool:
    """Changed unless byte-for-byte equal."""
    return original != output


def normalized_changed(original: str, output: str) -> bool:
    """Changed unless equal after :func:`normalize_answer`."""
    return normalize_answer(original) != normalize_answer(output)


def similarity_changed(
    threshold: float = DEFAULT_FLIP_THRESHOLD, *, similarity: Similarity = answer_similarity
) -> AnswerChanged:
    """A test that counts a flip when ``similarity(original, output) < threshold``.

    Args:
        threshold: The flip threshold, in [0, 1].
        similarity: The similarity function.

    Returns:
        The test.

    Raises:
        BacktrackError: The threshold is outside [0, 1].
    """
    _check_threshold(threshold)

    def changed(original: str, output: str) -> bool:
        return similarity(original, output) < threshold

    return changed


def _check_threshold(threshold: float) -> None:
    if not (math.isfinite(threshold) and 0.0 <= threshold <= 1.0):
        raise BacktrackError(f"flip threshold must be in [0, 1], got {threshold}")


# ----------------------------------------------------------------------------------------------
# Probes


class Spread(_Frozen):
    """Median, minimum and maximum of a few numbers."""

    median: float
    """The middle value (the mean of the two middle values for an even count)."""
    min: float
    """The smallest."""
    max: float
    """The largest."""


class SimilarityStats(_Frozen):
    """How alike the reruns' answers were to the original."""

    mean: float
    """Mean similarity."""
    min: float
    """Lowest."""
    max: float
    """Highest."""
    stdev: float
    """Population standard deviation."""


class CostStats(_Frozen):
    """What the reruns cost, over those that reported a cost."""

    samples: int
    """Reruns that reported a cost."""
    loops: Spread | None = None
    """Iterations per rerun."""
    tokens: Spread | None = None
    """Tokens per rerun."""


class ProbeStats(_Frozen):
    """The outcome of one probe: ``samples`` seeded reruns with the same specs."""

    samples: int
    """Reruns made (seeds ``0 … samples − 1``)."""
    flips: int
    """Reruns whose answer counted as changed."""
    similarity: SimilarityStats
    """Similarity of the reruns' answers to the original."""
    cost: CostStats | None = None
    """Cost, when any rerun reported one."""
    outputs: list[str] = Field(default_factory=list)
    """Each rerun's answer, by seed."""
    changed: list[bool] = Field(default_factory=list)
    """Whether each rerun's answer counted as changed, by seed."""


def median(values: Sequence[float]) -> float:
    """The median; the mean of the two middle values for an even count; 0 when empty."""
    return float(statistics.median(values)) if values else 0.0


def _spread(values: list[float]) -> Spread | None:
    return Spread(median=median(values), min=min(values), max=max(values)) if values else None


def resolve_samples(samples: float | None) -> int:
    """``max(2, floor(samples or 3))``: a causal claim needs at least two reruns."""
    if samples is not None and not math.isfinite(samples):
        raise BacktrackError(f"samples must be a finite number, got {samples}")
    return max(2, math.floor(samples or 3))


def run_ablation_probe(
    runner: Runner,
    specs: Sequence[AblationSpec],
    *,
    original: str,
    samples: float | None = 3,
    answer_changed: AnswerChanged | None = None,
    flip_threshold: float = DEFAULT_FLIP_THRESHOLD,
    similarity: Similarity = answer_similarity,
) -> ProbeStats:
    """Rerun with ``specs`` for seeds ``0 … n − 1`` and count flips (docs/backtracking.md §9.6 ``runAblationProbe``).

    Args:
        runner: The rerun function.
        specs: What to change; empty for the baseline.
        original: The answer being explained.
        samples: How many reruns; ``max(2, floor(samples or 3))`` are made.
        answer_changed: The flip test; defaults to ``similarity < flip_threshold``.
        flip_threshold: The default test's threshold.
        similarity: How similarity to the original is measured (for the stats and the default test).

    Returns:
        The probe's stats.

    Raises:
        BacktrackError: Bad ``samples`` or threshold, a runner that returned something other than
            a string or :class:`RunOutput`, or a runner that raised.
    """
    count = resolve_samples(samples)
    changed_test = answer_changed or similarity_changed(flip_threshold, similarity=similarity)
    outputs: list[str] = []
    costs: list[RunCost] = []
    for seed in range(count):
        result = _call(runner, specs, seed)
        if isinstance(result, RunOutput):
            outputs.append(result.output)
            if result.cost is not None:
                costs.append(result.cost)
        else:
            outputs.append(result)
    sims = [similarity(original, output) for output in outputs]
    changed = [bool(changed_test(original, output)) for output in outputs]
    cost = None
    if costs:
        cost = CostStats(
            samples=len(costs),
            loops=_spread([float(c.loops) for c in costs if c.loops is not None]),
            tokens=_spread([float(c.tokens) for c in costs if c.tokens is not None]),
        )
    return ProbeStats(
        samples=count,
        flips=sum(changed),
        similarity=SimilarityStats(
            mean=statistics.fmean(sims), min=min(sims), max=max(sims), stdev=statistics.pstdev(sims)
        ),
        cost=cost,
        outputs=outputs,
        changed=changed,
    )


def _call(runner: Runner, specs: Sequence[AblationSpec], seed: int) -> str | RunOutput:
    try:
        result = runner(list(specs), seed=seed)
    except FpdebugError:
        raise
    except Exception as exc:  # a user's tool or agent code failed inside the rerun
        labels = ", ".join(spec_label(spec) for spec in specs) or "nothing removed"
        raise BacktrackError(f"rerun (seed {seed}, {labels}) failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(result, str | RunOutput):
        raise BacktrackError(f"a runner must return a string or RunOutput, got {type(result).__name__}")
    return result


def probe_flipped(stats: ProbeStats) -> bool:
    """A strict majority of the reruns flipped: 1 of 2 is NOT a flip."""
    return stats.flips * 2 > stats.samples


# ----------------------------------------------------------------------------------------------
# Verdicts


class AblationVerdict(_Frozen):
    """What one probe proves about one label (docs/backtracking.md §9.6 ``verdictFor``)."""

    kind: Literal["confirmed", "not-confirmed", "inconclusive"]
    """Confirmed is the only causal outcome."""
    tier: Literal["causal", "correlational"]
    """``causal`` exactly when confirmed; otherwise the ranking stays a correlational proxy."""
    label: str
    """What was ablated or restored."""
    action: Action
    """Which direction."""
    flips: int
    """Reruns that flipped."""
    samples: int
    """Reruns made."""
    claim: str
    """The sentence to show."""


def verdict_for(
    label: str, stats: ProbeStats, baseline_stable: bool, action: Action = "ablating"
) -> AblationVerdict:
    """The verdict on one probe.

    Args:
        label: What was ablated or restored (``suspect_label``).
        stats: The probe's stats.
        baseline_stable: The baseline probe had zero flips.
        action: ``"ablating"`` or ``"restoring"``.

    Returns:
        Inconclusive when the baseline is unstable or only a minority flipped; confirmed (causal)
        on a strict majority; not-confirmed when nothing flipped.
    """
    f, n = stats.flips, stats.samples
    if not baseline_stable:
        kind: Literal["confirmed", "not-confirmed", "inconclusive"] = "inconclusive"
        claim = (
            f"INCONCLUSIVE: the baseline itself changed outcome with nothing removed, so {action} "
            f"{label} ({f}/{n} flipped) proves nothing"
        )
    elif probe_flipped(stats):
        kind = "confirmed"
        claim = (
            f"CAUSAL: {action} {label} flipped the outcome in {f}/{n} seeded reruns "
            f"(mean similarity {stats.similarity.mean:.2f} ± {stats.similarity.stdev:.2f})"
        )
    elif f > 0:
        kind = "inconclusive"
        claim = f"INCONCLUSIVE: {action} {label} flipped only {f}/{n} seeded reruns, not a majority"
    else:
        kind = "not-confirmed"
        claim = (
            f"NOT CONFIRMED: {action} {label} changed the outcome in 0/{n} seeded reruns; "
            "its ranking remains a correlational proxy only"
        )
    return AblationVerdict(
        kind=kind,
        tier="causal" if kind == "confirmed" else "correlational",
        label=label,
        action=action,
        flips=f,
        samples=n,
        claim=claim,
    )


# ----------------------------------------------------------------------------------------------
# Probing ranked suspects one at a time (docs/backtracking.md §9.3 step 5 and missing context)


class SuspectProbe(_Frozen):
    """One suspect probed on its own."""

    suspect: Suspect
    """The suspect."""
    stats: ProbeStats
    """Its probe."""
    verdict: AblationVerdict
    """What the probe proves (``restoring`` for a missing piece, else ``ablating``)."""


class SuspectProbes(_Frozen):
    """A baseline probe and one probe per suspect."""

    baseline: ProbeStats
    """The reruns with nothing changed."""
    baseline_stable: bool
    """Zero flips in the baseline: the condition for any causal verdict."""
    probes: list[SuspectProbe] = Field(default_factory=list)
    """One per probed suspect, in ranked order."""
    runs_used: int
    """Runner calls made (the baseline's included, unless it was handed in)."""


def probe_suspects(
    suspects: Sequence[Suspect],
    runner: Runner,
    *,
    original: str,
    samples: float | None = 3,
    max_suspects: int = 5,
    baseline: ProbeStats | None = None,
    answer_changed: AnswerChanged | None = None,
    flip_threshold: float = DEFAULT_FLIP_THRESHOLD,
    similarity: Similarity = answer_similarity,
) -> SuspectProbes:
    """Baseline first, then one probe per top suspect with a usable spec (docs/backtracking.md §9.3 step 5).

    Suspects with a removal spec are ablated; missing ones (a ``restore`` spec) are restored; ``arg``
    and ``stage`` suspects are skipped (nothing a runner can apply).

    Args:
        suspects: Ranked suspects (or ranked missing pieces).
        runner: The rerun function.
        original: The answer being explained.
        samples: Reruns per probe (``max(2, floor(samples or 3))``).
        max_suspects: How many suspects to probe (the reference probes 5).
        baseline: A baseline probe already made with the same runner, to reuse.
        answer_changed: The flip test.
        flip_threshold: The default flip test's threshold.
        similarity: How similarity is measured.

    Returns:
        The baseline and each suspect's verdict.
    """
    probe = _prober(
        runner,
        original=original,
        samples=samples,
        answer_changed=answer_changed,
        flip_threshold=flip_threshold,
        similarity=similarity,
    )
    runs = 0
    if baseline is None:
        baseline = probe([])
        runs += baseline.samples
    stable = baseline.flips == 0
    chosen = [(s, s.ablation) for s in suspects if s.ablation is not None and s.ablation.kind != "arg"]
    results: list[SuspectProbe] = []
    for suspect, spec in chosen[: max(0, max_suspects)]:
        stats = probe([spec])
        runs += stats.samples
        action: Action = "restoring" if spec.kind == "restore" else "ablating"
        results.append(
            SuspectProbe(
                suspect=suspect,
                stats=stats,
                verdict=verdict_for(suspect_label(suspect), stats, stable, action),
            )
        )
    return SuspectProbes(baseline=baseline, baseline_stable=stable, probes=results, runs_used=runs)


def _prober(
    runner: Runner,
    *,
    original: str,
    samples: float | None,
    answer_changed: AnswerChanged | None,
    flip_threshold: float,
    similarity: Similarity,
) -> Callable[[Sequence[AblationSpec]], ProbeStats]:
    resolve_samples(samples)  # fail before any rerun on a bad value
    _check_threshold(flip_threshold)

    def probe(specs: Sequence[AblationSpec]) -> ProbeStats:
        return run_ablation_probe(
            runner,
            specs,
            original=original,
            samples=samples,
            answer_changed=answer_changed,
            flip_threshold=flip_threshold,
            similarity=similarity,
        )

    return probe


# ----------------------------------------------------------------------------------------------
# Multi-culprit bisection (docs/backtracking.md §9.7)


BisectVerdict: TypeAlias = Literal["confirmed", "not-reproducible", "inconclusive"]
"""The outcome of a bisection."""


class ProbeRecord(_Frozen):
    """One probe a bisection ran."""

    ablated: list[str]
    """The labels removed, in ranked order (empty for the baseline)."""
    stats: ProbeStats
    """Its stats."""
    flipped: bool
    """A strict majority flipped."""


class BisectResult(_Frozen):
    """What :func:`bisect_culprits` found."""

    verdict: BisectVerdict
    """Confirmed: at least one minimal culprit set; not-reproducible: removing every candidate
    changes nothing; inconclusive: an unstable baseline or a spent budget."""
    tier: Literal["causal", "correlational"]
    """``causal`` exactly when confirmed."""
    culprits: list[list[Suspect]] = Field(default_factory=list)
    """Minimal sets, each of which must be removed TOGETHER to flip the answer, in the order found.
    On a spent budget, the sets completed before it ran out."""
    probes: list[ProbeRecord] = Field(default_factory=list)
    """Every probe run, in order (cache hits are not repeated)."""
    runs_used: int
    """``len(probes) × samples``: runner calls made."""
    baseline: ProbeStats | None = None
    """The baseline probe (absent only when the budget allowed no probe at all)."""
    reason: str
    """One sentence on why this verdict."""


class _BudgetSpent(Exception):
    """Internal: the next probe would exceed ``max_probes``."""


def bisect_culprits(
    suspects: Sequence[Suspect],
    runner: Runner,
    *,
    original: str,
    samples: float | None = 3,
    max_probes: int = 24,
    max_culprits: int = 4,
    answer_changed: AnswerChanged | None = None,
    flip_threshold: float = DEFAULT_FLIP_THRESHOLD,
    similarity: Similarity = answer_similarity,
) -> BisectResult:
    """Find the minimal sets of suspects whose removal flips the answer (docs/backtracking.md §9.7).

    Candidates are the suspects with a removal spec (``arg``, ``stage`` and ``restore`` left out),
    in ranked order, one per label. The baseline runs first and ANY flip in it stops the search as
    inconclusive. Then all candidates are removed together; no flip means not-reproducible. Then a
    two-way ddmin (split at ``ceil(n / 2)``; on interference, the union of both halves minimised
    against each other) finds one minimal set; it is set aside and the search goes on while the
    remaining candidates still flip, up to ``max_culprits`` sets. A probe is never run twice (the
    cache key is the sorted labels); needing a probe beyond ``max_probes`` ends as inconclusive.

    Args:
        suspects: Ranked suspects.
        runner: The rerun function.
        original: The answer being explained.
        samples: Reruns per probe (``max(2, floor(samples or 3))``).
        max_probes: The probe budget, baseline included.
        max_culprits: How many minimal sets to look for.
        answer_changed: The flip test.
        flip_threshold: The default flip test's threshold.
        similarity: How similarity is measured.

    Returns:
        The verdict, the culprit sets, every probe and the runs used.

    Raises:
        BacktrackError: A budget or cap below 1, or a bad ``samples`` or threshold.
    """
    if max_probes < 1 or max_culprits < 1:
        raise BacktrackError(
            f"max_probes and max_culprits must be at least 1, got {max_probes} and {max_culprits}"
        )
    count = resolve_samples(samples)
    probe = _prober(
        runner,
        original=original,
        samples=count,
        answer_changed=answer_changed,
        flip_threshold=flip_threshold,
        similarity=similarity,
    )
    candidates: list[Suspect] = []
    order: dict[str, int] = {}
    for suspect in suspects:
        label = suspect_label(suspect)
        if is_bisectable(suspect) and label not in order:
            order[label] = len(candidates)
            candidates.append(suspect)

    records: list[ProbeRecord] = []
    cache: dict[str, ProbeRecord] = {}

    def run(group: Sequence[Suspect]) -> ProbeRecord:
        ranked = sorted(group, key=lambda suspect: order.get(suspect_label(suspect), -1))
        labels = [suspect_label(suspect) for suspect in ranked]
        key = "\x1f".join(sorted(labels))
        if key in cache:
            return cache[key]
        if len(records) >= max_probes:
            raise _BudgetSpent
        specs = [suspect.ablation for suspect in ranked if suspect.ablation is not None]
        stats = probe(specs)
        record = cache[key] = ProbeRecord(ablated=labels, stats=stats, flipped=probe_flipped(stats))
        records.append(record)
        return record

    def flips(group: Sequence[Suspect]) -> bool:
        return run(group).flipped

    def minimize(group: list[Suspect], context: list[Suspect]) -> list[Suspect]:
        # Invariant: removing group + context flips the answer; removing context alone does not.
        if len(group) <= 1:
            return group
        cut = math.ceil(len(group) / 2)
        top, rest = group[:cut], group[cut:]
        if flips(top + context):
            return minimize(top, context)
        if flips(rest + context):
            return minimize(rest, context)
        from_top = minimize(top, rest + context)
        from_rest = minimize(rest, from_top + context)
        return from_top + from_rest

    culprits: list[list[Suspect]] = []
    baseline: ProbeStats | None = None

    def result(verdict: BisectVerdict, reason: str) -> BisectResult:
        return BisectResult(
            verdict=verdict,
            tier="causal" if verdict == "confirmed" else "correlational",
            culprits=culprits,
            probes=records,
            runs_used=len(records) * count,
            baseline=baseline,
            reason=reason,
        )

    try:
        baseline = run([]).stats
        if baseline.flips > 0:
            return result(
                "inconclusive",
                f"the baseline itself changed outcome in {baseline.flips}/{baseline.samples} "
                "seeded reruns with nothing removed; no causal claim is possible",
            )
        if not candidates:
            return result("not-reproducible", "no suspect has a spec a rerun can remove")
        everything = run(candidates)
        if not everything.flipped:
            return result(
                "not-reproducible",
                f"removing all {len(candidates)} candidates together flipped only "
                f"{everything.stats.flips}/{everything.stats.samples} seeded reruns; "
                "the answer does not depend on the ranked context",
            )
        remaining = candidates
        while True:
            found = minimize(remaining, [])
            culprits.append(found)
            found_labels = {suspect_label(suspect) for suspect in found}
            remaining = [suspect for suspect in remaining if suspect_label(suspect) not in found_labels]
            if not remaining:
                break
            if len(culprits) >= max_culprits:
                return result(
                    "confirmed",
                    f"found {len(culprits)} culprit set(s) in {len(records)} probes; "
                    f"stopped at max_culprits={max_culprits} without checking the rest",
                )
            if not flips(remaining):
                break
        return result("confirmed", f"found {len(culprits)} culprit set(s) in {len(records)} probes")
    except _BudgetSpent:
        return result(
            "inconclusive",
            f"the probe budget (max_probes={max_probes}) ran out before the "
            f"search finished; {len(culprits)} culprit set(s) were completed",
        )


# ----------------------------------------------------------------------------------------------
# Counterfactual rerun (docs/backtracking.md §9.7 rerunWithoutSources)


class WhatChanged(_Frozen):
    """How the answer moved when the sources were removed."""

    answer_flipped: bool
    """A strict majority of the reruns changed the answer."""
    flips: int
    """Reruns that changed it."""
    samples: int
    """Reruns made."""
    similarity_to_original: float
    """Mean similarity of the reruns' answers to the original."""
    baseline_checked: bool
    """A baseline probe was run too (the only way to get a verdict)."""
    summary: str
    """One sentence."""


class RerunResult(_Frozen):
    """The outcome of :func:`rerun_without`."""

    answer: str
    """The seed-0 rerun's answer."""
    answers: list[str]
    """Every rerun's answer, by seed."""
    removed: list[AblationSpec]
    """The specs applied, duplicates collapsed (what a forked session would carry on removing)."""
    labels: list[str]
    """What was removed, for display."""
    what_changed: WhatChanged
    """How the answer moved."""
    stats: ProbeStats
    """The probe behind it."""
    runs: int
    """Runner calls made (the baseline's included)."""
    baseline: ProbeStats | None = None
    """The baseline probe, with ``check_baseline``."""
    verdict: AblationVerdict | None = None
    """The causal verdict, only with ``check_baseline``."""


def removable_sources(suspects: Sequence[Suspect]) -> list[Suspect]:
    """The tool, injection and memory suspects a rerun can remove, one per id, in ranked order."""
    seen: set[str] = set()
    found: list[Suspect] = []
    for suspect in suspects:
        if not is_removable(suspect):
            continue
        key = f"{suspect.kind}:{_removable_id(suspect)}"
        if key not in seen:
            seen.add(key)
            found.append(suspect)
    return found


def _removable_id(suspect: Suspect) -> str:
    return suspect.detail.injection_id or suspect.detail.tool_name or suspect.source


def _resolve(name: str, suspects: Sequence[Suspect]) -> Suspect:
    for field in ("injection_id", "tool_name"):
        for suspect in suspects:
            if getattr(suspect.detail, field) == name:
                return suspect
    for suspect in suspects:
        if suspect.source == name:
            return suspect
    ids = ", ".join(_removable_id(suspect) for suspect in removable_sources(suspects)) or "none"
    raise BacktrackError(f"no suspect {name!r} to remove; removable ids: {ids}")


def rerun_without(
    suspects: Sequence[Suspect],
    ignore: Sequence[str | AblationSpec],
    runner: Runner,
    *,
    original: str,
    samples: float | None = 3,
    answer_changed: AnswerChanged | None = None,
    flip_threshold: float = DEFAULT_FLIP_THRESHOLD,
    similarity: Similarity = answer_similarity,
    check_baseline: bool = False,
) -> RerunResult:
    """Rerun without some sources and say what changed (docs/backtracking.md §9.7 ``rerunWithoutSources``).

    A string is resolved against the ranked suspects by injection id, then tool name, then source;
    the first ranked match wins. A spec passes through unchanged. Duplicates are collapsed.

    Args:
        suspects: Ranked suspects (the report's).
        ignore: Ids or specs to remove; must not be empty.
        runner: The rerun function.
        original: The answer being explained.
        samples: Reruns (``max(2, floor(samples or 3))``).
        answer_changed: The flip test.
        flip_threshold: The default flip test's threshold.
        similarity: How similarity is measured.
        check_baseline: Also run the baseline and give a causal verdict.

    Returns:
        The seed-0 answer, every answer, what was removed and what changed.

    Raises:
        BacktrackError: Empty ``ignore``; an unknown id (the message lists the removable ids); a
            ``stage``, ``arg`` or missing (not sent) suspect.
    """
    if not ignore:
        raise BacktrackError("nothing to remove: name at least one suspect id or spec")
    probe = _prober(
        runner,
        original=original,
        samples=samples,
        answer_changed=answer_changed,
        flip_threshold=flip_threshold,
        similarity=similarity,
    )
    removed: list[AblationSpec] = []
    labels: list[str] = []
    seen: set[str] = set()
    for item in ignore:
        if isinstance(item, str):
            suspect = _resolve(item, suspects)
            label = suspect_label(suspect)
            if suspect.kind in ("stage", "arg"):
                raise BacktrackError(
                    f"{label} cannot be removed: a {suspect.kind} suspect has no spec a runner can apply"
                )
            if not is_removable(suspect) or suspect.ablation is None:
                raise BacktrackError(f"{label} was not sent to the model, so it cannot be removed")
            spec = suspect.ablation
        else:
            spec, label = item, spec_label(item)
        key = spec.model_dump_json()
        if key not in seen:
            seen.add(key)
            removed.append(spec)
            labels.append(label)

    stats = probe(removed)
    runs = stats.samples
    baseline = verdict = None
    if check_baseline:
        baseline = probe([])
        runs += baseline.samples
        verdict = verdict_for(" + ".join(labels), stats, baseline.flips == 0, "ablating")

    flipped = probe_flipped(stats)
    f, n, mean = stats.flips, stats.samples, stats.similarity.mean
    what = " + ".join(labels)
    if flipped:
        summary = f"without {what}, the answer changed in {f}/{n} seeded reruns (mean similarity {mean:.2f})"
    elif f:
        summary = (
            f"without {what}, the answer changed in only {f}/{n} seeded reruns, not a majority "
            f"(mean similarity {mean:.2f})"
        )
    else:
        summary = f"without {what}, the answer held in {n}/{n} seeded reruns (mean similarity {mean:.2f})"
    if baseline is not None and baseline.flips:
        summary += (
            f"; but the baseline itself changed outcome in {baseline.flips}/{baseline.samples}, "
            "so this proves nothing"
        )
    return RerunResult(
        answer=stats.outputs[0],
        answers=stats.outputs,
        removed=removed,
        labels=labels,
        what_changed=WhatChanged(
            answer_flipped=flipped,
            flips=f,
            samples=n,
            similarity_to_original=mean,
            baseline_checked=check_baseline,
            summary=summary,
        ),
        stats=stats,
        runs=runs,
        baseline=baseline,
        verdict=verdict,
    )
