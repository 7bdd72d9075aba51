"""Suspects: lexical strategy, influence signals, ranking confidence, piece ranking (docs/backtracking.md §9.3–§9.6)."""

from __future__ import annotations

import math

import pytest
from pydantic import TypeAdapter

from fpdebug.backtrack.suspects import (
    AblationSpec,
    ArgSpec,
    EdgeHop,
    EvidenceInput,
    InfluenceWeights,
    InjectionSpec,
    MemorySpec,
    Piece,
    RestoreSpec,
    Suspect,
    SuspectDetail,
    ToolSpec,
    is_bisectable,
    is_removable,
    lexical_overlap,
    rank_pieces,
    ranking_confidence,
    ratio_strategy,
    score_influence,
    spec_label,
    suspect_label,
    tokenize,
)
from fpdebug.errors import BacktrackError

# The stop words exactly as docs/backtracking.md §9.5 lists them.
DOMAIN_STOP_WORDS = (
    "a an the and or but if to of for in on at by with is are was were be been it this that these those i "
    "you we my our me please can could would should do does how what need want"
)

# ------------------------------------------------------------------------------------------ tokenizer


def test_tokenize_lowercases_and_splits_on_non_alphanumerics() -> None:
    assert tokenize("Refund-Policy_v2 (EU)/ORDER#42") == ["refund", "policy", "v2", "eu", "order", "42"]


def test_tokenize_drops_single_characters_and_every_listed_stop_word() -> None:
    assert tokenize(DOMAIN_STOP_WORDS) == []
    assert tokenize(DOMAIN_STOP_WORDS.upper()) == []
    assert tokenize("x y z 7 ok") == ["ok"]
    # Near misses of stop words are content.
    assert tokenize("then than them") == ["then", "than", "them"]


def test_tokenize_folds_a_trailing_s_only_on_long_tokens_not_ending_in_ss() -> None:
    assert tokenize("refunds days items") == ["refund", "day", "item"]
    assert tokenize("bus gas its") == ["bus", "gas", "its"]  # fewer than 4 characters
    assert tokenize("class glass access") == ["class", "glass", "access"]  # ends in ss
    assert tokenize("status") == ["statu"]  # the rule is mechanical, not a stemmer


def test_stop_words_are_dropped_before_s_folding() -> None:
    # §9.5 lists the steps in this order: "needs" is not a stop word, so it survives as "need".
    assert tokenize("needs wants") == ["need", "want"]


# ------------------------------------------------------------------------------------------ overlap


def test_overlap_is_intersection_over_geometric_mean_of_set_sizes() -> None:
    # {refund, window, 30, day} vs {refund, 30}: 2 / sqrt(4 * 2)
    assert lexical_overlap("refund window is 30 days", "the refund: 30") == pytest.approx(2 / math.sqrt(8))


def test_overlap_works_on_sets_and_is_symmetric() -> None:
    assert lexical_overlap("refund refund refund", "Refunds") == 1.0
    a, b = "order 42 shipped late", "the late order was refunded"
    assert lexical_overlap(a, b) == lexical_overlap(b, a)


def test_overlap_is_zero_when_either_side_has_no_content_tokens() -> None:
    assert lexical_overlap("the a of it", "the a of it") == 0.0
    assert lexical_overlap("", "refund") == 0.0
    assert lexical_overlap("refund", "!!!") == 0.0


# ------------------------------------------------------------------------------------------ influence


def test_default_weights_redistribute_to_fa_08_depth_02_without_ancestors() -> None:
    adapted = InfluenceWeights().without_ancestors()
    assert adapted.fa == pytest.approx(0.8)
    assert adapted.depth == pytest.approx(0.2)
    assert adapted.avg == 0.0 and adapted.persist == 0.0


def test_redistribution_is_proportional_to_fa_and_depth_weights() -> None:
    adapted = InfluenceWeights(fa=3.0, avg=1.0, persist=1.0, depth=1.0).without_ancestors()
    assert (adapted.fa, adapted.depth) == pytest.approx((4.5, 1.5))
    # With fa and depth both zero the moved mass is split evenly.
    even = InfluenceWeights(fa=0.0, avg=0.6, persist=0.4, depth=0.0).without_ancestors()
    assert (even.fa, even.depth) == pytest.approx((0.5, 0.5))


@pytest.mark.parametrize(
    "weights",
    [
        {"fa": -0.1},
        {"avg": math.nan},
        {"depth": math.inf},
        {"fa": 0.0, "avg": 0.0, "persist": 0.0, "depth": 0.0},
    ],
)
def test_weights_must_be_finite_non_negative_and_not_all_zero(weights: dict[str, float]) -> None:
    with pytest.raises(BacktrackError):
        InfluenceWeights(**weights)


def test_score_without_ancestors_is_08_fa_plus_02_and_marked_adapted() -> None:
    evidence = EvidenceInput(id="e", text="refund window is 30 days")
    [scored] = score_influence([evidence], "refunds take 30 days")
    # evidence {refund, window, 30, day}, answer {refund, take, 30, day}: fa = 3/4; depth = 1
    assert scored.signals.fa == pytest.approx(0.75)
    assert scored.signals.depth == 1.0
    assert scored.score == pytest.approx(0.8 * 0.75 + 0.2)
    assert scored.adapted
    assert scored.tier == "correlational"


def test_score_with_ancestors_mixes_all_four_signals() -> None:
    evidence = EvidenceInput(
        id="e",
        text="refund window 30 days",
        ancestor_texts=["check refund window", "unrelated text here"],
    )
    [scored] = score_influence([evidence], "refund in 30 days")
    fa = 3 / math.sqrt(4 * 3)  # {refund, window, 30, day} vs {refund, 30, day}
    first = 2 / math.sqrt(4 * 3)  # vs {check, refund, window}: 0.577 > T = 0.3
    avg = (first + 0.0) / 2
    persist = 1 / 2
    depth = 1 / 3
    assert scored.signals.fa == pytest.approx(fa)
    assert scored.signals.avg == pytest.approx(avg)
    assert scored.signals.persist == pytest.approx(persist)
    assert scored.signals.depth == pytest.approx(depth)
    assert scored.score == pytest.approx(0.4 * fa + 0.3 * avg + 0.2 * persist + 0.1 * depth)
    assert not scored.adapted


def test_persist_counts_only_ancestors_strictly_above_the_threshold() -> None:
    # An ancestor whose similarity equals T is not "above" it.
    [scored] = score_influence(
        [EvidenceInput(id="e", text="aa bb", ancestor_texts=["aa bb"])], "zz", persist_threshold=1.0
    )
    assert scored.signals.avg == 1.0
    assert scored.signals.persist == 0.0


def test_scores_sort_descending_and_ties_keep_input_order() -> None:
    scored = score_influence(
        [
            EvidenceInput(id="low", text="unrelated words"),
            EvidenceInput(id="tie-1", text="refund 30"),
            EvidenceInput(id="high", text="refund 30 days"),
            EvidenceInput(id="tie-2", text="refund 30"),
        ],
        "refund 30 days",
    )
    assert [entry.id for entry in scored] == ["high", "tie-1", "tie-2", "low"]


def test_evidence_ids_must_be_unique() -> None:
    with pytest.raises(BacktrackError, match="duplicate"):
        score_influence([EvidenceInput(id="e", text="a"), EvidenceInput(id="e", text="b")], "x")


# ------------------------------------------------------------------------------------------ confidence


def test_no_scores_has_no_winner_and_an_empty_shortlist() -> None:
    confidence = ranking_confidence([])
    assert not confidence.clear_winner
    assert confidence.shortlist == []
    assert confidence.margin is None


def test_one_score_is_a_clear_winner_with_no_margin() -> None:
    confidence = ranking_confidence([0.4])
    assert confidence.clear_winner
    assert confidence.margin is None
    assert confidence.shortlist == [0]


def test_margin_strategy_and_band_shortlist() -> None:
    clear = ranking_confidence([0.5, 0.25, 0.75])
    assert clear.clear_winner
    assert clear.margin == pytest.approx(0.25)
    assert clear.shortlist == [2]  # only the lead is within 0.1 of the top

    close = ranking_confidence([0.5, 0.48, 0.3, 0.45])
    assert not close.clear_winner
    assert close.shortlist == [0, 1, 3]


def test_runner_up_joins_the_shortlist_only_without_a_clear_winner() -> None:
    unclear = ranking_confidence([1.0, 0.8], clear_winner_margin=0.5, shortlist_band=0.05)
    assert not unclear.clear_winner
    assert unclear.shortlist == [0, 1]  # outside the band, but there is no clear winner
    assert ranking_confidence([1.0, 0.8]).shortlist == [0]


def test_ratio_strategy_is_relative_and_false_for_a_zero_leader() -> None:
    assert not ranking_confidence([0.04, 0.03]).clear_winner  # margin 0.01 < 0.05
    assert ranking_confidence([0.04, 0.03], strategy=ratio_strategy).clear_winner  # 25 % of the lead
    assert ranking_confidence([0.0, -0.5]).clear_winner
    assert not ranking_confidence([0.0, -0.5], strategy=ratio_strategy).clear_winner


def test_non_finite_scores_take_no_part() -> None:
    confidence = ranking_confidence([math.nan, 0.3, math.inf, 0.1])
    assert confidence.clear_winner
    assert confidence.margin == pytest.approx(0.2)
    assert confidence.shortlist == [1]


# ------------------------------------------------------------------------------------------ specs and labels


def _one(piece: Piece) -> Suspect:
    ranking = rank_pieces([piece], "anything")
    return (ranking.missing or ranking.suspects)[0]


def test_each_kind_gets_the_spec_of_domain_9_6() -> None:
    tool = _one(Piece(id="tool:c1", kind="tool", tool_name="lookup_order", text="r"))
    injection = _one(Piece(id="inj:x", kind="injection", injection_id="refund-policy", text="r"))
    memory = _one(Piece(id="mem:m1", kind="memory", injection_id="m1", text="r"))
    arg = _one(Piece(id="args:call-2", kind="arg"))
    stage = _one(Piece(id="node-7", kind="stage"))
    assert tool.ablation == ToolSpec(ignored_tools=["lookup_order"])
    assert injection.ablation == InjectionSpec(exclude_injection_ids=["refund-policy"])
    assert memory.ablation == MemorySpec(exclude_memory_ids=["m1"])
    assert isinstance(arg.ablation, ArgSpec) and arg.ablation.source == "args:call-2" and arg.ablation.note
    assert stage.ablation is None
    every = (tool, injection, memory, arg, stage)
    assert [is_removable(s) for s in every] == [True, True, True, False, False]
    assert [is_bisectable(s) for s in every] == [True, True, True, False, False]


def test_a_missing_piece_gets_a_restore_spec_and_is_not_removable() -> None:
    missing = _one(Piece(id="inj:y", kind="injection", injection_id="eu-policy", text="r", missing=True))
    assert missing.missing
    assert missing.ablation == RestoreSpec(unit_kind="injection", unit_id="eu-policy")
    assert not is_removable(missing) and not is_bisectable(missing)
    tool = _one(Piece(id="t", kind="tool", tool_name="lookup", missing=True))
    assert tool.ablation == RestoreSpec(unit_kind="tool", unit_id="lookup")


@pytest.mark.parametrize(
    "piece",
    [
        Piece(id="s", kind="stage", missing=True),
        Piece(id="a", kind="arg", missing=True),
        Piece(id="t", kind="tool"),
        Piece(id="i", kind="injection"),
        Piece(id="m", kind="memory", missing=True),
    ],
    ids=["missing-stage", "missing-arg", "tool-without-name", "injection-without-id", "memory-without-id"],
)
def test_pieces_that_cannot_build_their_spec_are_refused(piece: Piece) -> None:
    with pytest.raises(BacktrackError):
        rank_pieces([piece], "answer")


def test_suspect_label_prefers_tool_name_then_injection_id_then_source() -> None:
    tool = Suspect(source="t:1", kind="tool", detail=SuspectDetail(tool_name="lookup", injection_id="skill"))
    injection = Suspect(source="i:1", kind="injection", detail=SuspectDetail(injection_id="policy"))
    memory = Suspect(source="m:1", kind="memory", detail=SuspectDetail(injection_id="m1"))
    assert suspect_label(tool) == "tool 'lookup'"
    assert suspect_label(injection) == "injection 'policy'"
    assert suspect_label(memory) == "memory 'm1'"
    assert suspect_label(Suspect(source="node-7", kind="stage")) == "stage 'node-7'"


def test_spec_labels_name_what_a_bare_spec_removes_or_restores() -> None:
    assert spec_label(ToolSpec(ignored_tools=["a", "b"])) == "tool 'a' + tool 'b'"
    assert spec_label(InjectionSpec(exclude_injection_ids=["x"])) == "injection 'x'"
    assert spec_label(MemorySpec(exclude_memory_ids=["m"])) == "memory 'm'"
    assert spec_label(ArgSpec(source="s", note="n")) == "arg 's'"
    assert spec_label(RestoreSpec(unit_kind="tool", unit_id="t")) == "restore tool 't'"


def test_specs_and_suspects_round_trip_through_json_on_their_kind() -> None:
    adapter: TypeAdapter[AblationSpec] = TypeAdapter(AblationSpec)
    specs = [
        ToolSpec(ignored_tools=["t"]),
        InjectionSpec(exclude_injection_ids=["i"]),
        MemorySpec(exclude_memory_ids=["m"]),
        ArgSpec(source="s", note="n"),
        RestoreSpec(unit_kind="memory", unit_id="m"),
    ]
    for spec in specs:
        assert adapter.validate_json(adapter.dump_json(spec)) == spec
        suspect = Suspect(source="x", kind="injection", ablation=spec)
        assert Suspect.model_validate_json(suspect.model_dump_json()) == suspect


# ------------------------------------------------------------------------------------------ ranking


ANSWER = "Refunds take 30 days"  # tokens {refund, take, 30, day}


def test_rank_pieces_follows_the_documented_formula() -> None:
    ranking = rank_pieces(
        [
            Piece(
                id="policy",
                kind="injection",
                injection_id="policy",
                text="refund window is 30 days",
                iteration=3,
            ),
            Piece(id="order", kind="tool", tool_name="lookup", text="order 42 shipped", iteration=2),
            Piece(
                id="deep",
                kind="injection",
                injection_id="old",
                text="refund window 30 days",
                iteration=1,
                depth=2,
                ancestor_texts=["look up the refund window"],
            ),
            Piece(
                id="weak-edge",
                kind="injection",
                injection_id="w",
                text="refund window is 30 days",
                iteration=3,
                edge_path=[EdgeHop(from_id="call-3", to_id="w", weight=0.5)],
            ),
        ],
        ANSWER,
    )
    by_id = {suspect.source: suspect for suspect in ranking.suspects}
    assert ranking.at_iteration == 3  # the latest piece iteration

    # No ancestors: semantic = 0.8 × 3/4 + 0.2 × 1; same iteration, no hops: structural 1.
    assert by_id["policy"].semantic_score == pytest.approx(0.8)
    assert by_id["policy"].structural_score == 1.0
    assert by_id["policy"].score == pytest.approx(0.8)
    # No overlap at all: semantic 0.2 (the depth signal); one iteration old: × 0.9.
    assert by_id["order"].score == pytest.approx(0.9 * 0.2)
    # One ancestor {look, up, refund, window}: fa 3/4, avg 2/4, persist 1, depth 1/2; two
    # iterations old and two hops back: × 0.9² × 0.9².
    semantic = 0.4 * 0.75 + 0.3 * 0.5 + 0.2 * 1.0 + 0.1 * 0.5
    assert by_id["deep"].semantic_score == pytest.approx(semantic)
    assert by_id["deep"].structural_score == pytest.approx(0.9**4)
    assert by_id["deep"].score == pytest.approx(semantic * 0.9**4)
    # The path's weight multiplies the structural score.
    assert by_id["weak-edge"].score == pytest.approx(0.5 * 0.8)

    assert [s.source for s in ranking.suspects] == ["policy", "deep", "weak-edge", "order"]
    assert [s.rank for s in ranking.suspects] == [1, 2, 3, 4]


def test_a_piece_without_text_scores_its_structural_upper_bound() -> None:
    ranking = rank_pieces(
        [
            Piece(id="policy", kind="injection", injection_id="p", text="refund 30 days", iteration=2),
            Piece(id="node", kind="stage", iteration=1),
        ],
        ANSWER,
    )
    stage = next(s for s in ranking.suspects if s.kind == "stage")
    assert stage.semantic_score is None and stage.signals is None
    assert not stage.has_content_evidence
    assert stage.score == stage.structural_score == pytest.approx(0.9)
    policy = next(s for s in ranking.suspects if s.kind == "injection")
    assert policy.has_content_evidence and policy.signals is not None


def test_an_empty_text_is_scored_not_treated_as_an_upper_bound() -> None:
    [suspect] = rank_pieces([Piece(id="t", kind="tool", tool_name="ping", text="")], ANSWER).suspects
    assert suspect.has_content_evidence
    assert suspect.score == pytest.approx(0.2)


def test_equal_scores_keep_the_pieces_order() -> None:
    pieces = [
        Piece(id=f"p{i}", kind="injection", injection_id=f"i{i}", text="refund 30", iteration=1)
        for i in range(5)
    ]
    ranking = rank_pieces(pieces, ANSWER)
    assert [s.source for s in ranking.suspects] == ["p0", "p1", "p2", "p3", "p4"]


def test_ranking_keeps_the_top_suspects_and_counts_the_folded_rest() -> None:
    # p0 is {refund} (overlap 1/2); every other piece is {refund, x1} (overlap 1/sqrt(8)).
    pieces = [
        Piece(id=f"p{i}", kind="injection", injection_id=f"i{i}", text="refund" + " x1" * i)
        for i in range(15)
    ]
    ranking = rank_pieces(pieces, ANSWER, max_suspects=12)
    assert len(ranking.suspects) == 12
    assert ranking.folded == 3
    assert ranking.suspects[0].source == "p0"
    assert ranking.confidence.shortlist[0] == 0


def test_missing_pieces_are_ranked_apart_and_capped() -> None:
    pieces = [Piece(id="sent", kind="injection", injection_id="s", text="refund 30 days")]
    pieces += [
        Piece(
            id=f"gone{i}",
            kind="injection",
            injection_id=f"g{i}",
            missing=True,
            text="refund" if i == 6 else "other",
        )
        for i in range(7)
    ]
    ranking = rank_pieces(pieces, ANSWER)
    assert [s.source for s in ranking.suspects] == ["sent"]
    assert len(ranking.missing) == 5
    assert ranking.missing[0].source == "gone6"  # it overlaps the answer
    assert all(isinstance(s.ablation, RestoreSpec) for s in ranking.missing)


def test_every_part_of_the_ranking_says_it_is_correlational() -> None:
    ranking = rank_pieces([Piece(id="p", kind="injection", injection_id="p", text="refund")], ANSWER)
    assert ranking.tier == ranking.confidence.tier == "correlational"
    assert all(s.tier == "correlational" for s in ranking.suspects)
    assert ranking.strategy == "lexical-overlap"


def test_rank_pieces_refuses_duplicates_and_bad_decays() -> None:
    piece = Piece(id="p", kind="stage")
    with pytest.raises(BacktrackError, match="duplicate"):
        rank_pieces([piece, piece], ANSWER)
    for bad in (0.0, 1.5, math.nan):
        with pytest.raises(BacktrackError):
            rank_pieces([piece], ANSWER, recency_decay=bad)
    with pytest.raises(BacktrackError):
        rank_pieces([piece], ANSWER, max_suspects=-1)


def test_explicit_at_iteration_measures_age_and_never_rewards_the_future() -> None:
    piece = Piece(id="p", kind="stage", iteration=2)
    assert rank_pieces([piece], ANSWER, at_iteration=5).suspects[0].score == pytest.approx(0.9**3)
    assert rank_pieces([piece], ANSWER, at_iteration=1).suspects[0].score == pytest.approx(1.0)
