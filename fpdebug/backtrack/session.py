"""One backtrack end to end: provenance → ranking → report → seeded reruns → verdicts → sidecar.

:func:`explain` is the correlational tier alone (the trace is read, nothing is rerun or written).
:func:`backtrack` adds what the caller asks for: ``ablate`` (a baseline, then one probe per top
suspect), ``restore`` (one probe per restorable missing piece), ``bisect`` (the minimal culprit
sets); every verdict is appended to the sidecar beside the trace as soon as it completes.

Hooks for a UI (the TUI's backtrack pane runs this in a worker thread):

- ``progress(done, total)`` after every rerun; ``total`` is an upper bound while a bisection runs
  (its probe count is not known in advance) and the last call has ``done == total``;
- ``cancelled()`` is asked before every rerun; when it returns True the backtrack stops, writes an
  ``end`` record with status ``cancelled`` and returns the report as it stood (``status ==
  "cancelled"``): every verdict that finished is in it and in the sidecar.

"Did the answer change?" (:data:`FlipTest`): ``auto`` (the default) compares NORMALIZED text
(case, spacing and edge punctuation ignored) when the original answer has at most
:data:`SHORT_ANSWER_TOKENS` content tokens, because a lexical similarity cannot see a one-word flip
("approved" / "not approved"), and the lexical similarity (< 0.8 is a flip) for longer answers,
whose wording a live model varies from seed to seed. ``exact``, ``normalized`` and ``similarity``
force one test.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeAlias

from fpdebug.backtrack.ablation import SuspectProbe, probe_suspects
from fpdebug.backtrack.bisection import BisectResult, bisect_culprits
from fpdebug.backtrack.flip import (
    DEFAULT_FLIP_THRESHOLD,
    AnswerChanged,
    exact_changed,
    normalized_changed,
    similarity_changed,
)
from fpdebug.backtrack.probe import ProbeStats, Runner, RunOutput, resolve_samples, run_ablation_probe
from fpdebug.backtrack.provenance import Provenance, trace_provenance
from fpdebug.backtrack.report import BacktrackReport, BisectSummary, build_report
from fpdebug.backtrack.rerun import (
    ModuleLoader,
    RecordedCallRunner,
    RerunProvider,
    rerun_provider_for,
    runner_for,
)
from fpdebug.backtrack.sidecar import SidecarWriter
from fpdebug.backtrack.suspects import AblationSpec, Suspect, SuspectRanking, rank_pieces, token_set
from fpdebug.errors import BacktrackCancelled, BacktrackError, FpdebugError
from fpdebug.trace.model import RunModel
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import RunStartEvent

__all__ = [
    "SHORT_ANSWER_TOKENS",
    "Backtrack",
    "Cancelled",
    "FlipTest",
    "LiveCalls",
    "Progress",
    "backtrack",
    "explain",
    "flip_test_for",
]

FlipTest: TypeAlias = Literal["auto", "exact", "normalized", "similarity"]
"""How a rerun's answer is judged different from the original (see the module docstring)."""

SHORT_ANSWER_TOKENS = 12
"""``auto`` compares normalized text for answers with at most this many content tokens."""

Progress: TypeAlias = Callable[[int, int], None]
"""``progress(done, total)``: reruns made, and the reruns planned (an upper bound during a bisection)."""

Cancelled: TypeAlias = Callable[[], bool]
"""``cancelled() -> True`` stops the backtrack before its next rerun."""


@dataclass
class Backtrack:
    """The outcome of one backtrack."""

    report: BacktrackReport
    """The report (what the CLI prints and the pane renders)."""
    provenance: Provenance
    """The call's provenance (every piece that rode it, with its chain)."""
    ranking: SuspectRanking
    """The ranked suspects and missing candidates (correlational)."""
    sidecar: Path | None = None
    """The sidecar the records went to (``None`` when not saved)."""
    probes: list[SuspectProbe] = field(default_factory=list)
    """Every suspect and restoration probe, in order."""
    baseline: ProbeStats | None = None
    """The baseline probe of ``ablate`` / ``restore``."""
    bisect: BisectResult | None = None
    """The bisection, when one ran."""
    live_calls: LiveCalls | None = None
    """What the reruns sent to a live model cost (``None`` when no live model was asked for)."""


@dataclass
class LiveCalls:
    """The live calls of a backtrack's reruns: how many, to whom, and their tokens as the API reported.

    Dollars are not computed: fpdebug keeps no price list (the tokens are what a bill is made of).
    """

    provider: str
    """The live model, as the report names it (``openai model gpt-4o (live, as asked)``)."""
    calls: int = 0
    """Live calls made (one per rerun)."""
    input_tokens: int = 0
    """Input tokens of all of them."""
    output_tokens: int = 0
    """Output tokens of all of them."""

    @property
    def tokens(self) -> int:
        """Input and output tokens, in all."""
        return self.input_tokens + self.output_tokens

    @property
    def per_rerun(self) -> float:
        """Tokens per rerun, on average (0 before any)."""
        return self.tokens / self.calls if self.calls else 0.0

    def words(self) -> str:
        """``6 live calls · 660 tokens in all (600 in / 60 out) · 110 per rerun``."""
        return (
            f"{self.calls} live call{'s' if self.calls != 1 else ''} · {self.tokens} tokens in all "
            f"({self.input_tokens} in / {self.output_tokens} out) · {self.per_rerun:.0f} per rerun"
        )


def flip_test_for(
    original: str, test: FlipTest = "auto", *, threshold: float = DEFAULT_FLIP_THRESHOLD
) -> tuple[AnswerChanged, str]:
    """The "answer changed" test to use for ``original``, and its description.

    Args:
        original: The answer being explained.
        test: ``auto``, ``exact``, ``normalized`` or ``similarity``.
        threshold: The similarity test's flip threshold.

    Returns:
        The test and one line saying what it is.

    Raises:
        BacktrackError: An unknown test, or a threshold outside [0, 1].
    """
    if test == "auto":
        tokens = len(token_set(original))
        test = "normalized" if tokens <= SHORT_ANSWER_TOKENS else "similarity"
        why = f" (auto: {tokens} content token{'s' if tokens != 1 else ''})"
    else:
        why = ""
    match test:
        case "exact":
            return exact_changed, "exact: any byte differs"
        case "normalized":
            return normalized_changed, f"normalized text differs{why}"
        case "similarity":
            return similarity_changed(threshold), f"lexical similarity < {threshold}{why}"
    raise BacktrackError(f"unknown flip test {test!r}; use auto, exact, normalized or similarity")


def _read(
    trace: str | os.PathLike[str], *, line: int | None, seq: int | None, max_hops: int
) -> tuple[Provenance, RunStartEvent | None]:
    reader = TraceReader(trace)
    try:
        model = RunModel.build(reader)
        provenance = trace_provenance(model, line=line, seq=seq, trace=str(trace), max_hops=max_hops)
        start = model.record(provenance.run_start_line) if provenance.run_start_line is not None else None
        return provenance, start if isinstance(start, RunStartEvent) else None
    finally:
        reader.close()


def explain(
    trace: str | os.PathLike[str],
    *,
    seq: int | None = None,
    line: int | None = None,
    claim: str | None = None,
    max_hops: int = 16,
    max_suspects: int = 12,
    max_missing: int = 5,
) -> Backtrack:
    """The correlational tier of one call: provenance, ranked suspects, report. Nothing is rerun or saved.

    Args:
        trace: The trace file.
        seq: The ``llm_call`` to explain, by seq (default: the final answer of the last turn).
        line: Or by line.
        claim: The report's question.
        max_hops: Longest chain kept per piece.
        max_suspects: Sent suspects ranked at most.
        max_missing: Missing candidates ranked at most.

    Returns:
        The backtrack (``report.mode == "correlational"``).

    Raises:
        TraceError: The trace cannot be read.
        BacktrackError: No such call, or no llm_call with a reply.
    """
    provenance, _ = _read(trace, line=line, seq=seq, max_hops=max_hops)
    ranking = rank_pieces(
        provenance.suspects,
        provenance.answer,
        at_iteration=provenance.iteration,
        max_suspects=max_suspects,
        max_missing=max_missing,
    )
    report = build_report(provenance, ranking, claim=claim)
    return Backtrack(report=report, provenance=provenance, ranking=ranking)


class WatchedRunner:
    """A runner that reports progress and honours cancellation between reruns."""

    def __init__(
        self, runner: Runner, *, total: int, progress: Progress | None, cancelled: Cancelled | None
    ) -> None:
        self.runner = runner
        self.total = total
        self.done = 0
        self.progress = progress
        self.cancelled = cancelled

    def __call__(self, specs: Sequence[AblationSpec], *, seed: int) -> str | RunOutput:
        if self.cancelled is not None and self.cancelled():
            raise BacktrackCancelled(f"backtrack cancelled after {self.done} rerun(s)")
        output = self.runner(specs, seed=seed)
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, max(self.total, self.done))
        return output


def backtrack(
    trace: str | os.PathLike[str],
    *,
    seq: int | None = None,
    line: int | None = None,
    claim: str | None = None,
    ablate: bool = False,
    restore: bool = False,
    bisect: bool = False,
    samples: int = 3,
    provider: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    load_module: ModuleLoader | None = None,
    rerun: RerunProvider | None = None,
    runner: Runner | None = None,
    flip_test: FlipTest | AnswerChanged = "auto",
    flip_threshold: float = DEFAULT_FLIP_THRESHOLD,
    max_probed: int = 5,
    max_restored: int = 5,
    max_probes: int = 24,
    max_culprits: int = 4,
    max_hops: int = 16,
    save: bool = True,
    sidecar: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    cancelled: Cancelled | None = None,
) -> Backtrack:
    """Explain one call, then rerun it as asked and save every verdict beside the trace.

    Args:
        trace: The trace file (read only; never opened for writing).
        seq: The ``llm_call`` to explain, by seq (default: the final answer of the last turn).
        line: Or by line.
        claim: The report's question.
        ablate: Probe the top ``max_probed`` suspects one at a time (after a baseline).
        restore: Probe the top ``max_restored`` missing pieces by putting each back.
        bisect: Find the minimal culprit sets (docs/backtracking.md §9.7).
        samples: Seeded reruns per probe (at least 2).
        provider: ``None``/``scripted`` (the run's scripted model), or ``anthropic``/``openai``
            for a live model: only ever because the caller asks.
        model: The live model.
        base_url: Another endpoint for the live provider.
        load_module: Loads the scenario or module the run recorded (the CLI and TUI pass
            :func:`fpdebug.demo.recorded_module_loader`, which refuses a module the user did not name).
        rerun: A ready provider source (overrides ``provider``/``model``/``load_module``).
        runner: A ready runner (overrides everything about providers; tests and embedders).
        flip_test: ``auto``, ``exact``, ``normalized``, ``similarity``, or your own test.
        flip_threshold: The similarity test's threshold.
        max_probed: Suspects probed by ``ablate``.
        max_restored: Missing pieces probed by ``restore``.
        max_probes: The bisection's probe budget.
        max_culprits: Culprit sets the bisection looks for.
        max_hops: Longest chain kept per piece.
        save: Append the records to the sidecar.
        sidecar: The sidecar path (``<trace>.backtrack.jsonl`` by default).
        progress: Called after every rerun with ``(done, total)``.
        cancelled: Asked before every rerun; True stops the backtrack (what finished is kept).

    Returns:
        The backtrack; ``report.status`` is ``complete`` or ``cancelled``.

    Raises:
        TraceError: The trace cannot be read.
        BacktrackError: No such call; no way to build a provider (the message names the flag to
            pass); a sidecar that cannot be written.
        ProviderError: A rerun's model failed (``LiveCallRefusedError`` when a live call is blocked).
    """
    provenance, run_start = _read(trace, line=line, seq=seq, max_hops=max_hops)
    ranking = rank_pieces(
        provenance.suspects,
        provenance.answer,
        at_iteration=provenance.iteration,
        max_missing=max(5, max_restored),
    )
    report = build_report(provenance, ranking, claim=claim)
    reruns = ablate or restore or bisect
    count = resolve_samples(samples)
    changed, flip_words = _answer_changed(provenance.answer, flip_test, flip_threshold)
    if reruns and runner is None:
        if rerun is None:
            rerun = rerun_provider_for(
                run_start, provider=provider, model=model, base_url=base_url, load_module=load_module
            )
        runner = runner_for(provenance, rerun)
    if reruns:
        report = report.model_copy(
            update={
                "status": "running",
                "flip_test": flip_words,
                "rerun_provider": rerun.description if rerun is not None else "a caller-supplied runner",
            }
        )
    result = Backtrack(report=report, provenance=provenance, ranking=ranking)
    writer = SidecarWriter(trace, report, path=sidecar) if save else None
    result.sidecar = writer.path if writer is not None else None
    if not reruns:
        result.report = report.finished("complete")
        if writer is not None:
            writer.end("complete")
        return result
    assert runner is not None
    usable = [s for s in ranking.suspects if s.ablation is not None and s.ablation.kind != "arg"]
    plan = _RerunPlan(
        ablate=ablate,
        restore=restore,
        bisect=bisect,
        probed=usable[: max(0, max_probed)],
        restored=[s for s in ranking.missing if s.ablation is not None][: max(0, max_restored)],
        samples=count,
        changed=changed,
        max_probes=max_probes,
        max_culprits=max_culprits,
    )
    watched = WatchedRunner(runner, total=plan.total_runs, progress=progress, cancelled=cancelled)
    status = _watched_run(result, watched, writer, plan)
    result.live_calls = _live_calls(rerun, runner)
    if status == "complete" and progress is not None:
        progress(watched.done, watched.done)
    return result


def _live_calls(rerun: RerunProvider | None, runner: Runner) -> LiveCalls | None:
    """The live calls the reruns made, with their tokens; ``None`` unless a live model was asked for."""
    if rerun is None or not rerun.live or not isinstance(runner, RecordedCallRunner):
        return None
    return LiveCalls(
        provider=rerun.description,
        calls=runner.calls,
        input_tokens=runner.input_tokens,
        output_tokens=runner.output_tokens,
    )


def _answer_changed(
    answer: str, flip_test: FlipTest | AnswerChanged, threshold: float
) -> tuple[AnswerChanged, str]:
    """The test a rerun's answer is judged by, and how the report names it."""
    if callable(flip_test):
        return flip_test, "a caller-supplied test"
    return flip_test_for(answer, flip_test, threshold=threshold)


def _watched_run(
    result: Backtrack, runner: WatchedRunner, writer: SidecarWriter | None, plan: _RerunPlan
) -> Literal["complete", "cancelled"]:
    """Run the reruns of ``plan``, finish the report and close the sidecar.

    A cancelled run keeps what finished; any other error ends the sidecar ``failed`` and propagates.
    """
    try:
        _run(result, runner, writer, plan)
    except BacktrackCancelled:
        result.report = result.report.finished("cancelled")
        if writer is not None:
            writer.end("cancelled", runs_used=runner.done)
        return "cancelled"
    except FpdebugError as error:
        if writer is not None:
            try:
                writer.end("failed", runs_used=runner.done, error=str(error))
            except BacktrackError:
                pass  # the sidecar itself failing must not hide the error that stopped the reruns
        raise
    result.report = result.report.finished("complete")
    if writer is not None:
        writer.end("complete", runs_used=runner.done)
    return "complete"


@dataclass(frozen=True)
class _RerunPlan:
    """What reruns a backtrack makes: which probes, with how many samples, judged how."""

    ablate: bool
    restore: bool
    bisect: bool
    probed: list[Suspect]
    restored: list[Suspect]
    samples: int
    changed: AnswerChanged
    max_probes: int
    max_culprits: int

    @property
    def total_runs(self) -> int:
        """The reruns the plan may make: a baseline and each queued probe, plus the bisection's budget."""
        queued = (len(self.probed) if self.ablate else 0) + (len(self.restored) if self.restore else 0)
        probes = (1 + queued) * self.samples if queued else 0
        return probes + (self.max_probes * self.samples if self.bisect else 0)


def _run(result: Backtrack, runner: WatchedRunner, writer: SidecarWriter | None, plan: _RerunPlan) -> None:
    samples, changed = plan.samples, plan.changed
    original = result.provenance.answer
    queue = (plan.probed if plan.ablate else []) + (plan.restored if plan.restore else [])
    if queue:  # a baseline only when something will be judged against it
        baseline = run_ablation_probe(runner, [], original=original, samples=samples, answer_changed=changed)
        result.baseline = baseline
        result.report = result.report.with_baseline(baseline)
        if writer is not None:
            writer.baseline(baseline)
        for suspect in queue:
            # One suspect at a time, against the shared baseline: each verdict is saved as it completes.
            found = probe_suspects(
                [suspect],
                runner,
                original=original,
                samples=samples,
                max_suspects=1,
                baseline=baseline,
                answer_changed=changed,
            )
            for probe in found.probes:
                result.probes.append(probe)
                result.report = result.report.with_probe(probe)
                if writer is not None:
                    writer.verdict(probe)
    if plan.bisect:
        found_sets = bisect_culprits(
            result.ranking.suspects,
            runner,
            original=original,
            samples=samples,
            max_probes=plan.max_probes,
            max_culprits=plan.max_culprits,
            answer_changed=changed,
        )
        result.bisect = found_sets
        summary = BisectSummary.of(found_sets)
        result.report = result.report.with_bisect(summary)
        if writer is not None:
            writer.bisect(summary)
