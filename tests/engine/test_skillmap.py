"""The skill map: builder refusals, compiled triggers, the resolver, reachability, the gate (docs/context-model.md §5)."""

from __future__ import annotations

import re

import pytest

from fpdebug.engine.injections import (
    Always,
    InjectionContext,
    LlmActivated,
    ProposedTransition,
    Rule,
    TurnRoute,
    define_skill,
    define_steering,
    evaluate_injections,
)
from fpdebug.engine.skillmap import (
    Guard,
    PickCarriers,
    SkillMap,
    SkillMapBuilder,
    apply_skill_pick,
    bounded_witness,
    gate_skill_pick,
)
from fpdebug.engine.types import ToolResult
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import ConflictParty, SkillMapDecl, Witness


def builder(*ids: str) -> SkillMapBuilder:
    b = SkillMapBuilder()
    for sid in ids:
        b.skill(define_skill(sid, body=f"{sid} body"))
    return b


def ctx(iteration: int = 2, **kw: object) -> InjectionContext:
    return InjectionContext(iteration, **kw)  # type: ignore[arg-type]


def batch(*results: ToolResult) -> dict[str, object]:
    return {"tool_results": results}


def boom(_: object) -> bool:
    raise RuntimeError("when exploded")


def support_map() -> SkillMap:
    return (
        builder("triage", "billing", "refund")
        .entry("triage")
        .route("triage", "billing", on_tool_return="lookup")
        .route("billing", "refund", on_tool_return="refund_check")
        .route("billing", "triage", on_tool_status={"denied"})
        .build()
    )


class TestBuilderRefusals:
    def test_both_when_and_status_on_one_edge(self) -> None:
        with pytest.raises(DefinitionError, match="both when and on_tool_status"):
            builder("a", "b").route("a", "b", on_tool_status={"success"}, when=lambda r: True)

    def test_empty_status_set(self) -> None:
        with pytest.raises(DefinitionError, match="empty set"):
            builder("a", "b").route("a", "b", on_tool_status=set())

    def test_unknown_status(self) -> None:
        with pytest.raises(DefinitionError, match="unknown status"):
            builder("a", "b").route("a", "b", on_tool_status={"ok"})  # type: ignore[arg-type]

    def test_unknown_node_in_a_route(self) -> None:
        with pytest.raises(DefinitionError, match="unknown node 'c'"):
            builder("a", "b").entry("a").route("a", "c", on_tool_return="t").build()

    def test_unknown_node_in_an_entry(self) -> None:
        with pytest.raises(DefinitionError, match="unknown node 'z'"):
            builder("a").entry("z").build()

    @pytest.mark.parametrize(
        "guard",
        [
            {"tier": {"in": []}},
            {"amount": {"gt": 10, "lt": 5}},
            {"amount": {"gt": 5, "lt": 5}},
            {"amount": {"gte": 5, "lt": 5}},
            {"amount": {"gte": 5, "lte": 5, "ne": 5}},
            {"tier": {"eq": "gold", "ne": "gold"}},
            {"tier": {"eq": "gold", "in": ["silver"]}},
            {"tier": {"eq": "gold", "not_in": ["gold"]}},
            {"amount": {"eq": 3, "gt": 4}},
            {"amount": {"gt": 3, "lt": "z"}},
        ],
    )
    def test_a_guard_that_can_never_pass(self, guard: dict[str, dict[str, object]]) -> None:
        with pytest.raises(DefinitionError, match="never pass"):
            builder("a", "b").route("a", "b", guard=guard)

    @pytest.mark.parametrize(
        "guard",
        [
            {"amount": {"gte": 5, "lte": 5}},
            {"amount": {"gt": 1, "lt": 2}},
            {"tier": {"ne": "gold", "not_in": ["silver"]}},
            {"tier": {"in": ["gold", "silver"], "ne": "gold"}},
        ],
    )
    def test_a_guard_that_can_pass_is_accepted(self, guard: dict[str, dict[str, object]]) -> None:
        builder("a", "b").route("a", "b", guard=guard).build()

    def test_bad_guard_operands(self) -> None:
        with pytest.raises(DefinitionError, match="list of values"):
            Guard("tier", "in", "gold")
        with pytest.raises(DefinitionError, match="finite number or a string"):
            Guard("amount", "gt", None)
        with pytest.raises(DefinitionError, match="not one of"):
            Guard("amount", "between", 3)  # type: ignore[arg-type]

    def test_one_matcher_per_entry(self) -> None:
        with pytest.raises(DefinitionError, match="at most one"):
            builder("a").entry("a", keywords=["x"], regex="y")

    def test_a_regex_that_matches_everything_is_refused(self) -> None:
        with pytest.raises(DefinitionError, match="empty string"):
            builder("a").entry("a", regex="x*")

    def test_no_nodes_and_duplicates(self) -> None:
        with pytest.raises(DefinitionError, match="at least one node"):
            SkillMapBuilder().build()
        with pytest.raises(DefinitionError, match="duplicate id 'a'"):
            builder("a", "a").build()
        with pytest.raises(DefinitionError, match="duplicate id 'a'"):
            builder("a").open_skill(define_skill("a", body="x")).build()

    def test_open_skills_are_llm_activated(self) -> None:
        with pytest.raises(DefinitionError, match="llm-activated"):
            builder("a").open_skill(define_steering("s", prompt="p"))


class TestCompiledTriggers:
    def test_unconditional_entry_is_always_and_co_active(self) -> None:
        m = builder("policy", "triage").entry("policy").entry("triage").build()
        assert m.injections[0].trigger == Always()
        # The second unconditional entry never holds the cursor, yet rides beside it.
        active = evaluate_injections(m.injections, ctx(1))
        assert active.active_ids == ("policy", "triage")

    def test_route_target_is_from_gated_sticky_and_hands_off_cleanly(self) -> None:
        m = support_map()
        trig = m.injections[1].trigger
        assert isinstance(trig, Rule) and trig.graph_node
        # From-gating: `lookup` fires triage→billing only while the cursor is on triage.
        # (triage is an unconditional entry, so it rides on every pass.)
        from_refund = evaluate_injections(
            m.injections, ctx(current_skill_id="refund", **batch(ToolResult("lookup")))
        )
        assert from_refund.active_ids == ("triage", "refund")
        on_billing = evaluate_injections(
            m.injections, ctx(current_skill_id="triage", **batch(ToolResult("lookup")))
        )
        assert on_billing.active_ids == ("triage", "billing")
        # Stickiness: nothing fires, the cursor stays, billing stays active.
        assert evaluate_injections(m.injections, ctx(current_skill_id="billing")).active_ids == (
            "triage",
            "billing",
        )
        # Clean handoff: billing deactivates on the same pass refund activates.
        handoff = evaluate_injections(
            m.injections, ctx(current_skill_id="billing", **batch(ToolResult("refund_check")))
        )
        assert handoff.active_ids == ("triage", "refund")

    def test_conditional_entry_rule(self) -> None:
        m = builder("a", "b").entry("a", keywords=["alpha"]).entry("b", keywords=["beta"]).build()
        # Cursor on the node → active; cursor elsewhere → inactive even though its words match.
        both = "alpha and beta"
        assert evaluate_injections(m.injections, ctx(1, user_message=both)).active_ids == ("a",)
        assert evaluate_injections(m.injections, ctx(1, user_message="beta")).active_ids == ("b",)
        # No cursor at all (a cascade that decided nothing): the entry's own match decides.
        no_cursor = ctx(1, user_message="beta", turn_route=TurnRoute(to_skill=None))
        assert m.explain_next_skill(no_cursor).by == "none"
        assert evaluate_injections(m.injections, no_cursor).active_ids == ("b",)

    def test_a_raising_entry_predicate_is_reported_even_when_the_cursor_is_elsewhere(self) -> None:
        m = builder("a", "b").entry("a", when=boom).entry("b").route("b", "a", on_tool_return="t").build()
        result = evaluate_injections(m.injections, ctx(current_skill_id="b"))
        assert [(s.id, s.reason) for s in result.skipped] == [("a", "predicate-threw")]

    def test_model_edge_only_and_open_skills_stay_llm_activated(self) -> None:
        m = builder("a", "b").entry("a").route("a", "b").open_skill(define_skill("helper", body="h")).build()
        assert m.injections[1].trigger == LlmActivated()
        assert [i.id for i in m.injections] == ["a", "b", "helper"]

    def test_one_resolver_call_however_many_graph_triggers_ask(self) -> None:
        b = builder(*[f"n{i}" for i in range(8)]).entry("n0", when=lambda c: False).entry("n1")
        for i in range(1, 8):
            b.route(f"n{i - 1}", f"n{i}", on_tool_return=f"t{i}")
        m = b.build()
        c = ctx(current_skill_id="n3", **batch(ToolResult("t4")))
        before = m.resolver_calls
        result = evaluate_injections(m.injections, c)
        assert m.superseded_entries(c) == ()
        assert m.resolver_calls == before + 1
        assert "n4" in result.active_ids


class TestResolver:
    def test_turn_route_decides_iteration_one_only(self) -> None:
        m = support_map()
        route = TurnRoute(to_skill="billing", by="intent")
        move = m.explain_next_skill(ctx(1, turn_route=route))
        assert (move.to_skill, move.by) == ("billing", "intent")
        assert m.explain_next_skill(ctx(2, turn_route=route, current_skill_id="triage")).by == "stay"

    def test_cold_start_takes_the_first_matching_entry_in_declaration_order(self) -> None:
        m = builder("a", "b", "c").entry("a", when=boom).entry("b", when=lambda c: False).entry("c").build()
        move = m.explain_next_skill(ctx(1))
        assert (move.to_skill, move.by, move.from_skill) == ("c", "entry", None)

    def test_keyword_witness(self) -> None:
        m = builder("zone-audit").entry("zone-audit", keywords=["zone"]).build()
        move = m.explain_next_skill(ctx(1, user_message="Check my ZONE settings"))
        assert move.witness == Witness(text="ZONE", keyword="zone")
        assert m.explain_next_skill(ctx(1, user_message="ozone layer")).by == "none"

    def test_regex_witness_is_collapsed_and_bounded(self) -> None:
        m = builder("a").entry("a", regex=r"order[\s\S]*").build()
        text = "order   " + "x" * 100
        move = m.explain_next_skill(ctx(1, user_message=text))
        assert move.witness is not None
        assert len(move.witness.text) == 80
        assert move.witness.text == "order " + "x" * 73 + "…"
        assert bounded_witness("a \n\t b") == "a b"
        assert bounded_witness("y" * 80) == "y" * 80

    def test_cold_start_falls_back_to_proposal_then_pick_then_activation(self) -> None:
        m = builder("a", "b", "c").entry("a", when=lambda c: False).entry("b", when=lambda c: False).build()
        prop = ProposedTransition("b")
        assert (
            m.explain_next_skill(ctx(pending_tool_transition=prop, pending_skill_pick="a")).by
        ) == "tool-proposal"
        move = m.explain_next_skill(ctx(pending_skill_pick="a"))
        assert (move.to_skill, move.by) == ("a", "model-pick")
        # A proposal or pick that is not an entry is not a cold start.
        assert m.explain_next_skill(ctx(pending_skill_pick="c")).by == "none"
        move = m.explain_next_skill(ctx(activated_injection_ids=("c", "b")))
        assert (move.to_skill, move.by) == ("b", "model-pick")
        assert m.explain_next_skill(ctx()).by == "none"

    def test_results_in_call_order_and_a_conflict(self) -> None:
        m = (
            builder("t", "x", "y")
            .entry("t")
            .route("t", "x", on_tool_return="fx")
            .route("t", "y", on_tool_return="fy")
            .build()
        )
        c = ctx(
            current_skill_id="t",
            **batch(
                ToolResult("fy", tool_call_id="1"),
                ToolResult("fx", tool_call_id="2"),
                ToolResult("fy", tool_call_id="3"),
            ),
        )
        move = m.explain_next_skill(c)
        assert (move.to_skill, move.by, move.from_skill) == ("y", "route", "t")
        assert move.conflict is not None
        assert move.conflict.winner == ConflictParty(tool_call_id="1", tool_name="fy", target="y")
        # Same target as the winner is no loser.
        assert move.conflict.losers == [ConflictParty(tool_call_id="2", tool_name="fx", target="x")]

    def test_edges_in_declaration_order_for_one_result(self) -> None:
        m = (
            builder("t", "x", "y")
            .entry("t")
            .route("t", "x", on_tool_return=re.compile("look"))
            .route("t", "y", on_tool_return="lookup")
            .build()
        )
        move = m.explain_next_skill(ctx(current_skill_id="t", **batch(ToolResult("lookup"))))
        assert (move.to_skill, move.conflict) == ("x", None)

    def test_status_edges_need_a_declared_status(self) -> None:
        m = support_map()
        no_status = ctx(current_skill_id="billing", **batch(ToolResult("anything")))
        assert m.explain_next_skill(no_status).by == "stay"
        denied = ctx(current_skill_id="billing", **batch(ToolResult("anything", status="denied")))
        assert m.explain_next_skill(denied).to_skill == "triage"

    def test_status_and_tool_name_together(self) -> None:
        m = (
            builder("a", "b")
            .entry("a")
            .route("a", "b", on_tool_return="pay", on_tool_status={"failure"})
            .build()
        )
        assert (
            m.explain_next_skill(
                ctx(current_skill_id="a", **batch(ToolResult("refund", status="failure")))
            ).by
            == "stay"
        )
        assert (
            m.explain_next_skill(ctx(current_skill_id="a", **batch(ToolResult("pay", status="failure")))).by
            == "route"
        )

    def test_when_receives_the_result_and_a_raise_is_no_match_for_that_pair(self) -> None:
        seen: list[object] = []

        def big(result: ToolResult) -> bool:
            seen.append(result)
            if result.result is None:
                raise ValueError("no result")
            return result.result["amount"] > 100  # type: ignore[index]

        m = builder("a", "b").entry("a").route("a", "b", when=big).build()
        first, second = ToolResult("t", None, "1"), ToolResult("t", {"amount": 500}, "2")
        move = m.explain_next_skill(ctx(current_skill_id="a", **batch(first, second)))
        assert (move.to_skill, move.conflict) == ("b", None)
        assert seen == [first, second]

    def test_guards_and_guards_closed(self) -> None:
        m = (
            builder("a", "big", "vip", "other")
            .entry("a")
            .route("a", "vip", on_tool_return="lookup", guard={"customer.tier": {"in": ["gold"]}})
            .route("a", "big", on_tool_return="lookup", guard=[Guard("amount", "gte", 100)])
            .route("a", "other", on_tool_return="nothing")
            .build()
        )
        move = m.explain_next_skill(
            ctx(
                current_skill_id="a",
                **batch(ToolResult("lookup", '{"amount": 120, "customer": {"tier": "silver"}}')),
            )
        )
        assert (move.to_skill, move.guard) == ("big", "amount gte 100")
        assert move.guards_closed == ('a→vip: customer.tier in ["gold"]',)
        stay = m.explain_next_skill(ctx(current_skill_id="a", **batch(ToolResult("lookup", {"amount": 5}))))
        assert stay.by == "stay"

    def test_guard_json_semantics(self) -> None:
        assert Guard("ok", "eq", True).passes({"ok": True})
        assert not Guard("ok", "eq", 1).passes({"ok": True})
        assert not Guard("n", "gt", 1).passes({"n": "2"})
        assert not Guard("n", "gt", 1).passes({"m": 2})
        assert Guard("items.1", "eq", "b").passes({"items": ["a", "b"]})
        assert not Guard("n", "ne", 1).passes("not json")

    def test_route_beats_proposal_beats_pick_beats_stay(self) -> None:
        m = (
            builder("t", "x", "y", "z")
            .entry("t")
            .route("t", "x", on_tool_return="fx")
            .route("t", "y")
            .route("t", "z")
            .build()
        )
        prop = ProposedTransition("y")
        full = ctx(
            current_skill_id="t",
            pending_tool_transition=prop,
            pending_skill_pick="z",
            **batch(ToolResult("fx")),
        )
        assert m.explain_next_skill(full).by == "route"
        no_edge = ctx(current_skill_id="t", pending_tool_transition=prop, pending_skill_pick="z")
        move = m.explain_next_skill(no_edge)
        assert (move.to_skill, move.by, move.from_skill) == ("y", "tool-proposal", "t")
        move = m.explain_next_skill(ctx(current_skill_id="t", pending_skill_pick="z"))
        assert (move.to_skill, move.by) == ("z", "model-pick")
        move = m.explain_next_skill(ctx(current_skill_id="t"))
        assert (move.to_skill, move.by, move.from_skill) == ("t", "stay", "t")

    def test_a_pick_or_proposal_of_the_current_node_is_a_stay(self) -> None:
        m = builder("t", "x").entry("t").route("t", "x").build()
        assert m.explain_next_skill(ctx(current_skill_id="t", pending_skill_pick="t")).by == "stay"
        assert (
            m.explain_next_skill(
                ctx(current_skill_id="t", pending_tool_transition=ProposedTransition("t"))
            ).by
            == "stay"
        )


class TestReachability:
    def chain(self) -> SkillMap:
        return (
            builder("a", "b", "c")
            .entry("a")
            .route("a", "b", on_tool_return="t1")
            .route("b", "c", on_tool_return="t2")
            .open_skill(define_skill("helper", body="h"))
            .build()
        )

    def test_chain_examples(self) -> None:
        m = self.chain()
        assert m.reachable_skills("a") == ("b",)
        assert m.reachable_skills("b") == ("c", "a")
        assert m.reachable_skills(None) == ("a",)
        assert builder("a").entry("a").build().reachable_skills("a") == ()

    def test_open_skill_is_appended_by_the_gate(self) -> None:
        m = self.chain()
        assert m.admissible_skill_ids("a") == ("b", "helper")
        assert m.allowed_skill_ids("a") == ("b",)

    def test_superseded_entries(self) -> None:
        m = (
            builder("a", "b", "c", "d")
            .entry("a")
            .entry("b", keywords=["refund"])
            .entry("c", when=boom)
            .entry("d", when=lambda c: True)
            .route("a", "b", on_tool_return="t")
            .build()
        )
        assert m.superseded_entries(ctx(1, user_message="refund please")) == ("b", "d")
        # The cursor's own entry is not superseded.
        assert m.superseded_entries(
            ctx(current_skill_id="a", user_message="refund", **batch(ToolResult("t")))
        ) == ("d",)
        nothing = builder("a").entry("a", when=lambda c: False).build()
        assert nothing.superseded_entries(ctx(1)) == ()


class TestGate:
    def test_a_hop_is_accepted_and_moves_the_cursor(self) -> None:
        pick = support_map().gate("billing", current_skill_id="triage")
        assert (pick.outcome, pick.is_hop, pick.accepted) == ("hop", True, True)

    def test_an_open_skill_activates_without_moving(self) -> None:
        pick = gate_skill_pick("helper", hops=("b",), open_skill_ids=("helper",), current_skill_id="a")
        assert (pick.outcome, pick.is_hop) == ("open", False)

    def test_a_parked_member_is_admitted_even_as_the_current_cursor(self) -> None:
        pick = gate_skill_pick(
            "zone", hops=("billing",), parked_member_ids={"zone", "billing"}, current_skill_id="zone"
        )
        assert (pick.outcome, pick.is_hop) == ("re-engagement", False)
        hop = gate_skill_pick(
            "billing",
            hops=("billing",),
            parked_member_ids={"zone", "billing"},
            current_skill_id="zone",
            posture="rails",
        )
        assert (hop.outcome, hop.is_hop) == ("re-engagement", True)

    def test_anything_else_is_rejected_naming_allowed(self) -> None:
        m = support_map()
        pick = m.gate("refund", current_skill_id="triage")
        assert (pick.outcome, pick.allowed, pick.accepted) == ("rejected", ("billing",), False)
        assert "Allowed: billing" in pick.refusal()
        assert pick.record().outcome == "rejected"

    def test_postures_refuse_hops(self) -> None:
        assert gate_skill_pick("b", hops=("b",), posture="rails").outcome == "rejected"
        assert gate_skill_pick("b", hops=("b",), posture="guard", menu=("c",)).outcome == "rejected"
        assert gate_skill_pick("b", hops=("b",), posture="guard", menu=("b",)).outcome == "hop"

    def test_carriers(self) -> None:
        carriers = PickCarriers.start_of_batch(["x"], pending_skill_pick="old", graph=True, maps=True)
        assert (carriers.pending_skill_pick, carriers.accepted_skill_picks) == (None, ())
        for pick in [
            gate_skill_pick("b", hops=("b", "c")),
            gate_skill_pick("h", hops=("b", "c"), open_skill_ids=("h",)),
            gate_skill_pick("c", hops=("b", "c")),
            gate_skill_pick("b", hops=("b", "c")),
            gate_skill_pick("nope", hops=("b", "c")),
        ]:
            carriers = apply_skill_pick(carriers, pick)
        assert carriers.activated_injection_ids == ("x", "b", "h", "c")
        assert carriers.pending_skill_pick == "b"  # the last accepted hop wins
        assert carriers.accepted_skill_picks == ("b", "h", "c")
        no_maps = apply_skill_pick(
            PickCarriers.start_of_batch([], graph=True, maps=False), gate_skill_pick("b", hops=("b",))
        )
        assert no_maps.accepted_skill_picks is None


def test_declaration() -> None:
    m = (
        builder("a", "b")
        .entry("a", keywords=["x"])
        .route("a", "b", on_tool_return=re.compile("^get_"), guard={"n": {"gt": 1}})
        .route("b", "a", on_tool_status={"denied", "failure"})
        .route("b", "b")
        .open_skill(define_skill("h", body="h"))
        .build()
    )
    decl = m.declaration()
    assert isinstance(decl, SkillMapDecl)
    assert decl.nodes == ["a", "b"] and decl.open_skills == ["h"]
    assert (decl.entries[0].kind, decl.entries[0].keywords) == ("keywords", ["x"])
    first, second, third = decl.edges
    assert (first.on_tool_return, first.tool_is_pattern, first.guards[0].op) == ("^get_", True, "gt")
    assert sorted(second.on_tool_status or []) == ["denied", "failure"]
    assert third.deterministic is False
    SkillMapDecl.model_validate_json(decl.model_dump_json())
