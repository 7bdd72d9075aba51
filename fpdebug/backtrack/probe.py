"""The runner contract and one probe: N seeded reruns of the explained call, and their stats.

The runner contract: ``runner(specs, *, seed) -> str | RunOutput``. It must build a FRESH agent and a
FRESH provider on every call (scripted providers are stateful), apply the specs to what the agent is
built from, and replay the explained call's exact input. An empty ``specs`` list is the baseline.
A probe flips when a strict majority of its reruns changed the answer (docs/backtracking.md §9.6).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from fpdebug.backtrack.flip import (
    DEFAULT_FLIP_THRESHOLD,
    AnswerChanged,
    Similarity,
    answer_similarity,
    check_threshold,
    similarity_changed,
)
from fpdebug.backtrack.suspects import AblationSpec, spec_label
from fpdebug.errors import BacktrackError, FpdebugError

__all__ = [
    "CostStats",
    "ProbeStats",
    "RunCost",
    "RunOutput",
    "Runner",
    "SimilarityStats",
    "Spread",
    "median",
    "probe_flipped",
    "prober",
    "resolve_samples",
    "run_ablation_probe",
]


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


def prober(
    runner: Runner,
    *,
    original: str,
    samples: float | None,
    answer_changed: AnswerChanged | None,
    flip_threshold: float,
    similarity: Similarity,
) -> Callable[[Sequence[AblationSpec]], ProbeStats]:
    """One probe function over ``runner`` with these settings; the settings are checked now, before any rerun."""
    resolve_samples(samples)  # fail before any rerun on a bad value
    check_threshold(flip_threshold)

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
