"""Per-iteration frames and the walk to the root (docs/backtracking.md §9.8).

A **frame** is one LLM call of the run: what that iteration read (its suspect pieces, each with the
loop that wrote it when the trace records one) and what it wrote (its answer or tool calls). The
frames are built from the provenance of each call (:func:`trace_provenance`), never recomputed.

The **walk** starts at the symptom call and repeats, hop by hop:

1. **recall**: score every source of the frame against the output of each earlier frame that read
   it, with the backward recency-weighted sum ``Σ 0.5^(current − N) · score_N`` normalized by the
   maximum (``score_N`` is :func:`rank_pieces`' score of the source against frame N's output);
2. **beam**: keep the top two that a rerun can remove;
3. **convict**: ablate each beam member in seeded reruns of THIS frame's recorded call, against a
   baseline (:func:`probe_suspects`, the same machinery as ``--ablate``);
4. **hop**: follow the convicted source's writer (the ``ASKED`` hop of its chain: the call that
   asked for the tool whose result, or whose lease, put it there) to the producing frame.

The root is the deepest hop convicted by ablation. Every walk ends with one stop reason
(:data:`StopReason`); only ``root-declared`` means the walk reached a source nothing earlier wrote.
Reruns replay one recorded call each (earlier results stay as recorded): fpdebug does not rerun the
whole run, so "convicted" means "removing it from this call's request flips this call's output".
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from fpdebug.backtrack.ablation import SuspectProbes, probe_suspects
from fpdebug.backtrack.flip import AnswerChanged
from fpdebug.backtrack.probe import Runner, RunOutput, resolve_samples
from fpdebug.backtrack.provenance import Hop, Provenance, trace_provenance
from fpdebug.backtrack.provenance.calls import call_lines
from fpdebug.backtrack.rerun import ModuleLoader, RerunProvider, rerun_provider_for, runner_for
from fpdebug.backtrack.session import Cancelled, FlipTest, Progress, WatchedRunner, flip_test_for
from fpdebug.backtrack.suspects import AblationSpec, Suspect, rank_pieces, suspect_label
from fpdebug.errors import BacktrackError
from fpdebug.trace.model import RunModel
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import RunStartEvent

__all__ = [
    "RECALL_DECAY",
    "FrameSource",
    "LoopFrame",
    "StopReason",
    "Walk",
    "WalkStep",
    "loop_frames",
    "walk_to_root",
]

RECALL_DECAY = 0.5
"""The recall's decay per frame of age (docs/backtracking.md §9.8)."""

StopReason: TypeAlias = Literal[
    "root-declared",
    "nothing-recalled",
    "ablation-inconclusive",
    "overdetermined-or-incomplete",
    "unseparated-siblings",
    "untracked-origin",
    "hop-budget",
    "ablation-budget",
]
"""Why a walk stopped (docs/backtracking.md §9.8 lists what each means)."""

STOP_WORDS: dict[str, str] = {
    "root-declared": "the convicted source was declared in run_start: nothing earlier in the run wrote it",
    "nothing-recalled": "no source of this frame that a rerun can remove scores against its output",
    "ablation-inconclusive": "ablation could not decide (an unstable baseline, or flips short of a majority)",
    "overdetermined-or-incomplete": "removing each beam member alone changed nothing: several sources "
    "each suffice, or the cause is outside the beam",
    "unseparated-siblings": "more than one beam member is convicted: the walk cannot pick one writer to follow",
    "untracked-origin": "the convicted source's writer is not recorded (no ASKED or BORN hop)",
    "hop-budget": "the hop budget ran out",
    "ablation-budget": "the ablation budget ran out",
}


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FrameSource(_Frozen):
    """One source an iteration read, and the loop that wrote it (when the trace records one)."""

    piece_id: str
    """The suspect piece's id (``Provenance.suspects``)."""
    label: str
    """``tool 'lookup_order'``, ``injection 'vip-override'``."""
    writer_seq: int | None = None
    """The ``llm_call`` that asked for what put it here (its chain's ``ASKED`` hop); ``None`` when none."""
    writer_iteration: int | None = None
    """That call's iteration."""
    declared: bool = False
    """Its chain ends at a declaration in ``run_start`` (``BORN``) with no writer before it."""


class LoopFrame(_Frozen):
    """One iteration's LLM call: what it saw and what it wrote."""

    call_seq: int
    turn: int | None = None
    iteration: int
    output: str
    """What the call wrote: its answer, or its tool calls (``→ name(args)``)."""
    sources: list[FrameSource] = Field(default_factory=list)
    """The sources it read that a backtrack ranks (injections, memory, tools), in request order."""


class StepVerdict(_Frozen):
    """One beam member's ablation at one step."""

    label: str
    kind: Literal["confirmed", "not-confirmed", "inconclusive"]
    flips: int
    samples: int
    claim: str


class WalkStep(_Frozen):
    """One frame the walk stood on."""

    call_seq: int
    turn: int | None = None
    iteration: int
    output: str
    recall: list[tuple[str, float]] = Field(default_factory=list)
    """Every scored source, best first: ``(label, normalized recall)``."""
    beam: list[str] = Field(default_factory=list)
    """The labels ablated at this step."""
    narrowed_by: Literal["text-similarity"] = "text-similarity"
    baseline_flips: int | None = None
    verdicts: list[StepVerdict] = Field(default_factory=list)
    convicted: str | None = None
    """The one beam member ablation convicted (``None`` when none, or more than one)."""
    writer: Hop | None = None
    """The hop the walk followed to the producing frame (the ``ASKED`` hop), if any."""


class Walk(_Frozen):
    """The walk from a symptom call to its root."""

    symptom_seq: int
    steps: list[WalkStep] = Field(default_factory=list)
    root: str | None = None
    """The deepest source convicted by ablation (``None``: nothing was convicted)."""
    root_seq: int | None = None
    """The call at which the root was convicted."""
    stop: StopReason
    stop_note: str
    ablations: int = 0
    """Probes made (baselines included)."""
    runs: int = 0
    """Reruns made."""


def _writer(chain: list[Hop], current: int) -> Hop | None:
    """The chain's first ``ASKED`` hop at an earlier call: the loop that wrote the source."""
    return next((h for h in chain if h.verb == "ASKED" and h.seq is not None and h.seq < current), None)


def _frame(provenance: Provenance) -> LoopFrame:
    sources = []
    for piece in provenance.suspects:
        if piece.missing:
            continue
        origin = provenance.origin(piece.id)
        chain = origin.chain if origin is not None else []
        writer = _writer(chain, provenance.call_seq)
        declared = writer is None and any(h.verb == "BORN" for h in chain)
        # The same words as :func:`suspect_label`, so a frame's sources and a walk's beam match.
        label = f"{piece.kind} '{piece.tool_name or piece.injection_id or piece.id}'"
        sources.append(
            FrameSource(
                piece_id=piece.id,
                label=label,
                writer_seq=writer.seq if writer else None,
                writer_iteration=writer.iteration if writer else None,
                declared=declared,
            )
        )
    return LoopFrame(
        call_seq=provenance.call_seq,
        turn=provenance.turn,
        iteration=provenance.iteration,
        output=provenance.answer,
        sources=sources,
    )


def loop_frames(model: RunModel, *, trace: str | None = None) -> list[LoopFrame]:
    """One frame per ``llm_call`` with a reply, in file order (a failed call has no frame)."""
    frames = []
    for line in call_lines(model):
        try:
            frames.append(_frame(trace_provenance(model, line=line, trace=trace)))
        except BacktrackError:
            continue  # a failed or unreadable call wrote nothing a frame could hold
    return frames


def _recall(history: list[Provenance]) -> list[tuple[Suspect, float]]:
    """The current frame's suspects by backward recency-weighted recall, best first."""
    current = history[-1]
    ranked = rank_pieces(current.suspects, current.answer, at_iteration=current.iteration, max_missing=0)
    totals: dict[str, float] = {}
    for age, provenance in enumerate(reversed(history)):
        per = rank_pieces(provenance.suspects, provenance.answer, at_iteration=provenance.iteration)
        for suspect in per.suspects:
            key = suspect_label(suspect)
            totals[key] = totals.get(key, 0.0) + RECALL_DECAY**age * suspect.score
    top = max(totals.values(), default=0.0)
    scored = [(s, totals.get(suspect_label(s), 0.0) / top if top > 0 else 0.0) for s in ranked.suspects]
    scored.sort(key=lambda pair: -pair[1])
    return scored


WalkRunner: TypeAlias = Callable[[Provenance], Runner]
"""Builds the runner that reruns one frame's recorded call."""


def walk_to_root(
    trace: str | os.PathLike[str],
    *,
    seq: int | None = None,
    samples: int = 3,
    beam: int = 2,
    max_hops: int = 8,
    max_ablations: int = 24,
    flip_test: FlipTest | AnswerChanged = "auto",
    provider: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    load_module: ModuleLoader | None = None,
    rerun: RerunProvider | None = None,
    runner: WalkRunner | None = None,
    progress: Progress | None = None,
    cancelled: Cancelled | None = None,
) -> Walk:
    """Walk from the symptom call (``seq``; default the final answer) back to its root cause.

    Args:
        trace: The trace file (read only).
        seq: The symptom ``llm_call``, by seq.
        samples: Seeded reruns per probe (at least 2).
        beam: Sources ablated per step (the reference's beam is 2).
        max_hops: Frames the walk may stand on.
        max_ablations: Probes (baselines included) the walk may make.
        flip_test: How a rerun's output counts as changed (:func:`flip_test_for`; ``auto`` is
            chosen per frame, by the length of that frame's output), or your own test.
        provider: ``None``/``scripted``, or a live model's provider (only when the caller asks).
        model: The live model.
        base_url: Another endpoint for the live provider.
        load_module: Loads the recorded scenario or module (see :func:`backtrack`).
        rerun: A ready provider source.
        runner: Builds a runner per frame (tests and embedders; overrides ``rerun``).
        progress: Called after every rerun with ``(done, upper bound)``.
        cancelled: Asked before every rerun; True raises :class:`BacktrackCancelled`.

    Returns:
        The walk: its steps, its root and why it stopped.

    Raises:
        TraceError: The trace cannot be read.
        BacktrackError: No such call; no way to rebuild a provider.
        BacktrackCancelled: ``cancelled()`` stopped the walk.
    """
    count = resolve_samples(samples)
    with TraceReader(trace) as reader:
        built = RunModel.build(reader)
        symptom = trace_provenance(built, seq=seq, trace=str(trace))
        frames = _earlier(built, symptom, str(trace))
        start = built.record(symptom.run_start_line) if symptom.run_start_line is not None else None
    if runner is None:
        if rerun is None:
            rerun = rerun_provider_for(
                start if isinstance(start, RunStartEvent) else None,
                provider=provider,
                model=model,
                base_url=base_url,
                load_module=load_module,
            )
        source = rerun

        def runner(provenance: Provenance) -> Runner:
            return runner_for(provenance, source)

    if progress is not None or cancelled is not None:
        inner, total, counted = runner, max_ablations * count, {"done": 0}

        def runner(provenance: Provenance) -> Runner:
            # One WatchedRunner per frame, sharing one count: progress runs over the whole walk.
            watched = WatchedRunner(inner(provenance), total=total, progress=progress, cancelled=cancelled)
            watched.done = counted["done"]

            def run(specs: Sequence[AblationSpec], *, seed: int) -> str | RunOutput:
                output = watched(specs, seed=seed)
                counted["done"] = watched.done
                return output

            return run

    return _Walker([*frames, symptom], runner, count, flip_test, beam, max_hops, max_ablations).walk(symptom)


def _earlier(model: RunModel, symptom: Provenance, trace: str) -> list[Provenance]:
    """The provenance of every call of the symptom's run before it that has a reply (the frames a walk
    can reach: a writer is always in the same run, and recall never mixes runs)."""
    found = []
    for line in call_lines(model):
        if line < symptom.call_line:
            try:
                provenance = trace_provenance(model, line=line, trace=trace)
            except BacktrackError:
                continue  # a failed call has no reply, so no frame
            if provenance.run_id == symptom.run_id:
                found.append(provenance)
    return found


class _Walker:
    def __init__(
        self,
        frames: list[Provenance],
        runner: WalkRunner,
        samples: int,
        changed: FlipTest | AnswerChanged,
        beam: int,
        max_hops: int,
        max_ablations: int,
    ) -> None:
        self.by_seq = {p.call_seq: p for p in frames}
        self.order = sorted(self.by_seq)
        self.runner, self.samples, self.changed = runner, samples, changed
        self.beam, self.max_hops, self.max_ablations = max(1, beam), max_hops, max_ablations
        self.steps: list[WalkStep] = []
        self.ablations = 0
        self.runs = 0
        self.root: tuple[str, int] | None = None

    def walk(self, symptom: Provenance) -> Walk:
        current: Provenance | None = symptom
        stop: StopReason = "hop-budget"
        while current is not None:
            if len(self.steps) >= self.max_hops:
                stop = "hop-budget"
                break
            stop, current = self._step(current)
        root, root_seq = self.root if self.root is not None else (None, None)
        return Walk(
            symptom_seq=symptom.call_seq,
            steps=self.steps,
            root=root,
            root_seq=root_seq,
            stop=stop,
            stop_note=STOP_WORDS[stop],
            ablations=self.ablations,
            runs=self.runs,
        )

    def _step(self, frame: Provenance) -> tuple[StopReason, Provenance | None]:
        """Stand on one frame: recall, ablate the beam, and follow a lone convict's writer.

        Returns the stop reason and the producing frame to stand on next (``None``: the walk stops).
        """
        history = [self.by_seq[s] for s in self.order if s <= frame.call_seq]
        scored = _recall(history or [frame])
        usable = [
            s for s, score in scored if score > 0 and s.ablation is not None and s.ablation.kind != "arg"
        ]
        chosen = usable[: self.beam]
        step = WalkStep(
            call_seq=frame.call_seq,
            turn=frame.turn,
            iteration=frame.iteration,
            output=frame.answer,
            recall=[(suspect_label(s), round(score, 3)) for s, score in scored],
            beam=[suspect_label(s) for s in chosen],
        )
        if not chosen or self.ablations + 1 + len(chosen) > self.max_ablations:
            self.steps.append(step)
            return ("ablation-budget" if chosen else "nothing-recalled"), None
        step, probes = self._convict(frame, chosen, step)
        convicted = [p.suspect for p in probes.probes if p.verdict.kind == "confirmed"]
        if len(convicted) == 1:
            return self._follow(frame, convicted[0], step)
        self.steps.append(step)
        if len(convicted) > 1:
            return "unseparated-siblings", None
        undecided = not probes.baseline_stable or any(p.verdict.kind == "inconclusive" for p in probes.probes)
        return ("ablation-inconclusive" if undecided else "overdetermined-or-incomplete"), None

    def _convict(
        self, frame: Provenance, chosen: list[Suspect], step: WalkStep
    ) -> tuple[WalkStep, SuspectProbes]:
        """Ablate the beam in seeded reruns of this frame's call, against a baseline."""
        changed = self.changed if callable(self.changed) else flip_test_for(frame.answer, self.changed)[0]
        probes = probe_suspects(
            chosen,
            self.runner(frame),
            original=frame.answer,
            samples=self.samples,
            max_suspects=len(chosen),
            answer_changed=changed,
        )
        self.ablations += 1 + len(probes.probes)
        self.runs += probes.runs_used
        verdicts = [
            StepVerdict(
                label=p.verdict.label,
                kind=p.verdict.kind,
                flips=p.verdict.flips,
                samples=p.verdict.samples,
                claim=p.verdict.claim,
            )
            for p in probes.probes
        ]
        return step.model_copy(update={"baseline_flips": probes.baseline.flips, "verdicts": verdicts}), probes

    def _follow(
        self, frame: Provenance, culprit: Suspect, step: WalkStep
    ) -> tuple[StopReason, Provenance | None]:
        """Record the convict as the root so far and hop along its writer to the producing frame."""
        self.root = (suspect_label(culprit), frame.call_seq)
        origin = frame.origin(culprit.source)
        chain = origin.chain if origin is not None else []
        writer = _writer(chain, frame.call_seq)
        self.steps.append(step.model_copy(update={"convicted": suspect_label(culprit), "writer": writer}))
        if writer is None:
            return ("root-declared" if any(h.verb == "BORN" for h in chain) else "untracked-origin"), None
        producing = self.by_seq.get(writer.seq) if writer.seq is not None else None
        if producing is None:
            return "untracked-origin", None
        return "hop-budget", producing  # the reason only stands if the budget ends the walk here
