"""Ablation: seeded probes, flip tests, verdicts, bisection, counterfactual reruns (docs/backtracking.md §9.6–§9.7).

Every runner here is synthetic: a pure function of the set of removed ids (and, where a test says so,
of the seed), so the expected verdicts follow from the rules, not from the code under test.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Callable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fpdebug.backtrack.ablation import (
    DEFAULT_FLIP_THRESHOLD,
    ProbeStats,
    RunCost,
    RunOutput,
    SimilarityStats,
    answer_similarity,
    bisect_culprits,
    exact_changed,
    normalize_answer,
    normalized_changed,
    probe_flipped,
    probe_suspects,
    removable_sources,
    rerun_without,
    run_ablation_probe,
    similarity_changed,
    verdict_for,
)
from fpdebug.backtrack.suspects import (
    AblationSpec,
    ArgSpec,
    InjectionSpec,
    MemorySpec,
    RestoreSpec,
    Suspect,
    SuspectDetail,
    ToolSpec,
    suspect_label,
)
from fpdebug.errors import BacktrackError, ScriptExhaustedError

# Two answers with no content token in common: similarity 0 between them, 1 with themselves.
WRONG = "Approved: refund of 500 dollars"
RIGHT = "Denied, manager sign-off required"


def inj(name: str) -> Suspect:
    return Suspect(
        source=f"inj:{name}",
        kind="injection",
        detail=SuspectDetail(injection_id=name),
        ablation=InjectionSpec(exclude_injection_ids=[name]),
    )


def tool(name: str) -> Suspect:
    return Suspect(
        source=f"tool:{name}",
        kind="tool",
        detail=SuspectDetail(tool_name=name),
        ablation=ToolSpec(ignored_tools=[name]),
    )


def missing_eu() -> Suspect:
    """An injection that was available but not sent: restorable, never removable."""
    return Suspect(
        source="inj:eu",
        kind="injection",
        detail=SuspectDetail(injection_id="eu"),
        missing=True,
        ablation=RestoreSpec(unit_kind="injection", unit_id="eu"),
    )


def removed_ids(specs: Sequence[AblationSpec]) -> frozenset[str]:
    ids: set[str] = set()
    for spec in specs:
        match spec:
            case ToolSpec():
                ids.update(spec.ignored_tools)
            case InjectionSpec():
                ids.update(spec.exclude_injection_ids)
            case MemorySpec():
                ids.update(spec.exclude_memory_ids)
            case ArgSpec() | RestoreSpec():
                raise AssertionError(f"a runner was handed a spec it cannot apply: {spec}")
    return frozenset(ids)


class Synthetic:
    """A runner whose answer is WRONG iff ``wrong(removed, seed)``; it logs every call."""

    def __init__(self, wrong: Callable[[frozenset[str], int], bool]) -> None:
        self.wrong = wrong
        self.calls: list[tuple[frozenset[str], int]] = []

    def __call__(self, specs: Sequence[AblationSpec], *, seed: int) -> str:
        removed = removed_ids(specs)
        self.calls.append((removed, seed))
        return WRONG if self.wrong(removed, seed) else RIGHT

    def probes_run(self) -> Counter[frozenset[str]]:
        """How many times each removed set was rerun."""
        return Counter(removed for removed, _ in self.calls)


def wrong_while_present(culprit: str) -> Synthetic:
    return Synthetic(lambda removed, seed: culprit not in removed)


SUSPECTS = [tool("lookup_order"), inj("stale-policy"), inj("tone"), inj("greeting")]


# ------------------------------------------------------------------------------------------ flip tests


def test_normalize_casefolds_collapses_whitespace_and_strips_edge_punctuation() -> None:
    assert normalize_answer("  Request\n  DENIED.  ") == "request denied"
    assert normalize_answer("«Denied!!»") == "denied"
    assert normalize_answer("“Approved — $500.”") == "approved — $500"  # symbols are content
    assert normalize_answer("(ok)") == "ok"
    assert normalize_answer("a, b") == "a, b"  # inner punctuation stays


def test_exact_normalized_and_similarity_tests_differ_as_documented() -> None:
    assert exact_changed("Denied.", "denied")
    assert not normalized_changed("Denied.", "  denied ")
    assert normalized_changed("Denied.", "denied, sorry")
    default = similarity_changed()
    assert not default("refund approved 500", "Approved: 500 refunds!")  # same token set
    assert default(WRONG, RIGHT)


def test_similarity_threshold_is_pluggable_and_validated() -> None:
    # {approved, refund, 500, dollar} vs {approved, refund}: 2 / sqrt(8) ≈ 0.71
    assert similarity_changed(0.8)(WRONG, "approved refund")
    assert not similarity_changed(0.7)(WRONG, "approved refund")
    assert DEFAULT_FLIP_THRESHOLD == 0.8
    for bad in (-0.1, 1.5, math.nan):
        with pytest.raises(BacktrackError):
            similarity_changed(bad)


def test_answer_similarity_is_lexical_with_an_identity_and_a_no_token_fallback() -> None:
    assert answer_similarity(WRONG, WRONG) == 1.0
    assert answer_similarity(WRONG, RIGHT) == 0.0
    assert answer_similarity("Yes.", "yes") == 1.0
    assert answer_similarity("I", "I") == 1.0  # no content token, but identical
    assert answer_similarity("OK", "I") == 0.0  # falls back to difflib on "ok" vs "i"
    assert 0.0 < answer_similarity("OK", "Ok!?") <= 1.0


# ------------------------------------------------------------------------------------------ probes


@pytest.mark.parametrize(("asked", "made"), [(None, 3), (0, 3), (1, 2), (2.9, 2), (5, 5), (-4, 2)])
def test_samples_are_max_2_floor_samples_or_3_with_seeds_from_zero(asked: float | None, made: int) -> None:
    runner = wrong_while_present("x")
    stats = run_ablation_probe(runner, [], original=WRONG, samples=asked)
    assert stats.samples == made
    assert [seed for _, seed in runner.calls] == list(range(made))


def test_non_finite_samples_are_refused() -> None:
    with pytest.raises(BacktrackError):
        run_ablation_probe(wrong_while_present("x"), [], original=WRONG, samples=math.nan)


def test_probe_stats_count_flips_and_summarise_similarity() -> None:
    outputs = {0: WRONG, 1: RIGHT, 2: "approved refund"}
    stats = run_ablation_probe(lambda specs, *, seed: outputs[seed], [], original=WRONG)
    sims = [1.0, 0.0, 2 / math.sqrt(8)]
    assert stats.changed == [False, True, True]  # 0.71 < 0.8 is a flip
    assert stats.flips == 2
    assert stats.outputs == [WRONG, RIGHT, "approved refund"]
    assert stats.similarity.mean == pytest.approx(sum(sims) / 3)
    assert stats.similarity.min == 0.0 and stats.similarity.max == 1.0
    assert stats.similarity.stdev == pytest.approx(statistics.pstdev(sims))
    assert stats.cost is None


def test_the_flip_test_is_pluggable() -> None:
    outputs = {0: "Denied.", 1: "denied", 2: "DENIED!"}
    runner = lambda specs, *, seed: outputs[seed]
    assert run_ablation_probe(runner, [], original="denied", answer_changed=exact_changed).flips == 2
    assert run_ablation_probe(runner, [], original="denied", answer_changed=normalized_changed).flips == 0
    assert run_ablation_probe(runner, [], original="denied", flip_threshold=1.0).flips == 0


def test_probe_cost_reports_median_min_max_over_reruns_that_measured_it() -> None:
    outputs = {
        0: RunOutput(output=WRONG, cost=RunCost(loops=3, tokens=900)),
        1: RunOutput(output=WRONG, cost=RunCost(loops=1)),
        2: WRONG,
        3: RunOutput(output=WRONG, cost=RunCost(loops=5, tokens=100)),
        4: RunOutput(output=WRONG, cost=RunCost(loops=2, tokens=300)),
    }
    stats = run_ablation_probe(lambda specs, *, seed: outputs[seed], [], original=WRONG, samples=5)
    assert stats.cost is not None
    assert stats.cost.samples == 4
    assert stats.cost.loops is not None and stats.cost.tokens is not None
    assert (stats.cost.loops.median, stats.cost.loops.min, stats.cost.loops.max) == (2.5, 1, 5)  # even count
    assert (stats.cost.tokens.median, stats.cost.tokens.min, stats.cost.tokens.max) == (300, 100, 900)


def test_a_runner_must_return_text_and_its_failures_become_backtrack_errors() -> None:
    with pytest.raises(BacktrackError, match="RunOutput"):
        bad = lambda specs, *, seed: 42
        run_ablation_probe(bad, [], original=WRONG)  # type: ignore[arg-type]

    def broken(specs: Sequence[AblationSpec], *, seed: int) -> str:
        raise KeyError("tool table")

    with pytest.raises(BacktrackError, match="seed 0, injection 'x'") as caught:
        run_ablation_probe(broken, [InjectionSpec(exclude_injection_ids=["x"])], original=WRONG)
    assert isinstance(caught.value.__cause__, KeyError)

    def exhausted(specs: Sequence[AblationSpec], *, seed: int) -> str:
        raise ScriptExhaustedError("scripted 2 replies but received request #3")

    with pytest.raises(ScriptExhaustedError):  # fpdebug's own errors pass through unwrapped
        run_ablation_probe(exhausted, [], original=WRONG)


def test_probe_flipped_needs_a_strict_majority() -> None:
    def stats(flips: int, samples: int) -> ProbeStats:
        spread = SimilarityStats(mean=0, min=0, max=0, stdev=0)
        return ProbeStats(samples=samples, flips=flips, similarity=spread)

    assert not probe_flipped(stats(1, 2))
    assert probe_flipped(stats(2, 2))
    assert probe_flipped(stats(2, 3))
    assert not probe_flipped(stats(2, 4))
    assert not probe_flipped(stats(0, 3))


# ------------------------------------------------------------------------------------------ verdicts


def _probe(outputs: dict[int, str], samples: int = 3) -> ProbeStats:
    return run_ablation_probe(lambda specs, *, seed: outputs[seed], [], original=WRONG, samples=samples)


def test_verdict_confirmed_is_the_only_causal_claim() -> None:
    verdict = verdict_for("injection 'stale-policy'", _probe({0: RIGHT, 1: RIGHT, 2: RIGHT}), True)
    assert verdict.kind == "confirmed"
    assert verdict.tier == "causal"
    assert (verdict.flips, verdict.samples) == (3, 3)
    assert verdict.claim == (
        "CAUSAL: ablating injection 'stale-policy' flipped the outcome in 3/3 seeded reruns "
        "(mean similarity 0.00 ± 0.00)"
    )


def test_verdict_reports_mean_similarity_and_its_spread() -> None:
    stats = _probe({0: RIGHT, 1: RIGHT, 2: WRONG})  # similarities 0, 0, 1: mean 0.33, pstdev 0.47
    verdict = verdict_for("tool 'lookup'", stats, True, "restoring")
    assert verdict.claim == (
        "CAUSAL: restoring tool 'lookup' flipped the outcome in 2/3 seeded reruns "
        "(mean similarity 0.33 ± 0.47)"
    )
    assert verdict.action == "restoring"


def test_verdict_on_an_unstable_baseline_is_inconclusive_even_for_a_full_flip() -> None:
    verdict = verdict_for("injection 'stale-policy'", _probe({0: RIGHT, 1: RIGHT, 2: RIGHT}), False)
    assert verdict.kind == "inconclusive"
    assert verdict.tier == "correlational"
    assert verdict.claim == (
        "INCONCLUSIVE: the baseline itself changed outcome with nothing removed, so ablating "
        "injection 'stale-policy' (3/3 flipped) proves nothing"
    )


def test_verdict_on_a_minority_flip_is_inconclusive() -> None:
    verdict = verdict_for("injection 'tone'", _probe({0: RIGHT, 1: WRONG}, samples=2), True)
    assert verdict.kind == "inconclusive"
    assert verdict.claim == (
        "INCONCLUSIVE: ablating injection 'tone' flipped only 1/2 seeded reruns, not a majority"
    )


def test_verdict_without_flips_leaves_the_ranking_a_correlational_proxy() -> None:
    verdict = verdict_for("injection 'tone'", _probe({0: WRONG, 1: WRONG, 2: WRONG}), True)
    assert verdict.kind == "not-confirmed"
    assert verdict.tier == "correlational"
    assert verdict.claim == (
        "NOT CONFIRMED: ablating injection 'tone' changed the outcome in 0/3 seeded reruns; "
        "its ranking remains a correlational proxy only"
    )


# ------------------------------------------------------------------------------------ per-suspect probes


def test_planted_culprit_is_confirmed_and_the_innocents_are_not() -> None:
    runner = wrong_while_present("stale-policy")
    result = probe_suspects(SUSPECTS, runner, original=WRONG)
    assert result.baseline_stable and result.baseline.flips == 0
    assert runner.calls[:3] == [(frozenset(), 0), (frozenset(), 1), (frozenset(), 2)]  # baseline first
    verdicts = {suspect_label(p.suspect): p.verdict for p in result.probes}
    assert verdicts["injection 'stale-policy'"].kind == "confirmed"
    culprit = verdicts["injection 'stale-policy'"]
    assert (culprit.flips, culprit.samples) == (3, 3)
    assert {label: v.kind for label, v in verdicts.items() if label != "injection 'stale-policy'"} == {
        "tool 'lookup_order'": "not-confirmed",
        "injection 'tone'": "not-confirmed",
        "injection 'greeting'": "not-confirmed",
    }
    assert result.runs_used == len(runner.calls) == 5 * 3


def test_probe_suspects_skips_arg_and_stage_restores_missing_and_caps_the_count() -> None:
    missing = missing_eu()
    arg = Suspect(source="args", kind="arg", ablation=ArgSpec(source="args", note="override"))
    stage = Suspect(source="node", kind="stage")
    seen: list[list[AblationSpec]] = []

    def runner(specs: Sequence[AblationSpec], *, seed: int) -> str:
        seen.append(list(specs))
        return RIGHT if any(isinstance(spec, RestoreSpec) for spec in specs) else WRONG

    result = probe_suspects([arg, missing, stage, inj("a"), inj("b")], runner, original=WRONG, max_suspects=2)
    assert [suspect_label(p.suspect) for p in result.probes] == ["injection 'eu'", "injection 'a'"]
    assert result.probes[0].verdict.action == "restoring" and result.probes[0].verdict.kind == "confirmed"
    assert result.probes[1].verdict.action == "ablating"
    assert not any(isinstance(spec, ArgSpec) for specs in seen for spec in specs)


def test_probe_suspects_can_reuse_a_baseline() -> None:
    first = probe_suspects([inj("x")], wrong_while_present("x"), original=WRONG)
    runner = wrong_while_present("x")
    again = probe_suspects([inj("x")], runner, original=WRONG, baseline=first.baseline)
    assert frozenset() not in runner.probes_run()
    assert again.runs_used == 3


def test_unstable_baseline_makes_every_per_suspect_verdict_inconclusive() -> None:
    runner = Synthetic(lambda removed, seed: "x" not in removed and seed != 1)  # seed 1 flips on its own
    result = probe_suspects([inj("x"), inj("y")], runner, original=WRONG)
    assert not result.baseline_stable
    assert [p.verdict.kind for p in result.probes] == ["inconclusive", "inconclusive"]
    assert all(p.verdict.tier == "correlational" for p in result.probes)


# ------------------------------------------------------------------------------------------ bisection


def labels(groups: list[list[Suspect]]) -> list[list[str]]:
    return [[suspect_label(s) for s in group] for group in groups]


def test_bisect_finds_a_single_planted_culprit() -> None:
    runner = wrong_while_present("stale-policy")
    result = bisect_culprits(SUSPECTS, runner, original=WRONG)
    assert result.verdict == "confirmed" and result.tier == "causal"
    assert labels(result.culprits) == [["injection 'stale-policy'"]]
    assert result.probes[0].ablated == [] and not result.probes[0].flipped
    assert result.probes[1].ablated == [suspect_label(s) for s in SUSPECTS] and result.probes[1].flipped
    assert result.runs_used == len(result.probes) * 3 == len(runner.calls)


def test_overdetermined_answer_is_one_culprit_set_that_must_be_removed_together() -> None:
    # Wrong while EITHER x or y is present: removing one alone changes nothing, so the minimal
    # ablation is the set {x, y}, found as ONE culprit set.
    runner = Synthetic(lambda removed, seed: not {"x", "y"} <= removed)
    suspects = [inj("a"), inj("x"), inj("b"), inj("c"), inj("y")]
    result = bisect_culprits(suspects, runner, original=WRONG)
    assert result.verdict == "confirmed"
    assert labels(result.culprits) == [["injection 'x'", "injection 'y'"]]


def test_jointly_needed_pieces_are_two_independent_culprits() -> None:
    # Wrong only while BOTH x and y are present: removing either one alone fixes the answer, so
    # each is its own minimal culprit set.
    runner = Synthetic(lambda removed, seed: not (removed & {"x", "y"}))
    suspects = [inj("a"), inj("x"), inj("b"), inj("y")]
    result = bisect_culprits(suspects, runner, original=WRONG)
    assert result.verdict == "confirmed"
    assert labels(result.culprits) == [["injection 'x'"], ["injection 'y'"]]


def test_ddmin_splits_at_ceil_half_in_ranked_order() -> None:
    result = bisect_culprits([inj("a"), inj("b"), inj("x")], wrong_while_present("x"), original=WRONG)
    # ceil(3 / 2) = 2: the top half is {a, b}; it does not flip, the rest {x} does.
    assert [p.ablated for p in result.probes] == [
        [],
        ["injection 'a'", "injection 'b'", "injection 'x'"],
        ["injection 'a'", "injection 'b'"],
        ["injection 'x'"],
    ]  # what remains after x, {a, b}, is a cache hit


def test_interference_minimises_each_half_against_the_other() -> None:
    runner = Synthetic(lambda removed, seed: not {"x", "y"} <= removed)
    result = bisect_culprits([inj("x"), inj("a"), inj("y")], runner, original=WRONG)
    assert [p.ablated for p in result.probes] == [
        [],
        ["injection 'x'", "injection 'a'", "injection 'y'"],
        ["injection 'x'", "injection 'a'"],  # top: no flip
        ["injection 'y'"],  # rest: no flip → interference
        ["injection 'x'", "injection 'y'"],  # top's first half with rest as context: flips → x
        ["injection 'a'"],  # what remains after {x, y}: no flip, done
    ]
    assert labels(result.culprits) == [["injection 'x'", "injection 'y'"]]


def test_an_answer_no_context_changes_is_not_reproducible() -> None:
    runner = Synthetic(lambda removed, seed: True)
    result = bisect_culprits(SUSPECTS, runner, original=WRONG)
    assert result.verdict == "not-reproducible" and result.tier == "correlational"
    assert result.culprits == []
    assert [p.ablated for p in result.probes] == [[], [suspect_label(s) for s in SUSPECTS]]
    assert "removing all 4 candidates together flipped only 0/3" in result.reason


def test_no_removable_candidate_is_not_reproducible_after_the_baseline() -> None:
    runner = Synthetic(lambda removed, seed: True)
    only = [
        Suspect(source="node", kind="stage"),
        Suspect(source="args", kind="arg", ablation=ArgSpec(source="args", note="n")),
    ]
    result = bisect_culprits(only, runner, original=WRONG)
    assert result.verdict == "not-reproducible"
    assert len(result.probes) == 1 and result.probes[0].ablated == []


def test_unstable_baseline_stops_bisection_with_zero_tolerance() -> None:
    # One flip in three baseline reruns: not a majority, but the baseline must have none.
    runner = Synthetic(lambda removed, seed: "stale-policy" not in removed and seed != 2)
    result = bisect_culprits(SUSPECTS, runner, original=WRONG)
    assert result.verdict == "inconclusive" and result.tier == "correlational"
    assert result.culprits == []
    assert len(result.probes) == 1 and result.probes[0].stats.flips == 1
    assert result.runs_used == 3 == len(runner.calls)
    assert "baseline itself changed outcome in 1/3" in result.reason


def test_budget_exhaustion_is_inconclusive_and_never_overspends() -> None:
    suspects = [inj(f"s{i}") for i in range(8)]
    runner = Synthetic(lambda removed, seed: not {"s0", "s7"} <= removed)
    full = bisect_culprits(suspects, runner, original=WRONG, samples=2)
    assert full.verdict == "confirmed"
    needed = len(full.probes)

    runner = Synthetic(lambda removed, seed: not {"s0", "s7"} <= removed)
    short = bisect_culprits(suspects, runner, original=WRONG, samples=2, max_probes=needed - 1)
    assert short.verdict == "inconclusive"
    assert len(short.probes) == needed - 1
    assert short.runs_used == (needed - 1) * 2 == len(runner.calls)
    assert "max_probes" in short.reason


def test_probe_cache_never_reruns_the_same_set() -> None:
    # a is probed alone while bisecting; after x is found, "what remains" is {a} again: a cache hit.
    runner = wrong_while_present("x")
    result = bisect_culprits([inj("a"), inj("x")], runner, original=WRONG)
    assert labels(result.culprits) == [["injection 'x'"]]
    assert [p.ablated for p in result.probes] == [
        [],
        ["injection 'a'", "injection 'x'"],
        ["injection 'a'"],
        ["injection 'x'"],
    ]
    assert set(runner.probes_run().values()) == {3}  # every set rerun exactly `samples` times
    assert result.runs_used == 4 * 3 == len(runner.calls)


def test_bisect_ignores_arg_stage_and_restore_suspects_and_duplicate_labels() -> None:
    runner = wrong_while_present("x")
    suspects = [
        Suspect(source="args", kind="arg", ablation=ArgSpec(source="args", note="n")),
        Suspect(source="node", kind="stage"),
        missing_eu(),
        inj("x"),
        inj("x"),
        inj("y"),
    ]
    result = bisect_culprits(suspects, runner, original=WRONG)  # removed_ids() rejects arg/restore specs
    assert result.probes[1].ablated == ["injection 'x'", "injection 'y'"]
    assert labels(result.culprits) == [["injection 'x'"]]


def test_bisect_stops_at_max_culprits() -> None:
    runner = Synthetic(lambda removed, seed: not (removed & {"a", "b", "c"}))
    result = bisect_culprits([inj("a"), inj("b"), inj("c")], runner, original=WRONG, max_culprits=2)
    assert result.verdict == "confirmed"
    assert labels(result.culprits) == [["injection 'a'"], ["injection 'b'"]]
    assert "max_culprits=2" in result.reason


def test_bisect_refuses_an_empty_budget() -> None:
    with pytest.raises(BacktrackError):
        bisect_culprits(SUSPECTS, wrong_while_present("x"), original=WRONG, max_probes=0)
    with pytest.raises(BacktrackError):
        bisect_culprits(SUSPECTS, wrong_while_present("x"), original=WRONG, max_culprits=0)


World = tuple[list[Suspect], list[str]]
"""Ranked suspects, and the culprit names among them in ranked order."""


@st.composite
def culprit_worlds(draw: st.DrawFn) -> World:
    names = draw(st.lists(st.text("abcdefgh", min_size=1, max_size=4), min_size=1, max_size=9, unique=True))
    suspects = [inj(name) if index % 2 else tool(name) for index, name in enumerate(names)]
    culprits = draw(st.lists(st.sampled_from(names), min_size=1, max_size=min(4, len(names)), unique=True))
    ranked = [name for name in names if name in culprits]  # the culprits in ranked order
    return suspects, ranked


@settings(max_examples=60, deadline=None)
@given(culprit_worlds())
def test_property_bisect_finds_an_overdetermined_culprit_set_exactly(world: World) -> None:
    suspects, culprits = world
    # Wrong unless every culprit is removed: one minimal set, exactly C.
    runner = Synthetic(lambda removed, seed: not set(culprits) <= removed)
    result = bisect_culprits(suspects, runner, original=WRONG, samples=2, max_probes=200)
    assert result.verdict == "confirmed"
    assert [[_name(s) for s in group] for group in result.culprits] == [culprits]
    assert result.runs_used == len(result.probes) * 2 == len(runner.calls)
    assert max(runner.probes_run().values()) == 2  # no set was ever rerun


@settings(max_examples=60, deadline=None)
@given(culprit_worlds())
def test_property_bisect_splits_jointly_needed_culprits_into_singletons(world: World) -> None:
    suspects, culprits = world
    # Wrong iff C ⊆ present: removing any one culprit fixes it, so each is its own minimal set.
    runner = Synthetic(lambda removed, seed: not (removed & set(culprits)))
    result = bisect_culprits(suspects, runner, original=WRONG, samples=2, max_probes=200)
    assert result.verdict == "confirmed"
    assert [[_name(s) for s in group] for group in result.culprits] == [[name] for name in culprits]
    assert max(runner.probes_run().values()) == 2


@settings(max_examples=40, deadline=None)
@given(culprit_worlds())
def test_property_default_budget_suffices_for_one_or_two_culprits(world: World) -> None:
    suspects, culprits = world
    culprits = culprits[:2]
    runner = Synthetic(lambda removed, seed: not set(culprits) <= removed)
    result = bisect_culprits(suspects, runner, original=WRONG, samples=2)  # max_probes=24
    assert result.verdict == "confirmed"
    assert [[_name(s) for s in group] for group in result.culprits] == [culprits]


def _name(suspect: Suspect) -> str:
    return suspect.detail.injection_id or suspect.detail.tool_name or suspect.source


# ------------------------------------------------------------------------------------------ rerun_without


def test_rerun_without_resolves_ids_and_reports_what_changed() -> None:
    runner = wrong_while_present("stale-policy")
    result = rerun_without(SUSPECTS, ["stale-policy"], runner, original=WRONG)
    assert result.removed == [InjectionSpec(exclude_injection_ids=["stale-policy"])]
    assert result.labels == ["injection 'stale-policy'"]
    assert result.answer == RIGHT and result.answers == [RIGHT] * 3
    changed = result.what_changed
    assert changed.answer_flipped and (changed.flips, changed.samples) == (3, 3)
    assert changed.similarity_to_original == 0.0
    assert not changed.baseline_checked
    assert changed.summary == (
        "without injection 'stale-policy', the answer changed in 3/3 seeded reruns (mean similarity 0.00)"
    )
    assert result.runs == 3 == len(runner.calls)
    assert result.baseline is None and result.verdict is None


def test_rerun_without_a_bystander_says_the_answer_held() -> None:
    result = rerun_without(SUSPECTS, ["tone"], wrong_while_present("stale-policy"), original=WRONG)
    assert not result.what_changed.answer_flipped
    assert result.what_changed.summary == (
        "without injection 'tone', the answer held in 3/3 seeded reruns (mean similarity 1.00)"
    )


def test_rerun_without_checks_the_baseline_only_when_asked() -> None:
    runner = wrong_while_present("stale-policy")
    ignore = ["stale-policy", "lookup_order"]
    result = rerun_without(SUSPECTS, ignore, runner, original=WRONG, check_baseline=True)
    assert result.what_changed.baseline_checked
    assert result.baseline is not None and result.baseline.flips == 0
    assert result.verdict is not None and result.verdict.kind == "confirmed"
    assert result.verdict.label == "injection 'stale-policy' + tool 'lookup_order'"
    assert result.runs == 6 == len(runner.calls)

    unstable = Synthetic(lambda removed, seed: "stale-policy" not in removed and seed != 0)
    shaky = rerun_without(SUSPECTS, ["stale-policy"], unstable, original=WRONG, check_baseline=True)
    assert shaky.verdict is not None and shaky.verdict.kind == "inconclusive"
    assert shaky.what_changed.summary.endswith(
        "but the baseline itself changed outcome in 1/3, so this proves nothing"
    )


def test_id_resolution_order_is_injection_id_then_tool_name_then_source() -> None:
    named_tool = tool("policy")
    named_injection = inj("policy")
    by_source = Suspect(
        source="policy-node",
        kind="memory",
        detail=SuspectDetail(injection_id="m7"),
        ablation=MemorySpec(exclude_memory_ids=["m7"]),
    )
    suspects = [named_tool, named_injection, by_source]
    runner = Synthetic(lambda removed, seed: True)
    assert rerun_without(suspects, ["policy"], runner, original=WRONG).labels == ["injection 'policy'"]
    assert rerun_without(suspects, ["policy-node"], runner, original=WRONG).removed == [
        MemorySpec(exclude_memory_ids=["m7"])
    ]
    # The first RANKED match wins among equal names.
    twice = [tool("lookup"), tool("lookup").model_copy(update={"source": "tool:lookup#2"})]
    assert rerun_without(twice, ["lookup"], runner, original=WRONG).labels == ["tool 'lookup'"]


def test_explicit_specs_pass_through_and_duplicates_collapse() -> None:
    seen: list[list[AblationSpec]] = []

    def runner(specs: Sequence[AblationSpec], *, seed: int) -> str:
        seen.append(list(specs))
        return WRONG

    explicit = ToolSpec(ignored_tools=["not-a-suspect"])
    result = rerun_without(
        SUSPECTS,
        [
            "stale-policy",
            "stale-policy",
            InjectionSpec(exclude_injection_ids=["stale-policy"]),
            explicit,
            explicit,
        ],
        runner,
        original=WRONG,
    )
    assert result.removed == [InjectionSpec(exclude_injection_ids=["stale-policy"]), explicit]
    assert result.labels == ["injection 'stale-policy'", "tool 'not-a-suspect'"]
    assert seen[0] == result.removed


def test_rerun_without_errors_name_the_problem() -> None:
    runner = Synthetic(lambda removed, seed: True)
    with pytest.raises(BacktrackError, match="nothing to remove"):
        rerun_without(SUSPECTS, [], runner, original=WRONG)
    with pytest.raises(BacktrackError, match="removable ids: lookup_order, stale-policy, tone, greeting"):
        rerun_without(SUSPECTS, ["nope"], runner, original=WRONG)
    stage = Suspect(source="node-7", kind="stage")
    arg = Suspect(source="args", kind="arg", ablation=ArgSpec(source="args", note="n"))
    missing = missing_eu()
    with pytest.raises(BacktrackError, match="stage 'node-7' cannot be removed"):
        rerun_without([stage], ["node-7"], runner, original=WRONG)
    with pytest.raises(BacktrackError, match="arg 'args' cannot be removed"):
        rerun_without([arg], ["args"], runner, original=WRONG)
    with pytest.raises(BacktrackError, match="was not sent"):
        rerun_without([missing], ["eu"], runner, original=WRONG)
    assert runner.calls == []  # nothing ran before the errors


def test_removable_sources_are_tool_injection_memory_with_a_spec_deduplicated_in_rank_order() -> None:
    suspects = [
        Suspect(source="node", kind="stage"),
        inj("b"),
        tool("lookup"),
        Suspect(source="args", kind="arg", ablation=ArgSpec(source="args", note="n")),
        Suspect(
            source="tool:lookup#2",
            kind="tool",
            detail=SuspectDetail(tool_name="lookup"),
            ablation=ToolSpec(ignored_tools=["lookup"]),
        ),
        missing_eu(),
        Suspect(
            source="mem",
            kind="memory",
            detail=SuspectDetail(injection_id="m1"),
            ablation=MemorySpec(exclude_memory_ids=["m1"]),
        ),
        inj("b"),
    ]
    assert [s.source for s in removable_sources(suspects)] == ["inj:b", "tool:lookup", "mem"]
