"""One Evaluate pass (docs/context-model.md §3.4–§3.5), and the worked timelines of §4.4 and §6.6 driven pass by pass."""

from __future__ import annotations

import re

import pytest

from fpdebug.engine.effects import envelope, propose_transition, require_instruction
from fpdebug.engine.engagement import skill_map_plan
from fpdebug.engine.evaluate import PARK_CARD_ID, PassInputs, PassSetup, evaluate_pass
from fpdebug.engine.injections import (
    OnToolReturn,
    StepPointer,
    define_fact,
    define_injection,
    define_instruction,
    define_skill,
    define_steering,
)
from fpdebug.engine.leases import InstructionLease, PendingToolTransition
from fpdebug.engine.skillmap import SkillMap, SkillMapBuilder
from fpdebug.engine.types import Tool, ToolResult
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import (
    ActiveReason,
    CursorMoveEvent,
    EngagementEvent,
    LeasePruneEvent,
    PassEvent,
    RerouteSupersededEvent,
    RouteConflictEvent,
)

from ..conftest import T0
from .harness import Call, Loop

ENV = {"seq": 1, "ts": T0, "run_id": "run", "turn": 1}


def never(_: object) -> bool:
    return False


def setup_plain(*extra: object) -> PassSetup:
    return PassSetup((define_steering("tone", prompt="Be brief."), *extra))  # type: ignore[arg-type]


class TestUnusedFeaturesAddNothing:
    def test_a_plain_agent_has_no_graph_lease_or_kernel_state(self) -> None:
        result = evaluate_pass(setup_plain(), PassInputs(iteration=1))
        assert result.cursor_move is None and not result.routes
        assert result.next_skill_cursor is None and result.reachable is None
        assert result.lease_active_ids is None and result.next_instruction_leases is None
        assert result.lease_prune is None and result.lease_tenant is None
        assert result.engagement is None and result.parked_ids is None and result.parked_tool_names is None
        assert result.next_served_injection_ids is None and result.next_step_pointer is None
        assert result.cursor_move_fields() is None and result.lease_prune_fields() is None
        assert result.engagement_fields() is None and result.route_conflict_fields() is None
        assert result.reroute_fields() == [] and result.superseded_ids == ()
        event = PassEvent(**ENV, iteration=1, **result.pass_fields())  # type: ignore[arg-type]
        dumped = event.model_dump(exclude_none=True)
        assert not {"lease_active_ids", "parked_ids", "served_ids", "superseded_ids"} & dumped.keys()

    def test_the_kernel_writes_served_ids_even_when_nothing_is_served(self) -> None:
        # §3.4 step 12: with the kernel mounted, next_served_injection_ids is written on every pass,
        # even when empty: () (the key exists, nothing served), never None (the feature is unused).
        graph = SkillMapBuilder().skill(define_skill("s", body="S.")).entry("s", when=never).build()
        setup = PassSetup(graph.injections, skill_map=graph, engagement=skill_map_plan(graph))
        result = evaluate_pass(setup, PassInputs(iteration=1))
        assert result.evaluation.active_ids == () and result.active_injections == ()
        assert result.next_served_injection_ids == ()
        event = PassEvent(**ENV, iteration=1, **result.pass_fields())  # type: ignore[arg-type]
        assert event.model_dump(exclude_none=True)["served_ids"] == []

    def test_an_empty_lease_record_is_not_an_absent_one(self) -> None:
        result = evaluate_pass(setup_plain(), PassInputs(iteration=3, instruction_leases=()))
        assert result.lease_active_ids == () and result.next_instruction_leases == ()
        assert result.lease_prune is None

    def test_iteration_defaults_to_one_only_when_absent(self) -> None:
        assert evaluate_pass(setup_plain(), PassInputs()).iteration == 1
        assert evaluate_pass(setup_plain(), PassInputs(iteration=0)).iteration == 0


class TestSetup:
    def test_duplicate_ids(self) -> None:
        with pytest.raises(DefinitionError, match="duplicate id 'tone'"):
            setup_plain(define_fact("tone", data="x"))

    def test_the_catalog_must_hold_the_compiled_nodes(self) -> None:
        triage = define_skill("triage", body="t")
        graph = SkillMapBuilder().skill(triage).entry("triage").build()
        with pytest.raises(DefinitionError, match="as the map compiled it"):
            PassSetup((triage,), skill_map=graph)
        PassSetup(graph.injections, skill_map=graph)


class TestLeaseTimelines:
    """docs/context-model.md §4.4."""

    def test_next_call(self) -> None:
        wire = define_instruction("wire-format", prompt="Answer in wire format.", active_when=never)
        loop = Loop(setup_plain(wire), max_iterations=6)
        first = loop.step(
            [Call("fetch", envelope("rows", require_instruction("wire-format", "next-call")), id="f1")]
        )
        assert (first.lease_active_ids, first.next_instruction_leases) == (None, None)
        assert loop.leases == (InstructionLease("wire-format", "next-call", "fetch", 1, tool_call_id="f1"),)

        second = loop.step([Call("calc", 42)])
        assert second.lease_active_ids == ("wire-format",)
        assert "wire-format" in second.evaluation.active_ids
        assert second.next_instruction_leases == ()
        assert second.lease_prune is not None
        assert [(p.lease.instruction_id, p.reason) for p in second.lease_prune.pruned] == [
            ("wire-format", "spent")
        ]
        reason = second.reasons[second.evaluation.active_ids.index("wire-format")]
        assert reason == ActiveReason(
            id="wire-format",
            via="lease",
            tool_name="fetch",
            tool_call_id="f1",
            at_iteration=1,
            delivery_lease="next-call",
        )
        LeasePruneEvent(**ENV, iteration=2, **second.lease_prune_fields())  # type: ignore[arg-type]

        third = loop.step()
        assert (third.lease_active_ids, third.next_instruction_leases, third.lease_prune) == ((), (), None)
        assert "wire-format" not in third.evaluation.active_ids

    def cyclic(self) -> PassSetup:
        graph = (
            SkillMapBuilder()
            .skill(define_skill("triage", body="Triage."))
            .skill(define_skill("billing", body="Billing."))
            .entry("triage")
            .route("triage", "billing", on_tool_return="go")
            .route("billing", "triage", on_tool_return="back")
            .build()
        )
        note = define_instruction("policy-note", prompt="Quote the policy.", active_when=never)
        return PassSetup((*graph.injections, note), skill_map=graph)

    def test_until_skill_exit_on_a_cyclic_graph(self) -> None:
        loop = Loop(self.cyclic(), max_iterations=6)
        loop.step([Call("policy", envelope("ok", require_instruction("policy-note", "until-skill-exit")))])
        assert loop.leases is not None and loop.leases[0].skill_id == "triage"
        rows = []
        for calls in ([Call("go", "moved")], [Call("back", "moved")], [Call("noop", 1)], None):
            result = loop.step(calls)
            rows.append(
                (result.iteration, result.next_skill_cursor, "policy-note" in result.evaluation.active_ids)
            )
        assert rows == [
            (2, "triage", True),
            (3, "billing", False),
            (4, "triage", False),
            (5, "triage", False),
        ]
        assert loop.results[2].lease_prune is not None
        assert loop.results[2].lease_prune.pruned[0].reason == "tenure-ended"
        assert loop.leases == ()

    def test_a_lease_granted_without_tenant_dies_when_one_appears(self) -> None:
        note = define_instruction("note", prompt="n", active_when=never)
        skill = define_skill("helper", body="h")
        loop = Loop(PassSetup((note, skill)))
        loop.step([Call("t", envelope("x", require_instruction("note", "until-skill-exit")))])
        assert loop.leases is not None and loop.leases[0].skill_id is None
        second = loop.step([Call("read_skill", "helper")])
        assert second.lease_active_ids == ("note",)
        third = loop.step()
        assert third.lease_tenant == "helper"  # no graph: the activation tail holds the tenure
        assert third.lease_active_ids == () and loop.leases == ()


class TestZoneTrap:
    """docs/context-model.md §6.6, through whole passes."""

    def setup(self) -> PassSetup:
        graph = (
            SkillMapBuilder()
            .skill(define_skill("zone-audit", body="Audit the zone.", tools=[Tool("get_zone_info")]))
            .skill(define_skill("billing", body="Billing."))
            .entry("zone-audit", keywords=["zone"])
            .route("zone-audit", "billing", on_tool_return="open_invoice")
            .build()
        )
        return PassSetup(graph.injections, skill_map=graph, engagement=skill_map_plan(graph, renewal_grace=3))

    def run_to_pass_4(self) -> Loop:
        loop = Loop(self.setup(), user_message="Why is the zone  config odd?")
        for _ in range(3):
            loop.step([Call("screen_open", "screen")])
        return loop

    def test_parks_on_pass_4(self) -> None:
        loop = self.run_to_pass_4()
        first = loop.results[0]
        assert first.cursor_move is not None and first.cursor_move.witness is not None
        assert first.cursor_move.witness.text == "zone"
        assert first.engagement is not None
        (founded,) = first.engagement.advance.changes
        assert (founded.by, founded.iteration, founded.witness) == ("lexical", 1, "zone")
        assert [r.engagement.advance.next[0].idle for r in loop.results if r.engagement] == [0, 1, 2]

        fourth = loop.step([Call("read_skill", "zone-audit")])
        assert fourth.engagement is not None
        (parked,) = fourth.engagement.advance.changes
        assert (parked.kind, parked.idle_calls, parked.by) == ("parked", 3, "lexical")
        assert ("zone-audit", "parked") in [(s.id, s.reason) for s in fourth.evaluation.skipped]
        assert fourth.next_skill_cursor == "zone-audit"  # parking never moves the cursor
        assert fourth.parked_tool_names == ("get_zone_info",)
        assert fourth.parked_ids == ("zone-audit", "billing")
        card = fourth.active_injections[-1]
        assert (card.id, card.flavor) == (PARK_CARD_ID, "steering")
        assert card.system_prompt is not None and card.system_prompt.startswith("Map status")
        assert [e.id for e in fourth.by_slot.system_prompt] == [PARK_CARD_ID]
        assert fourth.by_slot.tools == []
        assert fourth.evaluation.active_ids == ()
        assert fourth.next_served_injection_ids == (PARK_CARD_ID,)
        assert fourth.reasons[-1] == ActiveReason(id=PARK_CARD_ID, via="park-card")
        EngagementEvent(**ENV, iteration=4, **fourth.engagement_fields())  # type: ignore[arg-type]
        assert loop.picks[-1][0].outcome == "re-engagement"

        fifth = loop.step()
        assert fifth.engagement is not None
        (back,) = fifth.engagement.advance.changes
        assert (back.kind, back.reengaged, back.by, back.iteration) == ("engaged", True, "explicit", 5)
        assert fifth.evaluation.active_ids == ("zone-audit",)
        assert [s.name for s in fifth.active_injections[0].tools] == ["get_zone_info"]
        assert fifth.parked_tool_names == ()
        assert fifth.next_skill_cursor == "zone-audit"

    def test_picking_billing_re_engages_and_moves(self) -> None:
        loop = self.run_to_pass_4()
        loop.step([Call("read_skill", "billing")])
        fifth = loop.step()
        assert fifth.cursor_move is not None
        assert (fifth.cursor_move.by, fifth.next_skill_cursor) == ("model-pick", "billing")
        assert fifth.engagement is not None
        (back,) = fifth.engagement.advance.changes
        assert (back.reengaged, back.by) == (True, "explicit")
        assert fifth.evaluation.active_ids == ("billing",)

    def test_a_foreign_pick_does_not_re_engage(self) -> None:
        loop = self.run_to_pass_4()
        loop.step([Call("read_skill", "nowhere")])
        assert loop.picks[-1][0].outcome == "rejected"
        fifth = loop.step()
        assert fifth.parked_ids == ("zone-audit", "billing")


def support() -> tuple[SkillMap, PassSetup]:
    graph = (
        SkillMapBuilder()
        .skill(define_skill("triage", body="Triage {{x}}"))
        .skill(define_skill("billing", body="Billing."))
        .skill(define_skill("refund", body="Refund."))
        .skill(define_skill("admin", body="Admin."))
        .skill(define_skill("survey", body="Survey."))
        .entry("triage")
        .route("triage", "billing", on_tool_return="lookup")
        .route("triage", "admin", on_tool_return="escalate")
        .route("triage", "refund")
        .route("triage", "survey")
        .route("billing", "refund", on_tool_return="refund_check")
        .open_skill(define_skill("helper", body="Helper."))
        .build()
    )
    return graph, PassSetup(graph.injections, skill_map=graph)


class TestCursorThroughPasses:
    def test_the_stored_cursor_is_the_moves_to_and_reachable_is_from_the_landing(self) -> None:
        _, setup = support()
        loop = Loop(setup)
        first = loop.step([Call("lookup", {"id": 1})])
        assert first.cursor_move is not None
        assert (first.cursor_move.by, first.next_skill_cursor, first.reachable) == (
            "entry",
            "triage",
            ("billing", "admin", "refund", "survey", "helper"),
        )
        second = loop.step()
        assert second.next_skill_cursor == second.cursor_move.to_skill == "billing"  # type: ignore[union-attr]
        assert second.reachable == ("refund", "triage", "helper")
        CursorMoveEvent(**ENV, iteration=2, **second.cursor_move_fields())  # type: ignore[arg-type]
        assert second.cursor_move_fields()["strength"] == "structural"  # type: ignore[index]

    def test_a_proposal_moves_the_cursor_on_the_next_pass_only(self) -> None:
        _, setup = support()
        loop = Loop(setup)
        loop.step(
            [
                Call(
                    "classify",
                    envelope("survey it", propose_transition("survey", "customer wants to rate us")),
                )
            ]
        )
        assert loop.pending_transition is not None and loop.pending_transition.iteration == 1
        assert "survey" in loop.activated
        second = loop.step([Call("noop", 1)])
        assert second.cursor_move is not None
        assert (second.cursor_move.by, second.next_skill_cursor) == ("tool-proposal", "survey")
        # A model-edge-only node keeps llm-activated: the proposal's activation is its provenance.
        reason = second.reasons[second.evaluation.active_ids.index("survey")]
        assert (reason.via, reason.tool_name, reason.at_iteration) == ("llm-activated", "classify", 1)
        third = loop.step()
        assert third.proposal is None and third.cursor_move is not None and third.cursor_move.by == "stay"

    def test_a_route_supersedes_a_proposal_and_is_told(self) -> None:
        _, setup = support()
        loop = Loop(setup)
        loop.step([Call("classify", envelope("x", propose_transition("refund", "why"))), Call("lookup", 1)])
        second = loop.step()
        assert second.next_skill_cursor == "billing"
        (told,) = second.reroutes
        assert (told.volunteered_id, told.won_id, told.from_skill_id, told.source) == (
            "refund",
            "billing",
            "triage",
            "tool-proposal",
        )
        RerouteSupersededEvent(**ENV, iteration=2, **told.fields())  # type: ignore[arg-type]

    def test_a_pick_beaten_by_a_route_is_told(self) -> None:
        _, setup = support()
        loop = Loop(setup)
        loop.step([Call("read_skill", "admin"), Call("lookup", 1)])
        second = loop.step()
        assert second.next_skill_cursor == "billing"
        (told,) = second.reroutes
        assert (told.volunteered_id, told.won_id, told.source) == ("admin", "billing", None)

    def test_a_pick_that_rides_anyway_is_not_told_as_superseded(self) -> None:
        # §3.4 step 10: the check is "pick not in evaluation.active", not "pick != cursor". From
        # billing the model picks the unconditional entry triage while a route fires to refund:
        # the cursor lands elsewhere, but triage is active (an unconditional entry always is), so
        # nothing volunteered was lost and no reroute is told.
        _, setup = support()
        loop = Loop(setup)
        loop.step([Call("lookup", 1)])
        loop.step([Call("read_skill", "triage"), Call("refund_check", 1)])
        third = loop.step()
        assert third.context.pending_skill_pick == "triage"
        assert third.next_skill_cursor == "refund"
        assert "triage" in third.evaluation.active_ids
        assert third.reroutes == () and third.reroute_fields() == []

    def test_conflicting_edges_are_reported(self) -> None:
        _, setup = support()
        loop = Loop(setup)
        loop.step([Call("escalate", 1, id="e"), Call("lookup", 2, id="l")])
        second = loop.step()
        assert second.next_skill_cursor == "admin"
        assert second.route_conflict is not None
        fields = second.route_conflict_fields()
        assert fields is not None and fields["from_skill_id"] == "triage"
        RouteConflictEvent(**ENV, iteration=2, **fields)  # type: ignore[arg-type]

    def test_proposal_conflicts_are_collected_for_the_batch_end(self) -> None:
        _, setup = support()
        loop = Loop(setup)
        loop.step(
            [
                Call("a", envelope("x", propose_transition("refund", "r")), id="1"),
                Call("b", envelope("y", propose_transition("billing", "r")), id="2"),
            ]
        )
        report = loop.conflicts[-1]
        assert report is not None and report.source == "tool-proposal"
        assert [p.target for p in report.conflict.losers] == ["billing"]

    def test_superseded_entries_are_reported(self) -> None:
        graph = (
            SkillMapBuilder()
            .skill(define_skill("general", body="g"))
            .skill(define_skill("refunds", body="r"))
            .entry("general", keywords=["help"])
            .entry("refunds", keywords=["refund"])
            .build()
        )
        result = evaluate_pass(
            PassSetup(graph.injections, skill_map=graph),
            PassInputs(iteration=1, user_message="help with a refund"),
        )
        assert result.next_skill_cursor == "general"
        assert result.superseded_ids == ("refunds",)
        assert result.pass_fields()["superseded_ids"] == ["refunds"]


class TestProjectionRoutingAndProvenance:
    def test_slots_reasons_and_deltas(self) -> None:
        quiet = define_skill(
            "quiet", body="hidden", tools=[Tool("q")], surface_mode="tool-only", description="Quiet"
        )
        greet = define_instruction("greet", prompt="hi", slot="messages", role="user")
        budget = define_instruction(
            "budget", prompt_template="{{actionsRemaining}} calls left", active_when=lambda c: c.iteration < 2
        )
        setup = PassSetup((define_steering("tone", prompt="Brief."), quiet, greet, budget))
        loop = Loop(setup, max_iterations=5, activated=("quiet",))
        first = loop.step([Call("x", 1)])
        assert [e.id for e in first.by_slot.system_prompt] == ["tone", "budget"]
        assert [(e.id, e.reason) for e in first.by_slot.tools] == [("quiet", "Quiet")]
        assert [(e.id, e.source, e.reason) for e in first.by_slot.messages] == [
            ("greet", "instructions", "instructions 'greet' active")
        ]
        assert first.active_injections[-1].system_prompt == "4 calls left"
        assert first.delta.system_prompt.added == ["tone", "budget"]
        assert first.trigger_kind_counts == {"always": 2, "llm-activated": 1, "rule": 1}
        second = loop.step()
        assert (
            second.delta.system_prompt.kept,
            second.delta.system_prompt.removed,
            second.delta.system_prompt.added,
        ) == (
            ["tone"],
            ["budget"],
            [],
        )
        assert second.delta.tools.kept == ["quiet"]

    def test_provenance_of_every_kind(self) -> None:
        graph = (
            SkillMapBuilder()
            .skill(define_skill("triage", body="t"))
            .skill(define_skill("billing", body="b"))
            .entry("triage", when=lambda c: True)
            .route("triage", "billing", on_tool_return="lookup")
            .open_skill(define_skill("helper", body="h"))
            .build()
        )
        hint = define_injection(
            "hint", trigger=OnToolReturn(re.compile("look")), system_prompt="Read rows carefully."
        )
        rule = define_instruction("late", prompt="Wrap up.", active_when=lambda c: c.iteration >= 2)
        setup = PassSetup(
            (define_steering("tone", prompt="x"), *graph.injections, hint, rule), skill_map=graph
        )
        loop = Loop(setup)
        loop.step([Call("read_skill", "helper", id="rs1"), Call("lookup", {"n": 1}, id="lk1")])
        second = loop.step()
        reasons = {r.id: r for r in second.reasons}
        assert reasons["tone"].via == "always"
        assert reasons["billing"].via == "cursor"
        assert reasons["late"].via == "rule"
        assert (
            reasons["hint"].via,
            reasons["hint"].tool_name,
            reasons["hint"].tool_call_id,
            reasons["hint"].at_iteration,
        ) == (
            "on-tool-return",
            "lookup",
            "lk1",
            1,
        )
        assert (reasons["helper"].via, reasons["helper"].tool_call_id, reasons["helper"].at_iteration) == (
            "llm-activated",
            "rs1",
            1,
        )
        assert [r.id for r in second.reasons] == list(second.evaluation.active_ids)

    def test_park_beats_lease_in_a_pass(self) -> None:
        graph = SkillMapBuilder().skill(define_skill("z", body="z")).entry("z", keywords=["zone"]).build()
        setup = PassSetup(
            graph.injections, skill_map=graph, engagement=skill_map_plan(graph, renewal_grace=1)
        )
        loop = Loop(setup, user_message="zone")
        loop.step([Call("t", envelope("x", require_instruction("z", "until-skill-exit")))])
        second = loop.step()
        assert second.lease_active_ids == ("z",)
        assert [(s.id, s.reason) for s in second.evaluation.skipped] == [("z", "parked")]

    def test_step_pointer_is_re_keyed_only_when_steps_exist(self) -> None:
        graph = (
            SkillMapBuilder()
            .skill(define_skill("a", body="a", tools=[Tool("go")], steps=[("go", "one"), ("go", "two")]))
            .skill(define_skill("b", body="b"))
            .entry("a")
            .route("a", "b", on_tool_return="go")
            .build()
        )
        loop = Loop(PassSetup(graph.injections, skill_map=graph))
        first = loop.step([Call("go", 1)])
        assert first.next_step_pointer == (StepPointer("a", 1, 2),)
        assert first.context.step_pointer == first.next_step_pointer
        assert loop.step().next_step_pointer == ()

    def test_a_valid_proposal_reaches_the_context_only_as_its_target(self) -> None:
        _, setup = support()
        pending = PendingToolTransition("billing", "t", "why", 4, "c")
        fresh = evaluate_pass(
            setup, PassInputs(iteration=5, current_skill_id="triage", pending_tool_transition=pending)
        )
        stale = evaluate_pass(
            setup, PassInputs(iteration=6, current_skill_id="triage", pending_tool_transition=pending)
        )
        assert fresh.context.pending_tool_transition is not None
        assert fresh.context.pending_tool_transition.target_skill_id == "billing"
        assert fresh.next_skill_cursor == "billing" and fresh.proposal == pending
        assert stale.context.pending_tool_transition is None and stale.next_skill_cursor == "triage"

    def test_on_tool_return_reads_last_tool_result_without_a_batch(self) -> None:
        hint = define_injection("hint", trigger=OnToolReturn("fetch"), system_prompt="x")
        result = evaluate_pass(
            PassSetup((hint,)), PassInputs(iteration=2, last_tool_result=ToolResult("fetch"))
        )
        assert result.evaluation.active_ids == ("hint",)
