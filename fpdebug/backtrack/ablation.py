"""Seeded reruns without (or with) a piece of context: the only causal tier (docs/backtracking.md §9.6–§9.7).

A causal verdict needs N ≥ 2 seeded reruns, a strict majority of flips, and a stable baseline
(zero flips among the reruns with nothing removed). Everything else stays correlational.

The runner contract: ``runner(specs, *, seed) -> str | RunOutput``. It must build a FRESH agent and a
FRESH provider on every call (scripted providers are stateful), apply the specs to what the agent is
built from, and replay the explained call's exact input. An empty ``specs`` list is the baseline.

This module holds the verdicts (:func:`verdict_for`), probing ranked suspects one at a time
(:func:`probe_suspects`) and the counterfactual rerun (:func:`rerun_without`). The flip tests live in
:mod:`~fpdebug.backtrack.flip`, the runner contract and one probe's stats in
:mod:`~fpdebug.backtrack.probe`, the multi-culprit bisection in :mod:`~fpdebug.backtrack.bisection`;
their public names are importable from here too, as the causal tier's one entry point.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from fpdebug.backtrack.bisection import BisectResult, BisectVerdict, ProbeRecord, bisect_culprits
from fpdebug.backtrack.flip import (
    DEFAULT_FLIP_THRESHOLD,
    AnswerChanged,
    Similarity,
    answer_similarity,
    exact_changed,
    normalize_answer,
    normalized_changed,
    similarity_changed,
)
from fpdebug.backtrack.probe import (
    CostStats,
    ProbeStats,
    RunCost,
    Runner,
    RunOutput,
    SimilarityStats,
    Spread,
    median,
    probe_flipped,
    prober,
    resolve_samples,
    run_ablation_probe,
)
from fpdebug.backtrack.suspects import AblationSpec, Suspect, is_removable, spec_label, suspect_label
from fpdebug.errors import BacktrackError

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

Action: TypeAlias = Literal["ablating", "restoring"]
"""Which direction a probe went: a piece removed, or a missing piece put back."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


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
    probe = prober(
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
    probe = prober(
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
