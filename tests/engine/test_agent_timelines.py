"""The agent-level timelines of docs/context-model.md §4.4 and §6.6, asserted on the trace each run wrote (read back through the reader).

§4.4 (a next-call lease; an until-skill-exit lease on a cyclic graph), §6.6 (the parked "zone" map and
its re-engagement), the proposal cases of §4.2 (accepted, refused, superseded with the batch-end
route conflict), the edge conflict and reroute of §5.3, and the read_skill gate's rejection (§5.5).
"""

from __future__ import annotations

from pathlib import Path

from fpdebug.engine.agent import Agent
from fpdebug.engine.effects import envelope, propose_transition, require_instruction
from fpdebug.engine.evaluate import PARK_CARD_ID
from fpdebug.engine.injections import Rule, define_injection, define_skill, define_steering
from fpdebug.engine.providers.scripted import ScriptedCall, ScriptedProvider, ScriptedReply
from fpdebug.engine.skillmap import SkillMapBuilder
from fpdebug.engine.tools import tool
from fpdebug.trace.schema import (
    CursorMoveEvent,
    EngagementEvent,
    LeaseGrantEvent,
    LeasePruneEvent,
    LlmCallEvent,
    PassEvent,
    RerouteSupersededEvent,
    RouteConflictEvent,
    SkillRejectedEvent,
    ToolResultEvent,
)
from tests.engine.test_agent import Recorded, record

R = ScriptedReply


def lease_only(id_: str, text: str) -> object:
    return define_injection(
        id_,
        trigger=Rule(lambda ctx: False, description="lease only"),
        flavor="instructions",
        system_prompt=text,
    )


def passes(run: Recorded) -> list[PassEvent]:
    return [e for e in run.events if isinstance(e, PassEvent)]


def cursor(run: Recorded) -> list[tuple[str | None, str]]:
    return [(e.to_skill, e.by) for e in run.events if isinstance(e, CursorMoveEvent)]


# ----------------------------------------------------------------------------------------------
# §4.4 leases


def fetch(url: str) -> dict[str, object]:
    """Fetch a page."""
    return envelope("page", require_instruction("wire-format", "next-call"))


def calc(expression: str) -> str:
    """Compute."""
    return "42"


def test_next_call_lease_timeline(tmp_path: Path) -> None:
    agent = (
        Agent("leases")
        .injections(define_steering("tone", prompt="Brief."), lease_only("wire-format", "Wire format."))
        .tools(fetch, calc)
        .max_iterations(6)
    )
    model = ScriptedProvider(
        [R.tool_call("fetch", {"url": "u"}), R.tool_call("calc", {"expression": "1"}), "done"]
    )
    run = record(agent, "go", model, tmp_path)
    rows = [(p.iteration, p.lease_active_ids, "wire-format" in p.active_ids) for p in passes(run)]
    assert rows == [(1, None, False), (2, ["wire-format"], True), (3, [], False)]
    (grant,) = run.of("lease_grant")
    assert isinstance(grant, LeaseGrantEvent) and grant.iteration == 1
    assert (grant.lease.delivery_lease, grant.lease.iteration, grant.lease.skill_id) == ("next-call", 1, None)
    (prune,) = run.of("lease_prune")
    assert isinstance(prune, LeasePruneEvent)
    assert (prune.iteration, prune.site, prune.survivors) == (2, "evaluate", [])
    assert [(p.instruction_id, p.reason) for p in prune.pruned] == [("wire-format", "spent")]
    (lifetime,) = run.model.runs[0].leases
    assert lifetime.state == "spent"
    served = run.one("llm_call", 2)
    assert isinstance(served, LlmCallEvent)
    assert "wire-format" in [s.injection_id for s in served.request.system_prompt]


def test_until_skill_exit_on_a_cyclic_graph_revives_nothing(tmp_path: Path) -> None:
    def hold(note: str) -> dict[str, object]:
        """Hold a note."""
        return envelope("held", require_instruction("policy-note", "until-skill-exit"))

    def go() -> str:
        """Go to billing."""
        return "moved"

    def back() -> str:
        """Back to triage."""
        return "moved"

    graph = (
        SkillMapBuilder()
        .skill(define_skill("triage", body="Triage.", tools=[tool(hold), tool(go)]))
        .skill(define_skill("billing", body="Billing.", tools=[tool(back)]))
        .entry("triage")
        .route("triage", "billing", on_tool_return="go")
        .route("billing", "triage", on_tool_return="back")
        .build()
    )
    agent = (
        Agent("cyclic")
        .injections(lease_only("policy-note", "Quote the policy."))
        .skill_map(graph)
        .max_iterations(6)
    )
    model = ScriptedProvider(
        [
            R.tool_call("hold", {"note": "n"}),
            R.tool_call("go"),
            R.tool_call("back"),
            R.tool_call("go"),
            "done",
        ]
    )
    run = record(agent, "go", model, tmp_path)
    rows = [
        (p.iteration, move[0], "policy-note" in p.active_ids)
        for p, move in zip(passes(run), cursor(run), strict=True)
    ]
    assert rows == [
        (1, "triage", False),
        (2, "triage", True),
        (3, "billing", False),
        (4, "triage", False),  # re-entry revives nothing
        (5, "billing", False),
    ]
    (grant,) = run.of("lease_grant")
    assert isinstance(grant, LeaseGrantEvent) and grant.lease.skill_id == "triage"
    (prune,) = run.of("lease_prune")
    assert isinstance(prune, LeasePruneEvent)
    assert (prune.iteration, prune.tenant, [p.reason for p in prune.pruned]) == (
        3,
        "billing",
        ["tenure-ended"],
    )
    assert prune.survivors == []  # the final state: no lease left
    assert [p.lease_active_ids for p in passes(run)] == [None, ["policy-note"], [], [], []]
    (lifetime,) = run.model.runs[0].leases
    assert lifetime.state == "tenure-ended"


def test_a_grant_prunes_what_died_earlier_in_its_batch_at_the_tool_calls_site(tmp_path: Path) -> None:
    def hold() -> dict[str, object]:
        """Hold a note for as long as the current skill lasts."""
        return envelope("held", require_instruction("note", "until-skill-exit"))

    # No graph: the tenant is the last activation, which a read_skill earlier in the batch changes.
    agent = (
        Agent("a")
        .injections(lease_only("note", "N."))
        .skills(define_skill("helper", body="H."), define_skill("other", body="O."))
        .tools(hold)
    )
    model = ScriptedProvider(
        [
            R.batch(ScriptedCall("read_skill", {"id": "helper"}), ScriptedCall("hold", {}, id="h1")),
            R.batch(ScriptedCall("read_skill", {"id": "other"}), ScriptedCall("hold", {}, id="h2")),
            "done",
        ]
    )
    run = record(agent, "go", model, tmp_path)
    assert [(g.lease.skill_id, g.lease.tool_call_id) for g in run.of("lease_grant")] == [
        ("helper", "h1"),
        ("other", "h2"),
    ]
    (prune,) = run.of("lease_prune")
    assert isinstance(prune, LeasePruneEvent)
    assert (prune.site, prune.iteration, prune.tenant) == ("tool-calls", 2, "other")
    assert [(p.tool_call_id, p.reason) for p in prune.pruned] == [("h1", "tenure-ended")]
    assert [lease.tool_call_id for lease in prune.survivors] == ["h2"]
    # The call's result, then its consequences: the grant, then what the grant's prune removed.
    iteration_2 = [e.kind for e in run.events if e.iteration == 2]
    assert iteration_2 == ["pass", "llm_call", "tool_result", "tool_result", "lease_grant", "lease_prune"]
    assert [p.lease_active_ids for p in passes(run)] == [None, ["note"], ["note"]]
    assert [lease.state for lease in run.model.runs[0].leases] == ["tenure-ended", "alive"]


# ----------------------------------------------------------------------------------------------
# §6.6 the zone trap


def zone_agent() -> Agent:
    def get_zone_info(zone: str) -> str:
        """Zone info."""
        return "zone ok"

    def screen_open(screen: str) -> str:
        """Open a screen."""
        return "screen"

    graph = (
        SkillMapBuilder()
        .skill(define_skill("zone-audit", body="Audit the zone.", tools=[tool(get_zone_info)]))
        .skill(define_skill("billing", body="Billing."))
        .entry("zone-audit", keywords=["zone"])
        .route("zone-audit", "billing", on_tool_return="open_invoice")
        .build()
    )
    return Agent("zone").skill_map(graph).maps(renewal_grace=3).tools(screen_open)


def test_zone_trap_parks_on_pass_4_and_re_engages_on_pass_5(tmp_path: Path) -> None:
    screen = R.tool_call("screen_open", {"screen": "s"})
    model = ScriptedProvider(
        [screen, screen, screen, R.tool_call("read_skill", {"id": "zone-audit"}), "done"]
    )
    run = record(zone_agent(), "Why is the zone  config odd?", model, tmp_path)
    engagement = [e for e in run.events if isinstance(e, EngagementEvent)]
    assert len(engagement) == 5  # every pass while .maps() is mounted
    founded = engagement[0].changes[0]
    assert (founded.kind, founded.by, founded.iteration, founded.witness) == ("engaged", "lexical", 1, "zone")
    assert [e.records[0].idle for e in engagement[:4]] == [0, 1, 2, 3]
    assert [e.changes for e in engagement[1:3]] == [[], []]
    (parked,) = engagement[3].changes
    assert (parked.kind, parked.iteration, parked.idle_calls, parked.by) == ("parked", 4, 3, "lexical")

    fourth = run.one("pass", 4)
    assert isinstance(fourth, PassEvent)
    assert ("zone-audit", "parked") in [(s.id, s.reason) for s in fourth.skipped]
    assert fourth.parked_ids == ["zone-audit", "billing"]
    assert fourth.served_ids == [PARK_CARD_ID]
    assert run.one("cursor_move", 4).to_skill == "zone-audit"
    call4 = run.one("llm_call", 4)
    assert isinstance(call4, LlmCallEvent)
    assert "get_zone_info" not in [t.name for t in call4.request.tools]
    assert [s.injection_id for s in call4.request.system_prompt] == [PARK_CARD_ID]
    assert call4.request.system_prompt[0].text.startswith("Map status")

    gate = run.one("tool_result", 4)
    assert isinstance(gate, ToolResultEvent) and gate.skill_gate is not None
    assert gate.skill_gate.outcome == "re-engagement"
    (back,) = engagement[4].changes
    assert (back.kind, back.reengaged, back.by, back.iteration) == ("engaged", True, "explicit", 5)
    assert engagement[4].pass_facts.accepted_skill_picks == ["zone-audit"]
    call5 = run.one("llm_call", 5)
    assert isinstance(call5, LlmCallEvent)
    assert "get_zone_info" in [t.name for t in call5.request.tools]
    assert [s.injection_id for s in call5.request.system_prompt] == ["zone-audit"]
    timeline = run.model.runs[0].maps["skill-map"]
    assert (timeline.parks, timeline.reengagements, timeline.standing) == (1, 1, "engaged")


def test_a_non_parkable_map_counts_idle_but_never_parks(tmp_path: Path) -> None:
    screen = R.tool_call("screen_open", {"screen": "s"})
    agent = zone_agent().maps(renewal_grace=3, non_parkable=True)
    run = record(agent, "the zone", ScriptedProvider([screen] * 5 + ["done"]), tmp_path)
    engagement = [e for e in run.events if isinstance(e, EngagementEvent)]
    assert [e.records[0].idle for e in engagement] == [0, 1, 2, 3, 4, 5]
    assert all(c.kind != "parked" for e in engagement for c in e.changes)


# ----------------------------------------------------------------------------------------------
# §4.2 / §5.3 proposals and conflicts


def support_graph(*extra_tools: object) -> Agent:
    def lookup(order_id: str) -> str:
        """Look up."""
        return "order"

    def escalate() -> str:
        """Escalate."""
        return "escalated"

    def classify(target: str) -> dict[str, object]:
        """Propose a transition to ``target``."""
        return envelope(f"to {target}", propose_transition(target, "the customer asked"))

    graph = (
        SkillMapBuilder()
        .skill(define_skill("triage", body="Triage."))
        .skill(define_skill("billing", body="Billing."))
        .skill(define_skill("admin", body="Admin."))
        .skill(define_skill("survey", body="Survey."))
        .skill(define_skill("refund", body="Refund."))
        .entry("triage")
        .route("triage", "billing", on_tool_return="lookup")
        .route("triage", "admin", on_tool_return="escalate")
        .route("triage", "survey")
        .route("billing", "refund")
        .open_skill(define_skill("helper", body="Helper."))
        .build()
    )
    return (
        Agent("support").skill_map(graph).tools(lookup, escalate, classify, tool(classify, name="classify2"))
    )


def test_an_accepted_proposal_moves_the_cursor_on_the_next_pass(tmp_path: Path) -> None:
    model = ScriptedProvider(
        [R.tool_call("classify", {"target": "survey"}), R.tool_call("lookup", {"order_id": "1"}), "ok"]
    )
    run = record(support_graph(), "hi", model, tmp_path)
    result = run.one("tool_result", 1)
    assert isinstance(result, ToolResultEvent)
    (judged,) = result.effects
    assert (judged.kind, judged.outcome, judged.target_skill_id) == (
        "propose-transition",
        "accepted",
        "survey",
    )
    assert cursor(run)[:2] == [("triage", "entry"), ("survey", "tool-proposal")]
    # A model-edge-only node keeps its llm-activated trigger: the accepted proposal activated it.
    reasons = {r.id: r for r in run.one("pass", 2).reasons}
    survey = reasons["survey"]
    assert (survey.via, survey.tool_name, survey.tool_call_id, survey.at_iteration) == (
        "llm-activated",
        "classify",
        "call_1",
        1,
    )
    assert cursor(run)[2] == ("survey", "stay")  # one-shot: the proposal is not honoured again


def test_a_proposal_to_an_unreachable_skill_is_refused_and_the_model_is_told(tmp_path: Path) -> None:
    model = ScriptedProvider([R.tool_call("classify", {"target": "refund"}), "ok"])
    run = record(support_graph(), "hi", model, tmp_path)
    result = run.one("tool_result", 1)
    assert isinstance(result, ToolResultEvent)
    (judged,) = result.effects
    assert judged.outcome == "refused" and judged.refusal_reason is not None
    assert "'refund' is not reachable from 'triage'" in judged.refusal_reason
    assert result.result == f"to refund [tool effect refused: {judged.refusal_reason}]"
    call = run.one("llm_call", 2)
    assert isinstance(call, LlmCallEvent) and call.request.messages[-1].content == result.result
    assert cursor(run)[1] == ("triage", "stay")


def test_a_proposal_without_a_graph_is_refused(tmp_path: Path) -> None:
    def classify(target: str) -> dict[str, object]:
        """Propose."""
        return envelope("x", propose_transition(target, "why"))

    run = record(
        Agent("a").tools(classify),
        "hi",
        ScriptedProvider([R.tool_call("classify", {"target": "b"}), "ok"]),
        tmp_path,
    )
    (judged,) = run.one("tool_result", 1).effects
    assert judged.outcome == "refused" and "needs a mounted skill graph" in judged.refusal_reason
    assert run.of("cursor_move") == [] and run.of("route_conflict") == []


def test_a_superseded_proposal_and_the_batch_end_route_conflict(tmp_path: Path) -> None:
    model = ScriptedProvider(
        [
            R.batch(
                ScriptedCall("classify", {"target": "survey"}, id="p1"),
                ScriptedCall("classify2", {"target": "billing"}, id="p2"),
                ScriptedCall("classify", {"target": "survey"}, id="p3"),
            ),
            "ok",
        ]
    )
    run = record(support_graph(), "hi", model, tmp_path)
    outcomes = [r.effects[0].outcome for r in run.at("tool_result", 1)]
    assert outcomes == ["accepted", "superseded", "accepted"]
    assert run.at("tool_result", 1)[1].effects[0].superseded_by == "earlier-proposal"
    (conflict,) = run.of("route_conflict")
    assert isinstance(conflict, RouteConflictEvent)
    assert (conflict.iteration, conflict.source, conflict.from_skill_id) == (1, "tool-proposal", "triage")
    assert (conflict.winner.tool_call_id, conflict.winner.target) == ("p1", "survey")
    assert [(loser.tool_call_id, loser.target) for loser in conflict.losers] == [("p2", "billing")]
    assert cursor(run)[1] == ("survey", "tool-proposal")
    # The conflict line comes after the batch's last tool result.
    kinds = [e.kind for e in run.events if e.iteration == 1]
    assert kinds[-1] == "route_conflict" and kinds[-2] == "tool_result"


def test_a_route_beats_a_proposal_and_the_pass_says_so(tmp_path: Path) -> None:
    model = ScriptedProvider(
        [
            R.batch(
                ScriptedCall("classify", {"target": "survey"}), ScriptedCall("lookup", {"order_id": "1"})
            ),
            "ok",
        ]
    )
    run = record(support_graph(), "hi", model, tmp_path)
    assert cursor(run)[1] == ("billing", "route")
    (told,) = run.of("reroute_superseded")
    assert isinstance(told, RerouteSupersededEvent)
    assert (told.iteration, told.volunteered_id, told.won_id, told.from_skill_id, told.source) == (
        2,
        "survey",
        "billing",
        "triage",
        "tool-proposal",
    )


def test_conflicting_edges_in_one_batch(tmp_path: Path) -> None:
    model = ScriptedProvider(
        [
            R.batch(ScriptedCall("escalate", {}, id="e"), ScriptedCall("lookup", {"order_id": "1"}, id="l")),
            "ok",
        ]
    )
    run = record(support_graph(), "hi", model, tmp_path)
    move = run.one("cursor_move", 2)
    assert isinstance(move, CursorMoveEvent)
    assert (move.to_skill, move.by) == ("admin", "route")
    assert move.conflict is not None and move.conflict.winner.tool_call_id == "e"
    (conflict,) = run.of("route_conflict")
    assert isinstance(conflict, RouteConflictEvent)
    assert (conflict.iteration, conflict.source, conflict.from_skill_id) == (2, None, "triage")
    assert [(loser.tool_call_id, loser.target) for loser in conflict.losers] == [("l", "billing")]


def test_read_skill_rejected_names_what_is_allowed(tmp_path: Path) -> None:
    model = ScriptedProvider(
        [
            R.batch(
                ScriptedCall("read_skill", {"id": "refund"}, id="r1"),
                ScriptedCall("read_skill", {"id": "helper"}),
            ),
            "ok",
        ]
    )
    run = record(support_graph(), "hi", model, tmp_path)
    rejected_result, open_result = run.at("tool_result", 1)
    assert isinstance(rejected_result, ToolResultEvent) and rejected_result.skill_gate is not None
    assert rejected_result.skill_gate.outcome == "rejected"
    assert rejected_result.result == (
        "read_skill refused: 'refund' is not reachable from 'triage'. "
        "Allowed: billing, admin, survey, helper."
    )
    (rejected,) = run.of("skill_rejected")
    assert isinstance(rejected, SkillRejectedEvent)
    assert (rejected.iteration, rejected.requested_id, rejected.current_skill_id, rejected.tool_call_id) == (
        1,
        "refund",
        "triage",
        "r1",
    )
    assert rejected.allowed == ["billing", "admin", "survey", "helper"]
    assert open_result.skill_gate.outcome == "open"
    assert "helper" in run.one("pass", 2).active_ids
    assert "refund" not in run.one("pass", 2).active_ids
    assert cursor(run)[1] == ("triage", "stay")  # an open skill never moves the cursor


def test_a_model_pick_moves_the_cursor_and_beats_nothing(tmp_path: Path) -> None:
    model = ScriptedProvider([R.tool_call("read_skill", {"id": "survey"}), "ok"])
    run = record(support_graph(), "hi", model, tmp_path)
    assert run.one("tool_result", 1).skill_gate.outcome == "hop"
    assert cursor(run) == [("triage", "entry"), ("survey", "model-pick")]
    assert run.of("reroute_superseded") == []
