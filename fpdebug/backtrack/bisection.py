"""Multi-culprit bisection: the minimal sets of suspects whose removal flips the answer (docs/backtracking.md §9.7).

Delta debugging (ddmin) over the bisectable suspects, within a probe budget: each set it reports was
confirmed by seeded reruns, and the result says when the budget ran out before the search finished.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from fpdebug.backtrack.flip import DEFAULT_FLIP_THRESHOLD, AnswerChanged, Similarity, answer_similarity
from fpdebug.backtrack.probe import ProbeStats, Runner, probe_flipped, prober, resolve_samples
from fpdebug.backtrack.suspects import Suspect, is_bisectable, suspect_label
from fpdebug.errors import BacktrackError

__all__ = ["BisectResult", "BisectVerdict", "ProbeRecord", "bisect_culprits"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


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
    probe = prober(
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
