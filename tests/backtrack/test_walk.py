"""The walk to the root (docs/backtracking.md §9.8): frames, recall, beam, conviction, hops, honest stops."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from fpdebug.backtrack import AblationSpec, Provenance, Runner, loop_frames, trace_provenance, walk_to_root
from fpdebug.backtrack.walk import STOP_WORDS
from fpdebug.demo import recorded_module_loader
from fpdebug.trace.model import RunModel
from fpdebug.trace.reader import TraceReader
from tests.backtrack.traces import sample


def walk(name: str, **options: object):  # type: ignore[no-untyped-def]
    path = sample(name)
    return walk_to_root(path, load_module=recorded_module_loader(path), **options)  # type: ignore[arg-type]


def test_frames_say_what_each_iteration_read_and_who_wrote_it() -> None:
    with TraceReader(sample("traced-argument")) as reader:
        frames = loop_frames(RunModel.build(reader))
    assert [f.iteration for f in frames] == [1, 2, 3]
    assert frames[0].output.startswith("→ list_orders(")
    final = frames[-1]
    by_label = {s.label: s for s in final.sources}
    # The result of list_orders rode the final call; the call at iteration 1 asked for it.
    assert by_label["tool 'list_orders'"].writer_seq == frames[0].call_seq
    assert by_label["tool 'list_orders'"].writer_iteration == 1
    with TraceReader(sample("planted-fact")) as reader:
        planted = loop_frames(RunModel.build(reader))[-1]
    vip = next(s for s in planted.sources if s.label == "injection 'vip-override'")
    assert vip.declared and vip.writer_seq is None


def test_planted_fact_a_wide_beam_convicts_the_declared_fact() -> None:
    result = walk("planted-fact", beam=3)
    assert result.stop == "root-declared"
    assert (result.root, result.root_seq) == ("injection 'vip-override'", result.symptom_seq)
    (step,) = result.steps
    assert step.baseline_flips == 0
    kinds = {v.label: v.kind for v in step.verdicts}
    assert kinds["injection 'vip-override'"] == "confirmed"
    assert kinds["tool 'lookup_order'"] == "not-confirmed"
    assert step.convicted == "injection 'vip-override'" and step.writer is None
    assert (result.ablations, result.runs) == (4, 12)


def test_planted_fact_the_default_beam_misses_it_and_says_so() -> None:
    result = walk("planted-fact")
    assert result.stop == "overdetermined-or-incomplete"
    assert result.root is None
    assert len(result.steps[0].beam) == 2 and "injection 'vip-override'" not in result.steps[0].beam
    assert all(v.kind == "not-confirmed" for v in result.steps[0].verdicts)


def test_traced_argument_hops_along_the_writer_to_the_producing_call() -> None:
    result = walk("traced-argument", beam=1)
    first, second = result.steps
    assert first.convicted == "tool 'list_orders'"
    assert first.writer is not None and first.writer.verb == "ASKED"
    assert second.call_seq == first.writer.seq and second.iteration == 1
    # The producing call read nothing a rerun can remove that scores: the walk stops there, and
    # the root stays the deepest convicted hop.
    assert second.beam == [] and result.stop == "nothing-recalled"
    assert (result.root, result.root_seq) == ("tool 'list_orders'", first.call_seq)


def test_two_convicted_siblings_stop_the_walk() -> None:
    result = walk("unsupported-amount")
    assert result.stop == "unseparated-siblings"
    assert result.root is None and result.steps[0].convicted is None
    assert [v.kind for v in result.steps[0].verdicts] == ["confirmed", "confirmed"]


def test_the_budgets_stop_the_walk() -> None:
    hops = walk("traced-argument", beam=1, max_hops=1)
    assert hops.stop == "hop-budget" and len(hops.steps) == 1 and hops.root == "tool 'list_orders'"
    ablations = walk("traced-argument", max_ablations=1)
    assert ablations.stop == "ablation-budget" and ablations.runs == 0 and ablations.root is None


def test_an_unstable_baseline_is_inconclusive() -> None:
    def flaky(provenance: Provenance) -> Runner:
        def run(specs: Sequence[AblationSpec], *, seed: int) -> str:
            return provenance.answer if seed != 1 else "something else entirely"

        return run

    result = walk_to_root(sample("planted-fact"), runner=flaky)
    assert result.stop == "ablation-inconclusive"
    assert result.steps[0].baseline_flips == 1 and result.root is None
    assert result.stop_note == STOP_WORDS["ablation-inconclusive"]


def test_a_convict_with_no_recorded_writer_is_an_untracked_origin(monkeypatch: pytest.MonkeyPatch) -> None:
    from fpdebug.backtrack import walk as walk_module

    def removal_flips(provenance: Provenance) -> Runner:
        def run(specs: Sequence[AblationSpec], *, seed: int) -> str:
            return "changed" if specs else provenance.answer

        return run

    # A chain with neither an ASKED nor a BORN hop (an imported trace records no declarations).
    real = Provenance.origin

    def bare(self: Provenance, piece_id: str):  # type: ignore[no-untyped-def]
        found = real(self, piece_id)
        return found.model_copy(update={"chain": found.chain[:2]}) if found is not None else None

    monkeypatch.setattr(walk_module.Provenance, "origin", bare)
    result = walk_to_root(sample("planted-fact"), beam=1, runner=removal_flips)
    assert result.stop == "untracked-origin" and result.root is not None


def test_progress_counts_every_rerun_and_cancel_stops_the_walk() -> None:
    from fpdebug.errors import BacktrackCancelled

    seen: list[tuple[int, int]] = []
    result = walk("traced-argument", beam=1, progress=lambda done, total: seen.append((done, total)))
    assert [done for done, _ in seen] == list(range(1, result.runs + 1))
    with pytest.raises(BacktrackCancelled):
        walk("traced-argument", beam=1, cancelled=lambda: True)


def test_a_walk_never_reaches_into_another_run(tmp_path: Path) -> None:
    from fpdebug.backtrack.walk import _earlier
    from fpdebug.demo import planted_fact
    from fpdebug.engine.sink import TraceFileSink
    from fpdebug.trace.clock import FixedClock
    from tests.conftest import T0

    path = tmp_path / "two-runs.fptrace.jsonl"
    clock = FixedClock(T0)
    with TraceFileSink.create(path, clock=clock, durability="none") as sink:
        for run_id in ("first", "second"):
            planted_fact.build_agent().run(
                list(planted_fact.USER_MESSAGES),
                provider=planted_fact.scripted_provider(),
                sink=sink,
                clock=clock,
                run_id=run_id,
                options={"scenario": "planted-fact"},
            )
    with TraceReader(path) as reader:
        model = RunModel.build(reader)
        symptom = trace_provenance(model, trace=str(path))
        earlier = _earlier(model, symptom, str(path))
    assert symptom.run_id == "second"
    assert [p.run_id for p in earlier] == ["second"]  # the first run's two calls are not frames of this walk
