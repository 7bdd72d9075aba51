"""The mount kernel: ladder, renewal evidence, the five laws, the park card (docs/context-model.md §6)."""

from __future__ import annotations

import pytest

from fpdebug.engine.engagement import (
    PARK_CARD_HEADER,
    EngagementPass,
    EngagementPlan,
    MapEngagementRecord,
    MountedMap,
    RenewalEvidence,
    advance_engagement,
    is_tentative,
    map_evidence,
    park_card,
    parked_member_ids,
    renewal_evidence_of,
    skill_map_plan,
    strength_of_evidence,
    strength_of_move,
    stronger_of,
    strongest_of,
)
from fpdebug.engine.injections import define_skill
from fpdebug.engine.skillmap import SkillMapBuilder
from fpdebug.engine.types import Tool, ToolResult
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import EngagementEvent

from ..conftest import T0

ZONE = MountedMap("skill-map", ("zone-audit", "billing"), ("get_zone_info",))
PLAN = EngagementPlan((ZONE,), renewal_grace=3)


def p(
    iteration: int,
    *,
    node: str | None = "zone-audit",
    by: str | None = "stay",
    tools: tuple[str, ...] = ("screen_open",),
    served: tuple[str, ...] = ("zone-audit",),
    **kw: object,
) -> EngagementPass:
    return EngagementPass(
        iteration,
        current_node=node,
        move_by=by,
        tool_results=tuple(ToolResult(t) for t in tools),
        served_last_pass=served,
        **kw,
    )  # type: ignore[arg-type]


def run(passes: list[EngagementPass], plan: EngagementPlan = PLAN):  # type: ignore[no-untyped-def]
    records: tuple[MapEngagementRecord, ...] | None = None
    out = []
    for pass_ in passes:
        adv = advance_engagement(plan, records, pass_)
        records = adv.next
        out.append(adv)
    return out


class TestLadder:
    @pytest.mark.parametrize(
        ("by", "strength"),
        [
            ("model-pick", "explicit"),
            ("route", "structural"),
            ("tool-proposal", "structural"),
            ("continuity", "structural"),
            ("intent", "semantic"),
            ("decider", "semantic"),
            ("entry", "lexical"),
            ("stay", "assumed"),
            ("none", "assumed"),
            ("teleport", "structural"),
        ],
    )
    def test_strength_of_move(self, by: str, strength: str) -> None:
        assert strength_of_move(by) == strength

    def test_stronger_of(self) -> None:
        assert stronger_of("lexical", "explicit") == "explicit"
        assert stronger_of("structural", "semantic") == "structural"
        assert stronger_of("assumed", "assumed") == "assumed"

    def test_tentative(self) -> None:
        assert [
            s for s in ("explicit", "structural", "semantic", "lexical", "assumed") if is_tentative(s)
        ] == [  # type: ignore[arg-type]
            "semantic",
            "lexical",
            "assumed",
        ]

    def test_evidence_strengths(self) -> None:
        assert strength_of_evidence(RenewalEvidence("explicit-pick", skill_id="x")) == "explicit"
        assert strength_of_evidence(RenewalEvidence("member-activated", skill_id="x")) == "explicit"
        assert strength_of_evidence(RenewalEvidence("owned-tool-called", tool_name="t")) == "structural"
        assert strength_of_evidence(RenewalEvidence("cursor-moved", by="entry")) == "lexical"
        assert strongest_of([]) is None
        assert (
            strongest_of(
                [
                    RenewalEvidence("cursor-moved", by="intent"),
                    RenewalEvidence("owned-tool-called", tool_name="t"),
                ]
            )
            == "structural"
        )


class TestRenewalEvidence:
    def test_order_and_one_entry_per_call(self) -> None:
        pass_ = EngagementPass(
            4,
            current_node="billing",
            move_by="route",
            tool_results=(ToolResult("get_zone_info"), ToolResult("other"), ToolResult("get_zone_info")),
            pending_skill_pick="billing",
            accepted_skill_picks=("zone-audit", "helper"),
        )
        assert renewal_evidence_of(ZONE, pass_) == (
            RenewalEvidence("owned-tool-called", tool_name="get_zone_info"),
            RenewalEvidence("owned-tool-called", tool_name="get_zone_info"),
            RenewalEvidence("cursor-moved", by="route"),
            RenewalEvidence("explicit-pick", skill_id="billing"),
            RenewalEvidence("member-activated", skill_id="zone-audit"),
        )

    @pytest.mark.parametrize("by", ["stay", "none", None])
    def test_staying_is_not_a_move(self, by: str | None) -> None:
        assert renewal_evidence_of(ZONE, EngagementPass(2, current_node="billing", move_by=by)) == ()

    def test_a_move_outside_the_map_is_not_evidence(self) -> None:
        assert renewal_evidence_of(ZONE, EngagementPass(2, current_node="elsewhere", move_by="route")) == ()

    def test_evidence_records(self) -> None:
        (ev,) = map_evidence(PLAN, EngagementPass(2, current_node="billing", move_by="entry"))
        assert (ev.map_id, ev.strongest, ev.items[0].strength) == ("skill-map", "lexical", "lexical")


class TestPlans:
    @pytest.mark.parametrize("grace", [0, -1, 1.5, True, "3"])
    def test_grace_must_be_an_integer_of_at_least_one(self, grace: object) -> None:
        with pytest.raises(DefinitionError, match="renewalGrace must be an integer >= 1"):
            EngagementPlan((ZONE,), renewal_grace=grace)  # type: ignore[arg-type]

    def test_skill_map_plan(self) -> None:
        graph = (
            SkillMapBuilder()
            .skill(define_skill("zone-audit", body="z", tools=[Tool("get_zone_info"), Tool("shared")]))
            .skill(define_skill("billing", body="b", tools=[Tool("shared")]))
            .entry("zone-audit", keywords=["zone"])
            .route("zone-audit", "billing", on_tool_return="get_zone_info")
            .build()
        )
        plan = skill_map_plan(graph, renewal_grace=2, non_parkable=True)
        (mounted,) = plan.maps
        assert mounted == MountedMap(
            "skill-map", ("zone-audit", "billing"), ("get_zone_info", "shared"), non_parkable=True
        )
        assert plan.renewal_grace == 2
        assert plan.declaration().maps[0].member_ids == ["zone-audit", "billing"]

    def test_skill_map_plan_refusals(self) -> None:
        with pytest.raises(DefinitionError, match="nothing is mounted that the kernel could manage"):
            skill_map_plan(None)

        class NoNodes:
            node_ids = ()

            def explain_next_skill(self, ctx: object) -> None: ...

        with pytest.raises(DefinitionError, match="no node ids"):
            skill_map_plan(NoNodes())  # type: ignore[arg-type]

        class Mute:
            node_ids = ("a",)
            injections = ()

        with pytest.raises(DefinitionError, match="cannot explain its cursor moves"):
            skill_map_plan(Mute())  # type: ignore[arg-type]


class TestZoneTrap:
    """docs/context-model.md §6.6: entry by keyword, a foreign tool every turn, grace 3."""

    def passes(self) -> list[EngagementPass]:
        return [
            p(1, by="entry", tools=(), served=(), witness="zone"),
            p(2),
            p(3),
            p(4),
        ]

    def test_the_table(self) -> None:
        advs = run(self.passes())
        first, second, third, fourth = advs
        (founded,) = first.changes
        assert (founded.kind, founded.by, founded.iteration, founded.witness) == (
            "engaged",
            "lexical",
            1,
            "zone",
        )
        assert [(a.next[0].idle, a.next[0].standing, a.changes) for a in (second, third)] == [
            (1, "engaged", ()),
            (2, "engaged", ()),
        ]
        (parked,) = fourth.changes
        assert (parked.kind, parked.idle_calls, parked.by, parked.iteration) == ("parked", 3, "lexical", 4)
        rec = fourth.next[0]
        assert (rec.standing, rec.since, rec.at) == ("parked", 4, "zone-audit")
        assert fourth.parked_injection_ids == ("zone-audit", "billing")
        assert fourth.parked_tool_names == ("get_zone_info",)

    @pytest.mark.parametrize("pick", ["zone-audit", "billing"])
    def test_a_pick_on_pass_4_re_engages_on_pass_5(self, pick: str) -> None:
        fifth = p(5, accepted_skill_picks=(pick,), served=("agentfootprint:map-status",))
        advs = run([*self.passes(), fifth])
        (change,) = advs[-1].changes
        assert (change.kind, change.reengaged, change.by, change.iteration) == (
            "engaged",
            True,
            "explicit",
            5,
        )
        rec = advs[-1].next[0]
        assert (rec.standing, rec.since, rec.idle, rec.founded_by, rec.founded_at) == (
            "engaged",
            5,
            0,
            "lexical",
            1,
        )
        assert rec.witness is None  # re-engagement rebuilds the witness from its own pass
        assert advs[-1].parked_injection_ids == ()

    def test_the_card(self) -> None:
        records = run(self.passes())[-1].next
        card = park_card(PLAN, records)
        assert card is not None
        header, first, second = card.split("\n")
        assert header == PARK_CARD_HEADER
        assert first == (
            "  - skill-map — cursor: zone-audit (unchanged) · engagement: PARKED · "
            "reason: no recent evidence "
            "that it is the right map for this turn · re-engage: available"
        )
        assert "zone-audit, billing" in second and "ENGAGEMENT" in second and "not POSITION" in second
        assert parked_member_ids(PLAN, records) == {"zone-audit", "billing"}


class TestLaws:
    def test_no_record_without_position_or_evidence(self) -> None:
        (adv,) = run([p(1, node="elsewhere", by="entry")])
        assert adv.next == () and adv.changes == ()

    def test_founding_from_evidence_outside_the_map_has_no_position(self) -> None:
        (adv,) = run([p(1, node=None, by=None, tools=("get_zone_info",))])
        rec = adv.next[0]
        assert (rec.by, rec.founded_by, rec.at, rec.founded_on) == ("structural", "structural", None, None)

    def test_turn_two_founds_as_assumed(self) -> None:
        (adv,) = run([p(1, by="stay", tools=())])
        rec = adv.next[0]
        assert (rec.by, rec.at_by, rec.founded_on) == ("assumed", "assumed", "zone-audit")

    def test_upgrade_keeps_since_and_founding_and_the_prior_witness(self) -> None:
        advs = run(
            [
                p(1, by="entry", tools=(), served=(), witness="zone"),
                p(2, tools=("get_zone_info",), witness="other"),
            ]
        )
        (change,) = advs[1].changes
        assert (change.upgraded, change.by, change.founded_by, change.witness) == (
            True,
            "structural",
            "lexical",
            "zone",
        )
        rec = advs[1].next[0]
        assert (rec.by, rec.since, rec.founded_by, rec.witness) == ("structural", 1, "lexical", "zone")

    def test_silent_renewal_resets_idle(self) -> None:
        advs = run([p(1, by="entry", tools=(), served=()), p(2), p(3, by="entry")])
        assert advs[1].next[0].idle == 1
        assert advs[2].changes == () and advs[2].next[0].idle == 0

    def test_tenant_change_re_derives_by(self) -> None:
        advs = run([p(1, by="model-pick", tools=(), served=()), p(2, node="billing", by="route")])
        (change,) = advs[1].changes
        assert (change.tenant_changed, change.at, change.by, change.founded_by) == (
            True,
            "billing",
            "structural",
            "explicit",
        )
        rec = advs[1].next[0]
        assert (rec.by, rec.at, rec.at_by, rec.at_since, rec.since, rec.founded_on) == (
            "structural",
            "billing",
            "structural",
            2,
            1,
            "zone-audit",
        )

    def test_founding_position_strength_is_the_moves_not_the_evidence(self) -> None:
        # §6.4 LAW 1: atBy is pos_by (the strength of the move that put the cursor there), while
        # by is the strongest evidence; a same-pass pick makes them differ.
        (adv,) = run([p(1, by="entry", tools=(), served=(), accepted_skill_picks=("zone-audit",))])
        rec = adv.next[0]
        assert (rec.by, rec.founded_by, rec.at, rec.at_by) == (
            "explicit",
            "explicit",
            "zone-audit",
            "lexical",
        )

    @pytest.mark.parametrize("witness", [None, "invoice"])
    def test_a_tenant_change_reports_this_passes_witness(self, witness: str | None) -> None:
        # §6.4 TENANT CHANGE: the engaged event carries pass.witness; the record keeps the prior's.
        advs = run(
            [
                p(1, by="entry", tools=(), served=(), witness="zone"),
                p(2, node="billing", by="route", witness=witness),
            ]
        )
        (change,) = advs[1].changes
        assert change.tenant_changed and change.witness == witness
        assert advs[1].next[0].witness == "zone"

    def test_a_tenant_change_resets_idle(self) -> None:
        advs = run([p(1, by="entry", tools=(), served=()), p(2), p(3), p(4, node="billing", by="route")])
        assert [a.next[0].idle for a in advs[:3]] == [0, 1, 2]
        (change,) = advs[3].changes
        assert change.tenant_changed
        assert (advs[3].next[0].idle, advs[3].next[0].standing) == (0, "engaged")

    def test_a_tenant_change_with_no_evidence_re_derives_by_from_the_position(self) -> None:
        # by = strongerOf(pos.atBy, s): with no evidence at all (an unexplained cursor: no move
        # clause) the new position's strength, 'assumed', is the eligibility, below the prior's.
        advs = run([p(1, by="model-pick", tools=(), served=()), p(2, node="billing", by=None, tools=())])
        (change,) = advs[1].changes
        assert (change.tenant_changed, change.by) == (True, "assumed")
        rec = advs[1].next[0]
        assert (rec.by, rec.at, rec.at_by, rec.founded_by) == ("assumed", "billing", "assumed", "explicit")

    def test_re_engagement_re_derives_the_position(self) -> None:
        # §6.4 LAW 5: the rebuilt record takes positionOf(map, prior, pass): a pick that moved the
        # cursor to another member while the map was parked lands the position there.
        base = [p(1, by="entry", tools=(), served=()), p(2), p(3), p(4)]
        advs = run([*base, p(5, node="billing", by="model-pick")])
        (change,) = advs[-1].changes
        assert change.reengaged
        rec = advs[-1].next[0]
        assert (rec.at, rec.at_by, rec.at_since) == ("billing", "explicit", 5)
        assert (rec.founded_on, rec.since) == ("zone-audit", 5)

    def test_idle_needs_served_and_a_tool_call(self) -> None:
        advs = run(
            [p(1, by="entry", tools=(), served=()), p(2, served=("other",)), p(3, tools=()), p(4), p(5), p(6)]
        )
        assert [a.next[0].idle for a in advs] == [0, 0, 0, 1, 2, 3]
        assert advs[-1].next[0].standing == "parked"

    @pytest.mark.parametrize("by", ["model-pick", "route"])
    def test_explicit_and_structural_count_idle_but_never_park(self, by: str) -> None:
        advs = run([p(1, by=by, tools=(), served=()), *[p(i) for i in range(2, 9)]])
        assert advs[-1].next[0].idle == 7
        assert all(a.next[0].standing == "engaged" for a in advs)

    def test_non_parkable_never_parks(self) -> None:
        plan = EngagementPlan((MountedMap("m", ("zone-audit",), (), non_parkable=True),), renewal_grace=1)
        advs = run([p(1, by="entry", tools=(), served=()), p(2), p(3)], plan)
        assert [a.next[0].standing for a in advs] == ["engaged"] * 3
        assert advs[-1].next[0].idle == 2

    @pytest.mark.parametrize(
        ("by", "recovers"), [("entry", False), ("intent", False), ("route", True), ("model-pick", True)]
    )
    def test_only_explicit_or_structural_evidence_recovers(self, by: str, recovers: bool) -> None:
        base = [p(1, by="entry", tools=(), served=()), p(2), p(3), p(4)]
        advs = run([*base, p(5, node="billing", by=by)])
        assert advs[-1].next[0].standing == ("engaged" if recovers else "parked")
        if not recovers:
            assert advs[-1].next[0] == advs[-2].next[0]  # a guess leaves the park untouched

    def test_parking_never_moves_the_position(self) -> None:
        advs = run([p(1, by="entry", tools=(), served=()), p(2), p(3), p(4)])
        assert {a.next[0].at for a in advs} == {"zone-audit"}

    def test_a_record_whose_map_left_the_plan_is_dropped(self) -> None:
        stray = MapEngagementRecord(
            map_id="old", standing="parked", by="lexical", since=1, founded_by="lexical", founded_at=1
        )
        adv = advance_engagement(PLAN, (stray,), p(2, by="entry"))
        assert [r.map_id for r in adv.next] == ["skill-map"]
        assert adv.parked_injection_ids == ()

    def test_assumed_card_reason(self) -> None:
        advs = run([p(1, tools=(), served=()), p(2), p(3), p(4)])
        assert advs[-1].next[0].by == "assumed"
        assert "nothing on this turn explains why it is loaded" in (park_card(PLAN, advs[-1].next) or "")
        assert park_card(PLAN, advs[0].next) is None

    def test_records_fit_the_trace(self) -> None:
        advs = run([p(1, by="entry", tools=(), served=(), witness="zone"), p(2), p(3), p(4)])
        last = advs[-1]
        event = EngagementEvent(
            seq=1,
            ts=T0,
            run_id="r",
            iteration=4,
            pass_facts=p(4).facts(),
            evidence=list(map_evidence(PLAN, p(4))),
            changes=list(last.changes),
            records=list(last.next),
            park_card=park_card(PLAN, last.next),
        )
        # The reducer's records are the trace's: they survive the writer's JSON unchanged.
        assert EngagementEvent.model_validate_json(event.model_dump_json(exclude_none=True)) == event


class TestTenantChangeWithStrongerEvidence:
    """docs/context-model.md §6.4 TENANT CHANGE: ``by = strongerOf(pos.atBy, s)`` when ``s`` is the stronger."""

    @pytest.mark.parametrize(
        ("extra", "strongest"),
        [
            ({"tools": ("get_zone_info",)}, "structural"),  # an owned tool called: structural
            ({"accepted_skill_picks": ("billing",)}, "explicit"),  # a pick of the new tenant: explicit
        ],
    )
    def test_the_evidence_wins_over_the_move_and_the_change_is_one_tenant_change(
        self, extra: dict[str, object], strongest: str
    ) -> None:
        # The cursor moves by a keyword (lexical) onto another member while stronger evidence for
        # the map arrives on the same pass: the tenant change takes the stronger as its `by`, the
        # position keeps the move's own strength, and no separate upgrade is reported.
        advs = run(
            [p(1, by="entry", tools=(), served=(), witness="zone"), p(2, node="billing", by="entry", **extra)]
        )
        (change,) = advs[1].changes
        assert (
            change.kind,
            change.tenant_changed,
            change.upgraded,
            change.by,
            change.at,
            change.founded_by,
        ) == (
            "engaged",
            True,
            None,
            strongest,
            "billing",
            "lexical",
        )
        rec = advs[1].next[0]
        assert (rec.by, rec.at, rec.at_by, rec.at_since, rec.since, rec.idle) == (
            strongest,
            "billing",
            "lexical",
            2,
            1,
            0,
        )
        assert (rec.founded_by, rec.founded_at, rec.founded_on, rec.witness) == (
            "lexical",
            1,
            "zone-audit",
            "zone",
        )

    def test_a_weaker_move_with_stronger_evidence_still_raises_a_tentative_standing_out_of_parking(
        self,
    ) -> None:
        # The stronger `by` is what the idle law reads afterwards: structural never parks.
        advs = run(
            [
                p(1, by="entry", tools=(), served=()),
                p(2, node="billing", by="entry", tools=("get_zone_info",)),
                *[p(i, node="billing") for i in range(3, 8)],
            ]
        )
        assert advs[-1].next[0].idle == 5
        assert all(a.next[0].standing == "engaged" for a in advs)


class TestSeveralMapsAndAPendingPick:
    """docs/context-model.md §6.4: each map of the plan advances on its own evidence, in plan order."""

    ZONES = MountedMap("zone-map", ("zone-audit", "billing"), ("get_zone_info",))
    REFUNDS = MountedMap("refund-map", ("refunds",), ("issue_refund",))
    PLAN = EngagementPlan((ZONES, REFUNDS), renewal_grace=2)

    def passes(self) -> list[EngagementPass]:
        # Both maps founded by a keyword (lexical, tentative), then served with a foreign tool.
        both = ("zone-audit", "refunds")
        return [
            p(1, node="zone-audit", by="entry", tools=(), served=()),
            p(2, node="refunds", by="entry", tools=(), served=both),
            p(3, node="refunds", served=both),
        ]

    def test_a_pending_pick_re_engages_only_the_parked_map_it_names(self) -> None:
        base = [*self.passes(), p(4, node="refunds", served=("zone-audit", "refunds"))]
        pick = p(5, node="refunds", served=("agentfootprint:map-status",), pending_skill_pick="billing")
        advs = run([*base, pick], self.PLAN)
        fourth, fifth = advs[3], advs[4]
        assert [(r.map_id, r.standing) for r in fourth.next] == [
            ("zone-map", "parked"),
            ("refund-map", "parked"),
        ]
        assert fourth.parked_injection_ids == ("zone-audit", "billing", "refunds")
        assert fourth.parked_tool_names == ("get_zone_info", "issue_refund")

        (change,) = fifth.changes
        assert (change.map_id, change.kind, change.reengaged, change.by) == (
            "zone-map",
            "engaged",
            True,
            "explicit",
        )
        zones, refunds = fifth.next
        assert (zones.standing, zones.by, zones.since, zones.at) == ("engaged", "explicit", 5, "zone-audit")
        assert refunds == fourth.next[1]  # no evidence for it: the park is untouched
        assert (fifth.parked_injection_ids, fifth.parked_tool_names) == (("refunds",), ("issue_refund",))
        assert [(e.map_id, e.strongest) for e in map_evidence(self.PLAN, pick)] == [
            ("zone-map", "explicit"),
            ("refund-map", None),
        ]
        card = park_card(self.PLAN, fifth.next) or ""
        assert "refund-map" in card and "zone-map" not in card

    def test_a_pending_pick_renews_its_own_map_while_the_other_counts_idle(self) -> None:
        pick = p(4, node="refunds", served=("zone-audit", "refunds"), pending_skill_pick="refunds")
        advs = run([*self.passes(), pick], self.PLAN)
        (parked, upgraded) = advs[-1].changes
        assert (parked.map_id, parked.kind, parked.idle_calls) == ("zone-map", "parked", 2)
        assert (upgraded.map_id, upgraded.upgraded, upgraded.by, upgraded.founded_by) == (
            "refund-map",
            True,
            "explicit",
            "lexical",
        )
        zones, refunds = advs[-1].next
        assert (zones.standing, zones.idle) == ("parked", 2)
        assert (refunds.standing, refunds.by, refunds.idle, refunds.since) == ("engaged", "explicit", 0, 2)
        assert advs[-1].parked_injection_ids == ("zone-audit", "billing")
